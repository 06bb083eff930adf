// The Kademlia table: distances, bucket capacity and replacements, the /24 limits that hold a
// table-poisoning attempt from one subnet (and their LAN exemption), closest-node answers
// checked against a brute-force sort, discv5 distance queries, revalidation, and the update rule
// that keeps relayed news from moving a node we verified (geth's PR #29836).

#include "disc/table.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/keccak.hpp"

namespace headerd::disc {
namespace {

using boost::asio::ip::make_address;

rlpx::PublicKey fresh_key() { return rlpx::PrivateKey::generate().value().public_key(); }

Node node_at(const std::string& ip, uint16_t port = 30303) {
    return Node::from_key(fresh_key(), make_address(ip), port, port);
}

// Adds as the node itself would (a ping, a handshake), counted live.
Table::AddResult add(Table& t, const Node& n, Clock::time_point now) { return t.add(n, now, Origin::kDirect, 1); }

TableConfig seeded(uint64_t seed) {
    TableConfig c;
    c.seed = seed;
    return c;
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

TEST(Table, RefusesSelfAndUnroutable) {
    const auto self = fresh_key();
    Table t(self.node_id());
    const auto now = Clock::now();
    EXPECT_EQ(add(t, Node::from_key(self, make_address("127.0.0.1"), 1, 1), now), Table::AddResult::kSelf);
    EXPECT_EQ(add(t, node_at("0.0.0.0"), now), Table::AddResult::kUnroutable);
    EXPECT_EQ(add(t, node_at("192.0.2.1"), now), Table::AddResult::kUnroutable);  // TEST-NET-1
    EXPECT_EQ(add(t, node_at("::ffff:198.18.0.1"), now), Table::AddResult::kUnroutable);
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
        const auto r = add(t, n, now);
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
    // 1000 nodes from 93.184.216.0/24: at most 10 in the table, at most 2 in any bucket.
    int refused = 0;
    for (int i = 0; i < 1000; ++i) {
        const auto r = add(t, node_at("93.184.216." + std::to_string(i % 250 + 1)), now);
        if (r == Table::AddResult::kIpLimit) ++refused;
    }
    EXPECT_LE(t.size(), 10u);
    for (size_t s : t.bucket_sizes()) EXPECT_LE(s, 2u);
    EXPECT_GE(refused, 990);
    // Another /24 still gets in.
    EXPECT_EQ(add(t, node_at("93.184.217.1"), now), Table::AddResult::kAdded);
    // Loopback and LAN nodes are exempt: a local network of many nodes on one host works.
    Table local(fresh_key().node_id());
    for (int i = 0; i < 200; ++i) add(local, node_at("127.0.0.1", static_cast<uint16_t>(3000 + i)), now);
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
    EXPECT_EQ(add(t, n2, now), Table::AddResult::kAdded);
    EXPECT_EQ(add(t, n1, now), Table::AddResult::kUpdated);
    ASSERT_NE(t.find(n1.id), nullptr);
    EXPECT_EQ(t.find(n1.id)->node.enr->seq(), 2u);  // an older record never replaces a newer one
}

TEST(Table, ClosestMatchesBruteForce) {
    Table t(fresh_key().node_id());
    const auto now = Clock::now();
    for (int i = 0; i < 300; ++i) add(t, node_at("127.0.0.1", static_cast<uint16_t>(5000 + i)), now);
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
    for (int i = 0; i < 100; ++i) add(t, node_at("127.0.0.1", static_cast<uint16_t>(6000 + i)), now);
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

TEST(Table, RevalidationListsAreRandomisedAndDropDeadNodes) {
    Table t(fresh_key().node_id(), seeded(1));
    auto now = Clock::now();
    EXPECT_EQ(t.next_revalidation(), Clock::time_point::max());  // nothing to check
    const Node a = node_at("127.0.0.1", 7001);
    const Node b = node_at("127.0.0.1", 7002);
    add(t, a, now);
    add(t, b, now);
    // New nodes are in the fast list, due within one interval (3 s).
    ASSERT_LT(t.next_revalidation(), now + std::chrono::seconds(3));
    EXPECT_TRUE(t.due_for_revalidation(now - std::chrono::seconds(1)).empty());
    now += std::chrono::seconds(3);
    const auto due = t.due_for_revalidation(now);
    ASSERT_EQ(due.size(), 1u);  // one node of the fast list (the slow one is empty)
    EXPECT_TRUE(due[0].id == a.id || due[0].id == b.id);
    EXPECT_FALSE(t.revalidated(a.id, true, now));  // checks 1 -> 2, into the slow list
    EXPECT_FALSE(t.find(a.id)->fast);
    // The slow list is due within three intervals.
    EXPECT_LE(t.next_revalidation(), now + std::chrono::seconds(9));
    EXPECT_TRUE(t.revalidated(b.id, false, now));  // 1 / 3 = 0: gone
    EXPECT_EQ(t.find(b.id), nullptr);
    EXPECT_FALSE(t.revalidated(a.id, true, now));   // 2 -> 3
    EXPECT_FALSE(t.revalidated(a.id, false, now));  // 3 / 3 = 1: kept, back to the fast list
    EXPECT_EQ(t.find(a.id)->liveness_checks, 1u);
    EXPECT_TRUE(t.find(a.id)->fast);
    EXPECT_TRUE(t.revalidated(a.id, false, now));  // 1 / 3 = 0: gone
    EXPECT_EQ(t.next_revalidation(), Clock::time_point::max());

    // Which node of a list is checked is random: over 200 rounds each of 10 nodes comes up.
    Table many(fresh_key().node_id(), seeded(2));
    std::map<NodeId, int> picked;
    for (int i = 0; i < 10; ++i) add(many, node_at("127.0.0.1", static_cast<uint16_t>(7100 + i)), now);
    for (int i = 0; i < 200; ++i) {
        now += std::chrono::seconds(9);
        for (const Node& n : many.due_for_revalidation(now)) ++picked[n.id];
    }
    EXPECT_EQ(picked.size(), 10u);
}

// S1: a node we verified changes endpoint only on news from itself, or on a relayed signed record
// with a higher seq. A Neighbors entry (no record) or a replayed record never moves it.
TEST(Table, RelayedNewsNeverMovesAVerifiedNode) {
    auto key = rlpx::PrivateKey::generate().value();
    Table t(fresh_key().node_id(), seeded(3));
    const auto now = Clock::now();
    const auto r5 = EnrBuilder(5).ip({8, 8, 8, 8}).udp(30303).sign(key).value();
    const Node held = *Node::from_enr(r5);
    ASSERT_EQ(t.add(held, now, Origin::kDirect, 3), Table::AddResult::kAdded);

    // A Neighbors answer naming it elsewhere: unsigned, so nothing changes.
    const Node neighbors = Node::from_key(key.public_key(), make_address("9.9.9.9"), 30303, 30303);
    EXPECT_EQ(t.add(neighbors, now, Origin::kRelayed, 0), Table::AddResult::kStale);
    // Its own older record (a replay), and one of the same seq: nothing changes either.
    const auto r4 = EnrBuilder(4).ip({9, 9, 9, 9}).udp(30303).sign(key).value();
    EXPECT_EQ(t.add(*Node::from_enr(r4), now, Origin::kRelayed, 0), Table::AddResult::kStale);
    EXPECT_EQ(t.add(*Node::from_enr(r5), now, Origin::kRelayed, 0), Table::AddResult::kStale);
    const Table::Entry* e = t.find(held.id);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->node.ip, make_address("8.8.8.8"));
    EXPECT_EQ(e->node.enr->seq(), 5u);
    EXPECT_EQ(e->liveness_checks, 3u);

    // A newer record relayed by anyone moves it; it is no longer live and is checked first.
    add(t, node_at("127.0.0.1", 7200), now);
    const auto r6 = EnrBuilder(6).ip({9, 9, 9, 9}).udp(30304).sign(key).value();
    EXPECT_EQ(t.add(*Node::from_enr(r6), now, Origin::kRelayed, 0), Table::AddResult::kMoved);
    e = t.find(held.id);
    EXPECT_EQ(e->node.ip, make_address("9.9.9.9"));
    EXPECT_EQ(e->node.udp, 30304);
    EXPECT_EQ(e->liveness_checks, 0u);
    const auto due = t.due_for_revalidation(now);
    ASSERT_FALSE(due.empty());
    EXPECT_EQ(due[0].id, held.id);

    // The node itself (its ping from a new address) may move it, record or not.
    EXPECT_EQ(t.add(Node::from_key(key.public_key(), make_address("8.8.4.4"), 30303, 30303), now, Origin::kDirect, 1),
              Table::AddResult::kMoved);
    EXPECT_EQ(t.find(held.id)->node.ip, make_address("8.8.4.4"));
}

// A moving node is held to the /24 limits with its old address left out; the limits still hold.
TEST(Table, MoveRechecksTheSubnetLimitsWithoutTheOldAddress) {
    TableConfig c = seeded(4);
    c.table_ip_limit = 2;
    Table t(fresh_key().node_id(), c);
    const auto now = Clock::now();
    const Node x = node_at("93.184.216.1");
    ASSERT_EQ(add(t, x, now), Table::AddResult::kAdded);
    ASSERT_EQ(add(t, node_at("93.184.216.5"), now), Table::AddResult::kAdded);
    EXPECT_EQ(add(t, node_at("93.184.216.10"), now), Table::AddResult::kIpLimit);
    // x moving within its /24 does not count against itself.
    EXPECT_EQ(add(t, Node::from_key(x.key, make_address("93.184.216.9"), 30303, 30303), now), Table::AddResult::kMoved);
    EXPECT_EQ(t.size(), 2u);
}

// S3: FindNode answers carry only verified nodes while there are any (geth's preferLive).
TEST(Table, ClosestPrefersLiveNodes) {
    Table t(fresh_key().node_id(), seeded(5));
    const auto now = Clock::now();
    std::vector<NodeId> live;
    for (int i = 0; i < 5; ++i) {
        const Node n = node_at("127.0.0.1", static_cast<uint16_t>(7300 + i));
        if (add(t, n, now) == Table::AddResult::kAdded) live.push_back(n.id);
    }
    for (int i = 0; i < 50; ++i) t.add(node_at("127.0.0.1", static_cast<uint16_t>(7400 + i)), now, Origin::kRelayed, 0);
    const NodeId target = keccak256(as_bytes("target"));
    const auto preferred = t.closest(target, 16, true);
    EXPECT_EQ(preferred.size(), live.size());
    for (const auto& n : preferred) EXPECT_NE(std::find(live.begin(), live.end(), n.id), live.end());
    EXPECT_EQ(t.closest(target, 16).size(), 16u);  // for our own lookups, everything
    // A table with no verified node answers with what it has.
    Table fresh(fresh_key().node_id(), seeded(6));
    for (int i = 0; i < 5; ++i)
        fresh.add(node_at("127.0.0.1", static_cast<uint16_t>(7500 + i)), now, Origin::kRelayed, 0);
    EXPECT_EQ(fresh.closest(target, 16, true).size(), 5u);
}

// discv5's FINDNODE answers: live nodes only, shuffled (geth's appendBucketNodes).
TEST(Table, AtDistancesPassesOnOnlyLiveNodesInRandomOrder) {
    Table t(fresh_key().node_id(), seeded(7));
    const auto now = Clock::now();
    for (int i = 0; i < 100; ++i) add(t, node_at("127.0.0.1", static_cast<uint16_t>(7600 + i)), now);
    for (int i = 0; i < 100; ++i)
        t.add(node_at("127.0.0.1", static_cast<uint16_t>(7700 + i)), now, Origin::kRelayed, 0);
    const unsigned d256[] = {256};
    std::set<NodeId> first;
    for (int i = 0; i < 20; ++i) {
        const auto got = t.at_distances(d256, 100);
        ASSERT_FALSE(got.empty());
        for (const auto& n : got) EXPECT_GT(t.find(n.id)->liveness_checks, 0u);
        first.insert(got.front().id);
    }
    EXPECT_GT(first.size(), 1u);
}

// S7: the replacement that takes a dead node's place is chosen at random, not always the newest:
// the same nodes added in the same order to tables that differ only in their seed promote
// different replacements.
TEST(Table, ReplacementIsChosenAtRandom) {
    std::vector<Node> nodes;
    for (int i = 1; i <= 200; ++i) {
        Hash32 scalar{};
        scalar[31] = static_cast<uint8_t>(i);
        scalar[30] = 1;
        const auto key = rlpx::PrivateKey::from_bytes(scalar).value().public_key();
        nodes.push_back(Node::from_key(key, make_address("127.0.0.1"), static_cast<uint16_t>(8000 + i), 8000));
    }
    const NodeId self{};
    std::set<NodeId> promoted;
    for (uint64_t seed = 0; seed < 8; ++seed) {
        Table t(self, seeded(seed));
        const auto now = Clock::now();
        for (const Node& n : nodes) add(t, n, now);
        ASSERT_GE(t.replacement_count(), 2u);
        std::set<NodeId> before;
        for (const auto& n : t.nodes()) before.insert(n.id);
        const auto victim = std::find_if(nodes.begin(), nodes.end(), [&](const Node& n) {
            return log_distance(self, n.id) == 256 && before.contains(n.id);
        });
        ASSERT_NE(victim, nodes.end());
        ASSERT_TRUE(t.remove(victim->id));
        for (const auto& n : t.nodes()) {
            if (!before.contains(n.id)) promoted.insert(n.id);
        }
    }
    EXPECT_GT(promoted.size(), 1u);
}

}  // namespace
}  // namespace headerd::disc
