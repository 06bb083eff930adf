#include "core/block_header.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/hex.hpp"
#include "core/rlp.hpp"
#include "core/test_hex.hpp"
#include "tests/data_dir.hpp"

namespace headerd {
namespace {

Bytes read_data_file(const std::string& name) {
    std::ifstream f(headerd::testing::data_dir() + "/" + name, std::ios::binary);
    EXPECT_TRUE(f.good()) << name;
    return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::vector<std::string> read_lines(const std::string& name) {
    std::ifstream f(headerd::testing::data_dir() + "/" + name);
    EXPECT_TRUE(f.good()) << name;
    std::vector<std::string> lines;
    for (std::string line; std::getline(f, line);) {
        if (!line.empty() && line[0] != '#') lines.push_back(line);
    }
    return lines;
}

Hash32 hash(std::string_view s) {
    auto h = hash_from_hex(s);
    EXPECT_TRUE(h.has_value()) << s;
    return h.value_or(Hash32{});
}

// Decodes, re-encodes byte-exact, hashes and peeks one header; returns the decoded header.
BlockHeader check_header(ByteView rlp, const Hash32& want_hash) {
    auto h = decode_block_header(rlp);
    EXPECT_TRUE(h) << h.error().message();
    if (!h) return {};
    Bytes again;
    encode(again, *h);
    EXPECT_EQ(to_hex(again), to_hex(rlp));
    EXPECT_EQ(encoded_length(*h), rlp.size());
    EXPECT_EQ(to_hex(header_hash(rlp)), to_hex(want_hash));

    auto peek = peek_header(rlp);
    EXPECT_TRUE(peek) << peek.error().message();
    if (peek) {
        EXPECT_EQ(peek->parent_hash, h->parent_hash);
        EXPECT_EQ(peek->number, h->number);
    }
    return *h;
}

// ---- go-ethereum core/types/block_test.go and the mainnet genesis (test-vectors.md section K) ----

constexpr std::string_view kBlockEncodingHeader =
    "f901f9a083cafc574e1f51ba9dc0568fc617a08ea2429fb384059c972f13b19fa1c8dd55a01dcc4de8dec75d7aab85b567b6ccd41ad3"
    "12451b948a7413f0a142fd40d49347948888f1f195afa192cfee860698584c030f4c9db1a0ef1552a40b7165c3cd773806b9e0c165b7"
    "5356e0314bf0706f279c729f51e017a05fe50b260da6308036625b850b5d6ced6d0a9f814c0688bc91ffb7b7a3a54b67a0bc37d79753"
    "ad738a6dac4921e57392f145d8887476de3f783dfa7edae9283e52b90100000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000008302000001832fefd8825208845506eb0780a0bd4472abb6659ebe3ee06ee4d7b72a00a9f4d0"
    "01caca51342001075469aff49888a13a5a8c8f2bb1c4";
constexpr std::string_view kEip1559BlockEncodingHeader =
    "f901fea083cafc574e1f51ba9dc0568fc617a08ea2429fb384059c972f13b19fa1c8dd55a01dcc4de8dec75d7aab85b567b6ccd41ad3"
    "12451b948a7413f0a142fd40d49347948888f1f195afa192cfee860698584c030f4c9db1a0ef1552a40b7165c3cd773806b9e0c165b7"
    "5356e0314bf0706f279c729f51e017a05fe50b260da6308036625b850b5d6ced6d0a9f814c0688bc91ffb7b7a3a54b67a0bc37d79753"
    "ad738a6dac4921e57392f145d8887476de3f783dfa7edae9283e52b90100000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000008302000001832fefd8825208845506eb0780a0bd4472abb6659ebe3ee06ee4d7b72a00a9f4d0"
    "01caca51342001075469aff49888a13a5a8c8f2bb1c4843b9aca00";
constexpr std::string_view kEip2718BlockEncodingHeader =
    "f90211a00000000000000000000000000000000000000000000000000000000000000000a01dcc4de8dec75d7aab85b567b6ccd41ad3"
    "12451b948a7413f0a142fd40d49347948888f1f195afa192cfee860698584c030f4c9db1a0ef1552a40b7165c3cd773806b9e0c165b7"
    "5356e0314bf0706f279c729f51e017a0e6e49996c7ec59f7a23d22b83239a60151512c65613bf84a0d7da336399ebc4aa0cafe75574d"
    "59780665a97fbfd11365c7545aa8f1abf4e5e12e8243334ef7286bb90100000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000083020000820200832fefd882a410845506eb0796636f6f6c65737420626c6f636b206f6e2063"
    "6861696ea0bd4472abb6659ebe3ee06ee4d7b72a00a9f4d001caca51342001075469aff49888a13a5a8c8f2bb1c4";
constexpr std::string_view kEip4844BlockEncodingHeader =
    "f90244a05eb7f6da0f3e237c62bcae48b7fb5f4506d392616b62890429c8b76b4a1d4104a01dcc4de8dec75d7aab85b567b6ccd41ad3"
    "12451b948a7413f0a142fd40d4934794ba5e000000000000000000000000000000000000a011639dcca0b44f2acb5b630a82c8a69cb8"
    "2742b3711383ec4e111a554d27aea5a05cb644f722e31f9792a8ef6e2a762334e1a862e8b40c1612e1e9507fd7121ef9a00c82719448"
    "356ba6807d6edfcd8e5aea575a5e97f36038ffb3e395749b26d41cb90100000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000800188016345785d8a00008301482082079e42a0000000000000000000000000000000000000"
    "0000000000000000000000020000880000000000000000820314a056e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622f"
    "b5e363b4218302000080a00000000000000000000000000000000000000000000000000000000000000000";
constexpr std::string_view kMainnetGenesisHeader =
    "f90214a00000000000000000000000000000000000000000000000000000000000000000a01dcc4de8dec75d7aab85b567b6ccd41ad3"
    "12451b948a7413f0a142fd40d49347940000000000000000000000000000000000000000a0d7f8974fb5ac78d9ac099b9ad5018bedc2"
    "ce0a72dad1827a1709da30580f0544a056e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421a056e81f171b"
    "cc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421b90100000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000850400000000808213888080a011bbe8db4e347b4e8c937c1c8370e4b5ed33adb3db69cbdb7a"
    "38e1e50b1b82faa00000000000000000000000000000000000000000000000000000000000000000880000000000000042";

struct KVector {
    std::string_view name;
    std::string_view rlp;
    size_t length;
    size_t fields;
    std::string_view hash;
};

constexpr KVector kKVectors[] = {
    {"TestBlockEncoding", kBlockEncodingHeader, 508, 15,
     "0a5843ac1cb04865017cb35a57b50b07084e5fcee39b5acadade33149f4fff9e"},
    {"TestEIP1559BlockEncoding", kEip1559BlockEncodingHeader, 513, 16,
     "c7252048cd273fe0dac09650027d07f0e3da4ee0675ebbb26627cea92729c372"},
    {"TestEIP2718BlockEncoding", kEip2718BlockEncodingHeader, 532, 15,
     "0ad3836807aa90218884be62c8dd912fe5228aafa6fc2a7c21028e8c09bc91ef"},
    {"TestEIP4844BlockEncoding", kEip4844BlockEncodingHeader, 583, 20,
     "6243e029fb6bfef5226d2688cf5c880984a97c28ab9889a7dfae09c9c42eacfa"},
    {"mainnet genesis", kMainnetGenesisHeader, 535, 15,
     "d4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3"},
};

TEST(BlockHeader, SectionKVectors) {
    for (const auto& v : kKVectors) {
        SCOPED_TRACE(v.name);
        const Bytes rlp = test::hex(v.rlp);
        EXPECT_EQ(rlp.size(), v.length);
        const BlockHeader h = check_header(rlp, hash(v.hash));
        EXPECT_EQ(h.field_count(), v.fields);
    }
}

TEST(BlockHeader, BlockEncodingFields) {
    const BlockHeader h = check_header(test::hex(kBlockEncodingHeader), hash(kKVectors[0].hash));
    EXPECT_EQ(h.difficulty, U256{131072});
    EXPECT_EQ(h.number, 1u);
    EXPECT_EQ(h.gas_limit, 3141592u);
    EXPECT_EQ(h.gas_used, 21000u);
    EXPECT_EQ(h.timestamp, 1426516743u);
    EXPECT_EQ(to_hex(h.coinbase), "8888f1f195afa192cfee860698584c030f4c9db1");
    EXPECT_EQ(to_hex(h.state_root), "ef1552a40b7165c3cd773806b9e0c165b75356e0314bf0706f279c729f51e017");
    EXPECT_EQ(to_hex(h.mix_hash), "bd4472abb6659ebe3ee06ee4d7b72a00a9f4d001caca51342001075469aff498");
    EXPECT_EQ(to_hex(h.nonce), "a13a5a8c8f2bb1c4");
    EXPECT_TRUE(h.extra_data.empty());
    EXPECT_FALSE(h.base_fee_per_gas);
}

TEST(BlockHeader, Eip1559AndEip4844Fields) {
    const BlockHeader london = check_header(test::hex(kEip1559BlockEncodingHeader), hash(kKVectors[1].hash));
    ASSERT_TRUE(london.base_fee_per_gas);
    EXPECT_EQ(*london.base_fee_per_gas, U256{1000000000});
    EXPECT_FALSE(london.withdrawals_root);

    const BlockHeader cancun = check_header(test::hex(kEip4844BlockEncodingHeader), hash(kKVectors[3].hash));
    EXPECT_EQ(cancun.number, 1u);
    EXPECT_EQ(cancun.gas_limit, 0x016345785d8a0000u);
    EXPECT_EQ(cancun.timestamp, 0x79eu);
    EXPECT_EQ(to_hex(cancun.extra_data), "42");
    EXPECT_EQ(cancun.base_fee_per_gas, U256{0x314});
    EXPECT_EQ(cancun.withdrawals_root, hash("56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421"));
    EXPECT_EQ(cancun.blob_gas_used, 0x20000u);
    EXPECT_EQ(cancun.excess_blob_gas, 0u);
    EXPECT_EQ(cancun.parent_beacon_block_root, Hash32{});
    EXPECT_FALSE(cancun.requests_hash);
}

TEST(BlockHeader, MainnetGenesisFields) {
    const BlockHeader g = check_header(test::hex(kMainnetGenesisHeader), hash(kKVectors[4].hash));
    EXPECT_EQ(g.parent_hash, Hash32{});
    EXPECT_EQ(g.ommers_hash, hash("1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347"));
    EXPECT_EQ(g.state_root, hash("d7f8974fb5ac78d9ac099b9ad5018bedc2ce0a72dad1827a1709da30580f0544"));
    EXPECT_EQ(g.difficulty, U256{17179869184ULL});
    EXPECT_EQ(g.number, 0u);
    EXPECT_EQ(g.gas_limit, 5000u);
    EXPECT_EQ(g.gas_used, 0u);
    EXPECT_EQ(g.timestamp, 0u);
    EXPECT_EQ(to_hex(g.extra_data), "11bbe8db4e347b4e8c937c1c8370e4b5ed33adb3db69cbdb7a38e1e50b1b82fa");
    EXPECT_EQ(to_hex(g.nonce), "0000000000000042");
}

// ---- real chains --------------------------------------------------------------------------------

TEST(BlockHeader, MainnetHeaders0To8191) {
    const Bytes file = read_data_file("mainnet-headers-0-8191.rlp");
    const std::vector<std::string> hashes = read_lines("mainnet-headers-0-8191.hashes.txt");
    ASSERT_EQ(hashes.size(), 8192u);

    ByteView in{file};
    uint64_t number = 0;
    Hash32 prev{};
    while (!in.empty()) {
        auto item = rlp::next_item(in);
        ASSERT_TRUE(item) << "after header " << number << ": " << item.error().message();
        ASSERT_LT(number, hashes.size());
        std::istringstream line(hashes[number]);
        uint64_t listed_number = 0;
        std::string listed_hash;
        line >> listed_number >> listed_hash;
        ASSERT_EQ(listed_number, number);

        SCOPED_TRACE(number);
        const BlockHeader h = check_header(*item, hash(listed_hash));
        EXPECT_EQ(h.number, number);
        EXPECT_EQ(h.field_count(), 15u);
        EXPECT_EQ(h.parent_hash, prev);
        prev = header_hash(*item);
        ++number;
    }
    EXPECT_EQ(number, 8192u);
}

TEST(BlockHeader, MainnetForkSamplesOfEveryLayout) {
    const std::vector<std::string> lines = read_lines("mainnet-fork-samples.txt");
    std::vector<size_t> layouts;
    for (const std::string& text : lines) {
        std::istringstream line(text);
        uint64_t number = 0;
        std::string block_hash, rlp_hex, era;
        size_t fields = 0;
        line >> number >> block_hash >> rlp_hex >> era >> fields;
        ASSERT_FALSE(line.fail()) << text.substr(0, 40);
        SCOPED_TRACE(era);
        const BlockHeader h = check_header(test::hex(rlp_hex), hash(block_hash));
        EXPECT_EQ(h.number, number);
        EXPECT_EQ(h.field_count(), fields);
        layouts.push_back(fields);
    }
    EXPECT_EQ(layouts, (std::vector<size_t>{15, 16, 16, 17, 20, 21}));
}

std::string json_string(const std::string& json, std::string_view key) {
    const std::string quoted = "\"" + std::string(key) + "\": \"";
    const size_t at = json.find(quoted);
    EXPECT_NE(at, std::string::npos) << key;
    if (at == std::string::npos) return {};
    const size_t begin = at + quoted.size();
    return json.substr(begin, json.find('"', begin) - begin);
}

uint64_t json_u64(const std::string& json, std::string_view key) {
    return std::stoull(json_string(json, key), nullptr, 16);
}

TEST(BlockHeader, HiveTestchain600Blocks) {
    const Bytes file = read_data_file("hive-testchain-blocks-1-600.rlp");
    ByteView in{file};
    std::vector<BlockHeader> headers;
    std::vector<Hash32> hashes;
    while (!in.empty()) {
        // Each block is [header, transactions, uncles, withdrawals?, ...]; the header is its first item.
        auto block = rlp::decode_list(in);
        ASSERT_TRUE(block) << "block " << headers.size() + 1 << ": " << block.error().message();
        ByteView items = *block;
        auto header_rlp = rlp::next_item(items);
        ASSERT_TRUE(header_rlp);
        const Hash32 h = header_hash(*header_rlp);
        SCOPED_TRACE(headers.size() + 1);
        headers.push_back(check_header(*header_rlp, h));
        hashes.push_back(h);
    }
    ASSERT_EQ(headers.size(), 600u);
    for (size_t i = 0; i < headers.size(); ++i) {
        EXPECT_EQ(headers[i].number, i + 1);
        if (i > 0) {
            EXPECT_EQ(headers[i].parent_hash, hashes[i - 1]) << "block " << i + 1;
        }
    }

    const Bytes json_bytes = read_data_file("hive-testchain-headblock.json");
    const std::string json(json_bytes.begin(), json_bytes.end());
    const BlockHeader& head = headers.back();
    EXPECT_EQ(to_hex0x(hashes.back()), json_string(json, "hash"));
    EXPECT_EQ(to_hex0x(head.parent_hash), json_string(json, "parentHash"));
    EXPECT_EQ(to_hex0x(head.state_root), json_string(json, "stateRoot"));
    EXPECT_EQ(head.number, json_u64(json, "number"));
    EXPECT_EQ(head.gas_limit, json_u64(json, "gasLimit"));
    EXPECT_EQ(head.timestamp, json_u64(json, "timestamp"));
    EXPECT_EQ(head.base_fee_per_gas, U256{json_u64(json, "baseFeePerGas")});
    EXPECT_EQ(head.withdrawals_root, hash(json_string(json, "withdrawalsRoot")));
    EXPECT_EQ(head.blob_gas_used, json_u64(json, "blobGasUsed"));
    EXPECT_EQ(head.excess_blob_gas, json_u64(json, "excessBlobGas"));
    EXPECT_EQ(head.parent_beacon_block_root, hash(json_string(json, "parentBeaconBlockRoot")));
    EXPECT_EQ(head.requests_hash, hash(json_string(json, "requestsHash")));
    EXPECT_EQ(head.field_count(), 21u);
}

// ---- layouts built by hand ----------------------------------------------------------------------

TEST(BlockHeader, FieldCountFollowsLatestOptionalField) {
    BlockHeader h;
    EXPECT_EQ(h.field_count(), 15u);
    h.base_fee_per_gas = 7;
    EXPECT_EQ(h.field_count(), 16u);
    h.withdrawals_root = Hash32{};
    EXPECT_EQ(h.field_count(), 17u);
    h.excess_blob_gas = 0;
    EXPECT_EQ(h.field_count(), 20u);
    h.requests_hash = Hash32{};
    EXPECT_EQ(h.field_count(), 21u);
}

TEST(BlockHeader, EveryLayoutRoundTrips) {
    BlockHeader h;
    h.parent_hash.fill(0x11);
    h.coinbase.fill(0x22);
    h.logs_bloom[255] = 1;
    h.difficulty = std::numeric_limits<U256>::max();
    h.number = std::numeric_limits<uint64_t>::max();
    h.gas_limit = 30000000;
    h.timestamp = 1746612311;
    h.extra_data = Bytes(32, 0xee);
    h.nonce.fill(0xff);
    for (size_t want : {15u, 16u, 17u, 20u, 21u}) {
        SCOPED_TRACE(want);
        if (want == 16) h.base_fee_per_gas = U256{1} << 200;
        if (want == 17) h.withdrawals_root = hash("56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421");
        if (want == 20) {
            h.blob_gas_used = 0;
            h.excess_blob_gas = 393216;
            h.parent_beacon_block_root = Hash32{};
        }
        if (want == 21) h.requests_hash = Hash32{};
        Bytes out;
        encode(out, h);
        EXPECT_EQ(out.size(), encoded_length(h));
        auto back = decode_block_header(out);
        ASSERT_TRUE(back) << back.error().message();
        EXPECT_EQ(back->field_count(), want);
        Bytes again;
        encode(again, *back);
        EXPECT_EQ(again, out);
        EXPECT_EQ(back->difficulty, h.difficulty);
        EXPECT_EQ(back->number, h.number);
        EXPECT_EQ(back->base_fee_per_gas, h.base_fee_per_gas);
        EXPECT_EQ(back->excess_blob_gas, h.excess_blob_gas);
    }
}

TEST(BlockHeader, MissingLowerOptionalFieldsEncodeAsZero) {
    BlockHeader h;
    h.requests_hash = Hash32{};
    h.requests_hash->fill(0xab);
    Bytes out;
    encode(out, h);
    auto back = decode_block_header(out);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->field_count(), 21u);
    EXPECT_EQ(back->base_fee_per_gas, U256{0});
    EXPECT_EQ(back->withdrawals_root, Hash32{});
    EXPECT_EQ(back->blob_gas_used, 0u);
    EXPECT_EQ(back->excess_blob_gas, 0u);
    EXPECT_EQ(back->parent_beacon_block_root, Hash32{});
    EXPECT_EQ(back->requests_hash, h.requests_hash);
}

TEST(BlockHeader, EncodeAppends) {
    const Bytes genesis = test::hex(kMainnetGenesisHeader);
    auto h = decode_block_header(genesis);
    ASSERT_TRUE(h);
    Bytes out = {0x01, 0x02};
    encode(out, *h);
    ASSERT_EQ(out.size(), 2 + genesis.size());
    EXPECT_TRUE(std::equal(genesis.begin(), genesis.end(), out.begin() + 2));
}

// ---- bad inputs ---------------------------------------------------------------------------------

// The fields of a header as separately encoded items, to be edited and re-wrapped.
std::vector<Bytes> split_fields(std::string_view header_hex) {
    const Bytes rlp = test::hex(header_hex);
    ByteView in{rlp};
    auto payload = rlp::decode_list(in);
    EXPECT_TRUE(payload);
    std::vector<Bytes> fields;
    for (ByteView items = payload.value(); !items.empty();) {
        auto item = rlp::next_item(items);
        EXPECT_TRUE(item);
        fields.emplace_back(item->begin(), item->end());
    }
    return fields;
}

Bytes wrap(const std::vector<Bytes>& fields) {
    Bytes payload;
    for (const Bytes& f : fields) append(payload, f);
    Bytes out;
    rlp::encode_header(out, {true, payload.size()});
    append(out, payload);
    return out;
}

Bytes string_item(const Bytes& b) {
    Bytes out;
    rlp::encode(out, ByteView{b});
    return out;
}

struct BadCase {
    std::string name;
    Bytes rlp;
    HeaderError error;
    bool peek_fails;  // whether peek_header, which reads less, must also reject it
};

std::vector<BadCase> bad_cases() {
    const Bytes genesis = test::hex(kMainnetGenesisHeader);
    const std::vector<Bytes> legacy = split_fields(kMainnetGenesisHeader);        // 15 fields
    const std::vector<Bytes> cancun = split_fields(kEip4844BlockEncodingHeader);  // 20 fields
    std::vector<BadCase> cases;
    const auto edit = [&](std::string name, size_t index, Bytes field, HeaderError e, bool peek_fails) {
        std::vector<Bytes> f = legacy;
        f[index] = std::move(field);
        cases.push_back({std::move(name), wrap(f), e, peek_fails});
    };

    cases.push_back({"empty input", {}, HeaderError::kTruncated, true});
    cases.push_back({"truncated", Bytes(genesis.begin(), genesis.end() - 1), HeaderError::kTruncated, true});
    Bytes trailing = genesis;
    trailing.push_back(0x80);
    cases.push_back({"trailing bytes", trailing, HeaderError::kTrailingBytes, true});
    cases.push_back({"not a list", string_item(Bytes(32, 0)), HeaderError::kNotAList, true});

    std::vector<Bytes> f14(legacy.begin(), legacy.end() - 1);
    cases.push_back({"14 fields", wrap(f14), HeaderError::kTooFewFields, false});
    std::vector<Bytes> f8(legacy.begin(), legacy.begin() + 8);
    cases.push_back({"8 fields", wrap(f8), HeaderError::kTooFewFields, true});
    cases.push_back({"empty list", wrap({}), HeaderError::kTooFewFields, true});
    std::vector<Bytes> f18(cancun.begin(), cancun.begin() + 18);
    cases.push_back({"18 fields", wrap(f18), HeaderError::kInvalidFieldCount, false});
    std::vector<Bytes> f19(cancun.begin(), cancun.begin() + 19);
    cases.push_back({"19 fields", wrap(f19), HeaderError::kInvalidFieldCount, false});
    std::vector<Bytes> f22 = cancun;
    f22.push_back(string_item(Bytes(32, 0)));
    f22.push_back(string_item(Bytes(32, 0)));
    cases.push_back({"22 fields", wrap(f22), HeaderError::kTooManyFields, false});

    edit("31-byte parent hash", 0, string_item(Bytes(31, 0)), HeaderError::kWrongFieldSize, true);
    edit("33-byte state root", 3, string_item(Bytes(33, 0)), HeaderError::kWrongFieldSize, false);
    edit("19-byte coinbase", 2, string_item(Bytes(19, 0)), HeaderError::kWrongFieldSize, false);
    edit("255-byte bloom", 6, string_item(Bytes(255, 0)), HeaderError::kWrongFieldSize, false);
    edit("7-byte nonce", 14, string_item(Bytes(7, 0)), HeaderError::kWrongFieldSize, false);
    edit("leading zero in number", 8, test::hex("820001"), HeaderError::kLeadingZero, true);
    edit("zero byte as number", 8, test::hex("00"), HeaderError::kLeadingZero, true);
    edit("leading zero in difficulty", 7, test::hex("83000001"), HeaderError::kLeadingZero, false);
    edit("9-byte gas limit", 9, test::hex("89010000000000000000"), HeaderError::kIntegerOverflow, false);
    edit("33-byte difficulty", 7, string_item(Bytes(33, 1)), HeaderError::kIntegerOverflow, false);
    edit("list as state root", 3, test::hex("c0"), HeaderError::kUnexpectedList, false);
    edit("list as number", 8, test::hex("c180"), HeaderError::kUnexpectedList, true);
    edit("list as extra data", 12, test::hex("c0"), HeaderError::kUnexpectedList, false);
    edit("wrapped single byte as number", 8, test::hex("8105"), HeaderError::kNonCanonicalLength, true);

    // The header list itself in long form for a short payload.
    cases.push_back({"non-canonical list length", test::hex("f800"), HeaderError::kNonCanonicalLength, true});
    return cases;
}

TEST(BlockHeader, BadInputsGiveTheirSpecificError) {
    for (const BadCase& c : bad_cases()) {
        SCOPED_TRACE(c.name);
        auto h = decode_block_header(c.rlp);
        ASSERT_FALSE(h);
        EXPECT_EQ(h.error(), make_error_code(c.error)) << h.error().message();
        EXPECT_STREQ(h.error().category().name(), "header");

        auto p = peek_header(c.rlp);
        if (c.peek_fails) {
            ASSERT_FALSE(p);
            EXPECT_EQ(p.error(), make_error_code(c.error)) << p.error().message();
        }
    }
}

TEST(BlockHeader, ErrorCategoryNamesEveryCode) {
    for (int e = static_cast<int>(HeaderError::kTruncated); e <= static_cast<int>(HeaderError::kNonCanonicalLength);
         ++e) {
        EXPECT_NE(make_error_code(static_cast<HeaderError>(e)).message(), "unknown header error") << e;
    }
}

}  // namespace
}  // namespace headerd
