// discv5.1 wire (disc/v5wire.hpp, disc/v5crypto.hpp): every vector of the spec's test-vector
// document (devp2p discv5/discv5-wire-test-vectors.md: the four packets, byte for byte in both
// directions, and the ECDH, key derivation, ID signature and AES-GCM primitives) and the message
// RLP vectors of its discv5.0 revision (devp2p commit 06c9e15e; PING, PONG and NODES are unchanged
// in 5.1); a full handshake between two codecs; and each bad input refused with its own error.

#include "disc/v5wire.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/hex.hpp"
#include "core/rlp.hpp"
#include "core/test_hex.hpp"

namespace headerd::disc::v5 {
namespace {

using headerd::test::hex;

// ---- the spec's inputs ------------------------------------------------------------------------------

constexpr std::string_view kKeyA = "eef77acb6c6a6eebc5b363a475ac583ec7eccdb42b6481424c60f59aa326547f";
constexpr std::string_view kKeyB = "66fb62bfbd66b9177a138c1e5cddbe4f7c30c343e94e68df8769459cb1cde628";
constexpr std::string_view kIdA = "aaaa8419e9f49d0083561b48287df592939a8d19947d8c0ef88f2a4856a69fbb";
constexpr std::string_view kIdB = "bbbb9d047f0488c0b5a93c1c3f2d8bafc7c8ff337024a55434a0d0555de64db9";
constexpr std::string_view kEphemeralKey = "0288ef00023598499cb6c940146d050d2b1fb914198c327f76aad590bead68b6";
constexpr std::string_view kEphemeralPubkey = "039a003ba6517b473fa0cd74aefe99dadfdb34627f90fec6362df85803908f53a5";
constexpr std::string_view kRequestNonce = "0102030405060708090a0b0c";
constexpr std::string_view kIdNonce = "0102030405060708090a0b0c0d0e0f10";
constexpr std::string_view kChallengeSeq0 =
    "000000000000000000000000000000006469736376350001010102030405060708090a0b0c00180102030405060708090a0b0c0d0e0f10"
    "0000000000000000";
constexpr std::string_view kChallengeSeq1 =
    "000000000000000000000000000000006469736376350001010102030405060708090a0b0c00180102030405060708090a0b0c0d0e0f10"
    "0000000000000001";

// ---- the spec's packets (masking IV zero, nonce all 0xff) ---------------------------------------

constexpr std::string_view kPingPacket = R"(
    00000000000000000000000000000000088b3d4342774649325f313964a39e55
    ea96c005ad52be8c7560413a7008f16c9e6d2f43bbea8814a546b7409ce783d3
    4c4f53245d08dab84102ed931f66d1492acb308fa1c6715b9d139b81acbdcc)";

constexpr std::string_view kWhoareyouPacket = R"(
    00000000000000000000000000000000088b3d434277464933a1ccc59f5967ad
    1d6035f15e528627dde75cd68292f9e6c27d6b66c8100a873fcbaed4e16b8d)";

constexpr std::string_view kHandshakePacket = R"(
    00000000000000000000000000000000088b3d4342774649305f313964a39e55
    ea96c005ad521d8c7560413a7008f16c9e6d2f43bbea8814a546b7409ce783d3
    4c4f53245d08da4bb252012b2cba3f4f374a90a75cff91f142fa9be3e0a5f3ef
    268ccb9065aeecfd67a999e7fdc137e062b2ec4a0eb92947f0d9a74bfbf44dfb
    a776b21301f8b65efd5796706adff216ab862a9186875f9494150c4ae06fa4d1
    f0396c93f215fa4ef524f1eadf5f0f4126b79336671cbcf7a885b1f8bd2a5d83
    9cf8)";

constexpr std::string_view kHandshakeEnrPacket = R"(
    00000000000000000000000000000000088b3d4342774649305f313964a39e55
    ea96c005ad539c8c7560413a7008f16c9e6d2f43bbea8814a546b7409ce783d3
    4c4f53245d08da4bb23698868350aaad22e3ab8dd034f548a1c43cd246be9856
    2fafa0a1fa86d8e7a3b95ae78cc2b988ded6a5b59eb83ad58097252188b902b2
    1481e30e5e285f19735796706adff216ab862a9186875f9494150c4ae06fa4d1
    f0396c93f215fa4ef524e0ed04c3c21e39b1868e1ca8105e585ec17315e755e6
    cfc4dd6cb7fd8e1a1f55e49b4b5eb024221482105346f3c82b15fdaae36a3bb1
    2a494683b4a3c7f2ae41306252fed84785e2bbff3b022812d0882f06978df84a
    80d443972213342d04b9048fc3b1d5fcb1df0f822152eced6da4d3f6df27e70e
    4539717307a0208cd208d65093ccab5aa596a34d7511401987662d8cf62b1394
    71)";

// ---- helpers ----------------------------------------------------------------------------------------

template <size_t N>
std::array<uint8_t, N> arr(std::string_view h) {
    const Bytes b = hex(h);
    std::array<uint8_t, N> out{};
    EXPECT_EQ(b.size(), N);
    std::copy_n(b.begin(), std::min(N, b.size()), out.begin());
    return out;
}

rlpx::PrivateKey key(std::string_view h) { return rlpx::PrivateKey::from_bytes(hex(h)).value(); }

// Each node's record as geth's tests make it: seq 1, ip 127.0.0.1 (and id, secp256k1).
Enr record_of(const rlpx::PrivateKey& k, uint64_t seq = 1) {
    return EnrBuilder(seq).ip({127, 0, 0, 1}).sign(k).value();
}

const Endpoint kAddrA = Endpoint::ipv4({127, 0, 0, 1}, 30301);
const Endpoint kAddrB = Endpoint::ipv4({127, 0, 0, 1}, 30302);

// A clock the test moves.
struct FakeClock {
    std::shared_ptr<std::chrono::steady_clock::time_point> t = std::make_shared<std::chrono::steady_clock::time_point>(
        std::chrono::steady_clock::time_point{} + std::chrono::hours(1));
    void advance(std::chrono::milliseconds d) const { *t += d; }
    std::function<std::chrono::steady_clock::time_point()> fn() const {
        return [t = t] { return *t; };
    }
};

