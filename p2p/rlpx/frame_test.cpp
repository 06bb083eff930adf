#include "p2p/rlpx/frame.hpp"

#include <gtest/gtest.h>
#include <openssl/crypto.h>

#include "core/keccak.hpp"
#include "p2p/rlpx/test_util.hpp"
#include "p2p/rlpx/test_vectors.hpp"

namespace headerd::rlpx {
namespace {

using test::hash;
using test::hex;
using test::to_hex;

// go-ethereum's fake MAC hash for TestFrameReadWrite: absorbs nothing, always sums to 0x01...
class FakeHash final : public MacHash {
  public:
    void update(ByteView) noexcept override {}
    Hash32 digest() const noexcept override {
        Hash32 h;
        h.fill(0x01);
        return h;
    }
};

// Plain keccak whose state the test can also feed directly.
class TestKeccak final : public MacHash {
  public:
    void update(ByteView data) noexcept override { state.update(data); }
    Hash32 digest() const noexcept override { return state.digest(); }
    Keccak256 state;
};

FrameCodec fake_mac_codec(size_t max_frame_size = FrameCodec::kDefaultMaxFrameSize) {
    const Hash32 secret = keccak256({});
    return FrameCodec(secret, secret, std::make_unique<FakeHash>(), std::make_unique<FakeHash>(), max_frame_size);
}

// Reads one frame from the front of `wire`, advancing it.
Result<Bytes> read_one(FrameCodec& codec, ByteView& wire) {
    auto size = codec.read_header(wire.first(kFrameHeaderSize));
    if (!size) return size.error();
    wire = wire.subspan(kFrameHeaderSize);
    const size_t body = FrameCodec::body_size(*size);
    Bytes buf;
    auto data = codec.read_body(wire.first(body), buf);
    if (!data) return data.error();
    wire = wire.subspan(body);
    return Bytes(data->begin(), data->end());
}

// C1: go-ethereum TestFrameReadWrite.
TEST(Frame, GethFrameReadWrite) {
    const char* expected =
        "00828ddae471818bb0bfa6b551d1cb42"
        "01010101010101010101010101010101"
        "ba628a4ba590cb43f7848f41c4382885"
        "01010101010101010101010101010101";
    FrameCodec writer = fake_mac_codec();
    Bytes out;
    ASSERT_TRUE(writer.write_frame(hex("08c401020304"), out));
    EXPECT_EQ(to_hex(out), expected);

    FrameCodec reader = fake_mac_codec();
    ByteView wire{out};
    auto data = read_one(reader, wire);
    ASSERT_TRUE(data) << data.error().message();
    EXPECT_EQ(to_hex(*data), "08c401020304");
    EXPECT_TRUE(wire.empty());
}

// Header bytes 3..15 (header-data, padding) are not interpreted. With the fake MAC the tampered
// header still authenticates, so only the size field matters.
TEST(Frame, HeaderDataIsIgnored) {
    FrameCodec writer = fake_mac_codec();
    Bytes out;
    ASSERT_TRUE(writer.write_frame(hex("08c401020304"), out));
    for (size_t i = 3; i < 16; ++i) out[i] ^= 0x5a;
    FrameCodec reader = fake_mac_codec();
    ByteView wire{out};
    auto data = read_one(reader, wire);
    ASSERT_TRUE(data) << data.error().message();
    EXPECT_EQ(to_hex(*data), "08c401020304");
}

struct C2Codecs {
    FrameCodec a;  // initiator
    FrameCodec b;  // recipient
};

C2Codecs c2_codecs() {
    const Hash32 shared = hash(vectors::kEphemeralShared);
    const Hash32 nonce_a = hash(vectors::kNonceA);
    const Hash32 nonce_b = hash(vectors::kNonceB);
    const Bytes auth = hex(vectors::kAuth2);
    const Bytes ack = hex(vectors::kAck2);
    return C2Codecs{
        FrameCodec(
            derive_secrets(Role::kInitiator, shared, nonce_a, nonce_b, auth, ack, test::public_key(vectors::kPubB))),
        FrameCodec(
            derive_secrets(Role::kRecipient, shared, nonce_a, nonce_b, auth, ack, test::public_key(vectors::kPubA))),
    };
}

// C2: frames under the (Auth2, Ack2) secrets, both written and read.
TEST(Frame, Eip8SecretsFrames) {
    Bytes hello{0x80};
    append(hello, hex(vectors::kC2Hello));
    struct Step {
        bool from_a;
        Bytes frame_data;
        const char* wire;
    };
    const Step steps[] = {
        {true, hello, vectors::kC2FrameAtoB1},
        {true, hex("020100c0"), vectors::kC2FrameAtoB2},
        {false, hex("030100c0"), vectors::kC2FrameBtoA1},
    };
    C2Codecs writers = c2_codecs();
    C2Codecs readers = c2_codecs();
    for (const auto& s : steps) {
        Bytes out;
        ASSERT_TRUE((s.from_a ? writers.a : writers.b).write_frame(s.frame_data, out));
        EXPECT_EQ(to_hex(out), s.wire);

        const Bytes wire_bytes = hex(s.wire);
        ByteView wire{wire_bytes};
        auto data = read_one(s.from_a ? readers.b : readers.a, wire);
        ASSERT_TRUE(data) << data.error().message();
        EXPECT_EQ(*data, s.frame_data);
        EXPECT_TRUE(wire.empty());
    }
}

// D: ethereumjs rlpx-mac.spec.ts, fresh (unseeded) sponge. The header rows use a 16-zero-byte
// header (see the spec note); the ASCII rows are the self-derived alternatives.
TEST(Frame, MacPrimitiveVectors) {
    const Hash32 secret = hash("4caf4671e713d083128973de159d02688dc86f51535a80178264631e193ed2ea");
    const ByteView body = as_bytes("this is a body data struct");
    const std::array<uint8_t, 16> zero_header{};
    std::array<uint8_t, 16> ascii_header;
    std::copy_n(as_bytes("this is a header data struct").begin(), 16, ascii_header.begin());

    auto fresh = [&](TestKeccak*& raw) {
        auto hash_state = std::make_unique<TestKeccak>();
        raw = hash_state.get();
        return FrameMac(secret, std::move(hash_state));
    };
    TestKeccak* raw = nullptr;
    {
        FrameMac mac = fresh(raw);
        EXPECT_EQ(to_hex(mac.digest16()), "c5d2460186f7233c927e7db2dcc703c0");
        raw->update(as_bytes("test"));
        EXPECT_EQ(to_hex(mac.digest16()), "9c22ff5f21f0b81b113e63f7db6da94f");
    }
    {
        FrameMac mac = fresh(raw);
        EXPECT_EQ(to_hex(mac.update_body(body).value()), "134a755450b1ed9d3ff90ef5dcecdd7d");
    }
    {
        FrameMac mac = fresh(raw);
        EXPECT_EQ(to_hex(mac.update_header(zero_header).value()), "52235ed491a4c9224d94788762ead6a6");
        EXPECT_EQ(to_hex(mac.update_body(body).value()), "5d98967578ec8edbb45e1d75992f394c");
        EXPECT_EQ(to_hex(mac.digest16()), "5d98967578ec8edbb45e1d75992f394c");
    }
    {
        FrameMac mac = fresh(raw);
        EXPECT_EQ(to_hex(mac.update_header(ascii_header).value()), "9a314c3e48b999994ba7dbccb4256262");
        EXPECT_EQ(to_hex(mac.update_body(body).value()), "a93307b003abc1f2f5279c7daac74590");
    }
}

// Many frames back to back in one buffer, read with the in-place overload.
TEST(Frame, StreamOfFramesInPlace) {
    C2Codecs c = c2_codecs();
    Bytes wire;
    std::vector<Bytes> sent;
    for (size_t i = 0; i < 300; ++i) {
        Bytes data((i * 977) % 70001);
        for (size_t j = 0; j < data.size(); ++j) data[j] = static_cast<uint8_t>(j ^ i);
        ASSERT_TRUE(c.a.write_frame(data, wire));
        sent.push_back(std::move(data));
    }
    std::span<uint8_t> rest{wire};
    for (const Bytes& expected : sent) {
        auto size = c.b.read_header(rest.first(kFrameHeaderSize));
        ASSERT_TRUE(size) << size.error().message();
        ASSERT_EQ(*size, expected.size());
        rest = rest.subspan(kFrameHeaderSize);
        const size_t body = FrameCodec::body_size(*size);
        auto data = c.b.read_body(rest.first(body));
        ASSERT_TRUE(data) << data.error().message();
        ASSERT_TRUE(std::equal(data->begin(), data->end(), expected.begin(), expected.end()));
        rest = rest.subspan(body);
    }
    EXPECT_TRUE(rest.empty());
}

TEST(Frame, Sizes) {
    EXPECT_EQ(FrameCodec::body_size(0), 16u);
    EXPECT_EQ(FrameCodec::body_size(1), 32u);
    EXPECT_EQ(FrameCodec::body_size(16), 32u);
    EXPECT_EQ(FrameCodec::body_size(17), 48u);
    EXPECT_EQ(FrameCodec::wire_size(79), 128u);
    EXPECT_EQ(FrameCodec::wire_size(kMaxFrameSizeField), 32u + 0x1000000 + 16);
}

// ---- bad input -----------------------------------------------------------------------------------

struct Tamper {
    const char* what;
    size_t offset;  // byte flipped in the second frame on the wire
    Errc expected;
};

TEST(Frame, TamperedFramesAreRejected) {
    const Tamper cases[] = {
        {"header ciphertext", 0, Errc::kBadHeaderMac},
        {"frame size byte", 2, Errc::kBadHeaderMac},
        {"header mac", 20, Errc::kBadHeaderMac},
        {"body ciphertext", 40, Errc::kBadFrameMac},
        {"body padding", 32 + 100 + 5, Errc::kBadFrameMac},
        {"frame mac", 32 + 112 + 15, Errc::kBadFrameMac},
    };
    for (const auto& t : cases) {
        C2Codecs c = c2_codecs();
        Bytes first;
        Bytes second;
        ASSERT_TRUE(c.a.write_frame(Bytes(10, 1), first));
        ASSERT_TRUE(c.a.write_frame(Bytes(100, 2), second));
        ASSERT_EQ(second.size(), 32u + 112 + 16);
        second[t.offset] ^= 0x01;

        ByteView wire{first};
        ASSERT_TRUE(read_one(c.b, wire));
        wire = second;
        auto r = read_one(c.b, wire);
        ASSERT_FALSE(r) << t.what;
        EXPECT_EQ(r.error(), t.expected) << t.what << ": " << r.error().message();
        // The ingress state is now out of step: every further read fails.
        Bytes third;
        ASSERT_TRUE(c.a.write_frame(Bytes(5, 3), third));
        wire = third;
        auto after = read_one(c.b, wire);
        ASSERT_FALSE(after);
        EXPECT_EQ(after.error(), Errc::kFrameWrongState) << t.what;
    }
}

TEST(Frame, RandomHeadersAreRejected) {
    for (int i = 0; i < 300; ++i) {
        C2Codecs c = c2_codecs();
        Bytes header(kFrameHeaderSize);
        ASSERT_TRUE(random_bytes(header));
        auto r = c.b.read_header(header);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error(), Errc::kBadHeaderMac);
    }
}

TEST(Frame, FrameAboveLimitIsRejectedBeforeTheBody) {
    const Hash32 secret = keccak256(as_bytes("limit"));
    auto codec = [&](size_t max) {
        return FrameCodec(secret, secret, std::make_unique<TestKeccak>(), std::make_unique<TestKeccak>(), max);
    };
    FrameCodec writer = codec(FrameCodec::kDefaultMaxFrameSize);
    FrameCodec reader = codec(1024);
    EXPECT_EQ(reader.max_frame_size(), 1024u);
    Bytes wire;
    ASSERT_TRUE(writer.write_frame(Bytes(1024, 7), wire));
    ASSERT_TRUE(writer.write_frame(Bytes(1025, 7), wire));
    ByteView in{wire};
    ASSERT_TRUE(read_one(reader, in));
    auto r = reader.read_header(in.first(kFrameHeaderSize));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), Errc::kFrameTooLarge);
}

