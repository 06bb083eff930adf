// discv4 wire format: the EIP-8 forward-compatibility packets (go-ethereum
// p2p/discover/v4wire/v4wire_test.go, signed with the EIP-778 example key) decode to exactly the
// packets geth reads from them, every packet type survives encode then decode, and each bad input
// is refused with its own error.

#include "disc/v4wire.hpp"

#include <gtest/gtest.h>

#include <string_view>

#include "core/hex.hpp"
#include "core/keccak.hpp"
#include "core/test_hex.hpp"

namespace headerd::disc::v4 {
namespace {

using boost::asio::ip::make_address;
using ::headerd::test::hex;

constexpr std::string_view kTestKey = "b71c71a67e1177ad4e901695e1b4b9ee17ae16c6668d313eac2f96dbcda3f291";

rlpx::PrivateKey test_key() { return *rlpx::PrivateKey::from_bytes(*from_hex(kTestKey)); }

NodeKey node_key(std::string_view h) {
    NodeKey k;
    const Bytes b = hex(h);
    std::copy(b.begin(), b.end(), k.begin());
    return k;
}

// Ping, version 4, no enr-seq.
constexpr std::string_view kPingBasic =
    "71dbda3a79554728d4f94411e42ee1f8b0d561c10e1e5f5893367948c6a7d70bb87b235fa28a77070271b6c164a2dce8c7e13a5739b53b5e"
    "96f2e5acb0e458a02902f5965d55ecbeb2ebb6cabb8b2b232896a36b737666c55265ad0a68412f250001ea04cb847f000001820cfa8215a8"
    "d790000000000000000000000000000000018208ae820d058443b9a355";
// Ping with enr-seq 1 and one extra element.
constexpr std::string_view kPingExtra =
    "e9614ccfd9fc3e74360018522d30e1419a143407ffcce748de3e22116b7e8dc92ff74788c0b6663aaa3d67d641936511c8f8d6ad8698b820"
    "a7cf9e1be7155e9a241f556658c55428ec0563514365799a4be2be5a685a80971ddcfa80cb422cdd0101ec04cb847f000001820cfa8215a8"
    "d790000000000000000000000000000000018208ae820d058443b9a3550102";
// FindNode with two extra elements.
constexpr std::string_view kFindNodeExtra =
    "c7c44041b9f7c7e41934417ebac9a8e1a4c6298f74553f2fcfdcae6ed6fe53163eb3d2b52e39fe91831b8a927bf4fc222c3902202027e5e9"
    "eb812195f95d20061ef5cd31d502e47ecb61183f74a504fe04c51e73df81f25c4d506b26db4517490103f84eb840ca634cae0d49acb401d8"
    "a4c6b6fe8c55b70d115bf400769cc1400f3258cd31387574077f301b421bc84df7266c44e9e6d569fc56be00812904767bf5ccd1fc7f8443"
    "b9a35582999983999999280dc62cc8255c73471e0a61da0c89acdc0e035e260add7fc0c04ad9ebf3919644c91cb247affc82b69bd2ca235c"
    "71eab8e49737c937a2c396";
// Neighbors of four nodes (IPv4 and IPv6) with three extra elements.
constexpr std::string_view kNeighborsExtra =
    "c679fc8fe0b8b12f06577f2e802d34f6fa257e6137a995f6f4cbfc9ee50ed3710faf6e66f932c4c8d81d64343f429651328758b47d3dbc02"
    "c4042f0fff6946a50f4a49037a72bb550f3a7872363a83e1b9ee6469856c24eb4ef80b7535bcf99c0004f9015bf90150f84d846321163782"
    "115c82115db8403155e1427f85f10a5c9a7755877748041af1bcd8d474ec065eb33df57a97babf54bfd2103575fa829115d224c523596b40"
    "1065a97f74010610fce76382c0bf32f84984010203040101b840312c55512422cf9b8a4097e9a6ad79402e87a15ae909a4bfefa22398f03d"
    "20951933beea1e4dfa6f968212385e829f04c2d314fc2d4e255e0d3bc08792b069dbf8599020010db83c4d001500000000abcdef12820d05"
    "820d05b84038643200b172dcfef857492156971f0e6aa2c538d8b74010f8e140811d53b98c765dd2d96126051913f44582e8c199ad7c6d68"
    "19e9a56483f637feaac9448aacf8599020010db885a308d313198a2e037073488203e78203e8b8408dcab8618c3253b558d459da53bd8fa6"
    "8935a719aff8b811197101a4b2b47dd2d47295286fc00cc081bb542d760717d1bdd6bec2c37cd72eca367d6dd3b9df738443b9a355010203"
    "b525a138aa34383fec3d2719a0";

constexpr uint64_t kVectorExpiration = 1136239445;

Decoded decode_ok(std::string_view h) {
    auto d = decode(hex(h));
    EXPECT_TRUE(d) << d.error().message();
    EXPECT_EQ(d->sender, test_key().public_key());
    return *d;
}

TEST(V4Wire, Eip8PingDecodes) {
    const Ping want{
        4, {make_address("127.0.0.1"), 3322, 5544}, {make_address("::1"), 2222, 3333}, kVectorExpiration, {}};
    const auto d = decode_ok(kPingBasic);
    EXPECT_EQ(std::get<Ping>(d.packet), want);
    EXPECT_EQ(d.hash, keccak256(ByteView{hex(kPingBasic)}.subspan(32)));

    Ping extra = want;
    extra.enr_seq = 1;
    EXPECT_EQ(std::get<Ping>(decode_ok(kPingExtra).packet), extra);
}

TEST(V4Wire, Eip8FindNodeIgnoresExtraElements) {
    const auto d = decode_ok(kFindNodeExtra);
    const FindNode want{
        node_key("ca634cae0d49acb401d8a4c6b6fe8c55b70d115bf400769cc1400f3258cd31387574077f301b421bc84df7"
                 "266c44e9e6d569fc56be00812904767bf5ccd1fc7f"),
        kVectorExpiration};
    EXPECT_EQ(std::get<FindNode>(d.packet), want);
}

TEST(V4Wire, Eip8NeighborsDecodes) {
    const auto d = decode_ok(kNeighborsExtra);
    const auto& n = std::get<Neighbors>(d.packet);
    ASSERT_EQ(n.nodes.size(), 4u);
    EXPECT_EQ(n.expiration, kVectorExpiration);
    EXPECT_EQ(n.nodes[0].endpoint, (Endpoint{make_address("99.33.22.55"), 4444, 4445}));
    EXPECT_EQ(n.nodes[0].key,
              node_key("3155e1427f85f10a5c9a7755877748041af1bcd8d474ec065eb33df57a97babf54bfd2103575fa82"
                       "9115d224c523596b401065a97f74010610fce76382c0bf32"));
    EXPECT_EQ(n.nodes[1].endpoint, (Endpoint{make_address("1.2.3.4"), 1, 1}));
    EXPECT_EQ(n.nodes[2].endpoint, (Endpoint{make_address("2001:db8:3c4d:15::abcd:ef12"), 3333, 3333}));
    EXPECT_EQ(n.nodes[3].endpoint, (Endpoint{make_address("2001:db8:85a3:8d3:1319:8a2e:370:7348"), 999, 1000}));
    EXPECT_EQ(n.nodes[3].key,
              node_key("8dcab8618c3253b558d459da53bd8fa68935a719aff8b811197101a4b2b47dd2d47295286fc00cc0"
                       "81bb542d760717d1bdd6bec2c37cd72eca367d6dd3b9df73"));
}

// geth's packet without extra elements is made again byte for byte after the signature (the
// vector's signature was not made with RFC 6979's deterministic nonce, ours is).
TEST(V4Wire, EncodesGethPingByteForByte) {
    const Ping p{4, {make_address("127.0.0.1"), 3322, 5544}, {make_address("::1"), 2222, 3333}, kVectorExpiration, {}};
    auto e = encode(test_key(), p);
    ASSERT_TRUE(e);
    const Bytes want = hex(kPingBasic);
    EXPECT_EQ(Bytes(e->datagram.begin() + kHeaderSize, e->datagram.end()),
              Bytes(want.begin() + kHeaderSize, want.end()));
}

template <class T>
T round_trip(const Packet& p) {
    auto e = encode(test_key(), p);
    EXPECT_TRUE(e);
    EXPECT_LE(e->datagram.size(), kMaxPacketSize);
    auto d = decode(e->datagram);
    EXPECT_TRUE(d) << d.error().message();
    EXPECT_EQ(d->hash, e->hash);
    EXPECT_EQ(d->sender, test_key().public_key());
    return std::get<T>(d->packet);
}

TEST(V4Wire, EveryTypeRoundTrips) {
    const Endpoint a{make_address("127.0.0.1"), 30303, 30304};
    const Ping ping{4, a, {make_address("127.0.0.2"), 40000, 0}, 1800000000, 7};
    EXPECT_EQ(round_trip<Ping>(ping), ping);
    const Pong pong{a, keccak256(as_bytes("ping")), 1800000000, 9};
    EXPECT_EQ(round_trip<Pong>(pong), pong);
    const Pong pong_no_seq{a, keccak256(as_bytes("ping")), 1800000000, {}};
    EXPECT_EQ(round_trip<Pong>(pong_no_seq), pong_no_seq);
    const FindNode find{test_key().public_key().bytes(), 1800000000};
    EXPECT_EQ(round_trip<FindNode>(find), find);
    EXPECT_EQ(round_trip<EnrRequest>(EnrRequest{1800000000}).expiration, 1800000000u);

    auto record = EnrBuilder(3).ip({127, 0, 0, 1}).udp(30303).tcp(30303).sign(test_key());
    ASSERT_TRUE(record);
    EnrResponse response{keccak256(as_bytes("request")), *record};
    const auto got = round_trip<EnrResponse>(response);
    EXPECT_EQ(got.request_hash, response.request_hash);
    ASSERT_TRUE(got.record);
    EXPECT_EQ(Bytes(got.record->encoded().begin(), got.record->encoded().end()),
              Bytes(record->encoded().begin(), record->encoded().end()));
}

// Twelve IPv6 nodes with the largest ports: the worst case geth sizes kMaxNeighbors for.
TEST(V4Wire, FullNeighborsFitsOnePacket) {
    Neighbors n;
    n.expiration = 0xffffffffffffffff;
    for (size_t i = 0; i < kMaxNeighbors; ++i) {
        n.nodes.push_back({{make_address("2001:db8:85a3:8d3:1319:8a2e:370:7348"), 65535, 65535}, NodeKey{}});
        n.nodes.back().key.fill(static_cast<uint8_t>(0xff - i));
    }
    auto e = encode(test_key(), n);
    ASSERT_TRUE(e);
    EXPECT_LE(e->datagram.size(), kMaxPacketSize);
    EXPECT_EQ(round_trip<Neighbors>(n), n);
}

std::error_code decode_error(const Bytes& b) {
    auto d = decode(b);
    EXPECT_FALSE(d);
    return d ? std::error_code{} : d.error();
}

TEST(V4Wire, RefusesBadPackets) {
    const Bytes good = hex(kPingBasic);
    EXPECT_EQ(decode_error(Bytes(good.begin(), good.begin() + kHeaderSize)), WireError::kTooSmall);
    EXPECT_EQ(decode_error(Bytes{}), WireError::kTooSmall);

    Bytes big = good;
    big.resize(kMaxPacketSize + 1);
    EXPECT_EQ(decode_error(big), WireError::kTooBig);

    Bytes flipped = good;
    flipped.back() ^= 1;  // the hash no longer matches
    EXPECT_EQ(decode_error(flipped), WireError::kBadHash);

    // A signature no key recovers from (r = 0), with its hash made right.
    Bytes unsigned_packet = good;
    std::fill(unsigned_packet.begin() + 32, unsigned_packet.begin() + kHeaderSize, 0);
    const Hash32 h = keccak256(ByteView{unsigned_packet}.subspan(32));
    std::copy(h.begin(), h.end(), unsigned_packet.begin());
    EXPECT_EQ(decode_error(unsigned_packet), WireError::kBadSignature);
}

// Packets of a type discv4 does not define, or whose data is not the expected RLP, are signed
// correctly here so that only the part under test is wrong.
Bytes signed_raw(uint8_t type, const Bytes& data) {
    Bytes d(kHeaderSize + 1 + data.size());
    d[kHeaderSize] = type;
    std::copy(data.begin(), data.end(), d.begin() + kHeaderSize + 1);
    auto sig = rlpx::sign_recoverable(test_key(), keccak256(ByteView{d}.subspan(kHeaderSize)));
    std::copy(sig->begin(), sig->end(), d.begin() + 32);
    const Hash32 h = keccak256(ByteView{d}.subspan(32));
    std::copy(h.begin(), h.end(), d.begin());
    return d;
}

TEST(V4Wire, RefusesUnknownTypeAndMalformedData) {
    EXPECT_EQ(decode_error(signed_raw(7, hex("c0"))), WireError::kUnknownType);
    EXPECT_EQ(decode_error(signed_raw(0, hex("c0"))), WireError::kUnknownType);
    EXPECT_EQ(decode_error(signed_raw(1, hex("80"))), WireError::kMalformed);        // a string, not a list
    EXPECT_EQ(decode_error(signed_raw(1, hex("c0"))), WireError::kMalformed);        // an empty Ping
    EXPECT_EQ(decode_error(signed_raw(3, hex("c3820102"))), WireError::kMalformed);  // short target
    // A port above 65535 in an otherwise good Pong.
    EXPECT_EQ(decode_error(signed_raw(2, hex("e6 c9 847f000001 83010000 80 a0" + std::string(64, '0') + "01"))),
              WireError::kMalformed);
    // ENRResponse whose record is not a valid ENR.
    EXPECT_EQ(decode_error(signed_raw(6, hex("e2 a0" + std::string(64, '0') + "c0"))), WireError::kBadRecord);
}

TEST(V4Wire, OddIpLengthReadsAsUnspecified) {
    // Neighbors with one node whose ip is 3 bytes: the packet is kept, the address is unusable.
    const std::string key(128, 'a');
    auto d = decode(signed_raw(4, hex("f851 f84e f84c 83010203 8204d2 8204d2 b840" + key + " 01")));
    ASSERT_TRUE(d) << d.error().message();
    const auto& n = std::get<Neighbors>(d->packet);
    ASSERT_EQ(n.nodes.size(), 1u);
    EXPECT_TRUE(n.nodes[0].endpoint.ip.is_unspecified());
}

}  // namespace
}  // namespace headerd::disc::v4