// The randomness of the vectors: masking IV zero, nonce 0xff..., the spec's id-nonce and
// ephemeral key.
CodecOptions vector_options(const FakeClock& clock = {}) {
    CodecOptions o;
    o.hooks.now = clock.fn();
    o.hooks.masking_iv = []() -> Result<MaskingIv> { return MaskingIv{}; };
    o.hooks.nonce = [](uint32_t) -> Result<Nonce> {
        Nonce n;
        n.fill(0xff);
        return n;
    };
    o.hooks.id_nonce = []() -> Result<IdNonce> { return arr<16>(kIdNonce); };
    o.hooks.ephemeral_key = [] { return rlpx::PrivateKey::from_bytes(hex(kEphemeralKey)); };
    return o;
}

CodecOptions clocked(const FakeClock& clock) {
    CodecOptions o;
    o.hooks.now = clock.fn();
    return o;
}

struct Nodes2 {
    rlpx::PrivateKey key_a = key(kKeyA);
    rlpx::PrivateKey key_b = key(kKeyB);
    Enr record_a = record_of(key_a);
    Enr record_b = record_of(key_b);
    Hash32 id_a = key_a.public_key().node_id();
    Hash32 id_b = key_b.public_key().node_id();
};

// Unmasks the header of `packet` (sent to dest_id), lets `edit` change it, masks it again.
Bytes edit_header(Bytes packet, const Hash32& dest_id, size_t header_size, const std::function<void(Bytes&)>& edit) {
    MaskingIv iv;
    std::copy_n(packet.begin(), kMaskingIvSize, iv.begin());
    Bytes head(packet.begin(), packet.begin() + static_cast<std::ptrdiff_t>(header_size));
    EXPECT_TRUE(apply_mask(dest_id, iv, std::span<uint8_t>(head).subspan(kMaskingIvSize)));
    edit(head);
    EXPECT_TRUE(apply_mask(dest_id, iv, std::span<uint8_t>(head).subspan(kMaskingIvSize)));
    std::copy(head.begin(), head.end(), packet.begin());
    return packet;
}

std::error_code error_of(const Result<Decoded>& r) { return r ? std::error_code{} : r.error(); }

// ---- primitives -------------------------------------------------------------------------------------

TEST(V5Crypto, KeyDerivationVector) {
    const auto pub =
        rlpx::PublicKey::from_compressed(hex("0317931e6e0840220642f230037d285d122bc59063221ef3226b1f403ddc69ca91"))
            .value();
    const auto keys = derive_keys(key("fb757dc581730490a1d7a00deea65e9b1936924caaea8f44d476014856b68736"), pub,
                                  arr<32>(kIdA), arr<32>(kIdB), hex(kChallengeSeq0))
                          .value();
    EXPECT_EQ(to_hex(keys.initiator_key), "dccc82d81bd610f4f76d3ebe97a40571");
    EXPECT_EQ(to_hex(keys.recipient_key), "ac74bb8773749920b0d3a8881c173ec5");
}

TEST(V5Crypto, BothSidesDeriveTheSameKeys) {
    const Nodes2 n;
    const auto eph = key(kEphemeralKey);
    const Bytes challenge = hex(kChallengeSeq1);
    const auto initiator = derive_keys(eph, n.key_b.public_key(), n.id_a, n.id_b, challenge).value();
    const auto recipient = derive_keys(n.key_b, eph.public_key(), n.id_a, n.id_b, challenge).value();
    EXPECT_EQ(initiator.initiator_key, recipient.initiator_key);
    EXPECT_EQ(initiator.recipient_key, recipient.recipient_key);
    // The handshake vector's read key (B reads what A writes with the initiator key).
    EXPECT_EQ(to_hex(recipient.initiator_key), "4f9fac6de7567d1e3b1241dffe90f662");
}

TEST(V5Crypto, IdSignatureVector) {
    const auto k = key("fb757dc581730490a1d7a00deea65e9b1936924caaea8f44d476014856b68736");
    const Bytes challenge = hex(kChallengeSeq0);
    const Bytes eph = hex("039961e4c2356d61bedb83052c115d311acb3a96f5777296dcf297351130266231");
    const auto dest = arr<32>(kIdB);
    const auto sig = make_id_signature(k, challenge, eph, dest).value();
    EXPECT_EQ(
        to_hex(sig),
        "94852a1e2318c4e5e9d422c98eaf19d1d90d876b29cd06ca7cb7546d0fff7b484fe86c09a064fe72bdbef73ba8e9c34df0cd2b53e9"
        "d65528c2c7f336d5dfc6e6");
    EXPECT_TRUE(verify_id_signature(sig, k.public_key(), challenge, eph, dest));
    // Bound to every input.
    EXPECT_FALSE(verify_id_signature(sig, k.public_key(), challenge, eph, arr<32>(kIdA)));
    EXPECT_FALSE(verify_id_signature(sig, k.public_key(), hex(kChallengeSeq1), eph, dest));
    EXPECT_FALSE(verify_id_signature(sig, key(kKeyA).public_key(), challenge, eph, dest));
    EXPECT_FALSE(verify_id_signature(ByteView{sig}.first(63), k.public_key(), challenge, eph, dest));
}

