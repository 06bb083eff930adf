// The shared discovery core's rules on virtual time (disc/env.hpp): real V4Service and V5Service
// on a simulated network (disc/sim_network.hpp), so a test of minutes of discovery runs in
// milliseconds, the same way every time, and latency is whatever the test sets. Nothing here opens
// a socket.

#include "disc/kademlia.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_future.hpp>

#include "disc/sim_network.hpp"
#include "disc/v4_udp.hpp"
#include "disc/v5_udp.hpp"

namespace headerd::disc {
namespace {

namespace asio = boost::asio;
using asio::ip::udp;
using namespace std::chrono_literals;

rlpx::PrivateKey key_of(uint64_t seed, uint64_t i) {
    std::array<uint8_t, 32> b{};
    b[0] = 0x5e;
    for (int k = 0; k < 8; ++k) {
        b[31 - k] = static_cast<uint8_t>(i >> (8 * k));
        b[23 - k] = static_cast<uint8_t>(seed >> (8 * k));
    }
    return rlpx::PrivateKey::from_bytes(b).value();
}

// A node of the virtual network: discv4, discv5 on its transport, or both.
struct VNode {
    rlpx::PrivateKey key;
    udp::endpoint at;
    std::shared_ptr<SimTransport> transport;
    std::shared_ptr<V4Service> v4;
    std::shared_ptr<V5Service> v5;

    Node node() const { return *Node::from_enr(v4->record()); }
    NodeId id() const { return key.public_key().node_id(); }
    void stop() {
        if (v5) v5->stop();
        v4->stop();
    }
};

struct Protocols {
    bool v4 = true;
    bool v5 = false;
};

// A virtual network of nodes on public addresses, each on a /24 of its own (the table's IP limits
// then never matter).
class VirtualNet {
  public:
    explicit VirtualNet(uint64_t seed = 1, SimNetworkConfig net = {}) : seed_(seed), env_(seed), net_(env_, net) {}
    ~VirtualNet() {
        for (auto& n : nodes_) n->stop();
    }

    // Keys are drawn until `accept` holds (to place a node in a chosen bucket of another).
    VNode& add(Protocols p, V4Config c4 = {}, V5Config c5 = {}, const std::function<bool(const NodeId&)>& accept = {}) {
        auto n = std::make_unique<VNode>(VNode{key_of(seed_, next_key_++), {}, {}, {}, {}});
        while (accept && !accept(n->id())) n->key = key_of(seed_, next_key_++);
        const auto i = static_cast<uint32_t>(nodes_.size());
        const std::array<uint8_t, 4> ip{20, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i), 1};
        n->at = udp::endpoint(asio::ip::address_v4(ip), 30303);
        n->transport = net_.attach(n->at);
        const Enr record = EnrBuilder(1).ip(ip).udp(30303).tcp(30303).sign(n->key).value();
        c4.passive = !p.v4;
        n->v4 = std::make_shared<V4Service>(io_, env_, n->transport, n->key, record, NodeDb{}, std::move(c4));
        if (p.v5) {
            n->v5 = std::make_shared<V5Service>(io_, env_, n->key, record, nullptr, std::move(c5));
            share_socket(n->v4, n->v5);
        }
        nodes_.push_back(std::move(n));
        return *nodes_.back();
    }
    void start(VNode& n) {
        n.v4->start();
        if (n.v5) n.v5->start();
    }
    bool run_for(Clock::duration d, const std::function<bool()>& done = {}) { return env_.run_for(io_, d, done); }
    // Runs `op` on virtual time to its end (at most `limit` of virtual time).
    template <class T>
    T run(asio::awaitable<T> op, Clock::duration limit = 60s) {
        auto f = asio::co_spawn(io_, std::move(op), asio::use_future);
        run_for(limit, [&] { return f.wait_for(0s) == std::future_status::ready; });
        return f.get();
    }
    VirtualEnv& env() { return env_; }