TEST(Frame, WriteAboveFieldMaximumIsRefused) {
    C2Codecs c = c2_codecs();
    const Bytes big(kMaxFrameSizeField + 1);
    Bytes out{1, 2, 3};
    auto r = c.a.write_frame(big, out);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), Errc::kFrameTooLarge);
    EXPECT_EQ(out, (Bytes{1, 2, 3}));
    // The codec state did not move: the next frame still reads on the other side.
    ASSERT_TRUE(c.a.write_frame(Bytes(3, 9), out));
    ByteView wire = ByteView{out}.subspan(3);
    auto data = read_one(c.b, wire);
    ASSERT_TRUE(data);
    EXPECT_EQ(*data, Bytes(3, 9));
}

TEST(Frame, ReadCallsOutOfOrder) {
    C2Codecs c = c2_codecs();
    Bytes buf;
    Bytes wire;
    ASSERT_TRUE(c.a.write_frame(Bytes(20, 1), wire));
    // Body before header.
    {
        C2Codecs fresh = c2_codecs();
        auto r = fresh.b.read_body(ByteView{wire}.subspan(kFrameHeaderSize), buf);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error(), Errc::kFrameWrongState);
    }
    // Header of the wrong length.
    {
        C2Codecs fresh = c2_codecs();
        auto r = fresh.b.read_header(ByteView{wire}.first(31));
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error(), Errc::kFrameWrongState);
    }
    // Body of the wrong length.
    auto size = c.b.read_header(ByteView{wire}.first(kFrameHeaderSize));
    ASSERT_TRUE(size);
    auto r = c.b.read_body(ByteView{wire}.subspan(kFrameHeaderSize, FrameCodec::body_size(*size) - 1), buf);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), Errc::kFrameWrongState);
}