TEST(V5Crypto, AesGcmVector) {
    const auto k = arr<16>("9f2d77db7004bf8a1a85107ac686990b");
    const auto nonce = arr<12>("27b5af763c446acd2749fe8e");
    const Bytes ad = hex("93a7400fa0d6a694ebc24d5cf570f65d04215b6ac00757875e3f3a5f42107903");
    const Bytes ct = encrypt_gcm(k, nonce, hex("01c20101"), ad).value();
    EXPECT_EQ(to_hex(ct), "a5d12a2d94b8ccb3ba55558229867dc13bfa3648");
    EXPECT_EQ(to_hex(decrypt_gcm(k, nonce, ct, ad).value()), "01c20101");

    Bytes bad_tag = ct;
    bad_tag.back() ^= 1;
    EXPECT_FALSE(decrypt_gcm(k, nonce, bad_tag, ad));
    EXPECT_FALSE(decrypt_gcm(k, nonce, ct, ByteView{ad}.first(31)));
    EXPECT_FALSE(decrypt_gcm(k, nonce, ByteView{ct}.first(15), ad));
    // The tag alone is the encryption of nothing.
    const Bytes empty = encrypt_gcm(k, nonce, {}, ad).value();
    EXPECT_EQ(empty.size(), kTagSize);
    EXPECT_TRUE(decrypt_gcm(k, nonce, empty, ad).value().empty());
}

TEST(V5Crypto, MaskingIsItsOwnInverse) {
    const auto dest = arr<32>(kIdB);
    const MaskingIv iv{};
    Bytes data = hex("6469736376350001");
    ASSERT_TRUE(apply_mask(dest, iv, data));
    // The first bytes of the ping vector after its IV: "discv5" || version 1, masked for B.
    EXPECT_EQ(to_hex(data), "088b3d4342774649");
    ASSERT_TRUE(apply_mask(dest, iv, data));
    EXPECT_EQ(to_hex(data), "6469736376350001");
}

// ---- messages ---------------------------------------------------------------------------------------

TEST(V5Messages, Vectors) {
    const Message ping = Ping{{1}, 1};
    EXPECT_EQ(to_hex(encode_message(ping)), "01c20101");
    EXPECT_EQ(decode_message(hex("01c20101")).value(), ping);

    const Message pong = Pong{{1}, 1, Endpoint::ipv4({127, 0, 0, 1}, 5000)};
    EXPECT_EQ(to_hex(encode_message(pong)), "02ca0101847f000001821388");
    EXPECT_EQ(decode_message(hex("02ca0101847f000001821388")).value(), pong);

    const Bytes nodes_rlp = hex(
        "04f8f80102b8f4f8f2b877f875b8401ce2991c64993d7c84c29a00bdc871917551c7d330fca2dd0d69c706596dc655448f030b98a77d4"
        "001fd46ae0112ce26d613c5a6a02a81a6223cd0c4edaa53280182696482763489736563703235366b31a103ca634cae0d49acb401d8a4"
        "c6b6fe8c55b70d115bf400769cc1400f3258cd3138b877f875b840d7f1c39e376297f81d7297758c64cb37dcc5c3beea9f57f7ce9695d"
        "7d5a67553417d719539d6ae4b445946de4d99e680eb8063f29485b555d45b7df16a1850130182696482763489736563703235366b31a1"
        "030e2cb74241c0c4fc8e8166f1a79a05d5b0dd95813a74b094529f317d5c39d235");
    // In discv5.0 the record list, and each record in it, was wrapped in an RLP string; 5.1 (and
    // geth) put the lists themselves. Our NODES is the 5.1 form, so the vector's records are read
    // out of their wrapping and encoded again.
    ByteView in = ByteView{nodes_rlp}.subspan(1);
    ByteView body = rlp::decode_list(in).value();
    (void)rlp::decode_string(body).value();
    (void)rlp::decode_uint64(body).value();
    ByteView wrapped = rlp::decode_string(body).value();
    ByteView records = rlp::decode_list(wrapped).value();
    Nodes nodes{{1}, 2, {}};
    while (!records.empty()) {
        const ByteView r = rlp::decode_string(records).value();
        nodes.records.emplace_back(r.begin(), r.end());
    }
    ASSERT_EQ(nodes.records.size(), 2u);
    EXPECT_EQ(
        Enr::decode(nodes.records[0]).value().text(),
        "enr:-HW4QBzimRxkmT18hMKaAL3IcZF1UcfTMPyi3Q1pxwZZbcZVRI8DC5infUAB_UauARLOJtYTxaagKoGmIjzQxO2qUygBgmlkgnY0i"
        "XNlY3AyNTZrMaEDymNMrg1JrLQB2KTGtv6MVbcNEVv0AHacwUAPMljNMTg");
    EXPECT_EQ(
        Enr::decode(nodes.records[1]).value().text(),
        "enr:-HW4QNfxw543Ypf4HXKXdYxkyzfcxcO-6p9X986WldfVpnVTQX1xlTnWrktEWUbeTZnmgOuAY_KUhbVV1Ft98WoYUBMBgmlkgnY0i"
        "XNlY3AyNTZrMaEDDiy3QkHAxPyOgWbxp5oF1bDdlYE6dLCUUp8xfVw50jU");
    const Bytes enc = encode_message(nodes);
    EXPECT_EQ(to_hex(ByteView{enc}.first(7)), "04f8f20102f8ee");
    EXPECT_EQ(decode_message(enc).value(), Message{nodes});
    // The 5.0 form (records in a string) is not a 5.1 NODES.
    EXPECT_EQ(decode_message(nodes_rlp).error(), WireError::kMalformedMessage);
}

TEST(V5Messages, RoundTripEveryType) {
    const Enr record_a = record_of(key(kKeyA));
    const Message messages[] = {
        Ping{{}, 0},
        Ping{{1, 2, 3, 4, 5, 6, 7, 8}, UINT64_MAX},
        Pong{{9}, 7, Endpoint::ipv6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 65535)},
        FindNode{{1, 2}, {256, 255, 0}},
        FindNode{{1}, {}},
        Nodes{{3}, 1, {}},
        Nodes{{3}, 4, {Bytes(record_a.encoded().begin(), record_a.encoded().end())}},
        TalkReq{{4}, {'e', 't', 'h'}, {0, 1, 2}},
        TalkResp{{5}, {}},
    };
    for (const Message& m : messages) {
        const Bytes enc = encode_message(m);
        EXPECT_EQ(enc[0], static_cast<uint8_t>(message_type(m)));
        auto dec = decode_message(enc);
        ASSERT_TRUE(dec) << to_hex(enc);
        EXPECT_EQ(*dec, m);
        EXPECT_EQ(request_id(*dec), request_id(m));
    }
}

