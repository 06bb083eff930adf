#include "p2p/wire/message_codec.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string_view>

#include "core/hex.hpp"
#include "core/rlp.hpp"
#include "core/test_hex.hpp"
#include "p2p/eth/messages.hpp"
#include "p2p/wire/base_protocol.hpp"
#include "tests/data_dir.hpp"

namespace headerd::p2p {
namespace {

using test::hex;

std::string frame(uint64_t id, std::string_view payload, bool compress) {
    Bytes buf;
    auto f = encode_frame_data(id, hex(payload), compress, buf);
    EXPECT_TRUE(f);
    return f ? to_hex(*f) : "";
}

// test-vectors.md F2, last column: frame data after Hello.
TEST(FrameData, MatchesP2pVectors) {
    EXPECT_EQ(frame(0x02, "c0", true), "020100c0");
    EXPECT_EQ(frame(0x03, "c0", true), "030100c0");
    EXPECT_EQ(frame(0x01, "c104", true), "010204c104");
    EXPECT_EQ(frame(0x01, "c180", true), "010204c180");
    EXPECT_EQ(frame(0x01, "c110", true), "010204c110");
    // Hello: id 0 is 0x80, never compressed.
    EXPECT_EQ(frame(0x00, "c105", false), "80c105");
    // eth GetBlockHeaders at offset 0x10, and an id above 0x7f.
    EXPECT_EQ(frame(0x13, "c4820457c0", false), "13c4820457c0");
    EXPECT_EQ(frame(0x80, "c0", false), "8180c0");
    EXPECT_EQ(frame(0x1234, "", true), "82123400");
}

TEST(FrameData, RoundTripsIntoReusedBuffers) {
    Bytes out;
    Bytes in;
    Bytes payload;
    eth::encode_empty_reply(payload, 1111);
    for (bool compress : {true, false}) {
        for (uint64_t id : {uint64_t{0x10}, uint64_t{0x14}, uint64_t{0x80}, uint64_t{0xffff}}) {
            auto f = encode_frame_data(id, payload, compress, out);
            ASSERT_TRUE(f);
            auto m = decode_frame_data(*f, compress, in);
            ASSERT_TRUE(m) << m.error().message();
            EXPECT_EQ(m->id, id);
            EXPECT_EQ(to_hex(m->payload), "c4820457c0");
        }
    }
}

TEST(FrameData, DisconnectPayloadComesBackRawForTheLenientDecoder) {
    Bytes buf;
    const std::pair<std::string_view, DisconnectReason> kCases[] = {{"010204c104", DisconnectReason::kTooManyPeers},
                                                                    {"01c104", DisconnectReason::kTooManyPeers},
                                                                    {"0104", DisconnectReason::kTooManyPeers},
                                                                    {"01", DisconnectReason::kRequested}};
    for (auto [f, reason] : kCases) {
        const Bytes data = hex(f);
        auto m = decode_frame_data(data, true, buf);
        ASSERT_TRUE(m) << f;
        EXPECT_EQ(m->id, 1u);
        EXPECT_EQ(to_hex(m->payload), f.substr(2));
        EXPECT_EQ(*decode_disconnect(m->payload), reason) << f;
    }
}

TEST(FrameData, BadIdsBombsAndGarbageAreErrors) {
    Bytes buf;
    EXPECT_EQ(decode_frame_data({}, true, buf).error(), rlp::DecodeError::kInputTooShort);
    EXPECT_EQ(decode_frame_data(hex("000100c0"), true, buf).error(), rlp::DecodeError::kLeadingZeroInInteger);
    EXPECT_EQ(decode_frame_data(hex("c00100c0"), true, buf).error(), rlp::DecodeError::kUnexpectedList);
    // Declared 16 MiB + 1 (test-vectors.md F2): refused before inflating.
    EXPECT_EQ(decode_frame_data(hex("138180800800c0"), true, buf).error(), SnappyError::kTooLarge);
    EXPECT_EQ(buf.capacity(), 0u);
    EXPECT_EQ(decode_frame_data(hex("13ffff"), true, buf).error(), SnappyError::kCorrupt);
    // eth's own 10 MiB limit, compressed and not.
    EXPECT_EQ(decode_frame_data(hex("138180800500"), true, buf, eth::kMaxMessageSize).error(), SnappyError::kTooLarge);
    EXPECT_EQ(decode_frame_data(hex("13c0"), false, buf, 0).error(), SnappyError::kTooLarge);
}

// A body compressed once and sent behind prefixes of every literal tag size decodes to prefix ‖
// body: real header bytes (mainnet blocks 0..8191), bodies from empty to past snappy's 64 KiB
// fragments, and on the wire within 0.5 % of the whole payload compressed at once (plus the
// prefix's literal).
TEST(FrameData, SplicedBodyDecodesBehindAnyPrefix) {
    std::ifstream in(testing::data_dir() + "/mainnet-headers-0-8191.rlp", std::ios::binary);
    const Bytes chain((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GT(chain.size(), size_t{1} << 20);
    Bytes body_buf;
    Bytes spliced_buf;
    Bytes whole_buf;
    Bytes decoded;
    for (size_t body_length : {size_t{0}, size_t{1}, size_t{540}, size_t{103'680}, size_t{1} << 20}) {
        const ByteView body(chain.data() + 1000, body_length);
        auto compressed = compress_body(body, body_buf);
        ASSERT_TRUE(compressed);
        EXPECT_EQ(compressed->length, body_length);
        for (size_t prefix_length : {0, 1, 7, 60, 61, 256, 257, 70'000}) {
            SCOPED_TRACE(::testing::Message() << "body " << body_length << ", prefix " << prefix_length);
            const ByteView prefix(chain.data() + 3'000'000, prefix_length);
            auto f = encode_spliced_frame_data(0x14, prefix, *compressed, spliced_buf);
            ASSERT_TRUE(f);
            auto m = decode_frame_data(*f, true, decoded);
            ASSERT_TRUE(m) << m.error().message();
            EXPECT_EQ(m->id, 0x14u);
            Bytes expect(prefix.begin(), prefix.end());
            expect.insert(expect.end(), body.begin(), body.end());
            ASSERT_TRUE(std::ranges::equal(m->payload, expect));
            auto whole = encode_frame_data(0x14, expect, true, whole_buf);
            ASSERT_TRUE(whole);
            // Snappy compresses in fragments of 64 KiB, which the prefix shifts: a few matches differ.
            EXPECT_LE(f->size(), whole->size() + whole->size() / 200 + prefix_length + 8);
        }
    }
    // The payload's limit holds for the sum.
    Bytes big(kMaxSendSize, 0);
    auto compressed = compress_body(big, body_buf);
    ASSERT_TRUE(compressed);
    const uint8_t one = 0xc0;
    auto over = encode_spliced_frame_data(0x14, ByteView(&one, 1), *compressed, spliced_buf);
    ASSERT_FALSE(over);
    EXPECT_EQ(over.error(), SnappyError::kSendTooLarge);
}

}  // namespace
}  // namespace headerd::p2p
