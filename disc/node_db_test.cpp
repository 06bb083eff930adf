// The node database: what it saves comes back (records, enode-only nodes, proof times per IP), seeds are the recently
// proven nodes, age and size bounds hold, and a damaged file is an error naming it and its line, left as it was.

#include "disc/node_db.hpp"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace headerd::disc {
namespace {

using boost::asio::ip::make_address;
using namespace std::chrono_literals;

class NodeDbTest : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ =
            std::filesystem::temp_directory_path() / ("headerd-nodedb-" + std::to_string(::getpid()) + "-" +
                                                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::create_directories(dir_);
        path_ = (dir_ / "nodes").string();
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    std::string read_file() const {
        std::ifstream in(path_);
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    }
    std::filesystem::path dir_;
    std::string path_;
};

Node enode_node(uint16_t port) {
    return Node::from_key(rlpx::PrivateKey::generate().value().public_key(), make_address("127.0.0.1"), port, port + 1);
}

TEST_F(NodeDbTest, SavesAndLoadsEverything) {
    const auto now = WallClock::now();
    auto key = rlpx::PrivateKey::generate().value();
    const Node with_record = *Node::from_enr(EnrBuilder(5).ip({127, 0, 0, 2}).udp(30301).tcp(30302).sign(key).value());
    const Node plain = enode_node(40000);
    {
        auto db = NodeDb::open(path_).value();
        EXPECT_EQ(db.size(), 0u);  // no file yet
        db.seen(with_record, now, Origin::kDirect);
        db.set_last_pong(with_record, with_record.ip, now - 10s);
        db.set_last_ping(plain, plain.ip, now - 20s);
        db.set_findnode_failures(plain.id, 3);
        db.set_liveness(plain.id, 7);
        ASSERT_TRUE(db.save(now));
    }
    auto db = NodeDb::open(path_).value();
    EXPECT_EQ(db.size(), 2u);
    const auto* r = db.find(with_record.id);
    ASSERT_NE(r, nullptr);
    ASSERT_TRUE(r->node.enr);
    EXPECT_EQ(r->node.enr->seq(), 5u);
    EXPECT_EQ(r->node.udp, 30301);
    EXPECT_EQ(r->node.tcp, 30302);
    // Times are kept to the second; the proof counts only for the IP it came from.
    EXPECT_LE(std::chrono::abs(db.last_pong(with_record.id, with_record.ip) - (now - 10s)), 1s);
    EXPECT_EQ(db.last_pong(with_record.id, make_address("127.0.0.3")), WallClock::time_point{});
    EXPECT_EQ(db.findnode_failures(plain.id), 3u);
    EXPECT_EQ(db.find(plain.id)->node.tcp, 40001);
    EXPECT_EQ(db.find(plain.id)->node.udp, 40000);
    EXPECT_EQ(db.find(plain.id)->liveness, 7u);
}

// A file of the earlier format (no liveness count) still opens; none of its nodes is a seed until
// it passes revalidations again.
TEST_F(NodeDbTest, ReadsTheEarlierFormat) {
    const Node n = enode_node(41000);
    const auto pong = std::chrono::duration_cast<std::chrono::seconds>(WallClock::now().time_since_epoch()).count();
    std::ofstream(path_, std::ios::trunc)
        << "# headerd node database v1\nnode " << n.enode() << " 127.0.0.1 " << pong << " - 0 0 " << pong << "\n";
    auto db = NodeDb::open(path_).value();
    ASSERT_NE(db.find(n.id), nullptr);
    EXPECT_EQ(db.find(n.id)->liveness, 0u);
    std::mt19937_64 rng(1);
    EXPECT_TRUE(db.seeds(10, WallClock::now(), rng).empty());
}

// S1 in the database: what a third party relays never moves a node we know, unless it brings a
// newer signed record; the node itself may.
TEST_F(NodeDbTest, RelayedNewsNeverMovesAKnownNode) {
    const auto now = WallClock::now();
    auto key = rlpx::PrivateKey::generate().value();
    const Node held = *Node::from_enr(EnrBuilder(3).ip({127, 0, 0, 2}).udp(30301).sign(key).value());
    NodeDb db;
    db.seen(held, now, Origin::kDirect);
    db.set_last_pong(held, held.ip, now);
    db.seen(Node::from_key(key.public_key(), make_address("127.0.0.9"), 9, 9), now, Origin::kRelayed);
    db.seen(*Node::from_enr(EnrBuilder(2).ip({127, 0, 0, 9}).udp(9).sign(key).value()), now, Origin::kRelayed);
    EXPECT_EQ(db.find(held.id)->node.ip, make_address("127.0.0.2"));
    EXPECT_EQ(db.find(held.id)->node.udp, 30301);
    db.seen(*Node::from_enr(EnrBuilder(4).ip({127, 0, 0, 9}).udp(9999).sign(key).value()), now, Origin::kRelayed);
    EXPECT_EQ(db.find(held.id)->node.ip, make_address("127.0.0.9"));
    EXPECT_EQ(db.find(held.id)->node.enr->seq(), 4u);
}

// S7: seeds are nodes that passed more than 5 revalidations and answered recently, at random.
TEST_F(NodeDbTest, SeedsAreRepeatedlyProvenNodesAtRandom) {
    const auto now = WallClock::now();
    NodeDb db;
    const Node old = enode_node(1100);
    const Node fresh = enode_node(1200);
    const Node never = enode_node(1300);
    const Node once = enode_node(1400);
    db.set_last_pong(old, old.ip, now - 6 * 24h);  // beyond the 5-day seed age
    db.set_liveness(old.id, 10);
    db.set_last_pong(fresh, fresh.ip, now - 1h);
    db.set_liveness(fresh.id, 6);
    db.seen(never, now, Origin::kRelayed);
    db.set_last_pong(once, once.ip, now);  // answered, but passed too few revalidations
    db.set_liveness(once.id, 5);
    std::mt19937_64 rng(1);
    const auto seeds = db.seeds(10, now, rng);
    ASSERT_EQ(seeds.size(), 1u);
    EXPECT_EQ(seeds[0].id, fresh.id);

    // Of many candidates, which ones seed a restart varies.
    NodeDb many;
    for (uint16_t i = 0; i < 100; ++i) {
        const Node n = enode_node(static_cast<uint16_t>(1500 + i));
        many.set_last_pong(n, n.ip, now - std::chrono::minutes(i));
        many.set_liveness(n.id, 6);
    }
    std::set<NodeId> first;
    for (int i = 0; i < 10; ++i) first.insert(many.seeds(30, now, rng).front().id);
    EXPECT_GT(first.size(), 1u);
}

TEST_F(NodeDbTest, ExpiresByAgeAndSize) {
    const auto now = WallClock::now();
    NodeDbConfig config;
    config.max_nodes = 5;
    NodeDb db(config);
    const Node stale = enode_node(2000);
    db.seen(stale, now - 25h, Origin::kDirect);
    std::vector<Node> nodes;
    for (uint16_t i = 0; i < 8; ++i) {
        nodes.push_back(enode_node(static_cast<uint16_t>(2100 + i)));
        db.seen(nodes.back(), now - std::chrono::minutes(8 - i), Origin::kDirect);  // later ones seen more recently
    }
    db.expire(now);
    EXPECT_EQ(db.size(), 5u);
    // New nodes beyond the bound by a tenth expire the oldest at once, without a save.
    NodeDbConfig big;
    big.max_nodes = 100;
    NodeDb flooded(big);
    for (int i = 0; i < 1000; ++i) flooded.seen(enode_node(static_cast<uint16_t>(3000 + i)), now, Origin::kRelayed);
    EXPECT_LE(flooded.size(), 111u);
    EXPECT_EQ(db.find(stale.id), nullptr);
    EXPECT_EQ(db.find(nodes[0].id), nullptr);  // the least recently seen go first
    EXPECT_NE(db.find(nodes[7].id), nullptr);
}

TEST_F(NodeDbTest, DamagedFileIsAnErrorAndLeftAlone) {
    const std::pair<std::string, std::string> cases[] = {
        {"not a header\n", "line 1"},
        {"# headerd node database v1\nnode enode://zz 127.0.0.1 0 - 0 0 0\n", "line 2"},
        {"# headerd node database v1\nnode\n", "missing fields"},
        {"# headerd node database v1\nother 1\n", "expected 'node'"},
    };
    for (const auto& [content, why] : cases) {
        std::ofstream(path_, std::ios::trunc) << content;
        auto db = NodeDb::open(path_);
        ASSERT_FALSE(db) << content;
        EXPECT_NE(db.error().message.find(path_), std::string::npos) << db.error().message;
        EXPECT_NE(db.error().message.find(why), std::string::npos) << db.error().message;
        EXPECT_EQ(read_file(), content);
    }
}

}  // namespace
}  // namespace headerd::disc
