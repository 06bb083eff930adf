#include "load/history_verify.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/block_body.hpp"
#include "core/era1.hpp"
#include "core/rlp.hpp"
#include "tests/data_dir.hpp"
#include "tests/era_epoch.hpp"
#include "tests/reference_chain.hpp"

namespace headerd::load {
namespace {

using eth::MessageId;

// The blocks of one era1 epoch, as a syncing client holds them: each header decoded, its body and
// its receipt list (the consensus form, as era1 stores it) as served.
struct Epoch : testing::EraEpoch {
    std::vector<std::shared_ptr<const HistoryBlock>> blocks;

    explicit Epoch(const std::string& name) : EraEpoch(name) {
        for (const Bytes& h : headers) {
            auto block = make_history_block(h);
            EXPECT_TRUE(block);
            if (block) blocks.push_back(*block);
        }
    }
    // The numbers of the first `n` blocks with a non-empty body (receipts: with receipts).
    std::vector<uint64_t> non_empty(size_t n, bool receipts_wanted) const {
        std::vector<uint64_t> out;
        for (const auto& b : blocks) {
            if (out.size() == n) break;
            if (receipts_wanted ? !b->empty_receipts() : !b->empty_body()) out.push_back(b->number);
        }
        return out;
    }
};

const Epoch& mainnet() {
    static const Epoch e("mainnet-00000-5ec1ffb8.era1");
    return e;
}
const Epoch& sepolia() {
    static const Epoch e("sepolia-00021-b8814b14.era1");
    return e;
}

// A request for `numbers` of `epoch` and the reply a correct server gives in `version`'s form.
struct Exchange {
    HistoryAsk ask;
    std::vector<Bytes> items;
    std::vector<ByteView> views() const { return std::vector<ByteView>(items.begin(), items.end()); }
};

Exchange exchange(const Epoch& epoch, MessageId request, const std::vector<uint64_t>& numbers, uint64_t version) {
    Exchange x;
    x.ask.request = request;
    for (uint64_t n : numbers) {
        x.ask.blocks.push_back(epoch.blocks[epoch.at(n)]);
        x.ask.hashes.push_back(epoch.blocks[epoch.at(n)]->hash);
        if (request == MessageId::kGetBlockBodies) {
            x.items.push_back(epoch.bodies[epoch.at(n)]);
        } else if (version >= eth::kEth69) {
            Bytes eth69;
            EXPECT_TRUE(receipts_to_eth69(epoch.receipts[epoch.at(n)], eth69));
            x.items.push_back(std::move(eth69));
        } else {
            x.items.push_back(epoch.receipts[epoch.at(n)]);
        }
    }
    return x;
}

HistoryVerifyResult check(const Exchange& x, uint64_t version,
                          std::optional<std::pair<uint64_t, uint64_t>> announced = std::nullopt,
                          bool incomplete = false, HistoryRules rules = {}) {
    const auto views = x.views();
    return verify_history_reply(x.ask, HistoryContext{version, announced}, views, incomplete, rules);
}

// The receipts of a list, each as encoded.
std::vector<ByteView> receipts_of(ByteView list) {
    ByteView in = list;
    auto payload = rlp::decode_list(in);
    std::vector<ByteView> out;
    for (ByteView rest = payload ? *payload : ByteView{}; !rest.empty();) out.push_back(*rlp::next_item(rest));
    return out;
}

Bytes list_of(std::span<const ByteView> items) {
    size_t size = 0;
    for (ByteView i : items) size += i.size();
    Bytes out;
    rlp::encode_header(out, {true, size});
    for (ByteView i : items) append(out, i);
    return out;
}

// The list with one byte changed, from the end, where it still parses in `version`'s form: a
// receipt list a server altered without breaking its RLP.
Bytes altered(const Bytes& list, uint64_t version) {
    for (size_t k = list.size(); k-- > 0;) {
        Bytes copy = list;
        copy[k] ^= 0x01;
        Bytes scratch;
        const bool parses = version >= eth::kEth69 ? static_cast<bool>(receipts_from_eth69(copy, scratch))
                                                   : static_cast<bool>(parse_receipts(copy));
        if (parses && copy != list) return copy;
    }
    ADD_FAILURE() << "no byte could be altered";
    return list;
}

TEST(HistoryBlockTest, EmptyBodiesAndReceiptsAsGethSeesThem) {
    // Mainnet genesis: no transactions, no uncles, no receipts.
    EXPECT_TRUE(mainnet().blocks[0]->empty_body());
    EXPECT_TRUE(mainnet().blocks[0]->empty_receipts());
    // Epoch 0 has no transaction at all, but uncles.
    const auto uncled = mainnet().non_empty(5, false);
    ASSERT_EQ(uncled.size(), 5u);
    for (uint64_t n : uncled) {
        auto body = parse_body(mainnet().bodies[mainnet().at(n)]);
        ASSERT_TRUE(body);
        EXPECT_GT(body->uncle_count, 0u) << n;
        EXPECT_TRUE(mainnet().blocks[mainnet().at(n)]->empty_receipts());
    }
    EXPECT_TRUE(mainnet().non_empty(1, true).empty());
    // Sepolia epoch 21: blocks with transactions have receipts.
    const auto with_receipts = sepolia().non_empty(3, true);
    ASSERT_EQ(with_receipts.size(), 3u);
    for (uint64_t n : with_receipts) EXPECT_FALSE(sepolia().blocks[sepolia().at(n)]->empty_body()) << n;
    EXPECT_FALSE(make_history_block(Bytes{0xc0}));
}

TEST(HistoryVerifyTest, RealBodiesAndReceiptsInEveryForm) {
    const auto numbers = sepolia().non_empty(20, true);
    ASSERT_EQ(numbers.size(), 20u);
    for (uint64_t version : {68, 69, 70}) {
        auto bodies = check(exchange(sepolia(), MessageId::kGetBlockBodies, numbers, version), version);
        ASSERT_TRUE(bodies.ok()) << bodies.failure;
        EXPECT_EQ(bodies.facts->complete, 20u);
        EXPECT_GE(bodies.facts->receipts, 20u);  // transactions
        EXPECT_FALSE(bodies.facts->short_reply);
        auto receipts = check(exchange(sepolia(), MessageId::kGetReceipts, numbers, version), version);
        ASSERT_TRUE(receipts.ok()) << "eth/" << version << ": " << receipts.failure;
        EXPECT_EQ(receipts.facts->complete, 20u);
        EXPECT_EQ(receipts.facts->receipts, bodies.facts->receipts);  // one receipt per transaction
    }
    // Mainnet's uncles, and empty bodies and receipt lists (Nethermind asks for those too).
    std::vector<uint64_t> mixed = mainnet().non_empty(4, false);
    mixed.push_back(0);
    mixed.push_back(1);
    for (uint64_t version : {68, 69}) {
        auto bodies = check(exchange(mainnet(), MessageId::kGetBlockBodies, mixed, version), version);
        EXPECT_TRUE(bodies.ok()) << bodies.failure;
        auto receipts = check(exchange(mainnet(), MessageId::kGetReceipts, mixed, version), version);
        ASSERT_TRUE(receipts.ok()) << receipts.failure;
        EXPECT_EQ(receipts.facts->receipts, 0u);
    }
}

TEST(HistoryVerifyTest, ASwappedBodyIsNamedWithItsBlockAndField) {
    // Sepolia: another block's transactions (blocks without uncles).
    std::vector<uint64_t> numbers;
    for (uint64_t n : sepolia().non_empty(50, true)) {
        if (numbers.size() < 3 && parse_body(sepolia().bodies[sepolia().at(n)])->uncle_count == 0) numbers.push_back(n);
    }
    ASSERT_EQ(numbers.size(), 3u);
    auto x = exchange(sepolia(), MessageId::kGetBlockBodies, numbers, 69);
    std::swap(x.items[1], x.items[2]);
    auto r = check(x, 69);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.failure, "body 1 (block " + std::to_string(numbers[1]) +
                             "): transactions do not match the header's transactions root");
    // Mainnet epoch 0: another block's uncles.
    const auto uncled = mainnet().non_empty(2, false);
    auto y = exchange(mainnet(), MessageId::kGetBlockBodies, uncled, 68);
    std::swap(y.items[0], y.items[1]);
    r = check(y, 68);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.failure,
              "body 0 (block " + std::to_string(uncled[0]) + "): uncles do not match the header's ommers hash");
    // An empty body for a block that has uncles; a body that is no body.
    y = exchange(mainnet(), MessageId::kGetBlockBodies, uncled, 68);
    y.items[1] = mainnet().bodies[0];
    EXPECT_EQ(check(y, 68).failure,
              "body 1 (block " + std::to_string(uncled[1]) + "): uncles do not match the header's ommers hash");
    y.items[1] = Bytes{0xc0};
    EXPECT_EQ(check(y, 68).failure,
              "body 1 (block " + std::to_string(uncled[1]) +
                  "): body is not an RLP list of transactions, uncles and (after Shanghai) withdrawals");
}

