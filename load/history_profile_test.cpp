// The history profiles without a network: each walk plans its header windows and its body and
// receipt requests (sizes, order, requests in flight, what it skips) against real epochs, every
// reply built from the era1 file and verified by history_verify; the judges' verdicts; Nethermind's
// request sizer.

#include "load/history_profile.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/block_body.hpp"
#include "core/era1.hpp"
#include "tests/data_dir.hpp"
#include "tests/era_epoch.hpp"
#include "tests/reference_chain.hpp"

namespace headerd::load {
namespace {

using namespace std::chrono_literals;
using eth::MessageId;

// An era1 epoch as a server holds it.
using Era = testing::EraEpoch;

const Era& mainnet_era() {
    static const Era e("mainnet-00000-5ec1ffb8.era1");
    return e;
}
const Era& sepolia_era() {
    static const Era e("sepolia-00021-b8814b14.era1");
    return e;
}

ChainView view_of(const Era& era, std::optional<uint64_t> earliest = std::nullopt) {
    ChainView v;
    v.head = era.head();
    v.head_hash = header_hash(era.headers.back());
    v.earliest = earliest;
    v.lowest = era.start;
    return v;
}

std::unique_ptr<Walk> history_walk(std::string_view name) { return make_history_walk(*find_profile(name)); }
std::unique_ptr<Judge> history_judge(std::string_view name) { return make_history_judge(*find_profile(name)); }

// The headers a server gives for a by-number request with skip 0.
std::vector<ByteView> headers_for(const Era& era, const eth::GetBlockHeadersRequest& r) {
    std::vector<ByteView> out;
    for (uint64_t i = 0; i < r.amount; ++i) {
        const uint64_t n = r.reverse ? r.origin.number - i : r.origin.number + i;
        if (n < era.start || n > era.head()) break;
        out.push_back(era.headers[era.at(n)]);
    }
    return out;
}

// Answers a planned header request from `era`.
void answer_headers(Walk& walk, const Era& era, const Planned& p) {
    ASSERT_FALSE(p.history);
    const auto headers = headers_for(era, p.request);
    walk.headers(p, headers);
    ReplyFacts f;
    f.count = headers.size();
    walk.done(p, RequestOutcome::kGood, &f);
}

// The reply a correct server of `version` gives to a planned history request: the first `limit`
// items. Verified; the walk is told.
HistoryFacts answer_history(Walk& walk, const Era& era, const Planned& p, uint64_t version, size_t limit = SIZE_MAX) {
    std::vector<Bytes> items;
    for (const auto& b : p.history->blocks) {
        if (items.size() == limit) break;
        if (p.history->bodies()) {
            items.push_back(era.bodies[era.at(b->number)]);
        } else if (version >= eth::kEth69) {
            Bytes eth69;
            EXPECT_TRUE(receipts_to_eth69(era.receipts[era.at(b->number)], eth69));
            items.push_back(std::move(eth69));
        } else {
            items.push_back(era.receipts[era.at(b->number)]);
        }
    }
    const std::vector<ByteView> views(items.begin(), items.end());
    auto v = verify_history_reply(*p.history, HistoryContext{version, std::nullopt}, views, false);
    EXPECT_TRUE(v.ok()) << v.failure;
    HistoryFacts f = v.facts.value_or(HistoryFacts{});
    f.rtt = 10ms;
    walk.done_history(p, RequestOutcome::kGood, &f);
    return f;
}

std::vector<uint64_t> numbers_of(const Planned& p) {
    std::vector<uint64_t> out;
    for (const auto& b : p.history->blocks) out.push_back(b->number);
    return out;
}

TEST(HistoryWalks, GethAsksTheSkeletonThenNonEmptyBodiesAscendingSizedByCapacity) {
    auto walk = history_walk("geth-history");
    std::mt19937_64 rng(1);
    ChainView v = view_of(mainnet_era(), 0);
    const Planned headers = walk->next(v, rng).value();
    EXPECT_EQ(headers.step, "skeleton");
    EXPECT_EQ(headers.request.origin.number, 8191u);
    EXPECT_EQ(headers.request.amount, 512u);
    EXPECT_TRUE(headers.request.reverse);
    EXPECT_FALSE(walk->next(v, rng)) << "nothing to ask before the skeleton's headers are in";
    answer_headers(*walk, mainnet_era(), headers);

    // Epoch 0 has uncles but no transaction: bodies of the blocks with uncles only, from the lowest
    // up, as many as the capacity estimate allows (at most 128); no receipt list at all.
    v.body_capacity = 10;
    const Planned bodies = walk->next(v, rng).value();
    ASSERT_TRUE(bodies.history);
    EXPECT_TRUE(bodies.history->bodies());
    const auto numbers = numbers_of(bodies);
    ASSERT_EQ(numbers.size(), 10u);
    EXPECT_TRUE(std::is_sorted(numbers.begin(), numbers.end()));
    EXPECT_GE(numbers.front(), 7680u);
    for (const auto& b : bodies.history->blocks) EXPECT_FALSE(b->empty_body()) << b->number;
    EXPECT_FALSE(walk->next(v, rng)) << "one body request in flight, and no receipts to ask";
    answer_history(*walk, mainnet_era(), bodies, 69);
    // The rest of the window, 128 at most, then the next window's skeleton batch.
    v.body_capacity = 1024;
    std::set<uint64_t> asked(numbers.begin(), numbers.end());
    while (true) {
        const Planned p = walk->next(v, rng).value();
        if (!p.history) {
            EXPECT_EQ(p.request.origin.number, 8191u - 512);
            break;
        }
        EXPECT_TRUE(p.history->bodies());
        EXPECT_LE(p.history->blocks.size(), 128u);
        for (uint64_t n : numbers_of(p)) EXPECT_TRUE(asked.insert(n).second) << n << " asked twice";
        answer_history(*walk, mainnet_era(), p, 69);
    }
    size_t uncled = 0;
    for (uint64_t n = 7680; n <= 8191; ++n)
        uncled += parse_body(mainnet_era().bodies[mainnet_era().at(n)])->uncle_count > 0;
    EXPECT_EQ(asked.size(), uncled);
}

TEST(HistoryWalks, GethAsksBodiesAndReceiptsAtOnceAndContinuesACutList) {
    auto walk = history_walk("geth-history");
    std::mt19937_64 rng(1);
    const Era& era = sepolia_era();
    ChainView v = view_of(era, era.start);
    // Down to the first window with transactions (blocks with uncles alone give bodies only):
    // there one body and one receipt request are in flight at once, receipts of blocks with
    // transactions only.
    Planned a, b;
    for (int i = 0; i < 400; ++i) {
        Planned p = walk->next(v, rng).value();
        if (!p.history) {
            answer_headers(*walk, era, p);
            continue;
        }
        auto q = walk->next(v, rng);
        const Planned* r = !q ? nullptr : q->history->bodies() ? &p : &*q;
        if (r != nullptr && r->history->blocks.size() >= 2) {
            a = p;
            b = *q;
            break;
        }
        answer_history(*walk, era, p, 70);
        if (q) answer_history(*walk, era, *q, 70);
    }
    ASSERT_TRUE(a.history && b.history);
    EXPECT_NE(a.history->bodies(), b.history->bodies());
    EXPECT_FALSE(walk->next(v, rng));
    const Planned& receipts = a.history->bodies() ? b : a;
    for (const auto& blk : receipts.history->blocks) EXPECT_FALSE(blk->empty_receipts());
    ASSERT_GE(receipts.history->blocks.size(), 2u);
    // eth/70: a reply cut the second list after its first receipt; the next request starts with
    // that block, from receipt 1, with the part held.
    const auto& cut_block = *receipts.history->blocks[1];
    HistoryFacts f;
    f.asked = receipts.history->blocks.size();
    f.items = 2;
    f.complete = 1;
    f.last_incomplete = true;
    f.partial = Bytes{0xc1, 0x80};
    f.partial_count = 1;
    walk->done_history(receipts, RequestOutcome::kGood, &f);
    const Planned again = walk->next(v, rng).value();
    ASSERT_TRUE(again.history);
    EXPECT_FALSE(again.history->bodies());
    EXPECT_EQ(again.history->blocks.front()->number, cut_block.number);
    EXPECT_EQ(again.history->first_receipt_index, 1u);
    EXPECT_EQ(again.history->held, f.partial);
    EXPECT_EQ(again.history->blocks.size(), receipts.history->blocks.size() - 1);
}

TEST(HistoryWalks, NethermindAsksEveryBlockFromTheTopDownAndGrowsItsRequests) {
    auto walk = history_walk("nethermind-history");
    std::mt19937_64 rng(1);
    ChainView v = view_of(mainnet_era(), 0);
    const Planned headers = walk->next(v, rng).value();
    EXPECT_EQ(headers.step, "fast headers");
    EXPECT_EQ(headers.request.origin.number, 8191u - 191);
    EXPECT_EQ(headers.request.amount, 192u);
    EXPECT_FALSE(headers.request.reverse);
    answer_headers(*walk, mainnet_era(), headers);
    // Bodies (4) and receipt lists (8) of every block, empty ones too, from the top down.
    const Planned a = walk->next(v, rng).value();
    const Planned b = walk->next(v, rng).value();
    EXPECT_FALSE(walk->next(v, rng));
    const Planned& bodies = a.history->bodies() ? a : b;
    const Planned& receipts = a.history->bodies() ? b : a;
    EXPECT_EQ(numbers_of(bodies), (std::vector<uint64_t>{8191, 8190, 8189, 8188}));
    EXPECT_EQ(numbers_of(receipts), (std::vector<uint64_t>{8191, 8190, 8189, 8188, 8187, 8186, 8185, 8184}));
    answer_history(*walk, mainnet_era(), bodies, 68);
    answer_history(*walk, mainnet_era(), receipts, 68);
    // Full replies within 2 s: x1.5.
    std::vector<size_t> sizes;
    for (int i = 0; i < 6; ++i) {
        const Planned p = walk->next(v, rng).value();
        if (p.history->bodies()) sizes.push_back(p.history->blocks.size());
        answer_history(*walk, mainnet_era(), p, 68);
    }
    ASSERT_GE(sizes.size(), 2u);
    EXPECT_EQ(sizes[0], 6u);
    EXPECT_EQ(sizes[1], 9u);
}

TEST(HistoryWalks, BesuAsksBatchesOf128AndReceiptsAfterTheirBodiesOnePerRoot) {
    auto walk = history_walk("besu-history");
    std::mt19937_64 rng(1);
    const Era& era = sepolia_era();
    ChainView v = view_of(era, era.start);
    const Planned headers = walk->next(v, rng).value();
    EXPECT_EQ(headers.request.amount, 192u);
    EXPECT_TRUE(headers.request.reverse);
    answer_headers(*walk, era, headers);
    // Every body of the window, 128 a request, pipelined; no receipts before their bodies.
    const Planned first = walk->next(v, rng).value();
    const Planned second = walk->next(v, rng).value();
    EXPECT_FALSE(walk->next(v, rng));
    ASSERT_TRUE(first.history->bodies() && second.history->bodies());
    EXPECT_EQ(first.history->blocks.size(), 128u);
    EXPECT_EQ(second.history->blocks.size(), 64u);
    answer_history(*walk, era, first, 68);
    // Now the first batch's receipts: blocks with receipts, one per distinct root.
    std::set<Hash32> roots;
    while (auto p = walk->next(v, rng)) {
        ASSERT_FALSE(p->history->bodies());
        for (const auto& b : p->history->blocks) {
            EXPECT_LE(b->number, first.history->blocks.back()->number);
            EXPECT_FALSE(b->empty_receipts());
            EXPECT_TRUE(roots.insert(b->header.receipts_root).second);
        }
        answer_history(*walk, era, *p, 68);
    }
}

TEST(HistoryWalks, RethAsksBodiesOfNonEmptyBlocksOnly200AtATime) {
    auto walk = history_walk("reth-history");
    std::mt19937_64 rng(1);
    ChainView v = view_of(mainnet_era(), 0);
    const Planned headers = walk->next(v, rng).value();
    EXPECT_EQ(headers.request.amount, 1000u);
    answer_headers(*walk, mainnet_era(), headers);
    size_t requests = 0;
    for (;;) {
        const Planned p = walk->next(v, rng).value();
        if (!p.history) break;
        ++requests;
        EXPECT_TRUE(p.history->bodies()) << "reth asks no receipts";
        EXPECT_LE(p.history->blocks.size(), 200u);
        EXPECT_FALSE(walk->next(v, rng)) << "one request at a time";
        answer_history(*walk, mainnet_era(), p, 69);
    }
    EXPECT_GE(requests, 1u);
}

TEST(HistoryWalks, ShortEmptyAndFailedRepliesAreAskedAgainOrGivenUp) {
    auto walk = history_walk("reth-history");
    std::mt19937_64 rng(1);
    ChainView v = view_of(mainnet_era(), 0);
    answer_headers(*walk, mainnet_era(), walk->next(v, rng).value());
    const Planned p = walk->next(v, rng).value();
    const size_t n = p.history->blocks.size();
    ASSERT_GE(n, 3u);
    // A short reply: the rest is asked again, from the first missing.
    answer_history(*walk, mainnet_era(), p, 69, 2);
    const Planned rest = walk->next(v, rng).value();
    EXPECT_EQ(rest.history->blocks.front()->number, p.history->blocks[2]->number);
    // Timeouts: asked three times, then given up.
    const uint64_t stuck = rest.history->blocks.front()->number;
    walk->done_history(rest, RequestOutcome::kTimeout, nullptr);
    Planned p2 = walk->next(v, rng).value();
    EXPECT_EQ(p2.history->blocks.front()->number, stuck);
    walk->done_history(p2, RequestOutcome::kInvalid, nullptr);
    p2 = walk->next(v, rng).value();
    EXPECT_EQ(p2.history->blocks.front()->number, stuck);
    walk->done_history(p2, RequestOutcome::kTimeout, nullptr);
    p2 = walk->next(v, rng).value();
    if (p2.history) {
        EXPECT_GT(p2.history->blocks.front()->number, stuck);
    }
    // An empty reply: the server lacks those blocks; the walk moves on to the next window.
    while (p2.history) {
        HistoryFacts empty;
        empty.asked = p2.history->blocks.size();
        walk->done_history(p2, RequestOutcome::kGood, &empty);
        p2 = walk->next(v, rng).value();
    }
    EXPECT_EQ(p2.request.origin.number, 8191u - 1000);
}

TEST(HistoryWalks, TheAnnouncedRangeAndTheReferenceBoundTheWindows) {
    // eth/69: a server announcing [8000, 8191] is asked nothing below 8000.
    auto walk = history_walk("reth-history");
    std::mt19937_64 rng(1);
    ChainView v = view_of(mainnet_era(), 8000);
    const Planned p = walk->next(v, rng).value();
    EXPECT_EQ(p.request.origin.number, 8191u);
    EXPECT_EQ(p.request.amount, 192u);
    // A headers-only server announces only its head: one block.
    v.earliest = 8191;
    auto other = history_walk("geth-history");
    EXPECT_EQ(other->next(v, rng).value().request.amount, 1u);
    // An anchored reference (Sepolia's epoch 21) on eth/68: nothing below its first block.
    auto sepolia = history_walk("besu-history");
    ChainView s = view_of(sepolia_era());
    s.head = sepolia_era().start + 100;
    EXPECT_EQ(sepolia->next(s, rng).value().request.amount, 101u);
}

TEST(HistoryJudges, EachClientsRules) {
    const Era& era = sepolia_era();
    auto ask = std::make_shared<HistoryAsk>();
    ask->request = MessageId::kGetBlockBodies;
    for (uint64_t n = era.start; n < era.start + 3; ++n)
        ask->blocks.push_back(*make_history_block(era.headers[era.at(n)]));
    Planned p;
    p.history = ask;
    const auto now = Clock::now();
    HistoryFacts empty;
    empty.asked = 3;
    HistoryFacts full = empty;
    full.items = full.complete = 3;

    auto geth = history_judge("geth-history");
    EXPECT_EQ(geth->judge_history(p, RequestOutcome::kInvalid, nullptr, now)->reason, "invalid body");
    EXPECT_TRUE(geth->judge_history(p, RequestOutcome::kInvalid, nullptr, now)->drop);
    auto t = geth->judge_history(p, RequestOutcome::kTimeout, nullptr, now);
    EXPECT_FALSE(t->drop);
    EXPECT_EQ(t->reason, "timeout: capacity set to 0");
    auto two = std::make_shared<HistoryAsk>(*ask);
    two->blocks.resize(2);
    Planned small = p;
    small.history = two;
    EXPECT_TRUE(geth->judge_history(small, RequestOutcome::kTimeout, nullptr, now)->drop);
    EXPECT_EQ(geth->judge_history(p, RequestOutcome::kGood, &empty, now)->reason, "empty reply: blocks marked lacking");
    EXPECT_FALSE(geth->judge_history(p, RequestOutcome::kGood, &full, now));

    auto receipts = std::make_shared<HistoryAsk>(*ask);
    receipts->request = MessageId::kGetReceipts;
    Planned pr = p;
    pr.history = receipts;
    EXPECT_EQ(geth->judge_history(pr, RequestOutcome::kInvalid, nullptr, now)->reason, "invalid receipts");
    auto nm = history_judge("nethermind-history");
    auto v = nm->judge_history(pr, RequestOutcome::kInvalid, nullptr, now);
    EXPECT_TRUE(v->drop);
    EXPECT_EQ(v->reason, "breach of protocol: invalid receipts root");
    EXPECT_EQ(nm->judge_history(p, RequestOutcome::kInvalid, nullptr, now)->reason,
              "breach of protocol: invalid tx or uncles root");
    EXPECT_EQ(nm->judge_history(p, RequestOutcome::kGood, &empty, now)->reason, "weak peer: no sync progress");
    EXPECT_FALSE(nm->judge_history(p, RequestOutcome::kGood, &full, now));

    // Besu: an empty reply is useless; the fifth within a minute disconnects.
    auto besu = history_judge("besu-history");
    for (int i = 0; i < 4; ++i)
        EXPECT_EQ(besu->judge_history(p, RequestOutcome::kGood, &empty, now)->reason, "useless reply");
    auto fifth = besu->judge_history(p, RequestOutcome::kGood, &empty, now);
    EXPECT_TRUE(fifth->drop);
    EXPECT_EQ(fifth->reason, "5 useless replies in a minute");
    for (int i = 0; i < 4; ++i) besu->judge_history(p, RequestOutcome::kTimeout, nullptr, now);
    EXPECT_EQ(besu->judge_history(p, RequestOutcome::kTimeout, nullptr, now)->reason, "5 timeouts");

    // reth: an empty reply is a bad message (-16 x 1024); the fourth bans.
    auto reth = history_judge("reth-history");
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(reth->judge_history(p, RequestOutcome::kGood, &empty, now)->reason, "empty response");
    auto ban = reth->judge_history(p, RequestOutcome::kGood, &empty, now);
    EXPECT_TRUE(ban->drop);
    EXPECT_EQ(ban->reason, "banned (empty response)");
}

TEST(NethermindSizerTest, GrowsAndShrinksAsNethermindDoes) {
    NethermindSizer s;  // bodies: 4..128
    std::vector<uint64_t> sizes{s.size};
    for (int i = 0; i < 10; ++i) {
        s.update(false, s.size, s.size, 1000, 100ms);
        sizes.push_back(s.size);
    }
    EXPECT_EQ(sizes, (std::vector<uint64_t>{4, 6, 9, 13, 19, 28, 42, 63, 94, 128, 128}));
    s.update(true, 128, 0, 0, 0ms);  // a timeout or an invalid reply
    EXPECT_EQ(s.size, 85u);
    s.update(false, 85, 80, 1000, 100ms);  // short
    EXPECT_EQ(s.size, 56u);
    s.update(false, 56, 56, 3'000'001, 100ms);  // too many bytes
    EXPECT_EQ(s.size, 37u);
    s.update(false, 37, 37, 1000, 4s);  // too slow
    EXPECT_EQ(s.size, 24u);
    s.update(false, 24, 24, 1000, 2500ms);  // between the watermarks: stays
    EXPECT_EQ(s.size, 24u);
    s.update(false, 10, 10, 1000, 100ms);  // fewer were left to ask than the size: stays
    EXPECT_EQ(s.size, 24u);
    for (int i = 0; i < 20; ++i) s.update(true, 1, 0, 0, 0ms);
    EXPECT_EQ(s.size, 1u);
}

}  // namespace
}  // namespace headerd::load
