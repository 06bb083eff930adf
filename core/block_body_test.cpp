#include "core/block_body.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/era1.hpp"
#include "core/hex.hpp"
#include "core/keccak.hpp"
#include "core/rlp.hpp"
#include "core/trie_root.hpp"
#include "tests/data_dir.hpp"
#include "tests/reference_chain.hpp"

namespace headerd {
namespace {

// Sepolia blocks 172032..180223 (geth's era test data): real transactions of every pre-merge type
// and their receipts. Mainnet's first epoch: uncles, no transaction.
const std::string kSepoliaEra1 = "sepolia-00021-b8814b14.era1";
const std::string kMainnetEra1 = "mainnet-00000-5ec1ffb8.era1";

struct Block {
    BlockHeader header;
    Bytes body;
    Bytes receipts;
};

std::vector<Block> blocks_of(const std::string& name) {
    static std::map<std::string, Bytes> files;
    Bytes& file = files[name];
    if (file.empty()) file = testing::read_file(testing::data_dir() + "/" + name);
    auto archive = era1::Archive::parse(file);
    EXPECT_TRUE(archive) << name;
    std::vector<Block> out;
    if (!archive) return out;
    Bytes header;
    for (size_t i = 0; i < archive->count(); ++i) {
        Block b;
        auto h = archive->header(i, header);
        auto decoded = h ? decode_block_header(*h) : Result<BlockHeader>(h.error());
        auto body = archive->body(i, b.body);
        auto receipts = archive->receipts(i, b.receipts);
        EXPECT_TRUE(decoded && body && receipts) << name << " block " << i;
        if (!decoded || !body || !receipts) break;
        b.header = std::move(*decoded);
        out.push_back(std::move(b));
    }
    return out;
}

const std::vector<Block>& sepolia() {
    static const std::vector<Block> blocks = blocks_of(kSepoliaEra1);
    return blocks;
}

// The bodies of the hive test chain (Prague: typed transactions and withdrawals): each block of
// the file is [header, transactions, uncles, withdrawals], its body the same list without the header.
struct HiveBlock {
    BlockHeader header;
    Bytes body;
};

std::vector<HiveBlock> hive_blocks() {
    const Bytes file = testing::read_file(testing::data_dir() + "/hive-testchain-blocks-1-600.rlp");
    std::vector<HiveBlock> out;
    ByteView in{file};
    while (!in.empty()) {
        auto block = rlp::decode_list(in);
        EXPECT_TRUE(block);
        if (!block) break;
        ByteView fields = *block;
        auto header = rlp::next_item(fields);
        EXPECT_TRUE(header);
        HiveBlock b;
        b.header = *decode_block_header(*header);
        rlp::encode_header(b.body, {true, fields.size()});
        append(b.body, fields);
        out.push_back(std::move(b));
    }
    return out;
}

TEST(TrieRoot, EmptyListIsTheEmptyTrieRoot) {
    EXPECT_EQ(to_hex0x(kEmptyTrieRoot), "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421");
    EXPECT_EQ(ordered_trie_root({}), kEmptyTrieRoot);
}

TEST(BlockBody, EverySepoliaBodyAndReceiptListMatchesItsHeader) {
    const auto& blocks = sepolia();
    ASSERT_EQ(blocks.size(), 8192u);
    EXPECT_EQ(blocks.front().header.number, 172032u);
    size_t transactions = 0, typed = 0, receipts = 0, with_logs = 0;
    for (const Block& b : blocks) {
        ASSERT_TRUE(verify_body(b.header, b.body)) << "block " << b.header.number;
        ASSERT_TRUE(verify_receipts(b.header, b.receipts)) << "block " << b.header.number;
        auto body = parse_body(b.body);
        auto list = parse_receipts(b.receipts);
        ASSERT_TRUE(body && list);
        EXPECT_EQ(body->transactions.size(), list->size()) << "block " << b.header.number;
        transactions += body->transactions.size();
        for (ByteView tx : body->transactions) typed += tx[0] < 0xc0 ? 1 : 0;
        receipts += list->size();
        for (ByteView r : *list) {
            // The eth/69 form's fourth field is the log list.
            Bytes eth69;
            ASSERT_TRUE(receipt_to_eth69(r, eth69));
            ByteView in{eth69};
            ByteView fields = *rlp::decode_list(in);
            for (int k = 0; k < 3; ++k) ASSERT_TRUE(rlp::next_item(fields));
            with_logs += rlp::decode_list(fields)->empty() ? 0 : 1;
        }
    }
    // Counted once from the archive; a parser that dropped or merged items would change them. No
    // receipt of this epoch has a log (Bloom below covers the bloom).
    EXPECT_EQ(transactions, 93u);
    EXPECT_EQ(typed, 65u);
    EXPECT_EQ(receipts, 93u);
    EXPECT_EQ(with_logs, 0u);
    std::printf("sepolia epoch 21: %zu transactions (%zu typed), %zu receipts\n", transactions, typed, receipts);
}

TEST(BlockBody, EveryMainnetEpochZeroBodyMatchesItsHeaderUnclesIncluded) {
    size_t uncles = 0;
    for (const Block& b : blocks_of(kMainnetEra1)) {
        ASSERT_TRUE(verify_body(b.header, b.body)) << "block " << b.header.number;
        ASSERT_TRUE(verify_receipts(b.header, b.receipts)) << "block " << b.header.number;
        uncles += parse_body(b.body)->uncle_count;
    }
    EXPECT_GT(uncles, 0u);
}

TEST(BlockBody, EveryHiveBodyMatchesItsHeaderWithdrawalsIncluded) {
    size_t withdrawals = 0, transactions = 0;
    for (const HiveBlock& b : hive_blocks()) {
        ASSERT_TRUE(verify_body(b.header, b.body)) << "block " << b.header.number;
        auto body = parse_body(b.body);
        ASSERT_TRUE(body->withdrawals.has_value());
        withdrawals += body->withdrawals->size();
        transactions += body->transactions.size();
    }
    EXPECT_GT(withdrawals, 0u);
    EXPECT_GT(transactions, 0u);
}

// The first Sepolia block with at least two transactions.
const Block& busy_block() {
    for (const Block& b : sepolia()) {
        if (parse_body(b.body)->transactions.size() >= 2) return b;
    }
    ADD_FAILURE() << "no block with two transactions";
    return sepolia().front();
}

TEST(BlockBody, AlteredOrReorderedTransactionsAreRefusedByTheRoot) {
    const Block& b = busy_block();
    const BodyView view = *parse_body(b.body);

    // One byte of the last transaction's payload changed (its length kept).
    Bytes altered = b.body;
    const size_t at =
        static_cast<size_t>(view.transactions.back().data() - b.body.data()) + view.transactions.back().size() - 1;
    altered[at] ^= 0x01;
    EXPECT_EQ(verify_body(b.header, altered).error(), BodyError::kTransactionsRootMismatch);

    // The first two transactions swapped.
    Bytes txs;
    append(txs, view.transactions[1]);
    append(txs, view.transactions[0]);
    for (size_t i = 2; i < view.transactions.size(); ++i) append(txs, view.transactions[i]);
    Bytes payload;
    rlp::encode_header(payload, {true, txs.size()});
    append(payload, txs);
    append(payload, view.uncles);
    Bytes swapped;
    rlp::encode_header(swapped, {true, payload.size()});
    append(swapped, payload);
    ASSERT_EQ(swapped.size(), b.body.size());
    EXPECT_EQ(verify_body(b.header, swapped).error(), BodyError::kTransactionsRootMismatch);

    // Another block's body under this header.
    for (const Block& other : sepolia()) {
        if (other.header.transactions_root != b.header.transactions_root) {
            EXPECT_EQ(verify_body(b.header, other.body).error(), BodyError::kTransactionsRootMismatch);
            break;
        }
    }
}

TEST(BlockBody, UnclesAndWithdrawalsAreCheckedAgainstTheirRoots) {
    for (const Block& b : blocks_of(kMainnetEra1)) {
        const BodyView view = *parse_body(b.body);
        if (view.uncle_count == 0) continue;
        // The same transactions with no uncle.
        Bytes payload{0xc0, 0xc0};
        Bytes no_uncles;
        rlp::encode_header(no_uncles, {true, payload.size()});
        append(no_uncles, payload);
        EXPECT_EQ(verify_body(b.header, no_uncles).error(), BodyError::kOmmersHashMismatch);
        // A withdrawal list the pre-Shanghai header has no root for.
        Bytes relisted;
        ByteView in{b.body};
        const ByteView inner = *rlp::decode_list(in);
        rlp::encode_header(relisted, {true, inner.size() + 1});
        append(relisted, inner);
        relisted.push_back(0xc0);
        EXPECT_EQ(verify_body(b.header, relisted).error(), BodyError::kWithdrawalsUnexpected);
        break;
    }
    for (const HiveBlock& b : hive_blocks()) {
        const BodyView view = *parse_body(b.body);
        if (view.withdrawals->empty()) continue;
        // Without its withdrawal list, and with the list emptied.
        Bytes payload;
        Bytes txs;
        for (ByteView tx : view.transactions) append(txs, tx);
        rlp::encode_header(payload, {true, txs.size()});
        append(payload, txs);
        append(payload, view.uncles);
        Bytes without;
        rlp::encode_header(without, {true, payload.size()});
        append(without, payload);
        EXPECT_EQ(verify_body(b.header, without).error(), BodyError::kWithdrawalsMissing);
        payload.push_back(0xc0);
        Bytes emptied;
        rlp::encode_header(emptied, {true, payload.size()});
        append(emptied, payload);
        EXPECT_EQ(verify_body(b.header, emptied).error(), BodyError::kWithdrawalsRootMismatch);
        break;
    }
}

TEST(BlockBody, MalformedBodiesAreRefusedWithTheirReason) {
    const BlockHeader& header = busy_block().header;
    EXPECT_EQ(verify_body(header, Bytes{}).error(), BodyError::kBadBody);
    EXPECT_EQ(verify_body(header, Bytes{0x80}).error(), BodyError::kBadBody);              // a string
    EXPECT_EQ(verify_body(header, Bytes{0xc1, 0xc0}).error(), BodyError::kBadBody);        // no uncle list
    EXPECT_EQ(verify_body(header, Bytes{0xc2, 0xc0, 0x80}).error(), BodyError::kBadBody);  // uncles a string
    EXPECT_EQ(verify_body(header, Bytes{0xc3, 0xc1, 0x80, 0xc0}).error(), BodyError::kBadTransaction);  // empty typed
    EXPECT_EQ(verify_body(header, Bytes{0xc4, 0xc2, 0x81, 0x80, 0xc0}).error(),
              BodyError::kBadTransaction);  // type 0x80
    EXPECT_EQ(verify_body(header, Bytes{0xc3, 0xc0, 0xc1, 0x80}).error(), BodyError::kBadUncle);
    EXPECT_EQ(verify_body(header, Bytes{0xc4, 0xc0, 0xc0, 0xc1, 0x80}).error(), BodyError::kBadWithdrawal);
    Bytes truncated = busy_block().body;
    truncated.pop_back();
    EXPECT_EQ(verify_body(header, truncated).error(), BodyError::kBadBody);
    Bytes trailing = busy_block().body;
    trailing.push_back(0x80);
    EXPECT_EQ(verify_body(header, trailing).error(), BodyError::kBadBody);
}

TEST(Receipts, AlteredReceiptsAreRefusedByTheRoot) {
    const Block& b = busy_block();
    Bytes altered = b.receipts;
    altered[altered.size() - 1] ^= 0x01;  // inside the last receipt's logs or bloom
    auto r = verify_receipts(b.header, altered);
    ASSERT_FALSE(r);
    EXPECT_TRUE(r.error() == BodyError::kReceiptsRootMismatch || r.error() == BodyError::kBadReceipt)
        << r.error().message();
    EXPECT_EQ(verify_receipts(b.header, Bytes{0xc0}).error(), BodyError::kReceiptsRootMismatch);
    EXPECT_EQ(verify_receipts(b.header, Bytes{0x80}).error(), BodyError::kBadReceipts);
    EXPECT_EQ(verify_receipts(b.header, Bytes{0xc1, 0xc0}).error(), BodyError::kBadReceipt);  // no fields
}

TEST(Receipts, Eth69FormDropsTheBloomAndComesBackExactly) {
    size_t blocks = 0;
    Bytes eth69, back;
    for (const Block& b : sepolia()) {
        eth69.clear();
        back.clear();
        ASSERT_TRUE(receipts_to_eth69(b.receipts, eth69)) << "block " << b.header.number;
        const auto count = parse_receipts(b.receipts)->size();
        if (count > 0) {
            EXPECT_LT(eth69.size(), b.receipts.size() - count * 250);  // no bloom
        }
        // The blooms recomputed from the logs equal the chain's: the round trip is byte-exact.
        ASSERT_TRUE(receipts_from_eth69(eth69, back)) << "block " << b.header.number;
        ASSERT_EQ(back, b.receipts) << "block " << b.header.number;
        blocks += count > 0 ? 1 : 0;
    }
    EXPECT_EQ(blocks, 74u);
}

TEST(Bloom, AHundredEntriesGiveGoEthereumsBloom) {
    // go-ethereum's core/types/bloom9_test.go (TestBloomExtensively): keccak256 of the bloom.
    Bloom bloom{};
    for (int i = 0; i < 100; ++i) {
        bloom_add(bloom, as_bytes("xxxxxxxxxx data " + std::to_string(i) + " yyyyyyyyyyyyyy"));
    }
    EXPECT_EQ(to_hex0x(keccak256(bloom)), "0xc8d3ca65cdb4874300a9e39475508f23ed6da09fdbc487f89a2dcf50b09eb263");
}

TEST(Bloom, LogsBloomHasTheAddressAndEveryTopicOfEveryLog) {
    // Two logs: [address, [topic, topic], data] and [address, [], data].
    const Bytes address_a(20, 0x11), address_b(20, 0x22), topic_1(32, 0x33), topic_2(32, 0x44);
    auto log = [](const Bytes& address, std::vector<Bytes> topics) {
        Bytes t, payload, out;
        for (const Bytes& topic : topics) rlp::encode(t, topic);
        rlp::encode(payload, address);
        rlp::encode_header(payload, {true, t.size()});
        append(payload, t);
        rlp::encode(payload, as_bytes("data"));
        rlp::encode_header(out, {true, payload.size()});
        append(out, payload);
        return out;
    };
    Bytes logs_payload = log(address_a, {topic_1, topic_2});
    append(logs_payload, log(address_b, {}));
    Bytes logs;
    rlp::encode_header(logs, {true, logs_payload.size()});
    append(logs, logs_payload);
    Bloom expected{};
    for (const Bytes* b : {&address_a, &topic_1, &topic_2, &address_b}) bloom_add(expected, *b);
    EXPECT_EQ(logs_bloom(logs).value(), expected);
    EXPECT_NE(expected, Bloom{});
    EXPECT_EQ(logs_bloom(Bytes{0xc0}).value(), Bloom{});

    // A typed receipt with these logs and their bloom survives the eth/69 round trip byte for byte.
    Bytes fields;
    rlp::encode(fields, uint64_t{1});
    rlp::encode(fields, uint64_t{21000});
    rlp::encode(fields, ByteView{expected});
    append(fields, logs);
    Bytes typed{0x02};
    rlp::encode_header(typed, {true, fields.size()});
    append(typed, fields);
    Bytes item;
    rlp::encode(item, typed);
    Bytes receipts;
    rlp::encode_header(receipts, {true, item.size()});
    append(receipts, item);
    Bytes eth69, back;
    ASSERT_TRUE(receipts_to_eth69(receipts, eth69));
    ASSERT_TRUE(receipts_from_eth69(eth69, back));
    EXPECT_EQ(back, receipts);

    // An address of 19 bytes is refused.
    const Bytes short_address(19, 0x11);
    Bytes bad_log = log(short_address, {});
    Bytes bad_logs;
    rlp::encode_header(bad_logs, {true, bad_log.size()});
    append(bad_logs, bad_log);
    EXPECT_EQ(logs_bloom(bad_logs).error(), BodyError::kBadReceipt);
}

TEST(Receipts, Eth69ReceiptsWithoutFourFieldsAreRefused) {
    Bytes out;
    EXPECT_EQ(receipts_from_eth69(Bytes{0x80}, out).error(), BodyError::kBadReceipts);
    EXPECT_EQ(receipts_from_eth69(Bytes{0xc1, 0xc0}, out).error(), BodyError::kBadReceipt);
    // Type 0x80 is not a transaction type.
    EXPECT_EQ(receipts_from_eth69(Bytes{0xc8, 0xc7, 0x81, 0x80, 0x01, 0x82, 0x52, 0x08, 0xc0}, out).error(),
              BodyError::kBadReceipt);
    EXPECT_TRUE(receipts_from_eth69(Bytes{0xc7, 0xc6, 0x80, 0x01, 0x82, 0x52, 0x08, 0xc0}, out));
}

}  // namespace
}  // namespace headerd
