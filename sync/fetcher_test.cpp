#include "sync/fetcher.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/block_header.hpp"
#include "core/chain_config.hpp"
#include "tests/reference_chain.hpp"
#include "tests/side_chain.hpp"
#include "tests/test_util.hpp"

namespace headerd::sync {
namespace {

using headerd::testing::are_blocks;
using headerd::testing::SideChain;

const headerd::testing::ReferenceChain& chain() { return headerd::testing::reference_chain(); }
const Hash32& hash_of(uint64_t n) { return chain().hashes.at(n); }

// The real headers origin, origin - 1, ..., origin - amount + 1.
std::vector<ByteView> real(uint64_t origin, uint64_t amount) {
    std::vector<ByteView> out;
    for (uint64_t i = 0; i < amount; ++i) out.push_back(chain().headers.at(origin - i));
    return out;
}

// A reply as a session hands it over: the headers copied into one payload, the views pointing into it.
p2p::HeadersReply reply_of(const std::vector<ByteView>& headers) {
    p2p::HeadersReply r;
    r.request_id = 1;
    size_t total = 0;
    for (const ByteView h : headers) total += h.size();
    r.payload.reserve(total);
    std::vector<size_t> offsets;
    for (const ByteView h : headers) {
        offsets.push_back(r.payload.size());
        append(r.payload, h);
    }
    for (size_t i = 0; i < headers.size(); ++i)
        r.headers.push_back(ByteView{r.payload}.subspan(offsets[i], headers[i].size()));
    return r;
}

p2p::HeadersReply real_reply(uint64_t origin, uint64_t amount) { return reply_of(real(origin, amount)); }
p2p::HeadersReply real_reply(const Task& task) { return real_reply(task.origin, task.amount); }

// A header re-encoded with one byte of its extra-data changed (still a valid header, another hash),
// and with `parent` as its parent hash when given.
Bytes forge(ByteView rlp, const std::optional<Hash32>& parent = std::nullopt) {
    BlockHeader h = *decode_block_header(rlp);
    if (h.extra_data.empty()) {
        h.extra_data.push_back(0x01);
    } else {
        h.extra_data.back() ^= 0x01;
    }
    if (parent) h.parent_hash = *parent;
    Bytes out;
    encode(out, h);
    return out;
}

// Blocks origin, origin - 1, ..., origin - amount + 1 of a side chain, as a reply lists them.
std::vector<ByteView> side_range(const SideChain& side, uint64_t origin, uint64_t amount) {
    std::vector<ByteView> out;
    for (uint64_t i = 0; i < amount; ++i) out.push_back(side.rlp(origin - i));
    return out;
}

Join no_join(uint64_t, const Hash32&, const Hash32&) { return Join::kNo; }

// The syncer's rule for a node holding mainnet blocks 0..local_head (none: no chain) of a network
// whose genesis is `genesis`.
JoinFn local_chain(std::optional<uint64_t> local_head, Hash32 genesis = mainnet_config().genesis_hash) {
    return [local_head, genesis](uint64_t number, const Hash32& hash, const Hash32& parent) {
        if (number == 0) return hash == genesis ? Join::kLinked : Join::kWrongGenesis;
        if (!local_head || number - 1 > *local_head) return Join::kNo;
        return parent == hash_of(number - 1) ? Join::kLinked : Join::kNo;
    };
}

// Whether `v` holds the real blocks top, top - 1, ..., top - count + 1: numbers, hashes, and RLP read
// through the views (so they must still be valid).
::testing::AssertionResult verified_are(const Verified& v, uint64_t top, uint64_t count) {
    if (v.headers.size() != count) {
        return ::testing::AssertionFailure() << v.headers.size() << " headers verified instead of " << count;
    }
    std::vector<ByteView> rlps;
    for (size_t i = 0; i < v.headers.size(); ++i) {
        const db::SkeletonHeader& h = v.headers[i];
        if (h.number != top - i) return ::testing::AssertionFailure() << "header " << i << " is block " << h.number;
        if (h.hash != hash_of(h.number)) return ::testing::AssertionFailure() << "block " << h.number << ": wrong hash";
        const ByteView want = chain().headers.at(h.number);
        if (!std::equal(h.rlp.begin(), h.rlp.end(), want.begin(), want.end())) {
            return ::testing::AssertionFailure() << "block " << h.number << ": the RLP read through the view differs";
        }
        rlps.push_back(h.rlp);
    }
    return are_blocks(rlps, top, count, -1);
}

// Everything one or more advance() calls verified, copied out while the views were valid.
struct Log {
    std::vector<uint64_t> numbers;
    bool linked{false};