TEST(V5Messages, BadMessages) {
    const struct {
        std::string_view what;
        std::string_view message;
        WireError error;
    } cases[] = {
        {"request id of 9 bytes", "01cb8901020304050607080901", WireError::kRequestIdTooLong},
        {"REGTOPIC (7): not ours", "07c20101", WireError::kUnknownMessageType},
        {"type 0", "00c20101", WireError::kUnknownMessageType},
        {"type 255", "ffc20101", WireError::kUnknownMessageType},
        {"an extra field", "01c3010101", WireError::kMalformedMessage},
        {"a missing field", "01c101", WireError::kMalformedMessage},
        {"bytes after the list", "01c2010100", WireError::kMalformedMessage},
        {"not a list", "0101", WireError::kMalformedMessage},
        {"non-canonical integer", "01c401820001", WireError::kMalformedMessage},
        {"PONG with a 5-byte ip", "02cb0101857f00000100821388", WireError::kBadRecipientIp},
        {"PONG port above 65535", "02cb0101847f00000183010000", WireError::kMalformedMessage},
        {"NODES total above 255", "04c501820100c0", WireError::kMalformedMessage},
        {"NODES record not a list", "04c40101c101", WireError::kMalformedMessage},
        {"FINDNODE distances not a list", "03c401820100", WireError::kMalformedMessage},
    };
    for (const auto& c : cases) {
        auto m = decode_message(hex(c.message));
        ASSERT_FALSE(m) << c.what;
        EXPECT_EQ(m.error(), c.error) << c.what;
    }
    EXPECT_EQ(decode_message({}).error(), WireError::kEmptyMessage);
}

TEST(V5Messages, NodesExpectedPacketsIsCapped) {
    EXPECT_EQ((Nodes{{}, 0, {}}.expected_packets()), 1);
    EXPECT_EQ((Nodes{{}, 3, {}}.expected_packets()), 3);
    EXPECT_EQ((Nodes{{}, 5, {}}.expected_packets()), 5);
    EXPECT_EQ((Nodes{{}, 255, {}}.expected_packets()), 5);
}

// ---- packet vectors ---------------------------------------------------------------------------------

TEST(V5Packets, PingMessageVector) {
    const Nodes2 n;
    const Key zero{};
    const Key other = arr<16>("0102030405060708090a0b0c0d0e0f10");
    Codec a(n.key_a, n.record_a, vector_options());
    a.store_session(n.id_b, kAddrB, zero, other, n.record_b);
    auto enc = a.encode(n.id_b, kAddrB, Ping{{0, 0, 0, 1}, 2}).value();
    EXPECT_EQ(to_hex(enc.datagram), to_hex(hex(kPingPacket)));
    EXPECT_EQ(to_hex(enc.nonce), "ffffffffffffffffffffffff");

    Codec b(n.key_b, n.record_b, vector_options());
    b.store_session(n.id_a, kAddrA, other, zero, n.record_a);
    auto dec = b.decode(hex(kPingPacket), kAddrA).value();
    EXPECT_EQ(dec.src_id, n.id_a);
    EXPECT_FALSE(dec.record);
    EXPECT_EQ(std::get<Message>(dec.packet), (Message{Ping{{0, 0, 0, 1}, 2}}));
}

// The vector is masked for B (every packet of the document is for node B to read): A challenges B.
TEST(V5Packets, WhoareyouVector) {
    const Nodes2 n;
    Codec a(n.key_a, n.record_a, vector_options());
    auto enc = a.encode_whoareyou(n.id_b, kAddrB, arr<12>(kRequestNonce), nullptr).value();
    EXPECT_EQ(to_hex(enc.datagram), to_hex(hex(kWhoareyouPacket)));
    EXPECT_EQ(to_hex(enc.nonce), kRequestNonce);
    ASSERT_NE(a.current_challenge(n.id_b, kAddrB), nullptr);
    EXPECT_EQ(to_hex(a.current_challenge(n.id_b, kAddrB)->challenge_data), kChallengeSeq0);

    Codec b(n.key_b, n.record_b, vector_options());
    auto dec = b.decode(hex(kWhoareyouPacket), kAddrA).value();
    EXPECT_EQ(dec.src_id, Hash32{});
    const auto& w = std::get<Whoareyou>(dec.packet);
    EXPECT_EQ(to_hex(w.request_nonce), kRequestNonce);
    EXPECT_EQ(to_hex(w.id_nonce), kIdNonce);
    EXPECT_EQ(w.enr_seq, 0u);
    EXPECT_EQ(to_hex(w.challenge_data), kChallengeSeq0);
}

// The handshake vectors, both ways: A answers B's challenge (enr_seq as given) with the PING of
// the vector; B, holding the challenge, verifies and decodes it.
void check_handshake_vector(std::string_view packet, bool b_knows_a, std::string_view challenge_hex) {
    const Nodes2 n;
    Codec b(n.key_b, n.record_b, vector_options());
    auto who = b.encode_whoareyou(n.id_a, kAddrA, arr<12>(kRequestNonce), b_knows_a ? &n.record_a : nullptr).value();
    Codec a(n.key_a, n.record_a, vector_options());
    auto challenge = a.decode(who.datagram, kAddrB).value();
    const auto& w = std::get<Whoareyou>(challenge.packet);
    EXPECT_EQ(to_hex(w.challenge_data), challenge_hex);

    const Message ping = Ping{{0, 0, 0, 1}, 1};
    auto enc = a.encode_handshake(n.id_b, kAddrB, ping, w, n.record_b).value();
    EXPECT_EQ(to_hex(enc.datagram), to_hex(hex(packet)));
    EXPECT_NE(a.session_record(n.id_b, kAddrB), nullptr);

    auto dec = b.decode(hex(packet), kAddrA).value();
    EXPECT_EQ(dec.src_id, n.id_a);
    ASSERT_TRUE(dec.record);
    EXPECT_EQ(to_hex(dec.record->encoded()), to_hex(n.record_a.encoded()));
    EXPECT_EQ(std::get<Message>(dec.packet), ping);
    EXPECT_EQ(b.current_challenge(n.id_a, kAddrA), nullptr);  // used up
    ASSERT_NE(b.session_record(n.id_a, kAddrA), nullptr);
}