// Steady state: once the output and read buffers have grown, framing allocates nothing.
TEST(Frame, SteadyStateAllocatesNothing) {
    C2Codecs c = c2_codecs();
    Bytes payload(65536, 0x42);
    Bytes wire;
    Bytes buf;
    auto round_trip = [&](size_t size) {
        wire.clear();
        if (!c.a.write_frame(ByteView{payload}.first(size), wire)) return false;
        auto got = c.b.read_header(ByteView{wire}.first(kFrameHeaderSize));
        if (!got) return false;
        auto data = c.b.read_body(ByteView{wire}.subspan(kFrameHeaderSize), buf);
        return data && data->size() == size;
    };
    ASSERT_TRUE(round_trip(payload.size()));  // grow the buffers once
    const size_t before = test::allocation_count();
    for (size_t i = 0; i < 2000; ++i) ASSERT_TRUE(round_trip((i * 7919) % payload.size()));
    EXPECT_EQ(test::allocation_count() - before, 0u);

    // The counter does see both kinds of allocation, so the zero above means something.
    const size_t mark = test::allocation_count();
    auto fresh = std::make_unique<Bytes>(16);
    EXPECT_GT(test::allocation_count(), mark);
    ASSERT_TRUE(test::openssl_allocations_counted());
    const size_t mark2 = test::allocation_count();
    void* p = OPENSSL_malloc(16);
    EXPECT_GT(test::allocation_count(), mark2);
    OPENSSL_free(p);
}

}  // namespace
}  // namespace headerd::rlpx
