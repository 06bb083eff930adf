// The discv5.1 service on loopback, on the socket of a discv4 service as in geth: handshakes both
// ways, PING/PONG, FINDNODE (our record at distance 0, only the asked distances), TALKREQ, a
// lookup through one bootnode in a 6-node network, and what is dropped: unsolicited NODES, a
// WHOAREYOU nobody waits for, an oversized datagram; a NODES `total` of 255 is capped at 5. A raw
// peer (a bare v5::Codec on its own socket) plays the misbehaving side. Every socket is on
// 127.0.0.1 with a port the kernel picks; the test's loops end at a deadline.

#include "disc/v5_udp.hpp"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_future.hpp>

#include "core/awaitable.hpp"
#include "disc/udp_test_util.hpp"
#include "disc/v4_udp.hpp"

namespace headerd::disc {
namespace {

namespace asio = boost::asio;
using asio::ip::udp;
using namespace std::chrono_literals;

const auto kLoopback = asio::ip::make_address("127.0.0.1");

V5Config fast_config() {
    V5Config c;
    c.response_timeout = 500ms;
    return c;
}

Enr loopback_record(const rlpx::PrivateKey& key, uint16_t port, uint64_t seq = 2) {
    return EnrBuilder(seq).ip({127, 0, 0, 1}).udp(port).tcp(port).sign(key).value();
}

// A discv4 service owning the socket and a discv5 service sharing it.
struct TestNode {
    rlpx::PrivateKey key = rlpx::PrivateKey::generate().value();
    std::shared_ptr<V4Service> v4;
    std::shared_ptr<V5Service> v5;

    TestNode(asio::io_context& io, V5Config config = fast_config(), NodeDb db = NodeDb{}) {
        auto placeholder = EnrBuilder(1).ip({127, 0, 0, 1}).sign(key).value();
        v4 = std::make_shared<V4Service>(io, key, placeholder, std::move(db), V4Config{});
        EXPECT_TRUE(v4->bind(udp::endpoint(kLoopback, 0)));
        const Enr record = loopback_record(key, port());
        v4->set_record(record);
        v5 = std::make_shared<V5Service>(io, key, record, nullptr, std::move(config));
        share_socket(v4, v5);
        v4->start();
    }
    ~TestNode() {
        v5->stop();
        v4->stop();
    }
    uint16_t port() const { return v4->local_endpoint().port(); }
    Node node() const { return *Node::from_enr(v5->record()); }
};

using test::run;
using test::run_until;

// A bare codec on its own socket, driven by the test: it sends what the test makes and keeps what
// it receives.
// Calls f(datagram, sender) for each datagram `socket` receives, until it is closed.
template <class F>
asio::awaitable<void> each_datagram(udp::socket& socket, F f) {
    std::array<uint8_t, 2048> buffer;
    udp::endpoint from;
    for (;;) {
        auto [ec, n] = co_await socket.async_receive_from(asio::buffer(buffer), from, kTuple);
        if (ec == asio::error::operation_aborted || !socket.is_open()) co_return;
        if (!ec) f(ByteView{buffer.data(), n}, from);
    }
}

struct RawPeer {
    rlpx::PrivateKey key = rlpx::PrivateKey::generate().value();
    udp::socket socket;
    std::optional<v5::Codec> codec;
    std::vector<std::pair<v5::Decoded, udp::endpoint>> received;
    size_t datagrams{0};
    // Called for each decoded packet; the default answers Unknown with WHOAREYOU.
    std::function<void(const v5::Decoded&, const udp::endpoint&)> on_packet;