TEST(V5Packets, PingHandshakeVector) {
    SCOPED_TRACE("flag 2, no record: B's challenge names A's current seq");
    check_handshake_vector(kHandshakePacket, true, kChallengeSeq1);
}

TEST(V5Packets, PingHandshakeWithEnrVector) {
    SCOPED_TRACE("flag 2 with record: B knows no record of A");
    check_handshake_vector(kHandshakeEnrPacket, false, kChallengeSeq0);
    // check_handshake_vector compared the record B read from the packet with the one EnrBuilder
    // makes for A (seq 1, id v4, ip 127.0.0.1, secp256k1), and A's packet with the vector: the
    // spec's record is ours byte for byte.
}

// ---- a whole exchange ---------------------------------------------------------------------------------

TEST(V5Codec, FullRoundTrip) {
    const Nodes2 n;
    Codec a(n.key_a, n.record_a);
    Codec b(n.key_b, n.record_b);

    // A has no session: its PING goes out as a random packet, which B cannot read.
    const Message ping = Ping{{7, 7}, n.record_a.seq()};
    auto first = a.encode(n.id_b, kAddrB, ping).value();
    EXPECT_EQ(first.datagram.size(), kHeaderStart + 32 + kRandomMessageSize);
    EXPECT_TRUE(first.random_packet);
    auto unknown = b.decode(first.datagram, kAddrA).value();
    EXPECT_EQ(unknown.src_id, n.id_a);
    ASSERT_TRUE(std::holds_alternative<Unknown>(unknown.packet));
    EXPECT_EQ(std::get<Unknown>(unknown.packet).nonce, first.nonce);

    // B challenges A; A answers with the PING in a handshake.
    auto who = b.encode_whoareyou(n.id_a, kAddrA, first.nonce, nullptr).value();
    auto challenge = a.decode(who.datagram, kAddrB).value();
    const auto& w = std::get<Whoareyou>(challenge.packet);
    EXPECT_EQ(w.request_nonce, first.nonce);
    auto hs = a.encode_handshake(n.id_b, kAddrB, ping, w, n.record_b).value();
    auto got = b.decode(hs.datagram, kAddrA).value();
    EXPECT_EQ(got.src_id, n.id_a);
    ASSERT_TRUE(got.record);
    EXPECT_EQ(got.record->node_id(), n.id_a);
    EXPECT_EQ(std::get<Message>(got.packet), ping);

    // B answers over the new session.
    const Message pong = Pong{{7, 7}, n.record_b.seq(), kAddrA};
    auto reply = b.encode(n.id_a, kAddrA, pong).value();
    EXPECT_FALSE(reply.random_packet);
    auto pong_got = a.decode(reply.datagram, kAddrB).value();
    EXPECT_EQ(pong_got.src_id, n.id_b);
    EXPECT_FALSE(pong_got.record);
    EXPECT_EQ(std::get<Message>(pong_got.packet), pong);

    // And both keep talking; every nonce differs (the counter).
    const Message find = FindNode{{1}, {256}};
    auto f1 = a.encode(n.id_b, kAddrB, find).value();
    auto f2 = a.encode(n.id_b, kAddrB, find).value();
    EXPECT_NE(f1.nonce, f2.nonce);
    EXPECT_EQ(std::get<Message>(b.decode(f1.datagram, kAddrA).value().packet), find);
    EXPECT_EQ(std::get<Message>(b.decode(f2.datagram, kAddrA).value().packet), find);
    const Message nodes = Nodes{{1}, 1, {Bytes(n.record_b.encoded().begin(), n.record_b.encoded().end())}};
    auto nodes_got = a.decode(b.encode(n.id_a, kAddrA, nodes).value().datagram, kAddrB).value();
    EXPECT_EQ(std::get<Message>(nodes_got.packet), nodes);
    const Message talk = TalkReq{{2}, {'x'}, Bytes(900, 0xab)};
    EXPECT_EQ(std::get<Message>(b.decode(a.encode(n.id_b, kAddrB, talk).value().datagram, kAddrA).value().packet),
              talk);
}

TEST(V5Codec, ResendsThePendingChallenge) {
    const Nodes2 n;
    const FakeClock clock;
    Codec b(n.key_b, n.record_b, clocked(clock));
    const Nonce n1{1};
    const Nonce n2{2};
    auto w1 = b.encode_whoareyou(n.id_a, kAddrA, n1, nullptr).value();
    auto w2 = b.encode_whoareyou(n.id_a, kAddrA, n2, &n.record_a).value();
    EXPECT_EQ(w1.datagram, w2.datagram);  // the same challenge, byte for byte
    EXPECT_EQ(w2.nonce, n1);
    // Another address is another peer: a challenge of its own.
    auto other = b.encode_whoareyou(n.id_a, kAddrB, n2, nullptr).value();
    EXPECT_NE(other.datagram, w1.datagram);
    // Once the challenge has timed out, a new one.
    clock.advance(kHandshakeTimeout + std::chrono::milliseconds(1));
    EXPECT_EQ(b.current_challenge(n.id_a, kAddrA), nullptr);
    auto w3 = b.encode_whoareyou(n.id_a, kAddrA, n2, nullptr).value();
    EXPECT_NE(w3.datagram, w1.datagram);
    EXPECT_EQ(w3.nonce, n2);
}

