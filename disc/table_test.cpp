// The Kademlia table: distances, bucket capacity and replacements, the /24 limits that hold a
// table-poisoning attempt from one subnet (and their LAN exemption), closest-node answers
// checked against a brute-force sort, discv5 distance queries, and revalidation.

#include "disc/table.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "core/keccak.hpp"

namespace headerd::disc {
namespace {

using boost::asio::ip::make_address;

rlpx::PublicKey fresh_key() { return rlpx::PrivateKey::generate().value().public_key(); }

Node node_at(const std::string& ip, uint16_t port = 30303) {
    return Node::from_key(fresh_key(), make_address(ip), port, port);
}

TEST(LogDistance, CountsTheHighestDifferingBit) {
    NodeId a{};
    NodeId b{};
    EXPECT_EQ(log_distance(a, b), 0);
    b[31] = 1;
    EXPECT_EQ(log_distance(a, b), 1);
    b[31] = 0x80;
    EXPECT_EQ(log_distance(a, b), 8);
    b[0] = 0x01;
    EXPECT_EQ(log_distance(a, b), 249);
    b[0] = 0x80;
    EXPECT_EQ(log_distance(a, b), 256);
    EXPECT_EQ(compare_distance(a, a, b), -1);
    EXPECT_EQ(compare_distance(a, b, a), 1);
    EXPECT_EQ(compare_distance(a, b, b), 0);
}

TEST(Addresses, LanAndRelayRules) {
    for (const char* lan : {"127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.1.1",
                            "100.64.0.1", "::1", "fd00::1", "fe80::1"}) {
        EXPECT_TRUE(is_lan(make_address(lan))) << lan;
    }
    for (const char* wan : {"8.8.8.8", "172.32.0.1", "203.0.113.5", "2001:db8::1"}) {
        EXPECT_FALSE(is_lan(make_address(wan))) << wan;
    }
    EXPECT_TRUE(is_unroutable(make_address("0.0.0.0")));
    EXPECT_TRUE(is_unroutable(make_address("::")));
    EXPECT_TRUE(is_unroutable(make_address("224.0.0.1")));
    EXPECT_TRUE(is_unroutable(make_address("255.255.255.255")));

    const auto lo = make_address("127.0.0.1");
    const auto lan = make_address("192.168.0.2");
    const auto wan = make_address("203.0.113.9");
    EXPECT_TRUE(relay_allowed(lo, lo));
    EXPECT_FALSE(relay_allowed(wan, lo));  // a public node may not point us at our own loopback
    EXPECT_FALSE(relay_allowed(lan, lo));
    EXPECT_TRUE(relay_allowed(lan, lan));
    EXPECT_FALSE(relay_allowed(wan, lan));  // nor into our LAN
    EXPECT_TRUE(relay_allowed(wan, wan));
    EXPECT_TRUE(relay_allowed(lo, lan));
    EXPECT_FALSE(relay_allowed(lo, make_address("0.0.0.0")));
}

TEST(Table, RefusesSelfAndUnroutable) {
    const auto self = fresh_key();
    Table t(self.node_id());
    const auto now = Clock::now();
    EXPECT_EQ(t.add(Node::from_key(self, make_address("127.0.0.1"), 1, 1), now), Table::AddResult::kSelf);
    EXPECT_EQ(t.add(node_at("0.0.0.0"), now), Table::AddResult::kUnroutable);
    EXPECT_EQ(t.size(), 0u);
}

TEST(Table, FullBucketKeepsReplacementsAndPromotesOnRemoval) {
    Table t(fresh_key().node_id());
    const auto now = Clock::now();
    // Random ids land at distance 256 half the time: 80 of them overfill that bucket.
    std::map<Table::AddResult, int> results;
    std::vector<Node> added;
    for (int i = 0; i < 80; ++i) {
        Node n = node_at("127.0.0.1", static_cast<uint16_t>(2000 + i));
        const auto r = t.add(n, now);
        ++results[r];
        if (r == Table::AddResult::kAdded) added.push_back(n);
    }
    const auto sizes = t.bucket_sizes();
    for (size_t s : sizes) EXPECT_LE(s, 16u);
    EXPECT_EQ(sizes.back(), 16u);
    EXPECT_GT(results[Table::AddResult::kReplacement], 0);
    EXPECT_LE(t.replacement_count(), 10u * kBucketCount);
    EXPECT_EQ(t.size(), added.size());

    // Removing a node of the full bucket moves a replacement in.
    const Node victim =
        *std::find_if(added.begin(), added.end(), [&](const Node& n) { return log_distance(t.self(), n.id) == 256; });
    const size_t before = t.size();
    EXPECT_TRUE(t.remove(victim.id));
    EXPECT_EQ(t.size(), before);
    EXPECT_EQ(t.find(victim.id), nullptr);
    EXPECT_FALSE(t.remove(victim.id));
}

TEST(Table, SubnetLimitsHoldPoisoningFromOneSlash24) {
    Table t(fresh_key().node_id());
    const auto now = Clock::now();
    // 1000 nodes from 203.0.113.0/24: at most 10 in the table, at most 2 in any bucket.
    int refused = 0;
    for (int i = 0; i < 1000; ++i) {
        const auto r = t.add(node_at("203.0.113." + std::to_string(i % 250 + 1)), now);
        if (r == Table::AddResult::kIpLimit) ++refused;
    }
    EXPECT_LE(t.size(), 10u);
    for (size_t s : t.bucket_sizes()) EXPECT_LE(s, 2u);
    EXPECT_GE(refused, 990);
    // Another /24 still gets in.
    EXPECT_EQ(t.add(node_at("198.51.100.1"), now), Table::AddResult::kAdded);
    // Loopback and LAN nodes are exempt: a local network of many nodes on one host works.
    Table local(fresh_key().node_id());
    for (int i = 0; i < 200; ++i) local.add(node_at("127.0.0.1", static_cast<uint16_t>(3000 + i)), now);
    EXPECT_GT(local.size(), 20u);
}

TEST(Table, UpdateKeepsTheNewerRecordAndMovesWithinLimits) {
    auto key = rlpx::PrivateKey::generate().value();
    Table t(fresh_key().node_id());
    const auto now = Clock::now();
    auto r2 = EnrBuilder(2).ip({127, 0, 0, 1}).udp(4000).sign(key).value();
    auto r1 = EnrBuilder(1).ip({127, 0, 0, 1}).udp(4000).sign(key).value();
    auto n2 = *Node::from_enr(r2);
    auto n1 = *Node::from_enr(r1);
    EXPECT_EQ(t.add(n2, now), Table::AddResult::kAdded);
    EXPECT_EQ(t.add(n1, now), Table::AddResult::kUpdated);
    ASSERT_NE(t.find(n1.id), nullptr);
    EXPECT_EQ(t.find(n1.id)->node.enr->seq(), 2u);  // an older record never replaces a newer one
}

TEST(Table, ClosestMatchesBruteForce) {
    Table t(fresh_key().node_id());
    const auto now = Clock::now();
    for (int i = 0; i < 300; ++i) t.add(node_at("127.0.0.1", static_cast<uint16_t>(5000 + i)), now);
    const NodeId target = keccak256(as_bytes("target"));
    auto all = t.nodes();
    std::sort(all.begin(), all.end(),
              [&](const Node& a, const Node& b) { return compare_distance(target, a.id, b.id) < 0; });
    const auto got = t.closest(target, 16);
    ASSERT_EQ(got.size(), 16u);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].id, all[i].id);
    EXPECT_EQ(t.closest(target, 10000).size(), t.size());
}

