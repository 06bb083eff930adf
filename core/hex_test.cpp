#include "core/hex.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace headerd {
namespace {

TEST(Hex, EncodesLowerCase) {
    const Bytes b = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
    EXPECT_EQ(to_hex(b), "00017f80abff");
    EXPECT_EQ(to_hex0x(b), "0x00017f80abff");
    EXPECT_EQ(to_hex(ByteView{}), "");
    EXPECT_EQ(to_hex0x(ByteView{}), "0x");
}

TEST(Hex, DecodesWithOrWithoutPrefixAndAnyCase) {
    const Bytes want = {0xde, 0xad, 0xbe, 0xef};
    EXPECT_EQ(from_hex("deadbeef"), want);
    EXPECT_EQ(from_hex("0xdeadbeef"), want);
    EXPECT_EQ(from_hex("0XDEADBEEF"), want);
    EXPECT_EQ(from_hex("DeAdBeEf"), want);
    EXPECT_EQ(from_hex(""), Bytes{});
    EXPECT_EQ(from_hex("0x"), Bytes{});
}

TEST(Hex, RejectsOddLengthAndNonHexDigits) {
    constexpr std::string_view kBad[] = {"0", "0x0", "abc", "0xabc", "zz", "0xg0", "12 4", "0x-1", "x0", "00x0"};
    for (std::string_view s : kBad) EXPECT_FALSE(from_hex(s).has_value()) << s;
}

TEST(Hex, HashFromHexNeedsExactly32Bytes) {
    const std::string_view genesis = "0xd4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3";
    auto h = hash_from_hex(genesis);
    ASSERT_TRUE(h);
    EXPECT_EQ(to_hex0x(*h), genesis);
    EXPECT_TRUE(hash_from_hex(genesis.substr(2)));
    EXPECT_FALSE(hash_from_hex(genesis.substr(0, genesis.size() - 2)));  // 31 bytes
    EXPECT_FALSE(hash_from_hex(std::string(genesis) + "00"));            // 33 bytes
    EXPECT_FALSE(hash_from_hex(""));
}

}  // namespace
}  // namespace headerd