TEST(V5Codec, ChallengesAreCappedOldestFirst) {
    const Nodes2 n;
    CodecOptions o;
    o.challenge_capacity = 4;
    Codec b(n.key_b, n.record_b, o);
    // Seven peers (A from seven ports), challenged in turn: the four newest stay.
    std::vector<Endpoint> ports;
    std::vector<Bytes> sent;
    for (uint16_t port = 1; port <= 7; ++port) {
        ports.push_back(Endpoint::ipv4({127, 0, 0, 1}, port));
        sent.push_back(b.encode_whoareyou(n.id_a, ports.back(), Nonce{}, nullptr).value().datagram);
        EXPECT_LE(b.challenge_count(), 4u);
    }
    EXPECT_EQ(b.challenge_count(), 4u);
    for (size_t i = 0; i < ports.size(); ++i) EXPECT_EQ(b.current_challenge(n.id_a, ports[i]) != nullptr, i >= 3) << i;
    // A handshake answering a dropped challenge finds none; one answering a kept challenge verifies.
    Codec a(n.key_a, n.record_a);
    const auto answer = [&](size_t i) {
        const auto w = std::get<Whoareyou>(a.decode(sent[i], kAddrB).value().packet);
        return a.encode_handshake(n.id_b, kAddrB, Ping{{1}, 1}, w, n.record_b).value().datagram;
    };
    EXPECT_EQ(error_of(b.decode(answer(0), ports[0])), WireError::kUnexpectedHandshake);
    EXPECT_TRUE(b.decode(answer(6), ports[6]));
    EXPECT_EQ(b.challenge_count(), 3u);  // used up
}

TEST(V5Codec, OnlyTimedOutChallengesExpire) {
    const Nodes2 n;
    const FakeClock clock;
    Codec b(n.key_b, n.record_b, clocked(clock));
    const auto port = [](uint16_t p) { return Endpoint::ipv4({127, 0, 0, 1}, p); };
    for (uint16_t p = 1; p <= 3; ++p) ASSERT_TRUE(b.encode_whoareyou(n.id_a, port(p), Nonce{}, nullptr));
    clock.advance(kHandshakeTimeout / 2);
    const Bytes w4 = b.encode_whoareyou(n.id_a, port(4), Nonce{}, nullptr).value().datagram;
    ASSERT_TRUE(b.encode_whoareyou(n.id_a, port(5), Nonce{}, nullptr));
    EXPECT_EQ(b.challenge_count(), 5u);
    // The first three time out, the last two not; the next challenge (or decode) drops the three.
    clock.advance(kHandshakeTimeout / 2 + std::chrono::milliseconds(1));
    ASSERT_TRUE(b.encode_whoareyou(n.id_a, port(6), Nonce{}, nullptr));
    EXPECT_EQ(b.challenge_count(), 3u);
    for (uint16_t p = 1; p <= 6; ++p) EXPECT_EQ(b.current_challenge(n.id_a, port(p)) != nullptr, p >= 4) << p;
    // A kept one is still sent again byte for byte.
    EXPECT_EQ(b.encode_whoareyou(n.id_a, port(4), Nonce{9}, nullptr).value().datagram, w4);
    EXPECT_EQ(b.challenge_count(), 3u);
}

TEST(V5Codec, PacketKindFromTheHeaderAlone) {
    const Nodes2 n;
    const Codec a(n.key_a, n.record_a);
    const Codec b(n.key_b, n.record_b);
    EXPECT_EQ(b.packet_kind(hex(kPingPacket)), PacketKind::kMessage);
    EXPECT_EQ(b.packet_kind(hex(kWhoareyouPacket)), PacketKind::kWhoareyou);
    EXPECT_EQ(b.packet_kind(hex(kHandshakePacket)), PacketKind::kHandshake);
    EXPECT_EQ(b.packet_kind(hex(kHandshakeEnrPacket)), PacketKind::kHandshake);
    // Masked for another node (every vector is for B), too short, an unknown flag: nothing decode
    // would read.
    EXPECT_FALSE(a.packet_kind(hex(kPingPacket)));
    EXPECT_FALSE(b.packet_kind(Bytes(kMinPacketSize - 1, 0)));
    const Bytes flag3 =
        edit_header(hex(kPingPacket), n.id_b, kHeaderStart, [](Bytes& h) { h[kMaskingIvSize + 8] = 3; });
    EXPECT_FALSE(b.packet_kind(flag3));
}

TEST(V5Codec, SessionCacheIsLru) {
    const Nodes2 n;
    CodecOptions o;
    o.session_capacity = 2;
    Codec a(n.key_a, n.record_a, o);
    const Key k{};
    const Endpoint e1 = Endpoint::ipv4({127, 0, 0, 1}, 1);
    const Endpoint e2 = Endpoint::ipv4({127, 0, 0, 1}, 2);
    const Endpoint e3 = Endpoint::ipv4({127, 0, 0, 1}, 3);
    a.store_session(n.id_b, e1, k, k, n.record_b);
    a.store_session(n.id_b, e2, k, k, n.record_b);
    (void)a.encode(n.id_b, e1, Ping{{}, 1}).value();  // e1 used: e2 is now the oldest
    a.store_session(n.id_b, e3, k, k, n.record_b);
    EXPECT_EQ(a.session_count(), 2u);
    EXPECT_NE(a.session_record(n.id_b, e1), nullptr);
    EXPECT_EQ(a.session_record(n.id_b, e2), nullptr);
    EXPECT_NE(a.session_record(n.id_b, e3), nullptr);
}

// ---- bad input ----------------------------------------------------------------------------------------

// B with a session to A (from the ping vector's keys) and the packets to play with.
struct SessionFixture {
    Nodes2 n;
    Key zero{};
    Key other = arr<16>("0102030405060708090a0b0c0d0e0f10");
    Codec b{n.key_b, n.record_b, vector_options()};
    SessionFixture() { b.store_session(n.id_a, kAddrA, other, zero, n.record_a); }
};