TEST(HistoryVerifyTest, AnAlteredReceiptListFailsItsRoot) {
    // Four blocks whose receipts differ (many blocks hold one plain transfer each, with equal lists).
    std::vector<uint64_t> numbers;
    std::vector<Hash32> roots;
    for (uint64_t n : sepolia().non_empty(100, true)) {
        const Hash32& root = sepolia().blocks[sepolia().at(n)]->header.receipts_root;
        if (numbers.size() < 4 && std::find(roots.begin(), roots.end(), root) == roots.end()) {
            numbers.push_back(n);
            roots.push_back(root);
        }
    }
    ASSERT_EQ(numbers.size(), 4u);
    for (uint64_t version : {68, 69}) {
        auto x = exchange(sepolia(), MessageId::kGetReceipts, numbers, version);
        x.items[3] = altered(x.items[3], version);
        auto r = check(x, version);
        ASSERT_FALSE(r.ok()) << version;
        EXPECT_EQ(r.failure, "receipt list 3 (block " + std::to_string(numbers[3]) +
                                 "): receipts do not match the header's receipts root");
        // Another block's list.
        x = exchange(sepolia(), MessageId::kGetReceipts, numbers, version);
        std::swap(x.items[0], x.items[1]);
        EXPECT_EQ(check(x, version).failure, "receipt list 0 (block " + std::to_string(numbers[0]) +
                                                 "): receipts do not match the header's receipts root");
    }
}

