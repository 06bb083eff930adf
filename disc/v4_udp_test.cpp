// The discv4 service on loopback: three nodes find each other through one bootnode, requests
// without an endpoint proof get nothing back, replies nobody asked for and expired packets are
// dropped, and the node database brings a restarted node back without bootnodes. Every socket is
// on 127.0.0.1 with a port the kernel picks; the test's loops end at a deadline.

#include "disc/v4_udp.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <future>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_future.hpp>

#include "core/awaitable.hpp"
#include "core/keccak.hpp"
#include "disc/udp_test_util.hpp"

namespace headerd::disc::v4_udp_test {
namespace {

namespace asio = boost::asio;
using asio::ip::udp;
using namespace std::chrono_literals;

rlpx::PublicKey fresh_key() { return rlpx::PrivateKey::generate().value().public_key(); }

V4Config fast_config() {
    V4Config c;
    c.response_timeout = 300ms;
    c.bond_wait = 50ms;
    c.revalidate_interval = 200ms;
    return c;
}

using TestNode = test::V4Node;
using test::run;
using test::run_until;

TEST(V4Service, NeighborsPacketsSplitAtTwelveAndAnswerEmptyOnce) {
    EXPECT_EQ(neighbors_packets({}, 7).size(), 1u);  // an empty answer still ends the asker's wait
    EXPECT_TRUE(neighbors_packets({}, 7)[0].nodes.empty());
    std::vector<Node> nodes;
    for (uint16_t i = 0; i < 16; ++i)
        nodes.push_back(Node::from_key(fresh_key(), asio::ip::make_address("127.0.0.1"), 2000 + i, 2000 + i));
    const auto packets = neighbors_packets(nodes, 7);
    ASSERT_EQ(packets.size(), 2u);
    EXPECT_EQ(packets[0].nodes.size(), v4::kMaxNeighbors);
    EXPECT_EQ(packets[1].nodes.size(), 4u);
    EXPECT_EQ(packets[1].nodes[3].endpoint.udp, 2015);
    EXPECT_EQ(packets[0].expiration, 7u);
}

TEST(V4Service, PingPongAndEnrRequest) {
    asio::io_context io;
    TestNode a(io, fast_config());
    TestNode b(io, fast_config());
    a.service->start();
    b.service->start();
    auto pong = run(io, a.service->ping(b.node()));
    ASSERT_TRUE(pong);
    EXPECT_EQ(pong->enr_seq, 2u);
    auto record = run(io, a.service->request_enr(b.node()));
    ASSERT_TRUE(record);
    EXPECT_EQ(record->node_id(), b.node().id);
    EXPECT_EQ(record->udp(), b.node().udp);
}

// S2: an ENRResponse record whose address the address policy refuses is not taken (geth's
// RequestENR: CheckRelayAddr), nor is one older than the record held.
TEST(V4Service, RecordWithARefusedAddressOrAnOlderSeqIsNotTaken) {
    asio::io_context io;
    TestNode a(io, fast_config());
    TestNode b(io, fast_config());
    a.service->start();
    b.service->start();
    const uint16_t port = b.service->local_endpoint().port();
    for (const std::array<uint8_t, 4> ip : {std::array<uint8_t, 4>{198, 18, 0, 5}, std::array<uint8_t, 4>{0, 0, 0, 0},
                                            std::array<uint8_t, 4>{192, 0, 2, 1}}) {
        b.service->set_record(EnrBuilder(3).ip(ip).udp(port).tcp(port).sign(b.key).value());
        EXPECT_FALSE(run(io, a.service->request_enr(b.node()))) << int{ip[0]} << "." << int{ip[1]};
    }
    EXPECT_EQ(a.service->table_stats().refused_relays.load(), 3u);

    // A loopback sender may name itself on loopback; a record older than the one held is ignored.
    b.service->set_record(EnrBuilder(4).ip({127, 0, 0, 1}).udp(port).tcp(port).sign(b.key).value());
    Node held = b.node();
    held.enr = EnrBuilder(9).ip({127, 0, 0, 1}).udp(port).tcp(port).sign(b.key).value();
    const auto kept = run(io, a.service->request_enr(held));
    ASSERT_TRUE(kept);
    EXPECT_EQ(kept->seq(), 9u);
    const auto fresh = run(io, a.service->request_enr(b.node()));
    ASSERT_TRUE(fresh);
    EXPECT_EQ(fresh->seq(), 4u);
}

TEST(V4Service, LookupThroughOneBootnodeFindsEveryNode) {
    asio::io_context io;
    TestNode boot(io, fast_config());
    V4Config with_boot = fast_config();
    with_boot.bootnodes = {boot.node()};
    std::vector<std::unique_ptr<TestNode>> nodes;
    for (int i = 0; i < 6; ++i) nodes.push_back(std::make_unique<TestNode>(io, with_boot));
    boot.service->start();
    for (auto& n : nodes) n->service->start();
    // Every node ends its first refresh with every other node (and the bootnode) in its table.
    const bool all = run_until(io, [&] {
        for (auto& n : nodes) {
            if (!n->service->bootstrapped()) return false;
            for (auto& m : nodes) {
                if (n != m && !n->service->table().find(m->node().id)) return false;
            }
        }
        return true;
    });
    EXPECT_TRUE(all);
    for (auto& n : nodes) {
        EXPECT_TRUE(n->service->bootstrapped());
        EXPECT_NE(n->service->table().find(boot.node().id), nullptr);
    }
}

// A raw socket that sends hand-made packets and collects what comes back.
struct RawPeer {
    rlpx::PrivateKey key = rlpx::PrivateKey::generate().value();
    udp::socket socket;
    explicit RawPeer(asio::io_context& io, const char* ip = "127.0.0.1")
        : socket(io, udp::endpoint(asio::ip::make_address(ip), 0)) {}
    Hash32 send(const Node& to, const v4::Packet& p) {
        auto e = v4::encode(key, p).value();
        socket.send_to(asio::buffer(e.datagram), udp::endpoint(to.ip, to.udp));
        return e.hash;
    }
    // Packets received within `wait`.
    std::vector<v4::Decoded> receive(asio::io_context& io, std::chrono::milliseconds wait) {
        std::vector<v4::Decoded> got;
        const auto end = std::chrono::steady_clock::now() + wait;
        while (std::chrono::steady_clock::now() < end) {
            io.run_for(10ms);
            if (io.stopped()) io.restart();
            while (socket.available() > 0) {
                std::array<uint8_t, 2048> buf;
                udp::endpoint from;
                const size_t n = socket.receive_from(asio::buffer(buf), from);
                if (auto d = v4::decode(ByteView{buf.data(), n})) got.push_back(*d);
            }
        }
        return got;
    }
    uint16_t port() const { return socket.local_endpoint().port(); }
};

uint64_t in_a_minute() {
    return static_cast<uint64_t>(
               std::chrono::duration_cast<std::chrono::seconds>(WallClock::now().time_since_epoch()).count()) +
           60;
}

size_t count_type(const std::vector<v4::Decoded>& got, v4::PacketType t) {
    return static_cast<size_t>(
        std::count_if(got.begin(), got.end(), [&](const v4::Decoded& d) { return v4::type_of(d.packet) == t; }));
}

TEST(V4Service, FindNodeWithoutEndpointProofGetsNothing) {
    asio::io_context io;
    TestNode server(io, fast_config());
    // Give the server something it could answer with.
    TestNode other(io, fast_config());
    server.service->start();
    other.service->start();
    ASSERT_TRUE(run(io, server.service->ping(other.node())));
    ASSERT_TRUE(run_until(io, [&] { return true; }));

    RawPeer raw(io);
    raw.send(server.node(), v4::FindNode{raw.key.public_key().bytes(), in_a_minute()});
    raw.send(server.node(), v4::EnrRequest{in_a_minute()});
    auto got = raw.receive(io, 500ms);
    EXPECT_EQ(count_type(got, v4::PacketType::kNeighbors), 0u);
    EXPECT_EQ(count_type(got, v4::PacketType::kEnrResponse), 0u);
    EXPECT_EQ(server.service->stats().dropped[static_cast<size_t>(V4Drop::kUnbonded)], 2u);

    // A Pong with the wrong hash is no proof either (geth's Amplification/InvalidPongHash).
    raw.send(server.node(), v4::Ping{4,
                                     {asio::ip::make_address("127.0.0.1"), raw.port(), 0},
                                     {server.node().ip, server.node().udp, 0},
                                     in_a_minute(),
                                     {}});
    got = raw.receive(io, 200ms);
    ASSERT_EQ(count_type(got, v4::PacketType::kPong), 1u);
    ASSERT_EQ(count_type(got, v4::PacketType::kPing), 1u);  // it wants our proof first
    raw.send(server.node(), v4::Pong{{server.node().ip, server.node().udp, 0}, Hash32{}, in_a_minute(), {}});
    raw.send(server.node(), v4::FindNode{raw.key.public_key().bytes(), in_a_minute()});
    got = raw.receive(io, 400ms);
    EXPECT_EQ(count_type(got, v4::PacketType::kNeighbors), 0u);

    // The right hash makes the bond, and then FindNode is answered.
    raw.send(server.node(), v4::Ping{4,
                                     {asio::ip::make_address("127.0.0.1"), raw.port(), 0},
                                     {server.node().ip, server.node().udp, 0},
                                     in_a_minute(),
                                     {}});
    got = raw.receive(io, 200ms);
    std::optional<Hash32> ping_hash;
    for (const auto& d : got) {
        if (v4::type_of(d.packet) == v4::PacketType::kPing) ping_hash = d.hash;
    }
    ASSERT_TRUE(ping_hash);
    raw.send(server.node(), v4::Pong{{server.node().ip, server.node().udp, 0}, *ping_hash, in_a_minute(), {}});
    raw.receive(io, 50ms);
    raw.send(server.node(), v4::FindNode{raw.key.public_key().bytes(), in_a_minute()});
    got = raw.receive(io, 300ms);
    EXPECT_EQ(count_type(got, v4::PacketType::kNeighbors), 1u);
}

// A hostile peer on another loopback address bonds with us, then answers our FindNode with a
// Neighbors packet that names a node we verified at another address, and nodes at a special-purpose
// address, at 0.0.0.0 and at a low port. Nothing of it enters: the verified node keeps its endpoint
// in the table and in the node database, the others are refused and counted (S1, S2).
TEST(V4Service, HostileNeighborsChangeNothingWeVerified) {
    asio::io_context io;
    TestNode honest(io, fast_config());
    honest.service->start();
    V4Config c = fast_config();
    c.bootnodes = {honest.node()};
    TestNode victim(io, c);
    victim.service->start();
    const Node b = honest.node();
    ASSERT_TRUE(run_until(io, [&] {
        const Table::Entry* e = victim.service->table().find(b.id);
        return victim.service->bootstrapped() && e && e->liveness_checks > 0;
    })) << "the honest node was not verified";

    RawPeer hostile(io, "127.0.0.2");
    const Node h = Node::from_key(hostile.key.public_key(), asio::ip::make_address("127.0.0.2"), hostile.port(), 0);
    const auto other = [] { return rlpx::PrivateKey::generate().value().public_key().bytes(); };
    const std::vector<v4::NeighborNode> lies{
        {{asio::ip::make_address("127.0.0.3"), b.udp, b.tcp}, b.key.bytes()},  // the verified node, elsewhere
        {{asio::ip::make_address("198.18.0.7"), 30303, 30303}, other()},       // benchmarking range
        {{asio::ip::make_address("0.0.0.0"), 30303, 30303}, other()},
        {{asio::ip::make_address("127.0.0.9"), 80, 80}, other()},  // a low port
    };
    // The hostile peer answers like a node: Pong to Ping, its lies to FindNode.
    const auto answer = [&](const v4::Decoded& d) {
        if (const auto* ping = std::get_if<v4::Ping>(&d.packet)) {
            hostile.send(
                victim.node(),
                v4::Pong{{asio::ip::make_address("127.0.0.1"), victim.node().udp, 0}, d.hash, in_a_minute(), {}});
            (void)ping;
        } else if (std::holds_alternative<v4::FindNode>(d.packet)) {
            hostile.send(victim.node(), v4::Neighbors{lies, in_a_minute()});
        }
    };
    // It pings first, so the victim bonds (it pings back) and puts it in its table.
    hostile.send(victim.node(),
                 v4::Ping{4, {h.ip, h.udp, 0}, {victim.node().ip, victim.node().udp, 0}, in_a_minute(), {}});
    // Answered as the packets come (the victim waits 300 ms for its Pong).
    const auto pump_until = [&](auto done) {
        for (int i = 0; i < 300 && !done(); ++i) {
            for (const auto& d : hostile.receive(io, 10ms)) answer(d);
        }
        return done();
    };
    ASSERT_TRUE(pump_until([&] { return victim.service->table().find(h.id) != nullptr; }));

    auto found = asio::co_spawn(io, victim.service->find_node(h, b.key.bytes()), asio::use_future);
    ASSERT_TRUE(pump_until([&] { return found.wait_for(0s) == std::future_status::ready; }));
    // find_node passes on only the ones the policy allows (the loopback one: a loopback sender may
    // name loopback nodes); a lookup would then offer each to the table, which is what it does.
    const auto nodes = found.get();
    ASSERT_TRUE(nodes);
    ASSERT_EQ(nodes->size(), 1u);
    EXPECT_EQ(victim.service->table_stats().refused_relays.load(),
              2u);  // the address policy; the port rule is geth's own
    auto lookup = asio::co_spawn(io, victim.service->lookup(b.key.bytes()), asio::use_future);
    ASSERT_TRUE(pump_until([&] { return lookup.wait_for(0s) == std::future_status::ready; }));

    const Table::Entry* e = victim.service->table().find(b.id);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->node.ip, asio::ip::make_address("127.0.0.1"));
    EXPECT_EQ(e->node.udp, b.udp);
    EXPECT_GT(e->liveness_checks, 0u);
    ASSERT_NE(victim.service->db().find(b.id), nullptr);
    EXPECT_EQ(victim.service->db().find(b.id)->node.ip, asio::ip::make_address("127.0.0.1"));
    EXPECT_GE(victim.service->table_stats().refused_moves.load(), 1u);
    for (const auto& lie : lies) {
        auto key = rlpx::PublicKey::from_bytes(lie.key).value();
        if (key.node_id() == b.id) continue;
        EXPECT_EQ(victim.service->table().find(key.node_id()), nullptr) << lie.endpoint.ip.to_string();
        EXPECT_EQ(victim.service->db().find(key.node_id()), nullptr) << lie.endpoint.ip.to_string();
    }
}

TEST(V4Service, DropsUnsolicitedExpiredAndOversizedPackets) {
    asio::io_context io;
    TestNode server(io, fast_config());
    server.service->start();
    RawPeer raw(io);
    // Neighbors nobody asked for: dropped, and the table learns nothing.
    v4::Neighbors n;
    n.expiration = in_a_minute();
    n.nodes.push_back({{asio::ip::make_address("127.0.0.1"), 40000, 40000}, raw.key.public_key().bytes()});
    raw.send(server.node(), n);
    raw.send(server.node(), v4::Pong{{server.node().ip, server.node().udp, 0}, Hash32{}, in_a_minute(), {}});
    // An expired Ping gets no Pong.
    raw.send(server.node(), v4::Ping{4,
                                     {asio::ip::make_address("127.0.0.1"), raw.port(), 0},
                                     {server.node().ip, server.node().udp, 0},
                                     1000,
                                     {}});
    // 1281 bytes of junk.
    Bytes big(v4::kMaxPacketSize + 1, 0xab);
    raw.socket.send_to(asio::buffer(big), udp::endpoint(server.node().ip, server.node().udp));
    const auto got = raw.receive(io, 300ms);
    EXPECT_TRUE(got.empty());
    const auto& s = server.service->stats();
    EXPECT_EQ(s.dropped[static_cast<size_t>(V4Drop::kUnsolicited)], 2u);
    EXPECT_EQ(s.dropped[static_cast<size_t>(V4Drop::kExpired)], 1u);
    EXPECT_EQ(s.dropped[static_cast<size_t>(V4Drop::kTooBig)], 1u);
    EXPECT_EQ(server.service->table().size(), 0u);
}

// A datagram of `type` with a right hash and a signature no key recovers from: what the service
// does with it shows whether it tried to recover the signer (a failed recovery is "undecodable").
Bytes unsigned_datagram(v4::PacketType type) {
    Bytes d(v4::kHeaderSize + 2, 0);
    d[v4::kHeaderSize] = static_cast<uint8_t>(type);
    d[v4::kHeaderSize + 1] = 0xc0;
    const Hash32 h = keccak256(ByteView{d}.subspan(32));
    std::copy(h.begin(), h.end(), d.begin());
    return d;
}

TEST(V4Service, JunkIsDroppedBeforeItsSignatureCheckAndRequestsAreRateLimited) {
    asio::io_context io;
    V4Config config = fast_config();
    config.rate_limit = {.per_ip_rate = 1, .per_ip_burst = 5, .global_rate = 1000, .global_burst = 1000};
    TestNode server(io, config);
    server.service->start();
    RawPeer raw(io);
    const udp::endpoint to(server.node().ip, server.node().udp);
    const auto& s = server.service->stats();
    const auto dropped = [&](V4Drop why) { return s.dropped[static_cast<size_t>(why)].load(); };

    // Replies to nothing asked of that address go before the signer is looked for.
    for (auto type : {v4::PacketType::kPong, v4::PacketType::kNeighbors, v4::PacketType::kEnrResponse}) {
        raw.socket.send_to(asio::buffer(unsigned_datagram(type)), to);
    }
    raw.receive(io, 100ms);
    EXPECT_EQ(dropped(V4Drop::kUnsolicited), 3u);
    EXPECT_EQ(dropped(V4Drop::kUndecodable), 0u);

    // Twenty signed Pings at once from one address: its burst of five is answered, the rest dropped
    // unread, and so is one more that would not even verify (it is not counted undecodable).
    for (int i = 0; i < 20; ++i) {
        raw.send(server.node(), v4::Ping{4,
                                         {asio::ip::make_address("127.0.0.1"), raw.port(), 0},
                                         {server.node().ip, server.node().udp, 0},
                                         in_a_minute(),
                                         {}});
    }
    const auto got = raw.receive(io, 300ms);
    EXPECT_EQ(count_type(got, v4::PacketType::kPong), 5u);
    EXPECT_EQ(dropped(V4Drop::kRateLimited), 15u);
    EXPECT_EQ(s.packets_in[static_cast<size_t>(v4::PacketType::kPing)], 5u);
    raw.socket.send_to(asio::buffer(unsigned_datagram(v4::PacketType::kPing)), to);
    raw.receive(io, 100ms);
    EXPECT_EQ(dropped(V4Drop::kRateLimited), 16u);
    EXPECT_EQ(dropped(V4Drop::kUndecodable), 0u);

    // While the server waits for our Pong, a Pong with another hash (and a signature that would not
    // verify) is dropped for its hash, still before the signer is looked for.
    const Node raw_node = Node::from_key(raw.key.public_key(), asio::ip::make_address("127.0.0.1"), raw.port(), 0);
    asio::co_spawn(io, server.service->ping(raw_node), asio::detached);
    raw.receive(io, 50ms);
    Bytes pong = v4::encode(raw.key, v4::Pong{{server.node().ip, server.node().udp, 0}, Hash32{}, in_a_minute(), {}})
                     .value()
                     .datagram;
    std::fill(pong.begin() + 32, pong.begin() + v4::kHeaderSize, 0);
    const Hash32 h = keccak256(ByteView{pong}.subspan(32));
    std::copy(h.begin(), h.end(), pong.begin());
    const uint64_t unsolicited = dropped(V4Drop::kUnsolicited);
    raw.socket.send_to(asio::buffer(pong), to);
    raw.receive(io, 100ms);
    EXPECT_EQ(dropped(V4Drop::kUnsolicited), unsolicited + 1);
    EXPECT_EQ(dropped(V4Drop::kUndecodable), 0u);
}

// stop() while the first refresh is still looking up (its bootnode never answers) must end every
// loop at once: the refresh timer must not be armed after stop() cancelled it, or the io_context (a
// stopping serve or discover) keeps running until the next refresh is due (here 30 min).
TEST(V4Service, StopDuringARefreshEndsEveryLoop) {
    asio::io_context io;
    udp::socket silent(io, udp::endpoint(asio::ip::make_address("127.0.0.1"), 0));  // bound, never read
    const auto silent_key = rlpx::PrivateKey::generate().value();
    V4Config c = fast_config();
    c.bootnodes = {Node::from_key(silent_key.public_key(), asio::ip::make_address("127.0.0.1"),
                                  silent.local_endpoint().port(), silent.local_endpoint().port())};
    TestNode node(io, c);
    node.service->start();
    io.run_for(100ms);  // the bootnode's ping waits for its 300 ms timeout
    ASSERT_FALSE(node.service->bootstrapped());
    node.service->stop();
    const auto stopped_at = std::chrono::steady_clock::now();
    io.run_for(5s);
    EXPECT_TRUE(io.stopped());
    EXPECT_LT(std::chrono::steady_clock::now() - stopped_at, 2s);
}

TEST(V4Service, RestartRejoinsFromTheNodeDatabase) {
    const auto dir = std::filesystem::temp_directory_path() / ("headerd-v4-restart-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "nodes").string();
    asio::io_context io;
    TestNode boot(io, fast_config());
    TestNode peer(io, [&] {
        V4Config c = fast_config();
        c.bootnodes = {boot.node()};
        return c;
    }());
    boot.service->start();
    peer.service->start();
    {
        V4Config c = fast_config();
        c.bootnodes = {boot.node()};
        c.revalidate_interval = 50ms;
        TestNode first(io, c, NodeDb::open(path).value());
        first.service->start();
        // A node becomes a seed once it passed more than 5 revalidations (geth's rule).
        const auto seed = [&](const Node& n) {
            const auto* r = first.service->db().find(n.id);
            return r && r->liveness > 5;
        };
        ASSERT_TRUE(run_until(io, [&] { return seed(peer.node()) && seed(boot.node()); }));
        first.service->stop();
    }
    {
        // No bootnodes this time: the database's seeds are enough.
        TestNode again(io, fast_config(), NodeDb::open(path).value());
        EXPECT_GE(again.service->db().size(), 2u);
        again.service->start();
        EXPECT_TRUE(run_until(io, [&] { return again.service->table().find(peer.node().id) != nullptr; }));
    }
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace headerd::disc::v4_udp_test
