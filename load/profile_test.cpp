#include "load/profile.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/hex.hpp"
#include "p2p/wire/base_protocol.hpp"
#include "tests/reference_chain.hpp"

namespace headerd::load {
namespace {

using namespace std::chrono_literals;
using eth::GetBlockHeadersRequest;
using testing::kReferenceHead;  // the server's head in these tests
using testing::reference_chain;

// The server's chain is the reference chain: the block number of each of its hashes.
const std::map<Hash32, uint64_t>& numbers() {
    static const std::map<Hash32, uint64_t> m = [] {
        std::map<Hash32, uint64_t> out;
        for (uint64_t n = 0; n < reference_chain().hashes.size(); ++n) out[reference_chain().hashes[n]] = n;
        return out;
    }();
    return m;
}

ChainView view(uint64_t head = kReferenceHead) {
    ChainView v;
    v.head = head;
    v.head_hash = reference_chain().hashes.at(head);
    return v;
}

// What a server with head `head` sends (geth's rules, written out independently of verify.cpp).
std::vector<ByteView> serve(const GetBlockHeadersRequest& r, uint64_t head = kReferenceHead) {
    std::vector<ByteView> out;
    uint64_t n = r.origin.number;
    if (r.origin.is_hash) {
        auto it = numbers().find(r.origin.hash);
        if (it == numbers().end()) return out;
        n = it->second;
    }
    if (n > head) return out;
    const uint64_t want = std::min<uint64_t>(r.amount, 1024);
    while (out.size() < want) {
        out.push_back(reference_chain().headers.at(n));
        if (r.skip == UINT64_MAX) break;
        const uint64_t step = r.skip + 1;
        if (r.reverse ? n < step : head - n < step) break;
        n = r.reverse ? n - step : n + step;
    }
    return out;
}

// Verifies a reply to `p` (must be good) and returns its facts.
ReplyFacts facts_of(const Planned& p, std::span<const ByteView> reply, const ServeRules& rules = {},
                    uint64_t head = kReferenceHead) {
    VerifyRequest in;
    in.request = &p.request;
    in.origin_number = p.origin_number;
    in.origin_on_chain = p.origin_on_chain;
    in.head_low = head;
    in.head_high = head;
    VerifyScratch scratch;
    const VerifyResult v = verify_reply(in, reply, rules, nullptr, scratch);
    EXPECT_TRUE(v.ok()) << p.step << ", " << describe(p.request) << ": " << v.failure;
    return v.facts.value_or(ReplyFacts{});
}

// Plans one request, serves it from the real chain, verifies the reply, tells the walk.
Planned step(Walk& walk, std::mt19937_64& rng, uint64_t head = kReferenceHead) {
    Planned p = walk.next(view(head), rng).value();
    const auto reply = serve(p.request, head);
    const ReplyFacts f = facts_of(p, reply, {}, head);
    walk.done(p, RequestOutcome::kGood, &f);
    return p;
}

struct Shape {
    bool by_hash;
    uint64_t origin;  // number, or for a hash origin the block of the hash
    uint64_t amount;
    uint64_t skip;
    bool reverse;
};

void expect_shape(const Planned& p, const Shape& s) {
    const auto& r = p.request;
    EXPECT_EQ(r.origin.is_hash, s.by_hash) << describe(r);
    if (s.by_hash) {
        EXPECT_EQ(to_hex0x(r.origin.hash), to_hex0x(reference_chain().hashes.at(s.origin))) << describe(r);
        EXPECT_EQ(p.origin_number, std::optional<uint64_t>(s.origin)) << describe(r);
        EXPECT_TRUE(p.origin_on_chain) << describe(r);
    } else {
        EXPECT_EQ(r.origin.number, s.origin) << describe(r);
    }
    EXPECT_EQ(r.amount, s.amount) << describe(r);
    EXPECT_EQ(r.skip, s.skip) << describe(r);
    EXPECT_EQ(r.reverse, s.reverse) << describe(r);
}

const ProfileSpec& spec(std::string_view name) {
    const ProfileSpec* s = find_profile(name);
    EXPECT_NE(s, nullptr) << name;
    return s != nullptr ? *s : profiles().front();
}

std::unique_ptr<Walk> walk_of(std::string_view name) { return make_walk(spec(name)); }
std::unique_ptr<Judge> judge_of(std::string_view name) { return make_judge(spec(name)); }

// ---- the table ----------------------------------------------------------------------------------

TEST(LoadProfiles, TableHasEveryProfileInOrder) {
    std::vector<std::string_view> names;
    double weights = 0;
    double history_weights = 0;
    for (const ProfileSpec& p : profiles()) {
        SCOPED_TRACE(p.name);
        names.push_back(p.name);
        weights += p.mix_weight;
        history_weights += p.history_weight;
        // Each profile is in one of the two mixes: `mix` (headers) or `history`.
        EXPECT_NE(p.mix_weight > 0, p.history());
        EXPECT_FALSE(p.imitates.empty());
        EXPECT_GE(p.depth, 1u);
        EXPECT_GE(p.fanout, 1u);
        EXPECT_GT(p.timeout, Clock::duration::zero());
        // The runner offers kEthOffers[min_eth - 68 .. max_eth - 68].
        EXPECT_GE(p.min_eth, p2p::kEthOffers.front().version);
        EXPECT_LE(p.min_eth, p.max_eth);
        EXPECT_LE(p.max_eth, p2p::kEthOffers.back().version);
        EXPECT_EQ(find_profile(p.name), &p);
    }
    EXPECT_EQ(names, (std::vector<std::string_view>{"geth-skeleton", "nethermind", "besu", "erigon", "reth",
                                                    "ethereumjs", "probes", "legacy", "edge", "geth-history",
                                                    "nethermind-history", "besu-history", "reth-history"}));
    EXPECT_DOUBLE_EQ(weights, 100);
    EXPECT_DOUBLE_EQ(history_weights, 100);
    EXPECT_EQ(find_profile("geth"), nullptr);
    EXPECT_EQ(find_profile(""), nullptr);
    EXPECT_EQ(find_profile("mix"), nullptr);

    EXPECT_EQ(spec("besu").depth, 5u);
    EXPECT_EQ(spec("besu").timeout, 5s);
    EXPECT_EQ(spec("erigon").fanout, 5u);
    EXPECT_EQ(spec("erigon").timeout, 30s);
    EXPECT_EQ(spec("geth-skeleton").timeout_rule, TimeoutRule::kGethMsgrate);
    EXPECT_EQ(spec("legacy").timeout_rule, TimeoutRule::kGethMsgrate);
    EXPECT_EQ(spec("reth").timeout_rule, TimeoutRule::kRethAdaptive);
    EXPECT_EQ(spec("reth").timeout, 20s);
    EXPECT_EQ(spec("probes").think, 1s);
    EXPECT_EQ(spec("ethereumjs").max_eth, 68u);
}

// ---- walks --------------------------------------------------------------------------------------

TEST(LoadWalks, GethSkeletonWalksDownIn512sAndNeverAsksGenesis) {
    auto walk = walk_of("geth-skeleton");
    std::mt19937_64 rng(1);
    std::vector<Planned> plan;
    for (int i = 0; i < 17; ++i) plan.push_back(step(*walk, rng));
    // 8190, 7678, ..., 510: 16 batches, the last of exactly the 510 headers above genesis.
    for (size_t i = 0; i < 15; ++i) {
        SCOPED_TRACE(i);
        EXPECT_EQ(plan[i].step, "skeleton");
        expect_shape(plan[i], {false, 8190 - 512 * i, 512, 0, true});
    }
    expect_shape(plan[15], {false, 510, 510, 0, true});
    for (const Planned& p : plan) {
        EXPECT_GE(p.request.origin.number, p.request.amount) << "asks genesis: " << describe(p.request);
    }
    // Then from the head again.
    expect_shape(plan[16], {false, 8190, 512, 0, true});
}

TEST(LoadWalks, NethermindAsksAscendingBatchesOf192DownFromThePivot) {
    auto walk = walk_of("nethermind");
    std::mt19937_64 rng(1);
    std::vector<Planned> plan;
    for (int i = 0; i < 44; ++i) plan.push_back(step(*walk, rng));
    // 8000..8191, 7808..7999, ..., 128..319, then 0..127; then from the pivot again.
    for (size_t i = 0; i < 42; ++i) {
        SCOPED_TRACE(i);
        EXPECT_EQ(plan[i].step, "fast headers");
        expect_shape(plan[i], {false, 8000 - 192 * i, 192, 0, false});
    }
    expect_shape(plan[42], {false, 0, 128, 0, false});
    expect_shape(plan[43], {false, 8000, 192, 0, false});
}

TEST(LoadWalks, BesuAsksReverseBatchesOf192) {
    auto walk = walk_of("besu");
    std::mt19937_64 rng(1);
    std::vector<Planned> plan;
    for (int i = 0; i < 44; ++i) plan.push_back(step(*walk, rng));
    for (size_t i = 0; i < 42; ++i) {
        SCOPED_TRACE(i);
        EXPECT_EQ(plan[i].step, "backward headers");
        expect_shape(plan[i], {false, 8191 - 192 * i, 192, 0, true});
    }
    expect_shape(plan[42], {false, 127, 128, 0, true});  // down to genesis, the anchor
    expect_shape(plan[43], {false, 8191, 192, 0, true});
}

TEST(LoadWalks, BesuPipelinesFiveWithoutWaitingForReplies) {
    auto walk = walk_of("besu");
    std::mt19937_64 rng(1);
    for (uint64_t i = 0; i < 5; ++i)
        expect_shape(walk->next(view(), rng).value(), {false, 8191 - 192 * i, 192, 0, true});
}

TEST(LoadWalks, ErigonChasesParentHashesByHash) {
    auto walk = walk_of("erigon");
    std::mt19937_64 rng(1);
    const Planned first = walk->next(view(), rng).value();
    EXPECT_EQ(first.step, "PoS anchor");
    expect_shape(first, {true, 8191, 192, 0, true});
    // The five clients of a fan-out group all get the same request.
    for (int i = 0; i < 4; ++i) {
        const Planned same = walk->next(view(), rng).value();
        EXPECT_EQ(same.request, first.request);
        EXPECT_EQ(same.generation, first.generation);
    }
    const auto reply = serve(first.request);
    ASSERT_EQ(reply.size(), 192u);
    const ReplyFacts f = facts_of(first, reply);
    EXPECT_EQ(f.last_number, 8000u);
    walk->done(first, RequestOutcome::kGood, &f);

    // The next origin: the last header's parent, block 7999; a new generation.
    const Planned second = walk->next(view(), rng).value();
    expect_shape(second, {true, 7999, 192, 0, true});
    EXPECT_EQ(to_hex0x(second.request.origin.hash), to_hex0x(f.last_parent_hash));
    EXPECT_NE(second.generation, first.generation);

    // The other clients' replies to the old step change nothing.
    walk->done(first, RequestOutcome::kGood, &f);
    EXPECT_EQ(walk->next(view(), rng).value().request, second.request);
    // Nor does an empty reply.
    const ReplyFacts empty{};
    walk->done(second, RequestOutcome::kGood, &empty);
    EXPECT_EQ(walk->next(view(), rng).value().request, second.request);

    // Chasing on down to genesis, then again from the head, each step a new generation.
    std::set<uint64_t> generations{first.generation, second.generation};
    Planned p = second;
    for (int i = 0; i < 45 && p.origin_number != std::optional<uint64_t>(127); ++i) {
        const auto r = serve(p.request);
        const ReplyFacts rf = facts_of(p, r);
        walk->done(p, RequestOutcome::kGood, &rf);
        p = walk->next(view(), rng).value();
        EXPECT_TRUE(generations.insert(p.generation).second);
    }
    expect_shape(p, {true, 127, 192, 0, true});  // 7999 - 41 * 192
    const auto to_genesis = serve(p.request);
    ASSERT_EQ(to_genesis.size(), 128u);
    const ReplyFacts gf = facts_of(p, to_genesis);
    EXPECT_EQ(gf.last_number, 0u);
    walk->done(p, RequestOutcome::kGood, &gf);
    const Planned again = walk->next(view(), rng).value();
    expect_shape(again, {true, 8191, 192, 0, true});
    EXPECT_TRUE(generations.insert(again.generation).second);
}

TEST(LoadWalks, RethAsksTheTargetByHashThenReverse1000) {
    auto walk = walk_of("reth");
    std::mt19937_64 rng(1);
    std::vector<Planned> plan;
    for (int i = 0; i < 11; ++i) plan.push_back(step(*walk, rng));
    EXPECT_EQ(plan[0].step, "sync target");
    expect_shape(plan[0], {true, 8191, 1, 0, true});
    for (size_t i = 1; i <= 8; ++i) {
        SCOPED_TRACE(i);
        EXPECT_EQ(plan[i].step, "reverse headers");
        expect_shape(plan[i], {false, 8190 - 1000 * (i - 1), 1000, 0, true});
    }
    expect_shape(plan[9], {false, 190, 190, 0, true});  // 190..1: never genesis
    expect_shape(plan[10], {true, 8191, 1, 0, true});
}

TEST(LoadWalks, EthereumJsAlternatesProbeAndJob) {
    auto walk = walk_of("ethereumjs");
    std::mt19937_64 rng(1);
    std::vector<Planned> plan;
    for (int i = 0; i < 8; ++i) plan.push_back(step(*walk, rng));
    for (size_t i = 0; i < plan.size(); i += 2) {
        SCOPED_TRACE(i);
        EXPECT_EQ(plan[i].step, "latest");
        expect_shape(plan[i], {true, 8191, 1, 0, false});
        EXPECT_EQ(plan[i + 1].step, "job");
        expect_shape(plan[i + 1], {false, 8191 - 100 * (i / 2), 100, 0, true});
    }
}

TEST(LoadWalks, ProbesAskHeadParentDaoAndGapFill) {
    auto walk = walk_of("probes");
    std::mt19937_64 rng(1);
    std::vector<Planned> plan;
    for (int i = 0; i < 8; ++i) plan.push_back(step(*walk, rng));
    const std::vector<std::string_view> steps{"head", "head parent", "DAO check", "gap fill",
                                              "head", "head parent", "DAO check", "gap fill"};
    for (size_t i = 0; i < plan.size(); ++i) EXPECT_EQ(plan[i].step, steps[i]) << i;
    expect_shape(plan[0], {true, 8191, 1, 0, false});
    expect_shape(plan[1], {true, 8190, 2, 0, false});  // learned from the head's reply
    expect_shape(plan[2], {false, 4095, 1, 0, false});
    expect_shape(plan[3], {true, 8191, 32, 0, true});

    // Before any head reply there is no parent to ask: the head again.
    auto fresh = walk_of("probes");
    fresh->next(view(), rng);
    const Planned second = fresh->next(view(), rng).value();
    EXPECT_EQ(second.step, "head");
    expect_shape(second, {true, 8191, 1, 0, false});
    // On a chain past the DAO fork the check asks block 1,920,000.
    ChainView long_chain;
    long_chain.head = 20'000'000;
    EXPECT_EQ(fresh->next(long_chain, rng).value().request.origin.number, 1'920'000u);
}

TEST(LoadWalks, LegacyAsksSkipSkeletonsFillsAncestorsAndFullSyncRanges) {
    auto walk = walk_of("legacy");
    std::mt19937_64 rng(42);
    std::vector<Planned> plan;
    for (int i = 0; i < 10; ++i) plan.push_back(step(*walk, rng));
    const std::vector<std::string_view> steps{"skeleton", "fill", "ancestor span", "fetch head", "full sync range"};
    for (size_t i = 0; i < plan.size(); ++i) EXPECT_EQ(plan[i].step, steps[i % 5]) << i;
    std::set<uint64_t> skips;
    for (const Planned& p : plan) skips.insert(p.request.skip);
    EXPECT_TRUE(skips.contains(191));
    EXPECT_TRUE(skips.contains(199));
    for (size_t round = 0; round < 2; ++round) {
        SCOPED_TRACE(round);
        const Planned* p = &plan[5 * round];
        const uint64_t from = p[0].request.origin.number;
        EXPECT_LE(from, kReferenceHead);
        expect_shape(p[0], {false, from, 128, 191, false});
        expect_shape(p[1], {false, from, 192, 0, false});
        expect_shape(p[2], {false, 7999, 12, 15, false});
        expect_shape(p[3], {true, 8191, 2, 63, true});
        // The full-sync range starts at the parent of the fill's last header, by hash.
        const uint64_t last = std::min<uint64_t>(from + 191, kReferenceHead);
        if (last > from) expect_shape(p[4], {true, last - 1, 193, 199, false});
    }
    // The same seed, the same requests.
    auto again = walk_of("legacy");
    std::mt19937_64 rng2(42);
    for (const Planned& p : plan) EXPECT_EQ(step(*again, rng2).request, p.request);
}

TEST(LoadWalks, EdgeAsksTheOddRequests) {
    auto walk = walk_of("edge");
    std::mt19937_64 rng(1);
    std::vector<Planned> plan;
    for (int i = 0; i < 6; ++i) plan.push_back(step(*walk, rng));
    expect_shape(plan[0], {false, kReferenceHead + 1000, 192, 0, false});
    expect_shape(plan[1], {false, 0, 0, 0, false});
    expect_shape(plan[2], {false, 0, 2000, 0, false});
    EXPECT_TRUE(plan[3].request.origin.is_hash);
    EXPECT_FALSE(numbers().contains(plan[3].request.origin.hash));
    EXPECT_FALSE(plan[3].origin_on_chain);
    EXPECT_FALSE(plan[3].origin_number);
    expect_shape(plan[4], {false, 4095, 10, UINT64_MAX, false});
    expect_shape(plan[5], {false, 4095, 10, UINT64_MAX, true});
    EXPECT_EQ(step(*walk, rng).request, plan[0].request);  // and round again
}

// Every walk against the real chain for a while: every reply verifies and no judge objects.
TEST(LoadWalks, EveryWalkGetsOnlyGoodRepliesFromAGoodServer) {
    for (const ProfileSpec& s : profiles()) {
        SCOPED_TRACE(s.name);
        auto walk = make_walk(s);
        auto judge = make_judge(s);
        std::mt19937_64 rng(7);
        for (int i = 0; i < 30; ++i) {
            const Planned p = walk->next(view(), rng).value();
            const auto reply = serve(p.request);
            const ReplyFacts f = facts_of(p, reply);
            auto verdict = judge->judge(p, RequestOutcome::kGood, &f, Clock::time_point{} + i * 1s);
            EXPECT_FALSE(verdict) << describe(p.request) << ": " << verdict->reason;
            walk->done(p, RequestOutcome::kGood, &f);
        }
    }
}

// ---- retries and the rest of short replies ------------------------------------------------------

TEST(LoadWalks, AFailedRequestIsAskedAgainBeforeTheWalkMovesOn) {
    for (std::string_view name : {"geth-skeleton", "nethermind", "besu", "erigon", "reth", "ethereumjs"}) {
        for (RequestOutcome failure : {RequestOutcome::kTimeout, RequestOutcome::kInvalid, RequestOutcome::kClosed}) {
            SCOPED_TRACE(std::string(name) + " outcome " + std::to_string(static_cast<int>(failure)));
            auto walk = walk_of(name);
            std::mt19937_64 rng(1);
            step(*walk, rng);  // past reth's and ethereumjs's first probe
            const Planned p = walk->next(view(), rng).value();
            walk->done(p, failure, nullptr);
            const Planned again = walk->next(view(), rng).value();
            EXPECT_EQ(again.request, p.request);
            EXPECT_EQ(again.step, p.step);
            EXPECT_EQ(again.origin_number, p.origin_number);
            EXPECT_EQ(again.generation, p.generation);
            // Answered this time: the walk moves on.
            const auto reply = serve(again.request);
            const ReplyFacts f = facts_of(again, reply);
            walk->done(again, RequestOutcome::kGood, &f);
            EXPECT_NE(walk->next(view(), rng).value().request, p.request);
        }
    }
}

TEST(LoadWalks, BesuRetriesAFailedRequestAheadOfItsPipeline) {
    auto walk = walk_of("besu");
    std::mt19937_64 rng(1);
    const Planned a = walk->next(view(), rng).value();
    const Planned b = walk->next(view(), rng).value();
    walk->done(a, RequestOutcome::kTimeout, nullptr);
    EXPECT_EQ(walk->next(view(), rng).value().request, a.request);
    expect_shape(walk->next(view(), rng).value(), {false, 8191 - 2 * 192, 192, 0, true});
    (void)b;
}

// A reply cut at the byte limit (a good reply): the walk asks for the missing headers next.
void expect_rest_asked(std::string_view name, size_t probes_first, uint64_t got, const Shape& rest, const Shape& then) {
    SCOPED_TRACE(name);
    auto walk = walk_of(name);
    std::mt19937_64 rng(1);
    for (size_t i = 0; i < probes_first; ++i) step(*walk, rng);
    const Planned p = walk->next(view(), rng).value();
    const auto reply = serve(p.request);
    ASSERT_GT(reply.size(), got);
    const std::span<const ByteView> cut(reply.data(), got);
    ServeRules rules;
    rules.soft_bytes = 0;
    for (ByteView h : cut) rules.soft_bytes += h.size();
    const ReplyFacts f = facts_of(p, cut, rules);
    ASSERT_EQ(f.count, got);
    walk->done(p, RequestOutcome::kGood, &f);
    const Planned r = walk->next(view(), rng).value();
    EXPECT_EQ(r.step, p.step);
    expect_shape(r, rest);
    // The rest, answered in full, completes the batch; the walk goes on where it was.
    const auto rest_reply = serve(r.request);
    const ReplyFacts rf = facts_of(r, rest_reply);
    walk->done(r, RequestOutcome::kGood, &rf);
    expect_shape(walk->next(view(), rng).value(), then);
}

TEST(LoadWalks, AShortReplysRestIsAskedFor) {
    expect_rest_asked("nethermind", 0, 100, {false, 8100, 92, 0, false}, {false, 7808, 192, 0, false});
    expect_rest_asked("besu", 0, 100, {false, 8091, 92, 0, true}, {false, 7999, 192, 0, true});
    expect_rest_asked("reth", 1, 400, {false, 7790, 600, 0, true}, {false, 7190, 1000, 0, true});
    expect_rest_asked("ethereumjs", 1, 30, {false, 8161, 70, 0, true}, {true, 8191, 1, 0, false});
}

TEST(LoadWalks, GethSkeletonDoesNotAskTheRestOfAShortBatch) {
    // geth drops the peer instead (the judge); the walk goes on.
    auto walk = walk_of("geth-skeleton");
    std::mt19937_64 rng(1);
    const Planned p = walk->next(view(), rng).value();
    const auto reply = serve(p.request);
    ServeRules rules;
    rules.soft_bytes = 0;
    for (size_t i = 0; i < 100; ++i) rules.soft_bytes += reply[i].size();
    const ReplyFacts f = facts_of(p, std::span<const ByteView>(reply.data(), 100), rules);
    walk->done(p, RequestOutcome::kGood, &f);
    expect_shape(walk->next(view(), rng).value(), {false, 7678, 512, 0, true});
    EXPECT_EQ(judge_of("geth-skeleton")->judge(p, RequestOutcome::kGood, &f, {})->reason, "short skeleton batch");
}

// ---- judges -------------------------------------------------------------------------------------

Planned planned(std::string_view step, uint64_t amount, uint64_t generation = 0) {
    Planned p;
    p.request.origin = eth::HashOrNumber::of(8190);
    p.request.amount = amount;
    p.request.reverse = true;
    p.step = step;
    p.generation = generation;
    return p;
}

ReplyFacts facts(size_t count) {
    ReplyFacts f;
    f.count = count;
    f.expected = count;
    return f;
}

const Clock::time_point kT0{};

TEST(LoadJudges, GethDropsOnTimeoutInvalidEmptyAndShortSkeleton) {
    auto judge = judge_of("geth-skeleton");
    const Planned p = planned("skeleton", 512);
    const ReplyFacts full = facts(512), empty = facts(0), part = facts(511);
    EXPECT_FALSE(judge->judge(p, RequestOutcome::kGood, &full, kT0));
    EXPECT_FALSE(judge->judge(p, RequestOutcome::kClosed, nullptr, kT0));
    for (auto [outcome, f, reason] :
         {std::tuple{RequestOutcome::kTimeout, static_cast<const ReplyFacts*>(nullptr), "timeout"},
          std::tuple{RequestOutcome::kInvalid, static_cast<const ReplyFacts*>(nullptr), "invalid reply"},
          std::tuple{RequestOutcome::kGood, &empty, "empty reply"},
          std::tuple{RequestOutcome::kGood, &part, "short skeleton batch"}}) {
        auto v = judge->judge(p, outcome, f, kT0);
        ASSERT_TRUE(v) << reason;
        EXPECT_TRUE(v->drop) << reason;
        EXPECT_EQ(v->reason, reason);
    }
    // A short reply to another step is no skeleton batch.
    EXPECT_FALSE(judge->judge(planned("fill", 512), RequestOutcome::kGood, &part, kT0));
}

TEST(LoadJudges, BesuDropsAfterFiveTimeoutsInARowAndResetsOnAGoodReply) {
    auto judge = judge_of("besu");
    const Planned p = planned("backward headers", 192);
    const ReplyFacts good = facts(192), empty = facts(0);
    for (int i = 0; i < 4; ++i) {
        auto v = judge->judge(p, RequestOutcome::kTimeout, nullptr, kT0 + i * 1s);
        ASSERT_TRUE(v);
        EXPECT_FALSE(v->drop);
        EXPECT_EQ(v->reason, "timeout");
    }
    EXPECT_FALSE(judge->judge(p, RequestOutcome::kGood, &good, kT0 + 5s));
    for (int i = 0; i < 4; ++i) EXPECT_FALSE(judge->judge(p, RequestOutcome::kTimeout, nullptr, kT0)->drop) << i;
    EXPECT_FALSE(judge->judge(p, RequestOutcome::kGood, &empty, kT0));  // empty costs nothing...
    for (int i = 0; i < 4; ++i) EXPECT_FALSE(judge->judge(p, RequestOutcome::kTimeout, nullptr, kT0)->drop) << i;
    auto fifth = judge->judge(p, RequestOutcome::kTimeout, nullptr, kT0);
    ASSERT_TRUE(fifth);
    EXPECT_TRUE(fifth->drop);
    EXPECT_EQ(fifth->reason, "5 timeouts");
    // Counting starts again after the drop.
    EXPECT_FALSE(judge->judge(p, RequestOutcome::kTimeout, nullptr, kT0)->drop);
}

TEST(LoadJudges, BesuDropsAfterFiveUselessRepliesWithinAMinute) {
    const Planned p = planned("backward headers", 192);
    {
        auto judge = judge_of("besu");
        for (int i = 0; i < 4; ++i) {
            auto v = judge->judge(p, RequestOutcome::kInvalid, nullptr, kT0 + i * 10s);
            ASSERT_TRUE(v);
            EXPECT_FALSE(v->drop);
            EXPECT_EQ(v->reason, "useless reply");
        }
        auto fifth = judge->judge(p, RequestOutcome::kInvalid, nullptr, kT0 + 59s);
        ASSERT_TRUE(fifth);
        EXPECT_TRUE(fifth->drop);
        EXPECT_EQ(fifth->reason, "5 useless replies in a minute");
    }
    {
        // 16 s apart: the first has left the minute when the fifth comes.
        auto judge = judge_of("besu");
        for (int i = 0; i < 5; ++i)
            EXPECT_FALSE(judge->judge(p, RequestOutcome::kInvalid, nullptr, kT0 + i * 16s)->drop);
        // Six seconds later five lie within the minute.
        EXPECT_TRUE(judge->judge(p, RequestOutcome::kInvalid, nullptr, kT0 + 70s)->drop);
    }
}

TEST(LoadJudges, RethBansAfterFourBadMessages) {
    const Planned p = planned("reverse headers", 1000);
    const ReplyFacts empty = facts(0), good = facts(1000);
    {
        auto judge = judge_of("reth");
        for (int i = 0; i < 3; ++i) {  // -16 x 1024 each: -49,152 > -51,200
            auto v = judge->judge(p, RequestOutcome::kInvalid, nullptr, kT0);
            ASSERT_TRUE(v);
            EXPECT_FALSE(v->drop);
            EXPECT_EQ(v->reason, "bad message");
        }
        EXPECT_FALSE(judge->judge(p, RequestOutcome::kGood, &good, kT0));  // no reward
        auto fourth = judge->judge(p, RequestOutcome::kGood, &empty, kT0);
        ASSERT_TRUE(fourth);
        EXPECT_TRUE(fourth->drop);
        EXPECT_EQ(fourth->reason, "banned (empty response)");
        // Reputation starts over after the ban.
        EXPECT_FALSE(judge->judge(p, RequestOutcome::kInvalid, nullptr, kT0)->drop);
    }
    {
        // Timeouts cost 4 x 1024: the 13th passes -50 x 1024.
        auto judge = judge_of("reth");
        for (int i = 0; i < 12; ++i) {
            auto v = judge->judge(p, RequestOutcome::kTimeout, nullptr, kT0);
            ASSERT_TRUE(v);
            EXPECT_FALSE(v->drop) << i;
            EXPECT_EQ(v->reason, "timeout");
        }
        auto thirteenth = judge->judge(p, RequestOutcome::kTimeout, nullptr, kT0);
        EXPECT_TRUE(thirteenth->drop);
        EXPECT_EQ(thirteenth->reason, "banned (timeout)");
    }
    {
        // Three bad messages and a timeout: -53,248.
        auto judge = judge_of("reth");
        for (int i = 0; i < 3; ++i) EXPECT_FALSE(judge->judge(p, RequestOutcome::kInvalid, nullptr, kT0)->drop);
        EXPECT_EQ(judge->judge(p, RequestOutcome::kTimeout, nullptr, kT0)->reason, "banned (timeout)");
    }
}

TEST(LoadJudges, ErigonDropsAfterThreeTimeoutsOfOneAnchor) {
    auto judge = judge_of("erigon");
    const Planned g1 = planned("PoS anchor", 192, 1), g2 = planned("PoS anchor", 192, 2);
    EXPECT_FALSE(judge->judge(g1, RequestOutcome::kTimeout, nullptr, kT0));
    EXPECT_FALSE(judge->judge(g1, RequestOutcome::kTimeout, nullptr, kT0));
    // A new anchor: counting starts over.
    EXPECT_FALSE(judge->judge(g2, RequestOutcome::kTimeout, nullptr, kT0));
    EXPECT_FALSE(judge->judge(g2, RequestOutcome::kTimeout, nullptr, kT0));
    // Invalid or empty replies are ignored, not counted.
    const ReplyFacts empty = facts(0);
    EXPECT_FALSE(judge->judge(g2, RequestOutcome::kInvalid, nullptr, kT0));
    EXPECT_FALSE(judge->judge(g2, RequestOutcome::kGood, &empty, kT0));
    auto third = judge->judge(g2, RequestOutcome::kTimeout, nullptr, kT0);
    ASSERT_TRUE(third);
    EXPECT_TRUE(third->drop);
    EXPECT_EQ(third->reason, "anchor abandoned after 3 timeouts");
    EXPECT_FALSE(judge->judge(g2, RequestOutcome::kTimeout, nullptr, kT0));
}

TEST(LoadJudges, NethermindPenalisesEmptyAndTimeoutDropsInvalid) {
    auto judge = judge_of("nethermind");
    const Planned p = planned("fast headers", 192);
    const ReplyFacts empty = facts(0), good = facts(192);
    EXPECT_FALSE(judge->judge(p, RequestOutcome::kGood, &good, kT0));
    auto e = judge->judge(p, RequestOutcome::kGood, &empty, kT0);
    ASSERT_TRUE(e);
    EXPECT_FALSE(e->drop);
    EXPECT_EQ(e->reason, "weak peer: no sync progress");
    auto t = judge->judge(p, RequestOutcome::kTimeout, nullptr, kT0);
    ASSERT_TRUE(t);
    EXPECT_FALSE(t->drop);
    EXPECT_EQ(t->reason, "weak peer: timeout");
    auto i = judge->judge(p, RequestOutcome::kInvalid, nullptr, kT0);
    ASSERT_TRUE(i);
    EXPECT_TRUE(i->drop);
    EXPECT_EQ(i->reason, "breach of protocol");
    EXPECT_FALSE(judge->judge(p, RequestOutcome::kClosed, nullptr, kT0));
}

TEST(LoadJudges, EthereumJsAndTheGenericJudges) {
    const Planned p = planned("job", 100);
    const ReplyFacts empty = facts(0);
    auto ejs = judge_of("ethereumjs");
    EXPECT_EQ(ejs->judge(p, RequestOutcome::kTimeout, nullptr, kT0)->reason, "timeout ban (60 s)");
    EXPECT_TRUE(ejs->judge(p, RequestOutcome::kInvalid, nullptr, kT0)->drop);
    EXPECT_FALSE(ejs->judge(p, RequestOutcome::kGood, &empty, kT0));
    for (std::string_view name : {"probes", "legacy", "edge"}) {
        SCOPED_TRACE(name);
        auto judge = judge_of(name);
        auto invalid = judge->judge(p, RequestOutcome::kInvalid, nullptr, kT0);
        ASSERT_TRUE(invalid);
        EXPECT_TRUE(invalid->drop);
        EXPECT_EQ(invalid->reason, "invalid reply");
        auto timeout = judge->judge(p, RequestOutcome::kTimeout, nullptr, kT0);
        ASSERT_TRUE(timeout);
        EXPECT_FALSE(timeout->drop);
        EXPECT_FALSE(judge->judge(p, RequestOutcome::kGood, &empty, kT0));
    }
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

TEST(LoadJudges, RethNextTimeoutClampsToTwoToTwentySeconds) {
    // 0.9 x 20 s + 0.1 x 3 x 100 ms = 18.03 s.
    EXPECT_NEAR(ms(reth_next_timeout(20s, 100ms)), 18030, 1e-3);
    EXPECT_NEAR(ms(reth_next_timeout(10s, 1s)), 9300, 1e-3);
    // Clamped below and above.
    EXPECT_EQ(reth_next_timeout(2s, 1ms), std::chrono::duration_cast<Clock::duration>(2s));
    EXPECT_EQ(reth_next_timeout(Clock::duration::zero(), Clock::duration::zero()),
              std::chrono::duration_cast<Clock::duration>(2s));
    EXPECT_EQ(reth_next_timeout(20s, 60s), std::chrono::duration_cast<Clock::duration>(20s));
    EXPECT_EQ(reth_next_timeout(1h, 1h), std::chrono::duration_cast<Clock::duration>(20s));
    // Fast replies bring it down to the floor, and no further.
    Clock::duration t = 20s;
    for (int i = 0; i < 100; ++i) {
        const Clock::duration next = reth_next_timeout(t, 5ms);
        EXPECT_LE(next, t);
        t = next;
    }
    EXPECT_EQ(t, std::chrono::duration_cast<Clock::duration>(2s));
}

}  // namespace
}  // namespace headerd::load