    explicit RawPeer(asio::io_context& io) : socket(io, udp::endpoint(kLoopback, 0)) {
        codec.emplace(key, loopback_record(key, socket.local_endpoint().port()));
        asio::co_spawn(io, read_loop(), asio::detached);
    }
    ~RawPeer() {
        boost::system::error_code ec;
        socket.close(ec);
    }
    Node node() const { return *Node::from_enr(codec->local_record()); }
    Bytes last_sent;
    void send(const udp::endpoint& to, ByteView datagram) {
        last_sent.assign(datagram.begin(), datagram.end());
        socket.send_to(asio::buffer(datagram.data(), datagram.size()), to);
    }
    asio::awaitable<void> read_loop() {
        co_await each_datagram(socket, [this](ByteView datagram, const udp::endpoint& from) {
            ++datagrams;
            auto d = codec->decode(datagram, v5::Endpoint::ipv4({127, 0, 0, 1}, from.port()));
            if (!d) return;
            if (on_packet) on_packet(*d, from);
            if (const auto* u = std::get_if<v5::Unknown>(&d->packet)) {
                auto w = codec->encode_whoareyou(d->src_id, v5::Endpoint::ipv4({127, 0, 0, 1}, from.port()), u->nonce,
                                                 nullptr);
                if (w) send(from, w->datagram);
            }
            received.emplace_back(std::move(*d), from);
        });
    }
    template <class T>
    size_t count() const {
        return static_cast<size_t>(std::count_if(received.begin(), received.end(), [](const auto& r) {
            const auto* m = std::get_if<v5::Message>(&r.first.packet);
            return m && std::holds_alternative<T>(*m);
        }));
    }
};

uint64_t count(const std::atomic<uint64_t>& c) { return c.load(); }
uint64_t dropped(const TestNode& n, V5Drop why) { return n.v5->stats().dropped[static_cast<size_t>(why)].load(); }

// Makes `peer` send `target` a random packet; the WHOAREYOU it answers with, if one came.
std::optional<v5::Whoareyou> raw_challenge(asio::io_context& io, RawPeer& peer, const TestNode& target,
                                           const v5::Message& m) {
    const auto dest = v5::Endpoint::ipv4({127, 0, 0, 1}, target.port());
    auto first = peer.codec->encode(target.v5->id(), dest, m);
    if (!first) return std::nullopt;
    peer.send({kLoopback, target.port()}, first->datagram);
    std::optional<v5::Whoareyou> challenge;
    run_until(io, [&] {
        for (const auto& r : peer.received) {
            if (const auto* w = std::get_if<v5::Whoareyou>(&r.first.packet)) challenge = *w;
        }
        return challenge.has_value();
    });
    return challenge;
}

// Makes `peer` send the handshake answering `challenge` with `m`.
void raw_handshake_packet(RawPeer& peer, const TestNode& target, const v5::Message& m, const v5::Whoareyou& challenge) {
    const auto dest = v5::Endpoint::ipv4({127, 0, 0, 1}, target.port());
    auto hs = peer.codec->encode_handshake(target.v5->id(), dest, m, challenge, target.v5->record());
    ASSERT_TRUE(hs);
    peer.send({kLoopback, target.port()}, hs->datagram);
}

// Makes `peer` complete a handshake with `target` through a PING; true when the PONG came.
bool raw_handshake(asio::io_context& io, RawPeer& peer, const TestNode& target) {
    const v5::Message ping = v5::Ping{Bytes{1}, 1};
    auto challenge = raw_challenge(io, peer, target, ping);
    if (!challenge) return false;
    raw_handshake_packet(peer, target, ping, *challenge);
    return run_until(io, [&] { return peer.count<v5::Pong>() > 0; });
}

// `n` records of fresh keys (on 127.0.0.1, ports from 30000) at distance 256 from `of`: half of
// all ids are.
std::vector<Bytes> records_at_256(const NodeId& of, size_t n) {
    std::vector<Bytes> records;
    while (records.size() < n) {
        auto k = rlpx::PrivateKey::generate().value();
        auto r = loopback_record(k, static_cast<uint16_t>(30000 + records.size()));
        if (log_distance(r.node_id(), of) == 256) records.emplace_back(r.encoded().begin(), r.encoded().end());
    }
    return records;
}

// A link with latency, on a socket of its own: what the first sender (the client) sends goes on to
// `target` at once, what target sends back reaches the client `delay` later. A node reached
// through it is at the link's port.
struct SlowLink {
    udp::socket socket;
    udp::endpoint target;
    std::chrono::milliseconds delay;
    udp::endpoint client;
    std::vector<std::unique_ptr<asio::steady_timer>> timers;

