// The node database: what it saves comes back (records, enode-only nodes, proof times per IP), seeds are the recently
// proven nodes, age and size bounds hold, and a damaged file is an error naming it and its line, left as it was.

#include "disc/node_db.hpp"

#include <gtest/gtest.h>

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
        db.seen(with_record, now);
        db.set_last_pong(with_record, with_record.ip, now - 10s);
        db.set_last_ping(plain, plain.ip, now - 20s);
        db.set_findnode_failures(plain.id, 3);
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
}

TEST_F(NodeDbTest, SeedsAreRecentlyProvenNodesNewestFirst) {
    const auto now = WallClock::now();
    NodeDb db;
    const Node old = enode_node(1100);
    const Node fresh = enode_node(1200);
    const Node never = enode_node(1300);
    db.set_last_pong(old, old.ip, now - 6 * 24h);  // beyond the 5-day seed age
    db.set_last_pong(fresh, fresh.ip, now - 1h);
    db.seen(never, now);
    const auto seeds = db.seeds(10, now);
    ASSERT_EQ(seeds.size(), 1u);
    EXPECT_EQ(seeds[0].id, fresh.id);
}

TEST_F(NodeDbTest, ExpiresByAgeAndSize) {
    const auto now = WallClock::now();
    NodeDbConfig config;
    config.max_nodes = 5;
    NodeDb db(config);
    const Node stale = enode_node(2000);
    db.seen(stale, now - 25h);
    std::vector<Node> nodes;
    for (uint16_t i = 0; i < 8; ++i) {
        nodes.push_back(enode_node(static_cast<uint16_t>(2100 + i)));
        db.seen(nodes.back(), now - std::chrono::minutes(8 - i));  // later ones seen more recently
    }
    db.expire(now);
    EXPECT_EQ(db.size(), 5u);
    // New nodes beyond the bound by a tenth expire the oldest at once, without a save.
    NodeDbConfig big;
    big.max_nodes = 100;
    NodeDb flooded(big);
    for (int i = 0; i < 1000; ++i) flooded.seen(enode_node(static_cast<uint16_t>(3000 + i)), now);
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
