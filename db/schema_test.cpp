#include "db/schema.hpp"

#include <gtest/gtest.h>

#include "core/hex.hpp"

namespace headerd::db {
namespace {

// Mainnet block 1: the keys must be byte-identical to go-ethereum's (docs/db_schema.md).
const Hash32 kHash1 = *hash_from_hex("88e96d4537bea4d9c05d12549907b32561d3bf31f45aae734cdc119f13406cb6");

TEST(Schema, HeaderKeyIsPrefixNumberHash) {
    EXPECT_EQ(to_hex(schema::header_key(1, kHash1)),
              "68"
              "0000000000000001"
              "88e96d4537bea4d9c05d12549907b32561d3bf31f45aae734cdc119f13406cb6");
}

TEST(Schema, CanonicalKeyIsPrefixNumberN) {
    EXPECT_EQ(to_hex(schema::canonical_key(0x0102030405060708ull)),
              "68"
              "0102030405060708"
              "6e");
}

TEST(Schema, NumberKeyIsPrefixHash) {
    EXPECT_EQ(to_hex(schema::number_key(kHash1)),
              "48"
              "88e96d4537bea4d9c05d12549907b32561d3bf31f45aae734cdc119f13406cb6");
}

TEST(Schema, KeysSortByBlockNumber) {
    // Big-endian numbers make LevelDB's byte order the block order.
    const auto a = schema::canonical_key(255);
    const auto b = schema::canonical_key(256);
    EXPECT_LT(std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end()), 2);
    EXPECT_TRUE(std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end()));
}

}  // namespace
}  // namespace headerd::db