  private:
    uint64_t seed_;
    VirtualEnv env_;
    asio::io_context io_;
    SimNetwork net_;
    std::vector<std::unique_ptr<VNode>> nodes_;
    uint64_t next_key_ = 1;
};

std::set<NodeId> table_ids(const Table& t) {
    std::set<NodeId> ids;
    for (const Node& n : t.closest(NodeId{}, t.size())) ids.insert(n.id);
    return ids;
}

// A node that stops answering leaves the table at its revalidations, on both protocols; the nodes
// that keep answering pass more than five checks and become seeds in the node database.
TEST(Kademlia, DeadNodesLeaveAtRevalidationAndLiveOnesBecomeSeeds) {
    VirtualNet net;
    V4Config c4;
    c4.revalidate_interval = 2s;
    V5Config c5;
    c5.revalidate_interval = 2s;
    VNode& b = net.add({true, true});
    VNode& c = net.add({true, true});
    c4.bootnodes = {b.node(), c.node()};
    c5.bootnodes = c4.bootnodes;
    VNode& a = net.add({true, true}, c4, c5);
    for (VNode* n : {&a, &b, &c}) net.start(*n);
    ASSERT_TRUE(net.run_for(10min, [&] {
        const auto* e4 = a.v4->table().find(c.id());
        const auto* e5 = a.v5->table().find(c.id());
        return e4 && e4->liveness_checks > 5 && e5 && e5->liveness_checks > 5;
    }));
    // A seed for the next start (geth's rule: more than five checks).
    std::mt19937_64 rng(1);
    std::set<NodeId> seeds;
    for (const Node& n : a.v4->db().seeds(kSeedCount, net.env().wall_now(), rng)) seeds.insert(n.id);
    EXPECT_TRUE(seeds.contains(c.id()));

    c.stop();
    const auto stopped = net.env().now();
    ASSERT_TRUE(net.run_for(2h, [&] { return !a.v4->table().find(c.id()) && !a.v5->table().find(c.id()); }));
    // Gone within the slow list's checks (a miss divides the count by 3): minutes, not hours.
    EXPECT_LT(net.env().now() - stopped, 30min);
    EXPECT_GE(a.v4->table_stats().evictions.load(), 1u);
    EXPECT_GE(a.v5->table_stats().evictions.load(), 1u);
    EXPECT_TRUE(a.v4->table().find(b.id()));
    EXPECT_TRUE(a.v5->table().find(b.id()));
}

// Refresh runs again after a random delay in [interval/2, interval), as geth's: four lookups each.
TEST(Kademlia, RefreshRepeatsWithinItsRandomisedInterval) {
    VirtualNet net;
    VNode& b = net.add({true, true});
    V4Config c4;
    c4.refresh_interval = 60s;
    c4.bootnodes = {b.node()};
    V5Config c5;
    c5.refresh_interval = 60s;
    c5.bootnodes = c4.bootnodes;
    VNode& a = net.add({true, true}, c4, c5);
    net.start(a);
    net.start(b);
    net.run_for(10min);
    // 600 s at 30..60 s apart: between 10 and 20 refreshes after the first, 4 lookups each.
    for (const auto* stats : {&a.v4->table_stats(), &a.v5->table_stats()}) {
        EXPECT_GE(stats->lookups.load(), 4u * 11);
        EXPECT_LE(stats->lookups.load(), 4u * 21);
    }
}

// D1: a discv5 first contact takes two round trips (random packet, WHOAREYOU, handshake, answer).
// With 400 ms round trips that is 800 ms, over the 700 ms response timeout: the deadline starts
// again when the handshake goes out (as geth's), so the peer is learned.
TEST(Kademlia, DiscV5PeerFourHundredMillisecondsAwayIsLearned) {
    SimNetworkConfig slow;
    slow.median_latency = slow.min_latency = slow.max_latency = 200ms;
    slow.jitter = 0ms;
    VirtualNet net(1, slow);
    VNode& a = net.add({false, true});
    VNode& b = net.add({false, true});
    net.start(a);
    net.start(b);
    const auto started = net.env().now();
    auto pong = net.run(a.v5->ping(b.node()));
    ASSERT_TRUE(pong);
    EXPECT_EQ(net.env().now() - started, 800ms);
    EXPECT_TRUE(a.v5->table().find(b.id()));
    // Over the session now: one round trip.
    const auto again = net.env().now();
    ASSERT_TRUE(net.run(a.v5->ping(b.node())));
    EXPECT_EQ(net.env().now() - again, 400ms);
}

// geth's trackRequest, for both protocols through the one core: a table node that leaves
// max_findnode_failures FindNodes in a row unanswered goes when its bucket holds at least a quarter
// of a bucket; in a nearly empty bucket it stays (a small network keeps its last contacts).
TEST(Kademlia, FindNodeFailuresEvictOnlyFromBucketsThatCanSpareIt) {
    for (const bool v5 : {false, true}) {
        SCOPED_TRACE(v5 ? "discv5" : "discv4");
        VirtualNet net;
        // Revalidation would also find the silent node out: not within this test.
        V4Config c4;
        c4.max_findnode_failures = 2;
        c4.revalidate_interval = 1h;
        V5Config c5;
        c5.max_findnode_failures = 2;
        c5.revalidate_interval = 1h;
        VNode& a = net.add({true, true}, c4, c5);
        net.start(a);
        const auto at256 = [&](const NodeId& id) { return log_distance(id, a.id()) == 256; };
        const auto ask = [&](VNode& x) -> bool {
            if (v5) return net.run(a.v5->find_node(x.node(), std::vector<unsigned>{256})).has_value();
            return net.run(a.v4->find_node(x.node(), x.key.public_key().bytes())).has_value();
        };
        const auto held = [&](VNode& x) { return (v5 ? a.v5->table() : a.v4->table()).find(x.id()) != nullptr; };
        // One node in the bucket: never evicted.
        VNode& lone = net.add({true, true}, {}, {}, at256);
        net.start(lone);
        ASSERT_TRUE(ask(lone));  // bonds and answers
        if (!v5) net.run(a.v4->ping(lone.node()));
        ASSERT_TRUE(net.run_for(1min, [&] { return held(lone); })) << "never entered the table";
        lone.stop();
        for (int i = 0; i < 4; ++i) EXPECT_FALSE(ask(lone));
        EXPECT_TRUE(held(lone));
        // Four more (a quarter of 16): now the silent one goes after two failures.
        for (int i = 0; i < 4; ++i) {
            VNode& x = net.add({true, true}, {}, {}, at256);
            net.start(x);
            if (v5) {
                ASSERT_TRUE(net.run(a.v5->ping(x.node())));
            } else {
                ASSERT_TRUE(net.run(a.v4->ping(x.node())));
                // discv4 adds a node that answered a ping only when it pings us: it does, to bond.
                ASSERT_TRUE(net.run_for(10s, [&] { return held(x); }));
            }
        }
        EXPECT_FALSE(ask(lone));
        EXPECT_FALSE(held(lone));
    }
}

// The same seed gives the same network: every node's table holds the same nodes, run after run.
TEST(Kademlia, SameSeedSameTables) {
    const auto tables = [](uint64_t seed) {
        SimNetworkConfig cfg;
        cfg.loss = 0.05;
        cfg.seed = seed;
        VirtualNet net(seed, cfg);
        std::vector<VNode*> nodes;
        VNode& boot = net.add({true, true});
        nodes.push_back(&boot);
        for (int i = 0; i < 24; ++i) {
            V4Config c4;
            c4.bootnodes = {boot.node()};
            V5Config c5;
            c5.bootnodes = c4.bootnodes;
            nodes.push_back(&net.add({true, i % 3 != 0}, c4, c5));
        }
        for (VNode* n : nodes) net.start(*n);
        net.run_for(5min);
        std::vector<std::set<NodeId>> out;
        for (VNode* n : nodes) {
            out.push_back(table_ids(n->v4->table()));
            if (n->v5) out.push_back(table_ids(n->v5->table()));
        }
        return out;
    };
    const auto first = tables(7);
    EXPECT_EQ(first, tables(7));
    // And the tables are not trivially empty.
    size_t total = 0;
    for (const auto& t : first) total += t.size();
    EXPECT_GT(total, first.size() * 10);
}

}  // namespace
}  // namespace headerd::disc