    SlowLink(asio::io_context& io, udp::endpoint to, std::chrono::milliseconds d)
        : socket(io, udp::endpoint(kLoopback, 0)), target(to), delay(d) {
        asio::co_spawn(io, relay(), asio::detached);
    }
    ~SlowLink() {
        for (auto& t : timers) t->cancel();
        boost::system::error_code ec;
        socket.close(ec);
    }
    uint16_t port() const { return socket.local_endpoint().port(); }
    asio::awaitable<void> relay() {
        co_await each_datagram(socket, [this](ByteView datagram, const udp::endpoint& from) {
            auto data = std::make_shared<Bytes>(datagram.begin(), datagram.end());
            if (from != target) {
                client = from;
                socket.send_to(asio::buffer(*data), target);
                return;
            }
            auto& timer = timers.emplace_back(std::make_unique<asio::steady_timer>(socket.get_executor(), delay));
            timer->async_wait([this, data, to = client](boost::system::error_code e) {
                if (!e) socket.send_to(asio::buffer(*data), to);
            });
        });
    }
};

TEST(V5Service, HandshakeBothWaysAndPingPong) {
    asio::io_context io;
    TestNode a(io), b(io);
    const auto started = std::chrono::steady_clock::now();
    auto pong = run(io, a.v5->ping(b.node()));
    ASSERT_TRUE(pong);
    EXPECT_EQ(pong->enr_seq, 2u);
    EXPECT_EQ(pong->recipient, v5::Endpoint::ipv4({127, 0, 0, 1}, a.port()));  // where a's packet came from
    EXPECT_LT(std::chrono::steady_clock::now() - started, 500ms);
    EXPECT_EQ(count(a.v5->stats().handshakes_sent), 1u);
    EXPECT_EQ(count(b.v5->stats().handshakes_accepted), 1u);
    EXPECT_EQ(count(b.v5->stats().whoareyou_out), 1u);
    // Both have the other in their table: b from the handshake, a from the answer.
    EXPECT_TRUE(a.v5->table().find(b.v5->id()));
    EXPECT_TRUE(b.v5->table().find(a.v5->id()));
    // The session serves further requests without a new handshake.
    ASSERT_TRUE(run(io, a.v5->ping(b.node())));
    EXPECT_EQ(count(a.v5->stats().handshakes_sent), 1u);

    // b asks a over the session a made: no new handshake either way.
    ASSERT_TRUE(run(io, b.v5->ping(a.node())));
    EXPECT_EQ(count(b.v5->stats().handshakes_sent), 0u);
    EXPECT_EQ(count(a.v5->stats().handshakes_accepted), 0u);

    // b as the initiator with a new node c; c then answers and asks over that session.
    TestNode c(io);
    ASSERT_TRUE(run(io, b.v5->ping(c.node())));
    ASSERT_TRUE(run(io, c.v5->ping(b.node())));
    EXPECT_EQ(count(b.v5->stats().handshakes_sent), 1u);
    EXPECT_EQ(count(c.v5->stats().handshakes_accepted), 1u);
    EXPECT_EQ(count(c.v5->stats().handshakes_sent), 0u);
    EXPECT_EQ(count(b.v5->stats().packets_in[static_cast<size_t>(v5::MessageType::kPing)]), 3u);
    EXPECT_EQ(count(a.v5->stats().packets_in[static_cast<size_t>(v5::MessageType::kPong)]), 2u);
}

TEST(V5Service, ConcurrentRequestsShareOneHandshake) {
    asio::io_context io;
    TestNode a(io), b(io);
    auto p1 = asio::co_spawn(io, a.v5->ping(b.node()), asio::use_future);
    auto p2 = asio::co_spawn(io, a.v5->talk_req(b.node(), Bytes{'x'}, Bytes{1, 2}), asio::use_future);
    auto p3 = asio::co_spawn(io, a.v5->find_node(b.node(), {0}), asio::use_future);
    run_until(io, [&] {
        return p1.wait_for(0s) == std::future_status::ready && p2.wait_for(0s) == std::future_status::ready &&
               p3.wait_for(0s) == std::future_status::ready;
    });
    EXPECT_TRUE(p1.get());
    EXPECT_TRUE(p2.get());
    EXPECT_TRUE(p3.get());
    EXPECT_EQ(count(a.v5->stats().handshakes_sent), 1u);
    EXPECT_EQ(count(b.v5->stats().handshakes_accepted), 1u);
}

TEST(V5Service, FindNodeDistanceZeroIsOurRecord) {
    asio::io_context io;
    TestNode a(io), b(io);
    auto nodes = run(io, a.v5->find_node(b.node(), {0}));
    ASSERT_TRUE(nodes);
    ASSERT_EQ(nodes->size(), 1u);
    EXPECT_EQ(nodes->front().id, b.v5->id());
    ASSERT_TRUE(nodes->front().enr);
    EXPECT_EQ(Bytes(nodes->front().enr->encoded().begin(), nodes->front().enr->encoded().end()),
              Bytes(b.v5->record().encoded().begin(), b.v5->record().encoded().end()));
}

TEST(V5Service, FindNodeAnswersTheAskedDistancesOnly) {
    asio::io_context io;
    TestNode a(io), b(io);
    // Twelve nodes that hand-shake with b, so b's table holds them (and a).
    std::vector<std::unique_ptr<TestNode>> others;
    for (int i = 0; i < 12; ++i) {
        others.push_back(std::make_unique<TestNode>(io));
        ASSERT_TRUE(run(io, others.back()->v5->ping(b.node())));
    }
    ASSERT_EQ(b.v5->table().size(), 12u);
    ASSERT_TRUE(run(io, a.v5->ping(b.node())));
    std::map<unsigned, std::set<NodeId>> by_distance;
    for (const Node& n : b.v5->table().nodes()) {
        by_distance[static_cast<unsigned>(log_distance(n.id, b.v5->id()))].insert(n.id);
    }
    for (const auto& [distance, ids] : by_distance) {
        // A repeated distance and one above 256 are ignored.
        auto nodes = run(io, a.v5->find_node(b.node(), {distance, distance, 300}));
        ASSERT_TRUE(nodes);
        std::set<NodeId> got;
        for (const Node& n : *nodes) got.insert(n.id);
        EXPECT_EQ(got, ids) << "distance " << distance;
    }
    // Every distance at once: all 13 records, more than 1000 bytes, so more than one NODES packet.
    std::vector<unsigned> all;
    size_t bytes = 0;
    for (const auto& [distance, ids] : by_distance) all.push_back(distance);
    for (const Node& n : b.v5->table().nodes()) bytes += n.enr->encoded().size();
    ASSERT_GT(bytes, 1000u);
    const auto nodes_in = [&] { return count(a.v5->stats().packets_in[static_cast<size_t>(v5::MessageType::kNodes)]); };
    const uint64_t before = nodes_in();
    auto everyone = run(io, a.v5->find_node(b.node(), all));
    ASSERT_TRUE(everyone);
    EXPECT_EQ(everyone->size(), 13u);
    EXPECT_GE(nodes_in() - before, 2u);
    // A distance nobody is at: an empty answer, one NODES packet.
    unsigned empty = 1;
    while (by_distance.count(empty)) ++empty;
    auto nodes = run(io, a.v5->find_node(b.node(), {empty}));
    ASSERT_TRUE(nodes);
    EXPECT_TRUE(nodes->empty());
}

TEST(V5Service, FindNodePassesOnlyLiveNodes) {
    asio::io_context io;
    TestNode a(io), b(io), c(io), x(io);
    ASSERT_TRUE(run(io, x.v5->ping(a.node())));  // a has x, live
    x.v5->stop();                                // x answers nothing from now on
    ASSERT_TRUE(run(io, b.v5->ping(a.node())));  // b has a, live
    // b learns x from a during a lookup; x does not answer b's query, so it stays unverified.
    run(io, b.v5->lookup(x.v5->id()));
    const Table::Entry* e = b.v5->table().find(x.v5->id());
    ASSERT_TRUE(e);
    EXPECT_EQ(e->liveness_checks, 0u);
    const auto dx = static_cast<unsigned>(log_distance(x.v5->id(), b.v5->id()));
    const auto da = static_cast<unsigned>(log_distance(a.v5->id(), b.v5->id()));
    auto nodes = run(io, c.v5->find_node(b.node(), {dx, da}));
    ASSERT_TRUE(nodes);
    std::set<NodeId> got;
    for (const Node& n : *nodes) got.insert(n.id);
    EXPECT_TRUE(got.count(a.v5->id()));   // live: it answered b
    EXPECT_FALSE(got.count(x.v5->id()));  // only named by a lookup (c, live too, may be at dx or da)
}

TEST(V5Service, RevalidationDropsDeadNodesAndFetchesNewerRecords) {
    asio::io_context io;
    V5Config config = fast_config();
    config.revalidate_interval = 50ms;
    config.response_timeout = 200ms;
    TestNode a(io, config), b(io), c(io);
    a.v5->start();
    ASSERT_TRUE(run(io, a.v5->ping(b.node())));
    ASSERT_TRUE(run(io, a.v5->ping(c.node())));
    b.v5->stop();                                           // b answers nothing from now on
    c.v5->set_record(loopback_record(c.key, c.port(), 5));  // c re-signs its record
    const auto c_seq = [&] {
        const Table::Entry* e = a.v5->table().find(c.v5->id());
        return e && e->node.enr ? e->node.enr->seq() : 0;
    };
    EXPECT_TRUE(run_until(
        io, [&] { return !a.v5->table().find(b.v5->id()) && c_seq() == 5; }, 5s));
    EXPECT_EQ(c_seq(), 5u);
    EXPECT_FALSE(a.v5->table().find(b.v5->id()));
    EXPECT_GE(a.v5->table().find(c.v5->id())->liveness_checks, 2u);  // the handshake answer and revalidations
}

// As discv4 (and geth): a table node that leaves max_findnode_failures FINDNODEs in a row unanswered
// goes, when its bucket holds at least a quarter of a bucket's worth of nodes.
TEST(V5Service, NodeFailingFindNodesIsEvicted) {
    asio::io_context io;
    V5Config config = fast_config();
    config.max_findnode_failures = 2;
    config.response_timeout = 200ms;
    TestNode a(io, config);
    // Five live nodes at distance 256 from a (half of all ids are): a bucket that may lose one.
    std::vector<std::unique_ptr<TestNode>> at256;
    while (at256.size() < 5) {
        auto n = std::make_unique<TestNode>(io);
        if (log_distance(n->v5->id(), a.v5->id()) != 256) continue;
        ASSERT_TRUE(run(io, a.v5->ping(n->node())));
        at256.push_back(std::move(n));
    }
    TestNode& x = *at256.front();
    x.v5->stop();  // x answers nothing from now on
    const std::vector<unsigned> d256{256};
    EXPECT_FALSE(run(io, a.v5->find_node(x.node(), d256)));
    EXPECT_TRUE(a.v5->table().find(x.v5->id()));  // one failure: kept
    EXPECT_FALSE(run(io, a.v5->find_node(x.node(), d256)));
    EXPECT_FALSE(a.v5->table().find(x.v5->id()));  // two in a row: gone
    // A node that answers stays.
    TestNode& y = *at256.back();
    EXPECT_TRUE(run(io, a.v5->find_node(y.node(), d256)));
    EXPECT_TRUE(a.v5->table().find(y.v5->id()));
}

// S7, discv5 too: nodes that passed more than 5 revalidations are kept in the node database (the
// one discv4 owns, as geth shares one), and a restart without bootnodes rejoins from them.
TEST(V5Service, RestartRejoinsFromTheNodeDatabase) {
    asio::io_context io;
    V5Config config = fast_config();
    config.revalidate_interval = 30ms;
    TestNode b(io);
    NodeDb saved;
    {
        TestNode a(io, config);
        a.v5->start();
        ASSERT_TRUE(run(io, a.v5->ping(b.node())));
        ASSERT_TRUE(run_until(io, [&] {
            const auto* r = a.v4->db().find(b.v5->id());
            return r && r->liveness > 5 && r->node.enr;
        }));
        saved = a.v4->db();
    }
    TestNode again(io, fast_config(), saved);  // no bootnodes
    again.v5->start();
    EXPECT_TRUE(run_until(io, [&] { return again.v5->table().find(b.v5->id()) != nullptr; }));
}

TEST(V5Service, TalkRequestGetsAnEmptyAnswer) {
    asio::io_context io;
    TestNode a(io), b(io);
    auto response = run(io, a.v5->talk_req(b.node(), Bytes{'e', 't', 'h'}, Bytes{1, 2, 3}));
    ASSERT_TRUE(response);
    EXPECT_TRUE(response->empty());
    EXPECT_EQ(count(b.v5->stats().packets_in[static_cast<size_t>(v5::MessageType::kTalkReq)]), 1u);
}

TEST(V5Service, LookupThroughOneBootnodeFindsTheNetwork) {
    asio::io_context io;
    TestNode boot(io);
    V5Config config = fast_config();
    config.bootnodes.push_back(boot.node());
    std::vector<std::unique_ptr<TestNode>> nodes;
    for (int i = 0; i < 5; ++i) nodes.push_back(std::make_unique<TestNode>(io, config));
    // Each bootstraps: its records go to the bootnode through the handshakes.
    for (auto& n : nodes) run(io, n->v5->refresh());
    for (auto& n : nodes) EXPECT_TRUE(n->v5->bootstrapped());
    EXPECT_EQ(boot.v5->table().size(), 5u);
    // The first node looks every other one up.
    std::set<NodeId> found;
    auto& first = *nodes.front();
    for (auto& n : nodes) {
        if (n.get() == &first) continue;
        for (const Node& f : run(io, first.v5->lookup(n->v5->id()))) found.insert(f.id);
    }
    for (const Node& f : run(io, first.v5->lookup(first.v5->id()))) found.insert(f.id);
    std::set<NodeId> expected{boot.v5->id()};
    for (auto& n : nodes) {
        if (n.get() != &first) expected.insert(n->v5->id());
    }
    EXPECT_EQ(found, expected);
    for (const NodeId& id : expected) EXPECT_TRUE(first.v5->table().find(id));
    EXPECT_GE(count(first.v5->table_stats().lookups), 5u);
}

TEST(V5Service, UnsolicitedNodesDropped) {
    asio::io_context io;
    TestNode a(io);
    RawPeer peer(io);
    ASSERT_TRUE(raw_handshake(io, peer, a));
    EXPECT_EQ(count(a.v5->stats().handshakes_accepted), 1u);
    EXPECT_TRUE(a.v5->table().find(peer.node().id));
    const auto dest = v5::Endpoint::ipv4({127, 0, 0, 1}, a.port());
    const auto rec = peer.codec->local_record().encoded();
    auto nodes = peer.codec->encode(a.v5->id(), dest, v5::Nodes{Bytes{7}, 1, {Bytes(rec.begin(), rec.end())}});
    ASSERT_TRUE(nodes);
    ASSERT_FALSE(nodes->random_packet);
    peer.send({kLoopback, a.port()}, nodes->datagram);
    EXPECT_TRUE(run_until(io, [&] { return dropped(a, V5Drop::kUnsolicited) == 1; }));
    EXPECT_EQ(count(a.v5->stats().packets_in[static_cast<size_t>(v5::MessageType::kNodes)]), 1u);
}

TEST(V5Service, ReplayedHandshakeCountsAsFailed) {
    asio::io_context io;
    TestNode a(io);
    RawPeer peer(io);
    ASSERT_TRUE(raw_handshake(io, peer, a));
    const Bytes handshake = peer.last_sent;
    peer.send({kLoopback, a.port()}, handshake);  // its challenge is used up
    const auto& failed = a.v5->stats().handshakes_failed[static_cast<size_t>(v5::WireError::kUnexpectedHandshake)];
    EXPECT_TRUE(run_until(io, [&] { return failed.load() == 1; }));
    EXPECT_EQ(count(a.v5->stats().handshakes_accepted), 1u);
    EXPECT_EQ(peer.count<v5::Pong>(), 1u);  // the replay is not answered
}

TEST(V5Service, NodesTotalIsCappedAtFive) {
    asio::io_context io;
    V5Config config = fast_config();
    config.response_timeout = 3s;  // a capped answer ends the request long before this
    TestNode a(io, config);
    RawPeer peer(io);
    // Six records at distance 256 from the peer, one per NODES packet.
    const std::vector<Bytes> records = records_at_256(peer.node().id, 6);
    peer.on_packet = [&](const v5::Decoded& d, const udp::endpoint& from) {
        const auto* m = std::get_if<v5::Message>(&d.packet);
        if (!m || !std::holds_alternative<v5::FindNode>(*m)) return;
        const auto dest = v5::Endpoint::ipv4({127, 0, 0, 1}, from.port());
        for (const Bytes& r : records) {
            auto e = peer.codec->encode(d.src_id, dest, v5::Nodes{v5::request_id(*m), 255, {r}});
            if (e) peer.send(from, e->datagram);
        }
    };
    const auto started = std::chrono::steady_clock::now();
    auto nodes = run(io, a.v5->find_node(peer.node(), {256}));
    ASSERT_TRUE(nodes);
    EXPECT_EQ(nodes->size(), 5u);  // the sixth packet came after the request was done
    EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
    EXPECT_TRUE(run_until(
        io, [&] { return dropped(a, V5Drop::kUnsolicited) == 1; }, 1s));
}

TEST(V5Service, WhoareyouWithoutRequestIgnored) {
    asio::io_context io;
    TestNode a(io);
    RawPeer peer(io);
    v5::Nonce nonce{};
    nonce[0] = 9;
    auto w = peer.codec->encode_whoareyou(a.v5->id(), v5::Endpoint::ipv4({127, 0, 0, 1}, a.port()), nonce, nullptr);
    ASSERT_TRUE(w);
    peer.send({kLoopback, a.port()}, w->datagram);
    EXPECT_TRUE(run_until(io, [&] { return dropped(a, V5Drop::kUnexpectedWhoareyou) == 1; }));
    run_until(
        io, [] { return false; }, 100ms);
    EXPECT_EQ(peer.datagrams, 0u);
    EXPECT_EQ(count(a.v5->stats().handshakes_sent), 0u);
}

TEST(V5Service, OversizedDatagramDropped) {
    asio::io_context io;
    TestNode a(io);
    RawPeer peer(io);
    const Bytes big(1281, 0x42);
    // On the shared socket discv4 refuses it first; handed to discv5 directly, it refuses it too.
    peer.send({kLoopback, a.port()}, big);
    EXPECT_TRUE(run_until(io, [&] { return a.v4->stats().dropped[static_cast<size_t>(V4Drop::kTooBig)].load() == 1; }));
    a.v5->handle(big, {kLoopback, peer.socket.local_endpoint().port()});
    EXPECT_EQ(dropped(a, V5Drop::kTooBig), 1u);
    run_until(
        io, [] { return false; }, 100ms);
    EXPECT_EQ(peer.datagrams, 0u);
}

TEST(V5Service, SlowFirstContactAnsweredWithinTheRearmedDeadline) {
    asio::io_context io;
    const V5Config config = fast_config();
    const auto timeout = config.response_timeout;
    TestNode a(io, config), b(io, config);
    // b's WHOAREYOU and then its PONG each reach a 0.6 response_timeout late.
    SlowLink link(io, {kLoopback, b.port()}, timeout * 6 / 10);
    Node via = b.node();
    via.udp = link.port();
    const auto started = std::chrono::steady_clock::now();
    auto pong = run(io, a.v5->ping(via));
    const auto took = std::chrono::steady_clock::now() - started;
    ASSERT_TRUE(pong);
    EXPECT_EQ(count(a.v5->stats().handshakes_sent), 1u);
    EXPECT_EQ(count(a.v5->stats().request_timeouts), 0u);
    // Two delays, more than one response_timeout: only the deadline re-armed when the handshake
    // went out let the PONG count.
    EXPECT_GT(took, timeout);
    // Over the session one delay: well within one deadline.
    ASSERT_TRUE(run(io, a.v5->ping(via)));
    EXPECT_EQ(count(a.v5->stats().handshakes_sent), 1u);
}

TEST(V5Service, EachNodesPacketRearmsTheDeadline) {
    asio::io_context io;
    const V5Config config = fast_config();
    const auto delay = config.response_timeout * 6 / 10;
    TestNode a(io, config);
    RawPeer peer(io);
    // Three NODES packets, the i-th sent i * 0.6 response_timeout after the FINDNODE came.
    const std::vector<Bytes> records = records_at_256(peer.node().id, 3);
    std::vector<std::unique_ptr<asio::steady_timer>> timers;
    peer.on_packet = [&](const v5::Decoded& d, const udp::endpoint& from) {
        const auto* m = std::get_if<v5::Message>(&d.packet);
        if (!m || !std::holds_alternative<v5::FindNode>(*m)) return;
        const auto dest = v5::Endpoint::ipv4({127, 0, 0, 1}, from.port());
        for (size_t i = 0; i < records.size(); ++i) {
            auto e = peer.codec->encode(d.src_id, dest, v5::Nodes{v5::request_id(*m), 3, {records[i]}});
            ASSERT_TRUE(e);
            auto& t = timers.emplace_back(std::make_unique<asio::steady_timer>(io, delay * static_cast<int>(i + 1)));
            t->async_wait([&peer, from, datagram = e->datagram](boost::system::error_code ec) {
                if (!ec) peer.send(from, datagram);
            });
        }
    };
    const auto started = std::chrono::steady_clock::now();
    auto nodes = run(io, a.v5->find_node(peer.node(), {256}));
    const auto took = std::chrono::steady_clock::now() - started;
    ASSERT_TRUE(nodes);
    // All three: the first deadline alone would have ended the request after the first packet.
    EXPECT_EQ(nodes->size(), 3u);
    EXPECT_GT(took, config.response_timeout);
    EXPECT_EQ(count(a.v5->stats().request_timeouts), 0u);
}

TEST(V5Service, JunkFloodGetsAtMostTheRateLimitOfChallenges) {
    asio::io_context io;
    V5Config config = fast_config();
    config.rate_limit.per_ip_rate = 50;
    config.rate_limit.per_ip_burst = 100;
    TestNode a(io, config);
    RawPeer junk(io);
    // A random packet (no session) that the flood sends again from ever new source ids: the mask
    // is a stream cipher, so XOR-ing the masked src-id with (old ^ new) makes another sender's.
    const auto dest = v5::Endpoint::ipv4({127, 0, 0, 1}, a.port());
    const Bytes packet = junk.codec->encode(a.v5->id(), dest, v5::Ping{Bytes{1}, 1}).value().datagram;
    const Hash32 old_id = junk.codec->local_id();
    const auto handled = [&] { return count(a.v5->stats().bytes_in) / packet.size(); };
    constexpr size_t kFlood = 20000;
    std::mt19937_64 rng(1);
    const auto started = std::chrono::steady_clock::now();
    for (size_t sent = 0; sent < kFlood;) {
        // In batches the socket's receive buffer holds; a datagram the kernel dropped anyway is
        // not waited for past the deadline.
        for (size_t i = 0; i < 50 && sent < kFlood; ++i, ++sent) {
            Bytes p = packet;
            for (size_t j = 0; j < old_id.size(); ++j)
                p[v5::kHeaderStart + j] ^= static_cast<uint8_t>(old_id[j] ^ rng());
            junk.send({kLoopback, a.port()}, p);
        }
        run_until(
            io, [&] { return handled() >= sent; }, 500ms, 1ms);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const uint64_t challenges = count(a.v5->stats().whoareyou_out);
    run_until(
        io, [&] { return junk.datagrams >= challenges; }, 1s);
    EXPECT_GT(handled(), kFlood / 2);  // most of it reached the service
    // At most the bucket's burst and what it refilled while the flood lasted.
    EXPECT_LE(static_cast<double>(challenges), 100 + 50 * seconds + 1) << seconds << " s";
    EXPECT_EQ(junk.datagrams, challenges);
    EXPECT_EQ(dropped(a, V5Drop::kRateLimited), handled() - challenges);
    EXPECT_LE(count(a.v5->stats().challenges), challenges);

    // Another socket's PING is still answered: the bucket of 127.0.0.1, which the flood emptied,
    // has a token again within 20 ms, so a retry at most.
    TestNode b(io);
    std::optional<v5::Pong> pong;
    for (int i = 0; i < 3 && !pong; ++i) pong = run(io, b.v5->ping(a.node()));
    EXPECT_TRUE(pong);
}

TEST(V5Service, HandshakesOverTheLimitDroppedUncheckedButOurRequestsAnswered) {
    asio::io_context io;
    V5Config config = fast_config();
    // One token per source IP, refilled in hours: the first WHOAREYOU takes it.
    config.rate_limit.per_ip_rate = 1e-4;
    config.rate_limit.per_ip_burst = 1;
    TestNode a(io, config);
    RawPeer peer(io);
    const v5::Message ping = v5::Ping{Bytes{1}, 1};
    auto challenge = raw_challenge(io, peer, a, ping);
    ASSERT_TRUE(challenge);
    raw_handshake_packet(peer, a, ping, *challenge);
    EXPECT_TRUE(run_until(io, [&] { return dropped(a, V5Drop::kRateLimited) == 1; }));
    // Not looked at: neither accepted nor failed, and its challenge still pending.
    EXPECT_EQ(count(a.v5->stats().handshakes_accepted), 0u);
    for (const auto& failed : a.v5->stats().handshakes_failed) EXPECT_EQ(count(failed), 0u);
    EXPECT_EQ(count(a.v5->stats().challenges), 1u);
    // Another random packet from 127.0.0.1 gets no WHOAREYOU.
    RawPeer other(io);
    const auto dest = v5::Endpoint::ipv4({127, 0, 0, 1}, a.port());
    other.send({kLoopback, a.port()}, other.codec->encode(a.v5->id(), dest, ping).value().datagram);
    EXPECT_TRUE(run_until(io, [&] { return dropped(a, V5Drop::kRateLimited) == 2; }));
    // a's own request goes through: b's WHOAREYOU answers it, its PONG comes over the session.
    TestNode b(io);
    EXPECT_TRUE(run(io, a.v5->ping(b.node())));
    // And b's request to a uses that session: nothing to limit.
    EXPECT_TRUE(run(io, b.v5->ping(a.node())));
    EXPECT_EQ(dropped(a, V5Drop::kRateLimited), 2u);
    EXPECT_EQ(other.datagrams, 0u);
}

TEST(V5Service, StopEndsRequests) {
    asio::io_context io;
    TestNode a(io);
    auto f = asio::co_spawn(io,
                            a.v5->ping(Node::from_enr(EnrBuilder(1)
                                                          .ip({127, 0, 0, 1})
                                                          .udp(9)  // nothing listens: no answer
                                                          .sign(rlpx::PrivateKey::generate().value())
                                                          .value())
                                           .value()),
                            asio::use_future);
    io.run_for(20ms);
    a.v5->stop();
    EXPECT_TRUE(run_until(
        io, [&] { return f.wait_for(0s) == std::future_status::ready; }, 1s));
    EXPECT_FALSE(f.get());
}

}  // namespace
}  // namespace headerd::disc