TEST(HistoryVerifyTest, AReceiptInTheOtherVersionsFormIsNamed) {
    const auto numbers = sepolia().non_empty(2, true);
    // eth/68 with eth/69 receipts: the blooms are missing.
    auto x = exchange(sepolia(), MessageId::kGetReceipts, numbers, 69);
    auto r = check(x, 68);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.failure, "receipt list 0 (block " + std::to_string(numbers[0]) +
                             "): receipt 0 is not in the eth/68 form ([status, cumulative gas, 256-byte bloom, "
                             "logs]); it has the eth/69 form: its bloom is missing");
    // One receipt of the second list without its bloom.
    x = exchange(sepolia(), MessageId::kGetReceipts, numbers, 68);
    auto receipts = receipts_of(x.items[1]);
    Bytes eth69;
    ASSERT_TRUE(receipt_to_eth69(receipts.back(), eth69));
    receipts.back() = eth69;
    const size_t last = receipts.size() - 1;
    x.items[1] = list_of(receipts);
    EXPECT_EQ(check(x, 68).failure, "receipt list 1 (block " + std::to_string(numbers[1]) + "): receipt " +
                                        std::to_string(last) +
                                        " is not in the eth/68 form ([status, cumulative gas, 256-byte bloom, "
                                        "logs]); it has the eth/69 form: its bloom is missing");
    // eth/69 with the blooms in.
    x = exchange(sepolia(), MessageId::kGetReceipts, numbers, 68);
    EXPECT_EQ(check(x, 69).failure,
              "receipt list 0 (block " + std::to_string(numbers[0]) +
                  "): receipt 0 is not in the eth/69 form (EIP-7642: [type, status, cumulative gas, logs], no "
                  "bloom); it has the eth/68 form, with its bloom");
    // Neither form.
    x.items[0] = list_of(std::vector<ByteView>{ByteView(Bytes{0x80})});
    EXPECT_EQ(check(x, 69).failure, "receipt list 0 (block " + std::to_string(numbers[0]) +
                                        "): receipt 0 is not in the eth/69 form (EIP-7642: [type, status, "
                                        "cumulative gas, logs], no bloom)");
}

TEST(HistoryVerifyTest, MoreItemsThanAsked) {
    const auto numbers = sepolia().non_empty(5, true);
    auto x = exchange(sepolia(), MessageId::kGetBlockBodies, numbers, 69);
    x.ask.blocks.pop_back();
    x.ask.hashes.pop_back();
    EXPECT_EQ(check(x, 69).failure, "5 bodies for 4 hashes asked");
    x = exchange(sepolia(), MessageId::kGetReceipts, numbers, 68);
    x.ask.blocks.resize(1);
    x.ask.hashes.resize(1);
    EXPECT_EQ(check(x, 68).failure, "5 receipt lists for 1 hashes asked");
}

