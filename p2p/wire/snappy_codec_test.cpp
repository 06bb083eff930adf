#include "p2p/wire/snappy_codec.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include "core/hex.hpp"
#include "core/test_hex.hpp"
#include "tests/data_dir.hpp"

namespace headerd::p2p {
namespace {

using test::hex;

Bytes mainnet_headers() {
    std::ifstream in(headerd::testing::data_dir() + "/mainnet-headers-0-8191.rlp", std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// test-vectors.md F2: snappy blocks of the small p2p payloads.
TEST(Snappy, CompressesSmallPayloadsToVectors) {
    Bytes buf;
    for (auto [plain, packed] :
         {std::pair{"c0", "0100c0"}, {"c104", "0204c104"}, {"c180", "0204c180"}, {"c110", "0204c110"}}) {
        auto z = snappy_compress(hex(plain), buf);
        ASSERT_TRUE(z);
        EXPECT_EQ(to_hex(*z), packed);
        Bytes out;
        auto back = snappy_decompress(*z, out);
        ASSERT_TRUE(back);
        EXPECT_EQ(to_hex(*back), plain);
    }
}

TEST(Snappy, RoundTripsRealHeadersAndReusesBuffers) {
    const Bytes headers = mainnet_headers();
    ASSERT_GT(headers.size(), size_t{4} << 20);
    const ByteView two_mib = ByteView{headers}.first(size_t{2} << 20);
    Bytes zbuf;
    Bytes out;
    auto z = snappy_compress(two_mib, zbuf);
    ASSERT_TRUE(z);
    EXPECT_LT(z->size(), two_mib.size());
    EXPECT_EQ(z->data(), zbuf.data());
    EXPECT_EQ(*snappy_uncompressed_length(*z), two_mib.size());
    auto back = snappy_decompress(*z, out);
    ASSERT_TRUE(back);
    ASSERT_EQ(back->size(), two_mib.size());
    EXPECT_TRUE(std::equal(back->begin(), back->end(), two_mib.begin()));

    // A second, smaller message reuses both buffers as they are.
    const uint8_t* zdata = zbuf.data();
    const uint8_t* odata = out.data();
    const size_t zcap = zbuf.capacity();
    const size_t ocap = out.capacity();
    const ByteView small = two_mib.first(1000);
    auto z2 = snappy_compress(small, zbuf);
    ASSERT_TRUE(z2);
    auto back2 = snappy_decompress(*z2, out);
    ASSERT_TRUE(back2);
    EXPECT_TRUE(std::equal(back2->begin(), back2->end(), small.begin(), small.end()));
    EXPECT_EQ(zbuf.data(), zdata);
    EXPECT_EQ(out.data(), odata);
    EXPECT_EQ(zbuf.capacity(), zcap);
    EXPECT_EQ(out.capacity(), ocap);
}

TEST(Snappy, RefusesDeclaredSizeAbove16MiBBeforeInflating) {
    // Varint of 16 MiB + 1 followed by a literal: refused on the header alone, buffer untouched.
    Bytes out;
    auto r = snappy_decompress(hex("8180800800c0"), out);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), SnappyError::kTooLarge);
    EXPECT_EQ(out.capacity(), 0u);
    // A declared 4 GiB (the largest snappy can state) likewise.
    EXPECT_EQ(snappy_decompress(hex("ffffffff0f00"), out).error(), SnappyError::kTooLarge);
    // Exactly 16 MiB passes the size check and then fails on the missing data.
    EXPECT_EQ(snappy_decompress(hex("8080800800c0"), out).error(), SnappyError::kCorrupt);
    // A caller may set a tighter limit (eth messages: 10 MiB).
    EXPECT_EQ(snappy_decompress(hex("0100c0"), out, 0).error(), SnappyError::kTooLarge);
}

TEST(Snappy, GarbageIsCorrupt) {
    Bytes out;
    for (std::string_view bad : {"", "80", "ffffffffffff", "0a00c0", "0104", "01f0", "c104"}) {
        auto r = snappy_decompress(hex(bad), out);
        ASSERT_FALSE(r) << bad;
        EXPECT_EQ(r.error(), SnappyError::kCorrupt) << bad;
    }
    // Valid header, a copy reaching back before the start of the output.
    EXPECT_EQ(snappy_decompress(hex("0a0110"), out).error(), SnappyError::kCorrupt);
    // Compressed real data cut in half.
    const Bytes headers = mainnet_headers();
    Bytes zbuf;
    auto z = snappy_compress(ByteView{headers}.first(100000), zbuf);
    ASSERT_TRUE(z);
    Bytes damaged(z->begin(), z->end());
    damaged.resize(damaged.size() / 2);
    EXPECT_EQ(snappy_decompress(damaged, out).error(), SnappyError::kCorrupt);
}

TEST(Snappy, EmptyPayloadRoundTrips) {
    Bytes zbuf;
    auto z = snappy_compress({}, zbuf);
    ASSERT_TRUE(z);
    EXPECT_EQ(to_hex(*z), "00");
    Bytes out;
    auto back = snappy_decompress(*z, out);
    ASSERT_TRUE(back);
    EXPECT_TRUE(back->empty());
}

TEST(Snappy, RefusesToSendWhatGethCannotRead) {
    Bytes big(kMaxSendSize + 1, 0);
    Bytes zbuf;
    EXPECT_EQ(snappy_compress(big, zbuf).error(), SnappyError::kSendTooLarge);
    big.pop_back();
    EXPECT_TRUE(snappy_compress(big, zbuf));
}

}  // namespace
}  // namespace headerd::p2p