TEST(V5Errors, Sizes) {
    SessionFixture f;
    const Bytes ping = hex(kPingPacket);
    EXPECT_EQ(error_of(f.b.decode(ByteView{ping}.first(kMinPacketSize - 1), kAddrA)), WireError::kPacketTooShort);
    EXPECT_EQ(error_of(f.b.decode({}, kAddrA)), WireError::kPacketTooShort);
    Bytes big = ping;
    big.resize(kMaxPacketSize + 1);
    EXPECT_EQ(error_of(f.b.decode(big, kAddrA)), WireError::kPacketTooBig);
    // Cut inside the message: fewer than 48 bytes after the static header.
    EXPECT_EQ(error_of(f.b.decode(ByteView{ping}.first(80), kAddrA)), WireError::kMessageTooShort);
    // Cut one byte: the tag no longer verifies, which for a message packet means "handshake anew".
    auto cut = f.b.decode(ByteView{ping}.first(ping.size() - 1), kAddrA).value();
    EXPECT_TRUE(std::holds_alternative<Unknown>(cut.packet));
    // A message too big to send.
    Codec a(f.n.key_a, f.n.record_a);
    a.store_session(f.n.id_b, kAddrB, f.zero, f.other, f.n.record_b);
    EXPECT_EQ(a.encode(f.n.id_b, kAddrB, TalkReq{{1}, {}, Bytes(kMaxPacketSize, 0)}).error(), WireError::kPacketTooBig);
}

TEST(V5Errors, HeaderFields) {
    SessionFixture f;
    const Bytes ping = hex(kPingPacket);
    auto edited = [&](size_t at, uint8_t value) {
        return edit_header(ping, f.n.id_b, kHeaderStart, [&](Bytes& h) { h[at] = value; });
    };
    EXPECT_EQ(error_of(f.b.decode(edited(kMaskingIvSize + 5, '4'), kAddrA)), WireError::kBadProtocolId);  // discv4
    EXPECT_EQ(error_of(f.b.decode(edited(kMaskingIvSize + 7, 0), kAddrA)), WireError::kBadVersion);
    EXPECT_EQ(error_of(f.b.decode(edited(kMaskingIvSize + 8, 3), kAddrA)), WireError::kBadFlag);
    EXPECT_EQ(error_of(f.b.decode(edited(kMaskingIvSize + 22, 200), kAddrA)), WireError::kBadAuthSize);
    EXPECT_EQ(error_of(f.b.decode(edited(kMaskingIvSize + 22, 31), kAddrA)), WireError::kBadAuthSize);
    // A packet for someone else unmasks to garbage.
    Codec a(f.n.key_a, f.n.record_a);
    EXPECT_EQ(error_of(a.decode(ping, kAddrB)), WireError::kBadProtocolId);
    // A WHOAREYOU with a wrong authdata size.
    const Bytes who = edit_header(hex(kWhoareyouPacket), f.n.id_b, kHeaderStart, [](Bytes& h) { h[38] = 23; });
    EXPECT_EQ(error_of(f.b.decode(who, kAddrA)), WireError::kBadAuthSize);
}

TEST(V5Errors, BadTagOnSessionIsUnknown) {
    SessionFixture f;
    Bytes ping = hex(kPingPacket);
    ping.back() ^= 1;
    auto dec = f.b.decode(ping, kAddrA).value();
    ASSERT_TRUE(std::holds_alternative<Unknown>(dec.packet));
    EXPECT_EQ(to_hex(std::get<Unknown>(dec.packet).nonce), "ffffffffffffffffffffffff");
    EXPECT_EQ(dec.src_id, f.n.id_a);
}

TEST(V5Errors, SessionIsBoundToIpAndPort) {
    SessionFixture f;
    const Bytes ping = hex(kPingPacket);
    EXPECT_TRUE(std::holds_alternative<Message>(f.b.decode(ping, kAddrA).value().packet));
    const Endpoint other_port = Endpoint::ipv4({127, 0, 0, 1}, 30399);
    EXPECT_TRUE(std::holds_alternative<Unknown>(f.b.decode(ping, other_port).value().packet));
    const Endpoint other_ip = Endpoint::ipv4({127, 0, 0, 2}, kAddrA.port);
    EXPECT_TRUE(std::holds_alternative<Unknown>(f.b.decode(ping, other_ip).value().packet));
}

TEST(V5Errors, RequestIdTooLong) {
    SessionFixture f;
    Codec a(f.n.key_a, f.n.record_a, vector_options());
    a.store_session(f.n.id_b, kAddrB, f.zero, f.other, f.n.record_b);
    const Message long_id = Ping{Bytes(9, 1), 1};
    EXPECT_EQ(a.encode(f.n.id_b, kAddrB, long_id).error(), WireError::kRequestIdTooLong);
    // One that arrives anyway (sealed by hand with the session key) is refused after decryption:
    // the ping vector's header (unmasked), then the long-id PING encrypted under it.
    const Bytes ping = hex(kPingPacket);
    Bytes header;
    (void)edit_header(ping, f.n.id_b, kHeaderStart + 32, [&](Bytes& h) { header = h; });
    Nonce nonce;
    nonce.fill(0xff);
    const Bytes ct = encrypt_gcm(f.zero, nonce, encode_message(long_id), header).value();
    Bytes packet = ping;
    packet.resize(kHeaderStart + 32 + ct.size());
    std::copy(ct.begin(), ct.end(), packet.begin() + kHeaderStart + 32);
    EXPECT_EQ(error_of(f.b.decode(packet, kAddrA)), WireError::kRequestIdTooLong);
}

// A pending challenge at B for A (with or without A's record), and a handshake from A answering it.
struct HandshakeFixture {
    Nodes2 n;
    FakeClock clock;
    Codec b{n.key_b, n.record_b, vector_options(clock)};
    Whoareyou challenge(bool knows_a) {
        auto who = b.encode_whoareyou(n.id_a, kAddrA, arr<12>(kRequestNonce), knows_a ? &n.record_a : nullptr);
        Codec reader(n.key_a, n.record_a);
        return std::get<Whoareyou>(reader.decode(who.value().datagram, kAddrB).value().packet);
    }
    Bytes handshake(Codec& from, const Whoareyou& w) {
        return from.encode_handshake(n.id_b, kAddrB, Ping{{1}, 1}, w, n.record_b).value().datagram;
    }
};