TEST(HistoryVerifyTest, ShortAndEmptyRepliesByTheAnnouncedRange) {
    const auto numbers = sepolia().non_empty(4, true);
    auto x = exchange(sepolia(), MessageId::kGetBlockBodies, numbers, 69);
    x.items.resize(2);
    const std::pair<uint64_t, uint64_t> epoch{172032, 180223};
    auto r = check(x, 69, epoch);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.failure.rfind("short reply: 2 of 4 bodies (the first missing is block " + std::to_string(numbers[2]) +
                                  ", inside the announced range 172032..180223), ",
                              0),
              0u)
        << r.failure;
    EXPECT_NE(r.failure.find("not at the 2097152 byte limit"), std::string::npos);
    // Outside the range, on eth/68 (nothing announced), or at the soft limit: counted, not failed.
    r = check(x, 69, std::pair<uint64_t, uint64_t>{0, numbers[2] - 1});
    ASSERT_TRUE(r.ok()) << r.failure;
    EXPECT_TRUE(r.facts->short_reply);
    EXPECT_EQ(r.facts->complete, 2u);
    r = check(x, 68);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r.facts->short_reply);
    HistoryRules tight;
    tight.soft_bytes = r.facts->bytes;
    EXPECT_TRUE(check(x, 69, epoch, false, tight).ok());
    // Empty.
    x.items.clear();
    r = check(x, 70, epoch);
    EXPECT_EQ(r.failure.rfind("empty reply: 0 of 4 bodies", 0), 0u) << r.failure;
    EXPECT_TRUE(check(x, 68).ok());
}

TEST(HistoryVerifyTest, Eth70CutListsAreHeldAndJoined) {
    // The block with the most receipts, cut after its first receipt.
    uint64_t most = 0;
    size_t count = 0;
    for (uint64_t n : sepolia().non_empty(100, true)) {
        const size_t c = receipts_of(sepolia().receipts[sepolia().at(n)]).size();
        if (c > count) {
            count = c;
            most = n;
        }
    }
    ASSERT_GE(count, 2u) << "epoch 21 has a block with two receipts or more";
    const auto first = sepolia().non_empty(1, true);
    auto x = exchange(sepolia(), MessageId::kGetReceipts, {first[0], most}, 70);
    const Bytes original = x.items[1];
    const auto whole = receipts_of(original);
    x.items[1] = list_of(std::span<const ByteView>(whole).first(1));
    auto r = check(x, 70, std::nullopt, true);
    ASSERT_TRUE(r.ok()) << r.failure;
    EXPECT_TRUE(r.facts->last_incomplete);
    EXPECT_EQ(r.facts->complete, 1u);
    EXPECT_EQ(r.facts->partial_count, 1u);
    // The continuation from receipt 1: the rest, joined and checked whole.
    Exchange rest;
    rest.ask.request = MessageId::kGetReceipts;
    rest.ask.blocks = {x.ask.blocks[1]};
    rest.ask.hashes = {x.ask.hashes[1]};
    rest.ask.first_receipt_index = 1;
    rest.ask.held = r.facts->partial;
    rest.items.push_back(list_of(std::span<const ByteView>(whole).subspan(1)));
    r = check(rest, 70);
    ASSERT_TRUE(r.ok()) << r.failure;
    EXPECT_EQ(r.facts->complete, 1u);
    EXPECT_EQ(r.facts->receipts, count);
    // A continuation that does not add up fails the root.
    rest.items[0] = list_of(std::span<const ByteView>(whole).subspan(2));
    EXPECT_EQ(check(rest, 70).failure,
              "receipt list 0 (block " + std::to_string(most) + "): receipts do not match the header's receipts root");
    // Cut lists that hold nothing, and the flag where it cannot be.
    x.items[1] = Bytes{0xc0};
    EXPECT_EQ(check(x, 70, std::nullopt, true).failure,
              "receipt list 1 (block " + std::to_string(most) + ") is marked incomplete but holds no receipt");
    EXPECT_EQ(check(x, 69, std::nullopt, true).failure, "lastBlockIncomplete set on an eth/69 Receipts reply");
    x.items.clear();
    EXPECT_EQ(check(x, 70, std::nullopt, true).failure, "lastBlockIncomplete set on a reply without receipt lists");
}

TEST(HistoryVerifyTest, Describe) {
    const auto numbers = sepolia().non_empty(3, true);
    auto x = exchange(sepolia(), MessageId::kGetReceipts, numbers, 69);
    EXPECT_EQ(describe(x.ask),
              "GetReceipts of 3 blocks " + std::to_string(numbers[0]) + ".." + std::to_string(numbers[2]));
    x.ask.first_receipt_index = 4;
    EXPECT_NE(describe(x.ask).find("(from receipt 4 of the first)"), std::string::npos);
}

}  // namespace
}  // namespace headerd::load
