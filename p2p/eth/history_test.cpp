#include "p2p/eth/history.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/block_body.hpp"
#include "core/era1.hpp"
#include "core/rlp.hpp"
#include "tests/data_dir.hpp"
#include "tests/era_epoch.hpp"
#include "tests/reference_chain.hpp"

namespace headerd::eth {
namespace {

// Sepolia blocks 172032..180223 (real transactions and receipts) held in memory: the headers as a
// HeaderSource, the bodies and receipt lists as a HistorySource that can leave blocks out or
// report one damaged.
struct Epoch : testing::EraEpoch {
    std::vector<Hash32> hashes;
    std::map<Hash32, uint64_t> numbers;

    Epoch() : EraEpoch("sepolia-00021-b8814b14.era1") {
        for (size_t i = 0; i < headers.size(); ++i) {
            hashes.push_back(header_hash(headers[i]));
            numbers.emplace(hashes.back(), start + i);
        }
    }
    size_t index(uint64_t number) const { return static_cast<size_t>(number - start); }
};

const Epoch& epoch() {
    static const Epoch e;
    return e;
}

class Headers final : public HeaderSource {
  public:
    std::map<Hash32, uint64_t> side;  // known hashes that are not canonical
    const ChainConfig* config() const noexcept override { return nullptr; }
    std::optional<Head> head() const override { return std::nullopt; }
    Outcome<void> append_header_range(uint64_t, uint64_t, Order, ItemBuffer&, size_t) const override { return {}; }
    mutable size_t reads{0};  // number_by_hash, canonical_hash and canonical_hashes calls
    Outcome<std::optional<uint64_t>> number_by_hash(const Hash32& hash) const override {
        ++reads;
        if (auto it = side.find(hash); it != side.end()) return std::optional<uint64_t>(it->second);
        auto it = epoch().numbers.find(hash);
        return it == epoch().numbers.end() ? std::nullopt : std::optional<uint64_t>(it->second);
    }
    Outcome<std::optional<Hash32>> canonical_hash(uint64_t number) const override {
        ++reads;
        if (number < epoch().start || number - epoch().start >= epoch().hashes.size()) return std::optional<Hash32>();
        return std::optional<Hash32>(epoch().hashes[epoch().index(number)]);
    }
    // A run of hashes counts as one read, as ChainDb reads a freezer or LevelDB run at once.
    Outcome<void> canonical_hashes(uint64_t from, uint64_t count, std::vector<Hash32>& out) const override {
        ++reads;
        for (uint64_t n = from; n - from < count && n >= epoch().start && n - epoch().start < epoch().hashes.size();
             ++n) {
            out.push_back(epoch().hashes[epoch().index(n)]);
        }
        return {};
    }
    Outcome<bool> header_by_hash(const Hash32&, Bytes&) const override { return false; }
};

class History final : public HistorySource {
  public:
    std::set<uint64_t> missing;
    std::optional<uint64_t> damaged;
    std::optional<BlockRange> range() const override {
        return BlockRange{epoch().start, epoch().start + epoch().hashes.size() - 1};
    }
    Outcome<bool> append_body(uint64_t number, Bytes& out) const override { return get(number, epoch().bodies, out); }
    Outcome<bool> append_receipts(uint64_t number, Bytes& out) const override {
        return get(number, epoch().receipts, out);
    }