TEST(Table, AtDistancesAnswersOnlyThoseDistances) {
    Table t(fresh_key().node_id());
    const auto now = Clock::now();
    for (int i = 0; i < 100; ++i) t.add(node_at("127.0.0.1", static_cast<uint16_t>(6000 + i)), now);
    const unsigned want[] = {256, 255};
    const auto got = t.at_distances(want, 16);
    EXPECT_FALSE(got.empty());
    EXPECT_LE(got.size(), 16u);
    for (const auto& n : got) {
        const int d = log_distance(t.self(), n.id);
        EXPECT_TRUE(d == 256 || d == 255) << d;
    }
    const unsigned zero[] = {0};
    EXPECT_TRUE(t.at_distances(zero, 16).empty());
}

TEST(Table, RevalidationDropsDeadNodesAndChecksOldestFirst) {
    Table t(fresh_key().node_id());
    auto now = Clock::now();
    const Node a = node_at("127.0.0.1", 7001);
    const Node b = node_at("127.0.0.1", 7002);
    t.add(a, now);
    now += std::chrono::seconds(1);
    t.add(b, now);
    EXPECT_EQ(t.next_to_revalidate()->id, a.id);
    now += std::chrono::seconds(1);
    EXPECT_FALSE(t.revalidated(a.id, true, now));  // checks 1 -> 2
    EXPECT_EQ(t.next_to_revalidate()->id, b.id);
    EXPECT_TRUE(t.revalidated(b.id, false, now));  // 1 / 3 = 0: gone
    EXPECT_EQ(t.find(b.id), nullptr);
    EXPECT_FALSE(t.revalidated(a.id, true, now));   // 2 -> 3
    EXPECT_FALSE(t.revalidated(a.id, false, now));  // 3 / 3 = 1: kept
    EXPECT_EQ(t.find(a.id)->liveness_checks, 1u);
    EXPECT_TRUE(t.revalidated(a.id, false, now));  // 1 / 3 = 0: gone
}

}  // namespace
}  // namespace headerd::disc