    std::optional<Fault> advance(Fetcher& f, const JoinFn& join) {
        Verified v;
        auto fault = f.advance(join, v);
        if (!v.headers.empty()) {
            EXPECT_TRUE(verified_are(v, v.headers.front().number, v.headers.size()));
            for (const auto& h : v.headers) numbers.push_back(h.number);
        }
        linked = v.linked;
        return fault;
    }
    // Whether the log is exactly top, top - 1, ..., bottom.
    ::testing::AssertionResult is(uint64_t top, uint64_t bottom) const {
        if (numbers.size() != top - bottom + 1) {
            return ::testing::AssertionFailure() << numbers.size() << " verified instead of " << top - bottom + 1;
        }
        for (size_t i = 0; i < numbers.size(); ++i) {
            if (numbers[i] != top - i)
                return ::testing::AssertionFailure() << "verified #" << i << " is " << numbers[i];
        }
        return ::testing::AssertionSuccess();
    }
};

// The next task, which there must be (an empty task otherwise, so a failing test fails rather than crashes).
Task must_assign(Fetcher& f, uint64_t amount) {
    auto task = f.assign(amount);
    if (!task) {
        ADD_FAILURE() << "nothing assigned";
        return Task{};
    }
    return *task;
}

// Answers every task honestly as `owner`, one at a time, until nothing more is handed out.
void serve_honestly(Fetcher& f, const JoinFn& join, size_t owner, uint64_t amount, Log& log) {
    while (auto task = f.assign(amount)) {
        ASSERT_FALSE(f.deliver(*task, owner, real_reply(*task)));
        ASSERT_FALSE(log.advance(f, join));
    }
}

// ---- assign / release ---------------------------------------------------------------------------

TEST(Fetcher, AssignHandsOutDescendingDisjointRangesDownToTheFloor) {
    Fetcher f(1000, hash_of(1000), 900, 10'000);
    EXPECT_FALSE(f.assign(0));
    EXPECT_EQ(f.assign(30), (Task{1000, 30}));
    EXPECT_EQ(f.assign(30), (Task{970, 30}));
    EXPECT_EQ(f.assign(30), (Task{940, 30}));
    // Only 910..900 are left above the floor.
    const Task last = must_assign(f, 30);
    EXPECT_EQ(last, (Task{910, 11}));
    EXPECT_EQ(last.lowest(), 900u);
    EXPECT_FALSE(f.assign(30));
    EXPECT_FALSE(f.assign(1));
    // Nothing was verified by handing out.
    EXPECT_EQ(f.next(), 1000u);
    EXPECT_EQ(f.expect(), hash_of(1000));
    EXPECT_FALSE(f.done());
}

TEST(Fetcher, AssignDownToBlockZeroStopsThere) {
    Fetcher f(99, hash_of(99), 0, 10'000);
    EXPECT_EQ(f.assign(60), (Task{99, 60}));
    EXPECT_EQ(f.assign(60), (Task{39, 40}));
    EXPECT_FALSE(f.assign(60));
}

TEST(Fetcher, AssignStaysInsideTheWindowBelowNext) {
    Fetcher f(8191, hash_of(8191), 0, 100);
    const Task top = must_assign(f, 30);
    EXPECT_EQ(top, (Task{8191, 30}));
    EXPECT_EQ(f.assign(30), (Task{8161, 30}));
    EXPECT_EQ(f.assign(30), (Task{8131, 30}));
    EXPECT_EQ(f.assign(30), (Task{8101, 10}));  // 8092 = 8191 - 100 + 1 is the lowest block in the window
    EXPECT_FALSE(f.assign(30));
    // The top range verified: the window moves down by 30.
    ASSERT_FALSE(f.deliver(top, 1, real_reply(top)));
    Log log;
    ASSERT_FALSE(log.advance(f, no_join));
    EXPECT_TRUE(log.is(8191, 8162));
    EXPECT_EQ(f.next(), 8161u);
    EXPECT_EQ(f.assign(50), (Task{8091, 30}));
    EXPECT_FALSE(f.assign(50));
}

TEST(Fetcher, ReleasedRangeIsHandedOutFirstAndSplitForSmallerAmounts) {
    Fetcher f(8191, hash_of(8191), 0, 10'000);
    const Task a = must_assign(f, 50);
    const Task b = must_assign(f, 50);
    const Task c = must_assign(f, 50);
    EXPECT_EQ(b, (Task{8141, 50}));
    EXPECT_EQ(c, (Task{8091, 50}));
    f.release(c);
    f.release(b);
    // Highest first, split into what is asked.
    EXPECT_EQ(f.assign(20), (Task{8141, 20}));
    EXPECT_EQ(f.assign(20), (Task{8121, 20}));
    EXPECT_EQ(f.assign(20), (Task{8101, 10}));   // the rest of b
    EXPECT_EQ(f.assign(100), (Task{8091, 50}));  // c whole: no more than was handed back
    EXPECT_EQ(f.assign(20), (Task{8041, 20}));   // then new ground below c
    // Answer every piece (the split ones too) and the chain verifies through them.
    for (const Task& t : {Task{8141, 20}, Task{8121, 20}, Task{8101, 10}, Task{8091, 50}, Task{8041, 20}}) {
        ASSERT_FALSE(f.deliver(t, 2, real_reply(t)));
    }
    ASSERT_FALSE(f.deliver(a, 1, real_reply(a)));
    Log log;
    ASSERT_FALSE(log.advance(f, no_join));
    EXPECT_TRUE(log.is(8191, 8022));
    EXPECT_EQ(f.held(), 0u);
    EXPECT_EQ(f.next(), 8021u);
    EXPECT_EQ(f.expect(), hash_of(8021));
}

// ---- deliver / advance ----------------------------------------------------------------------------

TEST(Fetcher, HonestRepliesVerifyInOrderDownToTheGenesis) {
    Fetcher f(8191, hash_of(8191), 0, 8192);
    Log log;
    size_t tasks = 0;
    while (auto task = f.assign(192)) {
        ++tasks;
        ASSERT_FALSE(f.deliver(*task, 0, real_reply(*task)));
        Verified v;
        ASSERT_FALSE(f.advance(local_chain(std::nullopt), v));
        // Exactly the reply just delivered, readable through the views.
        ASSERT_TRUE(verified_are(v, task->origin, task->amount));
        for (const auto& h : v.headers) log.numbers.push_back(h.number);
        EXPECT_EQ(v.linked, task->lowest() == 0);
    }
    EXPECT_EQ(tasks, 43u);  // 42 of 192, then blocks 127..0
    EXPECT_TRUE(log.is(8191, 0));
    EXPECT_TRUE(f.linked());
    EXPECT_TRUE(f.done());
    EXPECT_FALSE(f.exhausted());
    EXPECT_FALSE(f.wrong_genesis());
    EXPECT_EQ(f.next(), 0u);
    EXPECT_EQ(f.held(), 0u);
}

TEST(Fetcher, RepliesBelowAGapAreHeldUntilTheRangeAboveArrives) {
    Fetcher f(8191, hash_of(8191), 0, 10'000);
    const Task a = must_assign(f, 100);
    const Task b = must_assign(f, 100);
    const Task c = must_assign(f, 100);
    Log log;
    ASSERT_FALSE(f.deliver(c, 3, real_reply(c)));
    ASSERT_FALSE(log.advance(f, no_join));
    EXPECT_EQ(f.held(), 1u);
    ASSERT_FALSE(f.deliver(b, 2, real_reply(b)));
    ASSERT_FALSE(log.advance(f, no_join));
    EXPECT_EQ(f.held(), 2u);
    EXPECT_TRUE(log.numbers.empty());
    EXPECT_EQ(f.next(), 8191u);
    // The top range arrives: all three verify at once, in order, all views valid.
    ASSERT_FALSE(f.deliver(a, 1, real_reply(a)));
    Verified v;
    ASSERT_FALSE(f.advance(no_join, v));
    EXPECT_TRUE(verified_are(v, 8191, 300));
    EXPECT_FALSE(v.linked);
    EXPECT_EQ(f.held(), 0u);
    EXPECT_EQ(f.next(), 7891u);
    EXPECT_EQ(f.expect(), hash_of(7891));
}

TEST(Fetcher, ShortReplyIsAcceptedAndTheRestHandedOutAgain) {
    Fetcher f(8191, hash_of(8191), 0, 10'000);
    const Task a = must_assign(f, 50);
    const Task b = must_assign(f, 50);
    ASSERT_FALSE(f.deliver(b, 2, real_reply(b)));
    // 20 of the 50 asked.
    ASSERT_FALSE(f.deliver(a, 1, real_reply(8191, 20)));
    Log log;
    ASSERT_FALSE(log.advance(f, no_join));
    EXPECT_TRUE(log.is(8191, 8172));
    EXPECT_EQ(f.next(), 8171u);
    EXPECT_EQ(f.held(), 1u);  // b waits for 8171..8142
    // The 30 missing blocks come back first, then new ground below b.
    const Task rest = must_assign(f, 100);
    EXPECT_EQ(rest, (Task{8171, 30}));
    EXPECT_EQ(f.assign(100), (Task{8091, 100}));
    ASSERT_FALSE(f.deliver(rest, 3, real_reply(rest)));
    ASSERT_FALSE(log.advance(f, no_join));
    EXPECT_TRUE(log.is(8191, 8092));
    EXPECT_EQ(f.held(), 0u);
}

TEST(Fetcher, EmptyReplyHandsTheWholeTaskBackWithoutAFault) {
    Fetcher f(8191, hash_of(8191), 0, 10'000);
    const Task a = must_assign(f, 64);
    EXPECT_FALSE(f.deliver(a, 4, reply_of({})));
    EXPECT_EQ(f.held(), 0u);
    EXPECT_EQ(f.assign(64), a);
    EXPECT_EQ(f.assign(64), (Task{8127, 64}));
}

// ---- faults inside one reply ----------------------------------------------------------------------

TEST(Fetcher, MoreHeadersThanAskedIsTheSendersFault) {
    Fetcher f(8191, hash_of(8191), 0, 10'000);
    const Task a = must_assign(f, 10);
    auto fault = f.deliver(a, 7, real_reply(8191, 11));
    ASSERT_TRUE(fault);
    EXPECT_EQ(fault->owner, 7u);
    EXPECT_NE(fault->reason.find("11 headers"), std::string::npos) << fault->reason;
    EXPECT_EQ(f.held(), 0u);
    EXPECT_EQ(f.assign(10), a);  // handed back
}

TEST(Fetcher, WrongNumbersAreTheSendersFault) {
    Fetcher f(8191, hash_of(8191), 0, 10'000);
    const Task a = must_assign(f, 10);
    // Ascending instead of reverse.
    std::vector<ByteView> ascending = real(8191, 10);
    std::reverse(ascending.begin(), ascending.end());
    // A gap: 8191, 8190, then 8188 onwards.
    std::vector<ByteView> gap = real(8191, 2);
    for (const ByteView h : real(8188, 8)) gap.push_back(h);
    // Another range altogether (a valid, linked run of real headers).
    const std::vector<ByteView> elsewhere = real(5000, 10);
    // Only the block below the range asked for.
    const std::vector<ByteView> below = real(8181, 1);
    size_t owner = 10;
    for (const std::vector<ByteView>& headers : {ascending, gap, elsewhere, below}) {
        auto fault = f.deliver(a, owner, reply_of(headers));
        ASSERT_TRUE(fault) << owner;
        EXPECT_EQ(fault->owner, owner);
        EXPECT_NE(fault->reason.find("expected block"), std::string::npos) << fault->reason;
        EXPECT_EQ(f.held(), 0u);
        EXPECT_EQ(f.assign(10), a) << owner;  // handed back each time
        ++owner;
    }
}

TEST(Fetcher, HeaderChangedInsideAReplyBreaksTheLinkToTheHeaderAboveIt) {
    Fetcher f(8191, hash_of(8191), 0, 10'000);
    const Task a = must_assign(f, 10);
    // Block 8186 (in the middle) and block 8182 (the lowest) changed: each then fails to hash to the
    // parent hash its upper neighbour in the same reply names.
    for (const uint64_t changed : {8186u, 8182u}) {
        const Bytes forged = forge(chain().headers[changed]);
        std::vector<ByteView> headers = real(8191, 10);
        headers[8191 - changed] = forged;
        auto fault = f.deliver(a, 5, reply_of(headers));
        ASSERT_TRUE(fault) << changed;
        EXPECT_EQ(fault->owner, 5u);
        EXPECT_NE(fault->reason.find(fmt::format("block {} hash", changed)), std::string::npos) << fault->reason;
        EXPECT_EQ(f.held(), 0u);
        EXPECT_EQ(f.assign(10), a);
    }
    // A block of a side chain: the right number, but not the block its upper neighbour names as parent.
    const SideChain side(8185, 8191);
    std::vector<ByteView> mixed = real(8191, 10);
    mixed[8191 - 8186] = side.rlp(8186);
    auto fault = f.deliver(a, 6, reply_of(mixed));
    ASSERT_TRUE(fault);
    EXPECT_EQ(fault->owner, 6u);
    EXPECT_EQ(f.assign(10), a);
}

// ---- faults across replies ------------------------------------------------------------------------

TEST(Fetcher, ChangedTopOfTheFirstReplyFailsAgainstTheTrustedHash) {
    Fetcher f(8191, hash_of(8191), 0, 10'000);
    const Task a = must_assign(f, 10);
    // Only the top header changed: the reply is consistent in itself (8190 is still the parent it
    // names), so deliver() cannot tell; the hash the trusted head expects can.
    const Bytes forged = forge(chain().headers[8191]);
    std::vector<ByteView> headers = real(8191, 10);
    headers[0] = forged;
    ASSERT_FALSE(f.deliver(a, 8, reply_of(headers)));
    EXPECT_EQ(f.held(), 1u);
    Log log;
    auto fault = log.advance(f, no_join);
    ASSERT_TRUE(fault);
    EXPECT_EQ(fault->owner, 8u);
    EXPECT_NE(fault->reason.find("block 8191"), std::string::npos) << fault->reason;
    EXPECT_TRUE(log.numbers.empty());
    EXPECT_EQ(f.next(), 8191u);
    EXPECT_EQ(f.expect(), hash_of(8191));
    EXPECT_EQ(f.held(), 0u);
    // Asked again, answered honestly.
    EXPECT_EQ(f.assign(10), a);
    ASSERT_FALSE(f.deliver(a, 9, real_reply(a)));
    ASSERT_FALSE(log.advance(f, no_join));
    EXPECT_TRUE(log.is(8191, 8182));
}

TEST(Fetcher, ChangedTopOfALowerReplyFailsAgainstTheReplyAboveAndDropsItsOwner) {
    Fetcher f(8191, hash_of(8191), 0, 10'000);
    const Task a = must_assign(f, 10);  // owner 1
    const Task b = must_assign(f, 10);  // owner 2: top header 8181 changed
    const Task c = must_assign(f, 10);  // owner 2: honest, but its sender lied elsewhere
    const Task d = must_assign(f, 10);  // owner 1
    const Bytes forged = forge(chain().headers[8181]);
    std::vector<ByteView> b_headers = real(8181, 10);
    b_headers[0] = forged;
    ASSERT_FALSE(f.deliver(d, 1, real_reply(d)));
    ASSERT_FALSE(f.deliver(c, 2, real_reply(c)));
    ASSERT_FALSE(f.deliver(b, 2, reply_of(b_headers)));  // consistent in itself
    ASSERT_FALSE(f.deliver(a, 1, real_reply(a)));
    EXPECT_EQ(f.held(), 4u);

    // a verifies; its lowest header names 8181's real hash as parent, which b's top does not have.
    Verified v;
    auto fault = f.advance(no_join, v);
    ASSERT_TRUE(fault);
    EXPECT_EQ(fault->owner, 2u);
    EXPECT_NE(fault->reason.find("block 8181"), std::string::npos) << fault->reason;
    // What was proven before the fault is handed out intact: a's ten headers, views still valid
    // (the syncer stores them after a fault too).
    EXPECT_TRUE(verified_are(v, 8191, 10));
    EXPECT_EQ(f.next(), 8181u);
    EXPECT_EQ(f.expect(), hash_of(8181));
    // Everything owner 2 held went back; owner 1's d stays.
    EXPECT_EQ(f.held(), 1u);
    EXPECT_EQ(f.assign(10), b);
    EXPECT_EQ(f.assign(10), c);
    EXPECT_EQ(f.assign(10), (Task{8151, 10}));
    // An honest owner fills in b and c: everything down to d verifies.
    ASSERT_FALSE(f.deliver(c, 3, real_reply(c)));
    ASSERT_FALSE(f.deliver(b, 3, real_reply(b)));
    Log log;
    ASSERT_FALSE(log.advance(f, no_join));
    EXPECT_TRUE(log.is(8181, 8152));
}

TEST(Fetcher, SideChainServedByALiarIsDroppedAndAnHonestPeerCompletesTheSync) {
    // The liar serves a chain that forks at 8100: every reply it sends is consistent in itself and
    // has the right numbers; only the link to the proven chain above exposes it.
    const SideChain side(8100, 8191);
    Fetcher f(8191, hash_of(8191), 0, 10'000);
    const Task t1 = must_assign(f, 20);  // honest 1
    const Task t2 = must_assign(f, 20);  // liar 2
    const Task t3 = must_assign(f, 20);  // liar 2
    const Task t4 = must_assign(f, 20);  // honest 1
    ASSERT_FALSE(f.deliver(t4, 1, real_reply(t4)));
    ASSERT_FALSE(f.deliver(t3, 2, reply_of(side_range(side, t3.origin, t3.amount))));
    ASSERT_FALSE(f.deliver(t2, 2, reply_of(side_range(side, t2.origin, t2.amount))));
    ASSERT_FALSE(f.deliver(t1, 1, real_reply(t1)));
    Log log;
    auto fault = log.advance(f, local_chain(std::nullopt));
    ASSERT_TRUE(fault);
    EXPECT_EQ(fault->owner, 2u);
    EXPECT_TRUE(log.is(8191, 8172));
    EXPECT_EQ(f.held(), 1u);  // t4
    // Nothing changes when advancing again before the gap is filled.
    ASSERT_FALSE(log.advance(f, local_chain(std::nullopt)));
    EXPECT_EQ(f.next(), 8171u);
    // The honest peer takes over whatever is asked for, including the liar's ranges.
    serve_honestly(f, local_chain(std::nullopt), 3, 200, log);
    EXPECT_TRUE(log.is(8191, 0));
    EXPECT_TRUE(f.linked());
    EXPECT_TRUE(f.done());
}

TEST(Fetcher, DropOwnerHandsBackEveryRangeItHoldsAndNothingElse) {
    Fetcher f(8191, hash_of(8191), 0, 10'000);
    const Task a = must_assign(f, 10);
    const Task b = must_assign(f, 10);
    const Task c = must_assign(f, 10);
    const Task d = must_assign(f, 10);
    ASSERT_FALSE(f.deliver(b, 5, real_reply(b)));
    ASSERT_FALSE(f.deliver(c, 6, real_reply(c)));
    ASSERT_FALSE(f.deliver(d, 5, real_reply(d)));
    EXPECT_EQ(f.held(), 3u);
    f.drop_owner(5);
    EXPECT_EQ(f.held(), 1u);
    f.drop_owner(42);  // holds nothing: no change
    EXPECT_EQ(f.held(), 1u);
    // b and d (highest first) go out again; c stays held; a is still out.
    EXPECT_EQ(f.assign(10), b);
    EXPECT_EQ(f.assign(10), d);
    EXPECT_EQ(f.assign(10), (Task{8151, 10}));
    ASSERT_FALSE(f.deliver(a, 7, real_reply(a)));
    ASSERT_FALSE(f.deliver(b, 7, real_reply(b)));
    ASSERT_FALSE(f.deliver(d, 7, real_reply(d)));
    Log log;
    ASSERT_FALSE(log.advance(f, no_join));
    EXPECT_TRUE(log.is(8191, 8152));
}

// ---- joining the local chain ---------------------------------------------------------------------

TEST(Fetcher, JoinStopsTheDownloadWhereTheChainLinks) {
    // The node holds blocks 0..5999: block 6000 joins it. The floor is 0, so nothing but the join stops
    // the download there.
    const JoinFn join = local_chain(5999);
    Fetcher f(8191, hash_of(8191), 0, 10'000);
    std::vector<Task> tasks;
    while (tasks.empty() || tasks.back().lowest() > 5500) tasks.push_back(must_assign(f, 100));
    const Task late = must_assign(f, 100);  // still out when the join is found
    for (auto it = tasks.rbegin(); it != tasks.rend(); ++it) ASSERT_FALSE(f.deliver(*it, 1, real_reply(*it)));
    Verified v;
    ASSERT_FALSE(f.advance(join, v));
    EXPECT_TRUE(verified_are(v, 8191, 8191 - 6000 + 1));
    EXPECT_TRUE(v.linked);
    EXPECT_TRUE(f.linked());
    EXPECT_TRUE(f.done());
    EXPECT_FALSE(f.exhausted());
    EXPECT_EQ(f.next(), 6000u);
    EXPECT_EQ(f.held(), 0u);  // what was held below the join is let go
    EXPECT_FALSE(f.assign(100));
    // A late reply below the join changes nothing.
    EXPECT_FALSE(f.deliver(late, 2, real_reply(late)));
    Verified after;
    ASSERT_FALSE(f.advance(join, after));
    EXPECT_TRUE(after.headers.empty());
    EXPECT_TRUE(f.linked());
    EXPECT_FALSE(f.assign(100));
}

TEST(Fetcher, GenesisWithTheNetworksHashLinks) {
    Fetcher f(300, hash_of(300), 0, 10'000);
    Log log;
    serve_honestly(f, local_chain(std::nullopt), 1, 128, log);
    EXPECT_TRUE(log.is(300, 0));
    EXPECT_TRUE(log.linked);
    EXPECT_TRUE(f.linked());
    EXPECT_TRUE(f.done());
    EXPECT_FALSE(f.wrong_genesis());
    EXPECT_EQ(f.next(), 0u);
}

TEST(Fetcher, GenesisOfAnotherNetworkIsReportedAndNotVerified) {
    // The network's genesis is some other hash: mainnet's block 0 must not pass as it.
    const JoinFn join = local_chain(std::nullopt, hash_of(1));
    Fetcher f(300, hash_of(300), 0, 10'000);
    Log log;
    serve_honestly(f, join, 1, 128, log);
    EXPECT_TRUE(f.wrong_genesis());
    EXPECT_FALSE(f.linked());
    EXPECT_FALSE(log.linked);
    EXPECT_TRUE(log.is(300, 1));  // block 0 is not handed out as verified
    EXPECT_FALSE(f.assign(128));
}

TEST(Fetcher, WrongGenesisEndsTheDownload) {
    // The sync's fetch loop waits until done(): after a wrong genesis there is nothing left to
    // assign, so unless done() says so the sync waits forever.
    Fetcher f(300, hash_of(300), 0, 10'000);
    Log log;
    serve_honestly(f, local_chain(std::nullopt, hash_of(1)), 1, 128, log);
    ASSERT_TRUE(f.wrong_genesis());
    EXPECT_FALSE(f.assign(128));
    EXPECT_TRUE(f.done());
}

// ---- floor ----------------------------------------------------------------------------------------

TEST(Fetcher, VerifyingDownToTheFloorWithoutAJoinExhaustsAndLowerFloorGoesOn) {
    Fetcher f(8191, hash_of(8191), 8000, 10'000);
    EXPECT_EQ(f.floor(), 8000u);
    Log log;
    serve_honestly(f, no_join, 1, 50, log);
    EXPECT_TRUE(log.is(8191, 8000));
    EXPECT_TRUE(f.exhausted());
    EXPECT_TRUE(f.done());
    EXPECT_FALSE(f.linked());
    EXPECT_EQ(f.expect(), hash_of(7999));  // what the next block down must hash to
    EXPECT_FALSE(f.assign(50));

    f.lower_floor(7900);
    EXPECT_EQ(f.floor(), 7900u);
    EXPECT_FALSE(f.exhausted());
    EXPECT_FALSE(f.done());
    EXPECT_EQ(f.next(), 7999u);
    EXPECT_EQ(f.assign(60), (Task{7999, 60}));
    EXPECT_EQ(f.assign(60), (Task{7939, 40}));
    EXPECT_FALSE(f.assign(60));
    ASSERT_FALSE(f.deliver(Task{7939, 40}, 1, real_reply(7939, 40)));
    ASSERT_FALSE(f.deliver(Task{7999, 60}, 1, real_reply(7999, 60)));
    ASSERT_FALSE(log.advance(f, no_join));
    EXPECT_TRUE(log.is(8191, 7900));
    EXPECT_TRUE(f.exhausted());

    // Lowered once more, the chain joins the local one (blocks 0..7499) at 7500.
    f.lower_floor(7000);
    serve_honestly(f, local_chain(7499), 1, 64, log);
    EXPECT_TRUE(log.is(8191, 7500));
    EXPECT_TRUE(f.linked());
    EXPECT_FALSE(f.exhausted());
    EXPECT_TRUE(f.done());
    // Linked: the floor stays where it is.
    f.lower_floor(0);
    EXPECT_EQ(f.floor(), 7000u);
    EXPECT_FALSE(f.assign(64));
}

TEST(Fetcher, JoinAtTheFloorLinksRatherThanExhausts) {
    // As the syncer sets it up: the floor is the local head + 1, where an honest chain joins.
    Fetcher f(8191, hash_of(8191), 4001, 10'000);
    Log log;
    serve_honestly(f, local_chain(4000), 1, 192, log);
    EXPECT_TRUE(log.is(8191, 4001));
    EXPECT_TRUE(f.linked());
    EXPECT_FALSE(f.exhausted());
    EXPECT_TRUE(f.done());
}

}  // namespace
}  // namespace headerd::sync
