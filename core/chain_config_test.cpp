#include "core/chain_config.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/block_header.hpp"
#include "core/era1.hpp"
#include "core/hex.hpp"
#include "core/rlp.hpp"
#include "core/test_hex.hpp"
#include "tests/data_dir.hpp"

namespace headerd {
namespace {

TEST(ChainConfig, Mainnet) {
    const ChainConfig& c = mainnet_config();
    EXPECT_EQ(c.name, "mainnet");
    EXPECT_EQ(c.network_id, 1u);
    EXPECT_EQ(to_hex(c.genesis_hash), "d4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3");
    EXPECT_EQ(c.genesis_time, 0u);
    EXPECT_EQ(c.block_forks, (std::vector<uint64_t>{1150000, 1920000, 2463000, 2675000, 4370000, 7280000, 9069000,
                                                    9200000, 12244000, 12965000, 13773000, 15050000}));
    EXPECT_EQ(c.time_forks,
              (std::vector<uint64_t>{1681338455, 1710338135, 1746612311, 1764798551, 1765290071, 1767747671}));
    EXPECT_EQ(c.london_block, 12965000u);
    EXPECT_EQ(c.shanghai_time, 1681338455u);
    EXPECT_EQ(c.cancun_time, 1710338135u);
    EXPECT_EQ(c.prague_time, 1746612311u);
    EXPECT_EQ(&c, &mainnet_config());
}

TEST(ChainConfig, Sepolia) {
    const ChainConfig& c = sepolia_config();
    EXPECT_EQ(c.name, "sepolia");
    EXPECT_EQ(c.network_id, 11155111u);
    EXPECT_EQ(to_hex(c.genesis_hash), "25a5cc106eea7138acab33231d7160d69cb777ee0c2c553fcddf5138993e6dd9");
    EXPECT_EQ(c.genesis_time, 1633267481u);
    EXPECT_EQ(c.block_forks, (std::vector<uint64_t>{1735371}));
    // London from genesis: every header has a base fee; Shanghai, Cancun and Prague add fields.
    EXPECT_EQ(c.expected_field_count(0, 1633267481), 16u);
    EXPECT_EQ(c.expected_field_count(2000000, 1677557088), 17u);
    EXPECT_EQ(c.expected_field_count(5000000, 1706655072), 20u);
    EXPECT_EQ(c.expected_field_count(7000000, 1741159776), 21u);
    EXPECT_EQ(named_config("sepolia"), &c);
    EXPECT_EQ(named_config("mainnet"), &mainnet_config());
    EXPECT_EQ(named_config("holesky"), nullptr);
}

TEST(ChainConfig, SepoliaEpoch21HeadersHaveTheExpectedLayout) {
    // Blocks 172032..180223 (2022): London headers, 16 fields.
    std::ifstream in(testing::data_dir() + "/sepolia-00021-b8814b14.era1", std::ios::binary);
    const Bytes file{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    auto archive = era1::Archive::parse(file);
    ASSERT_TRUE(archive);
    Bytes rlp;
    for (size_t i = 0; i < archive->count(); i += 1000) {
        auto h = decode_block_header(*archive->header(i, rlp));
        ASSERT_TRUE(h);
        EXPECT_EQ(h->field_count(), sepolia_config().expected_field_count(h->number, h->timestamp)) << h->number;
    }
}

TEST(ChainConfig, MainnetLayoutBoundaries) {
    const ChainConfig& c = mainnet_config();
    EXPECT_EQ(c.expected_field_count(0, 0), 15u);
    EXPECT_EQ(c.expected_field_count(12964999, 1628166812), 15u);
    EXPECT_EQ(c.expected_field_count(12965000, 1628166822), 16u);
    EXPECT_EQ(c.expected_field_count(17034869, 1681338443), 16u);
    EXPECT_EQ(c.expected_field_count(17034870, 1681338455), 17u);
    EXPECT_EQ(c.expected_field_count(19426586, 1710338123), 17u);
    EXPECT_EQ(c.expected_field_count(19426587, 1710338135), 20u);
    EXPECT_EQ(c.expected_field_count(22431083, 1746612299), 20u);
    EXPECT_EQ(c.expected_field_count(22431084, 1746612311), 21u);
    // Osaka and the BPO forks changed no header field.
    EXPECT_EQ(c.expected_field_count(30000000, 2000000000), 21u);
}

// The real header of each layout has the field count the mainnet config expects for it.
TEST(ChainConfig, MainnetForkSamplesHaveExpectedFieldCount) {
    std::ifstream f(headerd::testing::data_dir() + "/mainnet-fork-samples.txt");
    ASSERT_TRUE(f.good());
    size_t samples = 0;
    for (std::string text; std::getline(f, text);) {
        if (text.empty() || text[0] == '#') continue;
        std::istringstream line(text);
        uint64_t number = 0;
        std::string block_hash, rlp_hex, era;
        size_t fields = 0;
        line >> number >> block_hash >> rlp_hex >> era >> fields;
        auto h = decode_block_header(test::hex(rlp_hex));
        ASSERT_TRUE(h) << era;
        EXPECT_EQ(mainnet_config().expected_field_count(h->number, h->timestamp), fields) << era;
        ++samples;
    }
    EXPECT_EQ(samples, 6u);
}

TEST(ChainConfig, SyntheticForksAtFifths) {
    Hash32 genesis;
    genesis.fill(0x5a);
    const uint64_t t0 = 1700000000;
    const ChainConfig c = synthetic_config(1000, genesis, t0);
    EXPECT_EQ(c.name, "synthetic");
    EXPECT_EQ(c.network_id, 1337803u);
    EXPECT_EQ(c.genesis_hash, genesis);
    EXPECT_EQ(c.genesis_time, t0);
    EXPECT_EQ(c.london_block, 200u);
    EXPECT_EQ(c.shanghai_time, t0 + 12 * 400);
    EXPECT_EQ(c.cancun_time, t0 + 12 * 600);
    EXPECT_EQ(c.prague_time, t0 + 12 * 800);
    EXPECT_EQ(c.block_forks, (std::vector<uint64_t>{200}));
    EXPECT_EQ(c.time_forks, (std::vector<uint64_t>{t0 + 12 * 400, t0 + 12 * 600, t0 + 12 * 800}));

    // Block i has timestamp t0 + 12 i: each layout covers exactly one fifth of the chain.
    size_t per_layout[22] = {};
    for (uint64_t i = 0; i < 1000; ++i) ++per_layout[c.expected_field_count(i, t0 + 12 * i)];
    EXPECT_EQ(per_layout[15], 200u);
    EXPECT_EQ(per_layout[16], 200u);
    EXPECT_EQ(per_layout[17], 200u);
    EXPECT_EQ(per_layout[20], 200u);
    EXPECT_EQ(per_layout[21], 200u);
    EXPECT_EQ(c.expected_field_count(199, t0 + 12 * 199), 15u);
    EXPECT_EQ(c.expected_field_count(200, t0 + 12 * 200), 16u);
    EXPECT_EQ(c.expected_field_count(799, t0 + 12 * 799), 20u);
    EXPECT_EQ(c.expected_field_count(800, t0 + 12 * 800), 21u);
}

TEST(ChainConfig, SyntheticSmallChainsSkipGenesisAndDuplicateForks) {
    const uint64_t t0 = 1000;
    ChainConfig c = synthetic_config(0, Hash32{}, t0);
    EXPECT_TRUE(c.block_forks.empty());
    EXPECT_TRUE(c.time_forks.empty());
    EXPECT_EQ(c.expected_field_count(0, t0), 21u);

    c = synthetic_config(1, Hash32{}, t0);
    EXPECT_TRUE(c.block_forks.empty());
    EXPECT_TRUE(c.time_forks.empty());
    EXPECT_EQ(c.london_block, 0u);
    EXPECT_EQ(c.prague_time, t0);

    // count 2: London and Shanghai at block 0, Cancun and Prague both at block 1.
    c = synthetic_config(2, Hash32{}, t0);
    EXPECT_TRUE(c.block_forks.empty());
    EXPECT_EQ(c.time_forks, (std::vector<uint64_t>{t0 + 12}));
    EXPECT_EQ(c.expected_field_count(0, t0), 17u);
    EXPECT_EQ(c.expected_field_count(1, t0 + 12), 21u);

    c = synthetic_config(5, Hash32{}, t0);
    EXPECT_EQ(c.block_forks, (std::vector<uint64_t>{1}));
    EXPECT_EQ(c.time_forks, (std::vector<uint64_t>{t0 + 24, t0 + 36, t0 + 48}));
    const size_t want[] = {15, 16, 17, 20, 21};
    for (uint64_t i = 0; i < 5; ++i) EXPECT_EQ(c.expected_field_count(i, t0 + 12 * i), want[i]) << i;

    // A huge count saturates instead of wrapping.
    c = synthetic_config(std::numeric_limits<uint64_t>::max(), Hash32{}, t0);
    EXPECT_EQ(c.prague_time, std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(c.time_forks.size(), 1u);
}

// ---- stored encoding ----------------------------------------------------------------------------

TEST(ChainConfig, EncodingIsPinned) {
    Bytes out;
    encode(out, synthetic_config(5, Hash32{}, 0));
    EXPECT_EQ(to_hex(out),
              "f83f"
              "01"                                                                  // version
              "8973796e746865746963"                                                // "synthetic"
              "831469cb"                                                            // network id 1337803
              "a00000000000000000000000000000000000000000000000000000000000000000"  // genesis hash
              "80"                                                                  // genesis time
              "c101"                                                                // block forks [1]
              "c3182430"                                                            // time forks [24, 36, 48]
              "c101c118c124c130");  // london 1, shanghai 24, cancun 36, prague 48
}

TEST(ChainConfig, RoundTrips) {
    ChainConfig bare;
    bare.name = "bare";
    bare.network_id = 7;
    std::vector<ChainConfig> configs = {mainnet_config(), synthetic_config(1000000, Hash32{}, 1700000000), bare};
    for (const ChainConfig& c : configs) {
        SCOPED_TRACE(c.name);
        Bytes out;
        encode(out, c);
        EXPECT_TRUE(rlp::validate(out));
        auto back = decode_chain_config(out);
        ASSERT_TRUE(back) << back.error().message();
        EXPECT_EQ(*back, c);
    }
}

// Builds a config list from already-encoded fields.
Bytes wrap(const std::vector<std::string_view>& hex_fields) {
    Bytes payload;
    for (std::string_view f : hex_fields) append(payload, test::hex(f));
    Bytes out;
    rlp::encode_header(out, {true, payload.size()});
    append(out, payload);
    return out;
}

constexpr std::string_view kZeroHash = "a00000000000000000000000000000000000000000000000000000000000000000";

TEST(ChainConfig, DecodeRejectsBadEncodings) {
    struct Case {
        std::string name;
        Bytes rlp;
        std::error_code error;
    };
    const std::vector<Case> cases = {
        {"version 2", wrap({"02", "80", "01", kZeroHash, "80", "c0", "c0", "c0", "c0", "c0", "c0"}),
         ChainConfigError::kUnsupportedVersion},
        {"missing prague", wrap({"01", "80", "01", kZeroHash, "80", "c0", "c0", "c0", "c0", "c0"}),
         ChainConfigError::kMissingField},
        {"only a version", wrap({"01"}), ChainConfigError::kMissingField},
        {"extra field", wrap({"01", "80", "01", kZeroHash, "80", "c0", "c0", "c0", "c0", "c0", "c0", "80"}),
         ChainConfigError::kExtraField},
        {"two-item optional", wrap({"01", "80", "01", kZeroHash, "80", "c0", "c0", "c20102", "c0", "c0", "c0"}),
         ChainConfigError::kBadOptional},
        {"descending block forks", wrap({"01", "80", "01", kZeroHash, "80", "c20201", "c0", "c0", "c0", "c0", "c0"}),
         ChainConfigError::kForksNotAscending},
        {"duplicate time forks", wrap({"01", "80", "01", kZeroHash, "80", "c0", "c20505", "c0", "c0", "c0", "c0"}),
         ChainConfigError::kForksNotAscending},
        {"block fork at 0", wrap({"01", "80", "01", kZeroHash, "80", "c180", "c0", "c0", "c0", "c0", "c0"}),
         ChainConfigError::kForksNotAscending},
        {"short genesis hash", wrap({"01", "80", "01", "9f00", "80", "c0", "c0", "c0", "c0", "c0", "c0"}),
         rlp::DecodeError::kInputTooShort},
        {"20-byte genesis hash",
         wrap({"01", "80", "01", "940000000000000000000000000000000000000000", "80", "c0", "c0", "c0", "c0", "c0",
               "c0"}),
         rlp::DecodeError::kUnexpectedLength},
        {"list as name", wrap({"01", "c0", "01", kZeroHash, "80", "c0", "c0", "c0", "c0", "c0", "c0"}),
         rlp::DecodeError::kUnexpectedList},
        {"not a list", test::hex("8401020304"), rlp::DecodeError::kUnexpectedString},
        {"empty", {}, rlp::DecodeError::kInputTooShort},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        auto r = decode_chain_config(c.rlp);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error(), c.error) << r.error().message();
    }

    Bytes trailing;
    encode(trailing, mainnet_config());
    trailing.push_back(0x80);
    auto r = decode_chain_config(trailing);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), make_error_code(rlp::DecodeError::kTrailingBytes));
}

}  // namespace
}  // namespace headerd