  private:
    Outcome<bool> get(uint64_t number, const std::vector<Bytes>& items, Bytes& out) const {
        if (damaged == number) return corrupt_error("block " + std::to_string(number) + ": damaged", number);
        if (missing.contains(number)) return false;
        append(out, items[epoch().index(number)]);
        return true;
    }
};

// [id, [h...]] (or eth/70's [id, first, [h...]]) for the blocks `numbers`.
Bytes request(const std::vector<uint64_t>& numbers, std::optional<uint64_t> first_index = std::nullopt) {
    Bytes hashes;
    for (uint64_t n : numbers) rlp::encode(hashes, epoch().hashes[epoch().index(n)]);
    Bytes payload;
    rlp::encode(payload, uint64_t{42});
    if (first_index) rlp::encode(payload, *first_index);
    rlp::encode_header(payload, {true, hashes.size()});
    append(payload, hashes);
    Bytes out;
    rlp::encode_header(out, {true, payload.size()});
    append(out, payload);
    return out;
}

// Blocks from..from+count-1.
std::vector<uint64_t> run(uint64_t from, size_t count) {
    std::vector<uint64_t> out;
    for (size_t i = 0; i < count; ++i) out.push_back(from + i);
    return out;
}

struct Reply {
    uint64_t id{0};
    std::optional<bool> incomplete;
    std::vector<ByteView> items;
};

Reply decode(const Bytes& out, bool partial) {
    Reply r;
    ByteView in{out};
    auto fields = rlp::decode_list(in);
    EXPECT_TRUE(fields && in.empty());
    ByteView f = *fields;
    r.id = *rlp::decode_uint64(f);
    if (partial) {
        auto flag = rlp::next_item(f);
        r.incomplete = (*flag)[0] == 0x01;
    }
    ByteView list = *rlp::decode_list(f);
    EXPECT_TRUE(f.empty());
    while (!list.empty()) r.items.push_back(*rlp::next_item(list));
    return r;
}

// The first `count` blocks with at least `min_txs` transactions (epoch 21 has 93 transactions in
// all, in 74 blocks).
std::vector<uint64_t> busy(size_t count, size_t min_txs = 1) {
    const Epoch& e = epoch();
    std::vector<uint64_t> out;
    for (size_t i = 0; i < e.bodies.size() && out.size() < count; ++i) {
        if (parse_body(e.bodies[i])->transactions.size() >= min_txs) out.push_back(e.start + i);
    }
    EXPECT_EQ(out.size(), count) << "blocks with " << min_txs << " transactions";
    return out;
}

struct Served {
    HistoryServed summary;
    std::shared_ptr<Bytes> out;  // the reply's bytes, which `reply` points into
    Reply reply;
};

Served serve(uint64_t version, MessageId id, const Bytes& req, const History& history, const HistoryLimits& limits = {},
             const Headers& headers = Headers{}) {
    Bytes scratch;
    auto out = std::make_shared<Bytes>();
    auto s = serve_history(version, id, req, headers, history, limits, scratch, *out);
    EXPECT_TRUE(s) << (s ? "" : s.error().message());
    if (!s) return {};
    Reply reply = decode(*out, id == MessageId::kGetReceipts && version >= kEth70);
    return {*s, out, std::move(reply)};
}

TEST(ServeHistory, BodiesComeByteForByteInTheOrderAsked) {
    // Every block with a transaction, then 128 blocks in a row.
    std::vector<uint64_t> numbers = busy(74);
    for (uint64_t n : run(epoch().start + 4000, 128)) numbers.push_back(n);
    const auto s = serve(kEth68, MessageId::kGetBlockBodies, request(numbers), History{});
    EXPECT_EQ(s.summary.reply, MessageId::kBlockBodies);
    EXPECT_EQ(s.reply.id, 42u);
    ASSERT_EQ(s.reply.items.size(), numbers.size());
    EXPECT_EQ(s.summary.items, numbers.size());
    for (size_t i = 0; i < numbers.size(); ++i) {
        const Bytes& body = epoch().bodies[epoch().index(numbers[i])];
        ASSERT_TRUE(std::equal(body.begin(), body.end(), s.reply.items[i].begin(), s.reply.items[i].end())) << i;
    }
}

// A run of consecutive blocks costs the first block's lookup and canonical check, then one read of
// the run's canonical hashes, each compared with the hash asked for; a hash off the run falls back
// to the lookup and its canonical check (no more guessing), and is served all the same.
TEST(ServeHistory, ARunOfConsecutiveBlocksCostsOneReadOfItsHashesAndAJumpStillServes) {
    const uint64_t from = epoch().start + 100;
    Headers headers;
    auto s = serve(kEth68, MessageId::kGetBlockBodies, request(run(from, 128)), History{}, {}, headers);
    ASSERT_EQ(s.reply.items.size(), 128u);
    EXPECT_EQ(headers.reads, 2u + 1u);

    std::vector<uint64_t> numbers = run(from, 10);
    numbers.push_back(from + 500);  // a jump: the guess misses, the lookup finds it
    for (uint64_t n : run(from + 501, 5)) numbers.push_back(n);
    headers.reads = 0;
    s = serve(kEth68, MessageId::kGetBlockBodies, request(numbers), History{}, {}, headers);
    ASSERT_EQ(s.reply.items.size(), numbers.size());
    for (size_t i = 0; i < numbers.size(); ++i) {
        const Bytes& body = epoch().bodies[epoch().index(numbers[i])];
        ASSERT_TRUE(std::equal(body.begin(), body.end(), s.reply.items[i].begin(), s.reply.items[i].end())) << i;
    }
    // 2 + 1 for the run (its read ahead misses at the jump), 2 for the jump, then 2 for each block after it.
    EXPECT_EQ(headers.reads, 2u + 1u + 2u + 2u * 5u);
}

// The asking side's decoder of replies: the request it encodes is what the serving side decodes,
// and each malformed reply is refused with its reason.
TEST(HistoryReply, RequestsRoundTripAndMalformedRepliesAreRefused) {
    const std::vector<Hash32> hashes = {epoch().hashes[0], epoch().hashes[1]};
    Bytes req;
    encode_history_request(req, kEth70, MessageId::kGetReceipts, 9, hashes, 3);
    auto r70 = GetReceiptsRequest70::decode(req);
    ASSERT_TRUE(r70);
    EXPECT_EQ(r70->request_id, 9u);
    EXPECT_EQ(r70->first_block_receipt_index, 3u);
    EXPECT_EQ(hash_at(r70->hashes, 1), hashes[1]);
    req.clear();
    encode_history_request(req, kEth69, MessageId::kGetReceipts, 9, hashes, 3);  // no index before eth/70
    ASSERT_TRUE(HashListRequest::decode(req));

    auto decode = [](uint64_t version, MessageId id, const Bytes& payload) {
        return decode_history_reply(version, id, payload);
    };
    // [7, [[], []]]: two empty bodies.
    const Bytes good = {0xc4, 0x07, 0xc2, 0xc0, 0xc0};
    ASSERT_EQ(decode(kEth68, MessageId::kBlockBodies, good)->items.size(), 2u);
    EXPECT_EQ(decode(kEth68, MessageId::kBlockHeaders, good).error(), make_error_code(MessageError::kWrongMessage));
    // An item that is a string, not a list.
    EXPECT_EQ(decode(kEth68, MessageId::kBlockBodies, Bytes{0xc4, 0x07, 0xc2, 0x80, 0xc0}).error(),
              make_error_code(rlp::DecodeError::kUnexpectedString));
    // Bytes after the envelope, and after the item list inside it.
    EXPECT_EQ(decode(kEth68, MessageId::kBlockBodies, Bytes{0xc4, 0x07, 0xc2, 0xc0, 0xc0, 0x00}).error(),
              make_error_code(rlp::DecodeError::kTrailingBytes));
    EXPECT_EQ(decode(kEth68, MessageId::kBlockBodies, Bytes{0xc5, 0x07, 0xc2, 0xc0, 0xc0, 0x80}).error(),
              make_error_code(rlp::DecodeError::kTrailingBytes));
    // eth/70 Receipts: [7, flag, [[]]]; the flag is 0x80 or 0x01 and nothing else.
    auto r = decode(kEth70, MessageId::kReceipts, Bytes{0xc4, 0x07, 0x01, 0xc1, 0xc0});
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->last_block_incomplete);
    EXPECT_FALSE(decode(kEth70, MessageId::kReceipts, Bytes{0xc4, 0x07, 0x80, 0xc1, 0xc0})->last_block_incomplete);
    EXPECT_EQ(decode(kEth70, MessageId::kReceipts, Bytes{0xc4, 0x07, 0x02, 0xc1, 0xc0}).error(),
              make_error_code(MessageError::kBadFlag));
    // The eth/69 form has no flag: an eth/70 reply is malformed there.
    EXPECT_FALSE(decode(kEth69, MessageId::kReceipts, Bytes{0xc4, 0x07, 0x01, 0xc1, 0xc0}));
}

TEST(ServeHistory, TheReplyEndsAtTheFirstBlockNotHeldUnknownOrNotCanonical) {
    const uint64_t from = busy(1)[0];
    History history;
    history.missing.insert(from + 5);
    EXPECT_EQ(serve(kEth68, MessageId::kGetBlockBodies, request(run(from, 10)), history).reply.items.size(), 5u);

    // A hash nobody knows in third place.
    Bytes req = request(run(from, 4));
    req[req.size() - 33 * 2 + 5] ^= 0xff;  // inside the third hash
    EXPECT_EQ(serve(kEth68, MessageId::kGetBlockBodies, req, History{}).reply.items.size(), 2u);

    // A known hash whose number has another canonical block: a side chain's body is not kept.
    Headers headers;
    Hash32 side = epoch().hashes[epoch().index(from + 1)];
    side[0] ^= 1;
    headers.side.emplace(side, from + 1);
    Bytes hashes;
    rlp::encode(hashes, epoch().hashes[epoch().index(from)]);
    rlp::encode(hashes, side);
    Bytes payload;
    rlp::encode(payload, uint64_t{7});
    rlp::encode_header(payload, {true, hashes.size()});
    append(payload, hashes);
    Bytes sided;
    rlp::encode_header(sided, {true, payload.size()});
    append(sided, payload);
    EXPECT_EQ(serve(kEth68, MessageId::kGetBlockBodies, sided, History{}, {}, headers).reply.items.size(), 1u);
}

TEST(ServeHistory, EveryLimitCutsTheReplyAsGethDoes) {
    const uint64_t from = epoch().start;
    // max_items.
    HistoryLimits limits;
    limits.max_items = 5;
    EXPECT_EQ(serve(kEth68, MessageId::kGetBlockBodies, request(run(from, 50)), History{}, limits).reply.items.size(),
              5u);
    EXPECT_EQ(serve(kEth69, MessageId::kGetReceipts, request(run(from, 50)), History{}, limits).reply.items.size(), 5u);
    // max_lookups, counted over every hash looked at.
    limits = {};
    limits.max_lookups = 3;
    EXPECT_EQ(serve(kEth68, MessageId::kGetBlockBodies, request(run(from, 50)), History{}, limits).reply.items.size(),
              3u);
    // The soft byte limit: items are added until their bytes reach it, the last one may pass it.
    limits = {};
    const std::vector<uint64_t> numbers = busy(40);
    size_t sum = 0, expected = 0;
    for (size_t i = 0; i < numbers.size() && sum < 3000; ++i, ++expected) {
        sum += epoch().bodies[epoch().index(numbers[i])].size();
    }
    ASSERT_LT(expected, numbers.size());
    limits.soft_response_bytes = 3000;
    const auto s = serve(kEth68, MessageId::kGetBlockBodies, request(numbers), History{}, limits);
    EXPECT_EQ(s.reply.items.size(), expected);
    EXPECT_EQ(s.summary.item_bytes, sum);
    EXPECT_GE(sum, 3000u);
    // geth's defaults.
    EXPECT_EQ(HistoryLimits{}.soft_response_bytes, 2u << 20);
    EXPECT_EQ(HistoryLimits{}.max_items, 1024u);
    EXPECT_EQ(HistoryLimits{}.max_lookups, 2048u);
    EXPECT_EQ(HistoryLimits{}.max_packet_bytes, 10u << 20);
}

TEST(ServeHistory, ReceiptsGoOutInEachVersionsForm) {
    // Every block with a receipt, and a block without one.
    std::vector<uint64_t> numbers = busy(74);
    numbers.push_back(epoch().start);
    const size_t n = numbers.size();
    const auto r68 = serve(kEth68, MessageId::kGetReceipts, request(numbers), History{});
    const auto r69 = serve(kEth69, MessageId::kGetReceipts, request(numbers), History{});
    const auto r70 = serve(kEth70, MessageId::kGetReceipts, request(numbers, 0), History{});
    ASSERT_EQ(r68.reply.items.size(), n);
    ASSERT_EQ(r69.reply.items.size(), n);
    ASSERT_EQ(r70.reply.items.size(), n);
    EXPECT_EQ(r70.reply.incomplete, false);
    for (size_t i = 0; i < n; ++i) {
        const Bytes& stored = epoch().receipts[epoch().index(numbers[i])];
        EXPECT_TRUE(std::equal(stored.begin(), stored.end(), r68.reply.items[i].begin(), r68.reply.items[i].end()));
        // eth/69 and eth/70 carry the same bloom-less form; with the blooms put back it is the
        // chain's receipt list again, and matches the header.
        EXPECT_TRUE(std::equal(r69.reply.items[i].begin(), r69.reply.items[i].end(), r70.reply.items[i].begin(),
                               r70.reply.items[i].end()));
        Bytes back;
        ASSERT_TRUE(receipts_from_eth69(r69.reply.items[i], back));
        EXPECT_EQ(back, stored);
        EXPECT_TRUE(verify_receipts(*decode_block_header(epoch().headers[epoch().index(numbers[i])]), back));
    }
}

TEST(ServeHistory, Eth70SkipsTheFirstBlocksEarlierReceiptsAndCutsAtThePacketLimit) {
    // A block with at least three receipts.
    const uint64_t number = busy(1, 3)[0];
    const auto all = *parse_receipts(epoch().receipts[epoch().index(number)]);

    // firstBlockReceiptIndex 2: the first block's list starts at its third receipt; the next block is whole.
    const auto skipped = serve(kEth70, MessageId::kGetReceipts, request(run(number, 2), 2), History{});
    ASSERT_EQ(skipped.reply.items.size(), 2u);
    ByteView first = skipped.reply.items[0];
    ByteView list = *rlp::decode_list(first);
    size_t n = 0;
    for (; !list.empty(); ++n) {
        Bytes expected;
        ASSERT_TRUE(receipt_to_eth69(all[n + 2], expected));
        const ByteView got = *rlp::next_item(list);
        EXPECT_TRUE(std::equal(expected.begin(), expected.end(), got.begin(), got.end()));
    }
    EXPECT_EQ(n, all.size() - 2);

    // Room for the first receipt and not the second: the list is cut and lastBlockIncomplete set.
    Bytes one;
    ASSERT_TRUE(receipt_to_eth69(all[0], one));
    HistoryLimits limits;
    limits.max_packet_bytes = rlp::length_of_list(one.size()) + 1;
    const auto cut = serve(kEth70, MessageId::kGetReceipts, request(run(number, 3), 0), History{}, limits);
    ASSERT_EQ(cut.reply.items.size(), 1u);
    EXPECT_EQ(cut.reply.incomplete, true);
    EXPECT_TRUE(cut.summary.incomplete);
    ByteView cut_list = cut.reply.items[0];
    EXPECT_EQ(rlp::decode_list(cut_list)->size(), one.size());

    // No room for even the first receipt: nothing of the block, and not incomplete.
    limits.max_packet_bytes = 4;
    const auto none = serve(kEth70, MessageId::kGetReceipts, request(run(number, 3), 0), History{}, limits);
    EXPECT_EQ(none.reply.items.size(), 0u);
    EXPECT_EQ(none.reply.incomplete, false);
}

TEST(ServeHistory, ADamagedBlockIsNeverServedAndEndsTheReply) {
    const uint64_t from = epoch().start;
    History history;
    history.damaged = from + 3;
    for (MessageId id : {MessageId::kGetBlockBodies, MessageId::kGetReceipts}) {
        const auto s = serve(kEth69, id, request(run(from, 10)), history);
        EXPECT_EQ(s.reply.items.size(), 3u);
        ASSERT_TRUE(s.summary.damaged.has_value());
        EXPECT_EQ(s.summary.damaged->kind, ErrorKind::kCorrupt);
        EXPECT_EQ(s.summary.damaged->block, from + 3);
    }
}

TEST(ServeHistory, MalformedRequestsAreABreachAndLeaveTheReplyBufferAlone) {
    Bytes scratch, out = {1, 2, 3};
    const Headers headers;
    const History history;
    const HistoryLimits limits;
    // Not a list; a hash of 31 bytes; eth/70 without its first index; eth/69 with one.
    Bytes short_hash = {0xe2, 0x2a, 0xe0, 0x9f};
    short_hash.resize(short_hash.size() + 31, 0x01);
    const std::vector<Bytes> bad = {{0x80}, short_hash, request({epoch().start}), request({epoch().start}, 0)};
    EXPECT_FALSE(serve_history(kEth68, MessageId::kGetBlockBodies, bad[0], headers, history, limits, scratch, out));
    EXPECT_FALSE(serve_history(kEth68, MessageId::kGetBlockBodies, bad[1], headers, history, limits, scratch, out));
    EXPECT_FALSE(serve_history(kEth70, MessageId::kGetReceipts, bad[2], headers, history, limits, scratch, out));
    EXPECT_FALSE(serve_history(kEth69, MessageId::kGetReceipts, bad[3], headers, history, limits, scratch, out));
    Bytes trailing = request({epoch().start});
    trailing.push_back(0x80);
    EXPECT_FALSE(serve_history(kEth68, MessageId::kGetBlockBodies, trailing, headers, history, limits, scratch, out));
    EXPECT_FALSE(serve_history(kEth68, MessageId::kGetBlockHeaders, request({epoch().start}), headers, history, limits,
                               scratch, out));
    EXPECT_EQ(out, (Bytes{1, 2, 3}));
}

}  // namespace
}  // namespace headerd::eth