TEST(V5Errors, HandshakeReplayedOrLate) {
    HandshakeFixture f;
    Codec a(f.n.key_a, f.n.record_a);
    const Bytes hs = f.handshake(a, f.challenge(false));
    ASSERT_TRUE(f.b.decode(hs, kAddrA));
    EXPECT_EQ(error_of(f.b.decode(hs, kAddrA)), WireError::kUnexpectedHandshake);  // replayed
    // Answering after the challenge timed out.
    const Bytes late = f.handshake(a, f.challenge(false));
    f.clock.advance(kHandshakeTimeout + std::chrono::milliseconds(1));
    EXPECT_EQ(error_of(f.b.decode(late, kAddrA)), WireError::kUnexpectedHandshake);
    // From another port than the one challenged.
    const Bytes moved = f.handshake(a, f.challenge(false));
    EXPECT_EQ(error_of(f.b.decode(moved, Endpoint::ipv4({127, 0, 0, 1}, 1))), WireError::kUnexpectedHandshake);
}

TEST(V5Errors, HandshakeBadSignature) {
    HandshakeFixture f;
    (void)f.challenge(true);
    // The vector's handshake with a byte of its id-signature changed (authdata from byte 39: src-id,
    // sizes, then the signature).
    const size_t header_size = kHeaderStart + 34 + 64 + 33;
    const Bytes bad =
        edit_header(hex(kHandshakePacket), f.n.id_b, header_size, [](Bytes& h) { h[kHeaderStart + 34 + 10] ^= 1; });
    EXPECT_EQ(error_of(f.b.decode(bad, kAddrA)), WireError::kBadIdSignature);
    EXPECT_EQ(f.b.current_challenge(f.n.id_a, kAddrA), nullptr);  // a failed answer uses it up
    EXPECT_EQ(f.b.session_record(f.n.id_a, kAddrA), nullptr);
}

TEST(V5Errors, HandshakeBadEphemeralKey) {
    HandshakeFixture f;
    (void)f.challenge(true);
    // Signature checks come first, so make A sign over the bad key: sign the vector's challenge
    // with a key byte that is no curve point prefix (0x05).
    const Bytes challenge = hex(kChallengeSeq1);
    Bytes eph = hex(kEphemeralPubkey);
    eph[0] = 0x05;
    const auto sig = make_id_signature(f.n.key_a, challenge, eph, f.n.id_b).value();
    const size_t header_size = kHeaderStart + 34 + 64 + 33;
    const Bytes bad = edit_header(hex(kHandshakePacket), f.n.id_b, header_size, [&](Bytes& h) {
        std::copy(sig.begin(), sig.end(), h.begin() + kHeaderStart + 34);
        h[kHeaderStart + 34 + 64] = 0x05;
    });
    EXPECT_EQ(error_of(f.b.decode(bad, kAddrA)), WireError::kBadEphemeralKey);
}

TEST(V5Errors, HandshakeBadTag) {
    HandshakeFixture f;
    (void)f.challenge(true);
    Bytes bad = hex(kHandshakePacket);
    bad.back() ^= 1;
    EXPECT_EQ(error_of(f.b.decode(bad, kAddrA)), WireError::kDecryptFailed);
    EXPECT_EQ(f.b.session_record(f.n.id_a, kAddrA), nullptr);
}

TEST(V5Errors, HandshakeRecordOfAnotherNode) {
    HandshakeFixture f;
    // A's codec with C's record: the record verifies, but it is not A's.
    const auto key_c = rlpx::PrivateKey::from_bytes(Bytes(32, 0x11)).value();
    Codec a(f.n.key_a, record_of(key_c));
    const Bytes hs = f.handshake(a, f.challenge(false));
    EXPECT_EQ(error_of(f.b.decode(hs, kAddrA)), WireError::kRecordIdMismatch);
}

TEST(V5Errors, HandshakeWithoutRecordWhenNoneKnown) {
    HandshakeFixture f;
    // A's record has seq 0, so a challenge with enr_seq 0 looks current to A and it sends none;
    // but B knows no record of A.
    Codec a(f.n.key_a, record_of(f.n.key_a, 0));
    const Bytes hs = f.handshake(a, f.challenge(false));
    EXPECT_EQ(error_of(f.b.decode(hs, kAddrA)), WireError::kNoRecord);
}

TEST(V5Errors, HandshakeWithBadRecord) {
    HandshakeFixture f;
    Codec a(f.n.key_a, f.n.record_a);
    const Bytes hs = f.handshake(a, f.challenge(false));
    // The record ends the authdata; its last byte (inside the secp256k1 key) changed.
    const size_t header_size = kHeaderStart + 34 + 64 + 33 + f.n.record_a.encoded().size();
    const Bytes bad = edit_header(hs, f.n.id_b, header_size, [&](Bytes& h) { h[header_size - 1] ^= 1; });
    EXPECT_EQ(error_of(f.b.decode(bad, kAddrA)), WireError::kBadRecord);
}

TEST(V5Errors, EncodeHandshakeChecksItsInputs) {
    const Nodes2 n;
    Codec a(n.key_a, n.record_a);
    EXPECT_EQ(a.encode_handshake(n.id_b, kAddrB, Ping{{}, 1}, Whoareyou{}, n.record_b).error(),
              WireError::kBadChallenge);
    Whoareyou w;
    w.challenge_data = hex(kChallengeSeq0);
    EXPECT_EQ(a.encode_handshake(n.id_b, kAddrB, Ping{{}, 1}, w, n.record_a).error(), WireError::kBadChallenge);
    EXPECT_TRUE(a.encode_handshake(n.id_b, kAddrB, Ping{{}, 1}, w, n.record_b));
}

TEST(V5Errors, Messages) {
    EXPECT_EQ(make_error_code(WireError::kUnexpectedHandshake).message(), "handshake without a pending challenge");
    EXPECT_STREQ(wire_category().name(), "discv5");
}

}  // namespace
}  // namespace headerd::disc::v5
