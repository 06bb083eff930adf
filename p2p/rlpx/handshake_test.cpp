#include "p2p/rlpx/handshake.hpp"

#include <gtest/gtest.h>

#include "core/keccak.hpp"
#include "core/rlp.hpp"
#include "p2p/rlpx/ecies.hpp"
#include "p2p/rlpx/frame.hpp"
#include "p2p/rlpx/test_util.hpp"
#include "p2p/rlpx/test_vectors.hpp"

namespace headerd::rlpx {
namespace {

using test::hash;
using test::hex;
using test::to_hex;

Handshake recipient_b() {
    return Handshake::recipient(test::private_key(vectors::kKeyB), test::private_key(vectors::kEphKeyB),
                                hash(vectors::kNonceB));
}

Handshake initiator_a() {
    return Handshake::initiator(test::private_key(vectors::kKeyA), test::public_key(vectors::kPubB),
                                test::private_key(vectors::kEphKeyA), hash(vectors::kNonceA));
}

// Feeds a whole packet; expects it to be consumed exactly and accepted.
void read_all(Handshake& h, const Bytes& packet) {
    ByteView in{packet};
    auto r = h.read(in);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(*r, 0u);
    EXPECT_TRUE(in.empty());
}

// Section A, recipient B: Auth2 yields the published secrets and ingress-mac("foo").
TEST(Handshake, RecipientReadsAuth2) {
    Handshake b = recipient_b();
    read_all(b, hex(vectors::kAuth2));
    ASSERT_TRUE(b.remote());
    EXPECT_EQ(to_hex(b.remote()->bytes()), vectors::kPubA);
    EXPECT_FALSE(b.done());
    ASSERT_TRUE(b.write_ack());
    ASSERT_TRUE(b.done());
    auto s = b.secrets();
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_EQ(to_hex(s->aes), vectors::kAesSecret);
    EXPECT_EQ(to_hex(s->mac), vectors::kMacSecret);
    EXPECT_EQ(to_hex(s->remote.bytes()), vectors::kPubA);
    s->ingress_mac.update(as_bytes("foo"));
    EXPECT_EQ(to_hex(s->ingress_mac.digest()), vectors::kIngressMacFoo);
}

// Forward compatibility: auth-vsn 56 and three extra elements are ignored.
TEST(Handshake, RecipientReadsAuth3) {
    Handshake b = recipient_b();
    read_all(b, hex(vectors::kAuth3));
    EXPECT_EQ(to_hex(b.remote()->bytes()), vectors::kPubA);
    ASSERT_TRUE(b.write_ack());
    auto s = b.secrets();
    ASSERT_TRUE(s);
    EXPECT_EQ(to_hex(s->aes), vectors::kAesSecret);
    EXPECT_EQ(to_hex(s->mac), vectors::kMacSecret);
}

// Initiator A reads Ack2 / Ack3 (ack-vsn 57, extras) and derives the published secrets.
TEST(Handshake, InitiatorReadsAck2AndAck3) {
    for (const char* ack : {vectors::kAck2, vectors::kAck3}) {
        Handshake a = initiator_a();
        ASSERT_TRUE(a.write_auth());
        read_all(a, hex(ack));
        ASSERT_TRUE(a.done());
        auto s = a.secrets();
        ASSERT_TRUE(s);
        EXPECT_EQ(to_hex(s->aes), vectors::kAesSecret);
        EXPECT_EQ(to_hex(s->mac), vectors::kMacSecret);
        EXPECT_EQ(to_hex(s->remote.bytes()), vectors::kPubB);
    }
}

// A's ingress MAC depends on Ack2 only, so A's codec reads the C2 frame B sent.
TEST(Handshake, InitiatorSecretsReadC2FrameFromB) {
    Handshake a = initiator_a();
    ASSERT_TRUE(a.write_auth());
    read_all(a, hex(vectors::kAck2));
    FrameCodec codec(a.secrets().value());
    const Bytes frame = hex(vectors::kC2FrameBtoA1);
    auto size = codec.read_header(ByteView{frame}.first(kFrameHeaderSize));
    ASSERT_TRUE(size) << size.error().message();
    EXPECT_EQ(*size, 4u);
    Bytes buf;
    auto data = codec.read_body(ByteView{frame}.subspan(kFrameHeaderSize), buf);
    ASSERT_TRUE(data) << data.error().message();
    EXPECT_EQ(to_hex(*data), "030100c0");
}

// What write_auth() sends: the EIP-8 layout, decryptable by B with the prefix as s2, signed
// by the ephemeral key over static-shared-secret ^ nonce, padded by at least 100 bytes.
TEST(Handshake, WriteAuthLayout) {
    Handshake a = initiator_a();
    auto packet = a.write_auth();
    ASSERT_TRUE(packet);
    ASSERT_GE(packet->size(), 2u + 169 + 100 + ecies::kOverhead);
    EXPECT_LE(packet->size(), 2u + 169 + 299 + ecies::kOverhead);
    EXPECT_EQ(load_be16(packet->data()), packet->size() - 2);

    const ByteView p{*packet};
    auto plain = ecies::decrypt(test::private_key(vectors::kKeyB), p.subspan(2), p.first(2));
    ASSERT_TRUE(plain);
    ByteView in{*plain};
    auto list = rlp::decode_list(in);
    ASSERT_TRUE(list);
    EXPECT_GE(in.size(), 100u);                  // padding after the list
    EXPECT_EQ(plain->size() - in.size(), 169u);  // the unpadded list
    auto sig = rlp::decode_string(*list);
    auto pub = rlp::decode_string(*list);
    auto nonce = rlp::decode_string(*list);
    auto version = rlp::decode_uint64(*list);
    ASSERT_TRUE(sig && pub && nonce && version);
    EXPECT_TRUE(list->empty());
    EXPECT_EQ(to_hex(*pub), vectors::kPubA);
    EXPECT_EQ(to_hex(*nonce), vectors::kNonceA);
    EXPECT_EQ(*version, 4u);
    auto signer = recover(*sig, hash(vectors::kSignedMessage));
    ASSERT_TRUE(signer);
    EXPECT_EQ(to_hex(signer->bytes()), vectors::kEphPubA);

    // Recipient B accepts it.
    Handshake b = recipient_b();
    read_all(b, *packet);
    EXPECT_EQ(to_hex(b.remote()->bytes()), vectors::kPubA);
}

TEST(Handshake, WriteAckLayout) {
    Handshake b = recipient_b();
    read_all(b, hex(vectors::kAuth2));
    auto packet = b.write_ack();
    ASSERT_TRUE(packet);
    EXPECT_EQ(load_be16(packet->data()), packet->size() - 2);
    const ByteView p{*packet};
    auto plain = ecies::decrypt(test::private_key(vectors::kKeyA), p.subspan(2), p.first(2));
    ASSERT_TRUE(plain);
    ByteView in{*plain};
    auto list = rlp::decode_list(in);
    ASSERT_TRUE(list);
    EXPECT_GE(in.size(), 100u);
    EXPECT_EQ(plain->size() - in.size(), 102u);
    auto eph = rlp::decode_string(*list);
    auto nonce = rlp::decode_string(*list);
    auto version = rlp::decode_uint64(*list);
    ASSERT_TRUE(eph && nonce && version);
    EXPECT_EQ(to_hex(*eph), vectors::kEphPubB);
    EXPECT_EQ(to_hex(*nonce), vectors::kNonceB);
    EXPECT_EQ(*version, 4u);

    Handshake a = initiator_a();
    ASSERT_TRUE(a.write_auth());
    read_all(a, *packet);
    EXPECT_EQ(to_hex(a.secrets().value().aes), vectors::kAesSecret);
}

// Byte-at-a-time delivery: the size prefix first, then exactly the announced body.
TEST(Handshake, ReadsByteByByteAndStopsAtPacketEnd) {
    Handshake b = recipient_b();
    const Bytes auth = hex(vectors::kAuth2);
    EXPECT_EQ(b.bytes_needed(), 2u);
    for (size_t i = 0; i + 1 < auth.size(); ++i) {
        ByteView in{&auth[i], 1};
        auto r = b.read(in);
        ASSERT_TRUE(r) << i;
        EXPECT_TRUE(in.empty());
        // Until the prefix is complete only its second byte is asked for.
        EXPECT_EQ(*r, i == 0 ? 1 : auth.size() - i - 1) << i;
        EXPECT_EQ(b.bytes_needed(), *r);
    }
    // The last byte arrives together with the peer's next bytes, which must stay unconsumed.
    Bytes tail{auth.back(), 0xde, 0xad};
    ByteView in{tail};
    auto r = b.read(in);
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, 0u);
    EXPECT_EQ(to_hex(in), "dead");
    EXPECT_EQ(b.bytes_needed(), 0u);
    EXPECT_TRUE(b.write_ack());
}

// Section B (legacy set): secrets, initial MAC digests and the real Hello frames.
TEST(Handshake, LegacySecretsAndHelloFrames) {
    const PrivateKey initiator = test::private_key(vectors::kLegacyInitiatorKey);
    const PrivateKey receiver = test::private_key(vectors::kLegacyReceiverKey);
    const PrivateKey initiator_eph = test::private_key(vectors::kLegacyInitiatorEphKey);
    const PrivateKey receiver_eph = test::private_key(vectors::kLegacyReceiverEphKey);
    const Hash32 initiator_nonce = hash(vectors::kLegacyInitiatorNonce);
    const Hash32 receiver_nonce = hash(vectors::kLegacyReceiverNonce);
    const Bytes auth = hex(vectors::kLegacyAuthCiphertext);
    const Bytes ack = hex(vectors::kLegacyAckCiphertext);

    // What the receiver learns from the legacy auth: sig || keccak(eph-pub) || pub || nonce || 0.
    const Bytes auth_plain = ecies::decrypt(receiver, auth, {}).value();
    const ByteView ap{auth_plain};
    EXPECT_EQ(to_hex(ap.subspan(97, 64)), to_hex(initiator.public_key().bytes()));
    EXPECT_EQ(to_hex(ap.subspan(161, 32)), vectors::kLegacyInitiatorNonce);
    const Hash32 static_shared = ecdh(receiver, initiator.public_key()).value();
    Hash32 signed_message;
    for (size_t i = 0; i < 32; ++i) signed_message[i] = static_shared[i] ^ initiator_nonce[i];
    auto initiator_eph_pub = recover(ap.first(65), signed_message);
    ASSERT_TRUE(initiator_eph_pub);
    EXPECT_EQ(*initiator_eph_pub, initiator_eph.public_key());
    EXPECT_EQ(to_hex(ap.subspan(65, 32)), to_hex(initiator_eph_pub->node_id()));

    const Hash32 shared = ecdh(receiver_eph, *initiator_eph_pub).value();
    EXPECT_EQ(to_hex(shared), vectors::kLegacyEphemeralShared);
    EXPECT_EQ(ecdh(initiator_eph, receiver_eph.public_key()).value(), shared);

    Secrets si =
        derive_secrets(Role::kInitiator, shared, initiator_nonce, receiver_nonce, auth, ack, receiver.public_key());
    Secrets sr =
        derive_secrets(Role::kRecipient, shared, initiator_nonce, receiver_nonce, auth, ack, initiator.public_key());
    EXPECT_EQ(to_hex(si.aes), vectors::kLegacyAesSecret);
    EXPECT_EQ(to_hex(si.mac), vectors::kLegacyMacSecret);
    EXPECT_EQ(sr.aes, si.aes);
    EXPECT_EQ(sr.mac, si.mac);
    EXPECT_EQ(to_hex(si.egress_mac.digest()), vectors::kLegacyInitialEgressMac);
    EXPECT_EQ(to_hex(si.ingress_mac.digest()), vectors::kLegacyInitialIngressMac);
    EXPECT_EQ(to_hex(sr.ingress_mac.digest()), vectors::kLegacyInitialEgressMac);
    EXPECT_EQ(to_hex(sr.egress_mac.digest()), vectors::kLegacyInitialIngressMac);
    // token = keccak(shared-secret), shared-secret = keccak(ephemeral || keccak(nr || ni)).
    Keccak256 nonces;
    nonces.update(receiver_nonce);
    nonces.update(initiator_nonce);
    Keccak256 shared_secret;
    shared_secret.update(shared);
    shared_secret.update(nonces.digest());
    EXPECT_EQ(to_hex(keccak256(shared_secret.digest())), vectors::kLegacyToken);

    // Each side reads the other's Hello, then a fresh codec re-encrypts it byte for byte.
    struct Direction {
        Secrets reader;
        Secrets writer;
        const char* packet;
        const char* frame_data;
    };
    Direction directions[] = {
        {sr, si, vectors::kLegacyInitiatorHello, vectors::kLegacyInitiatorFrameData},
        {si, sr, vectors::kLegacyReceiverHello, vectors::kLegacyReceiverFrameData},
    };
    for (auto& d : directions) {
        FrameCodec reader(d.reader);
        Bytes packet = hex(d.packet);
        auto size = reader.read_header(ByteView{packet}.first(kFrameHeaderSize));
        ASSERT_TRUE(size) << size.error().message();
        EXPECT_EQ(*size, 79u);
        auto data = reader.read_body(std::span<uint8_t>{packet}.subspan(kFrameHeaderSize));
        ASSERT_TRUE(data) << data.error().message();
        EXPECT_EQ(to_hex(*data), d.frame_data);

        FrameCodec writer(d.writer);
        Bytes out;
        ASSERT_TRUE(writer.write_frame(hex(d.frame_data), out));
        EXPECT_EQ(to_hex(out), d.packet);
    }
}

// Section A legacy packets (Auth1/Ack1): same keys and nonces, so the same AES and MAC secrets.
TEST(Handshake, LegacyEip8VectorSecrets) {
    const PrivateKey b = test::private_key(vectors::kKeyB);
    const Bytes auth = hex(vectors::kAuth1);
    const Bytes ack = hex(vectors::kAck1);
    const Bytes auth_plain = ecies::decrypt(b, auth, {}).value();
    const Hash32 static_shared = ecdh(b, test::public_key(vectors::kPubA)).value();
    EXPECT_EQ(to_hex(static_shared), vectors::kStaticSharedAB);
    const Hash32 nonce_a = hash(vectors::kNonceA);
    Hash32 signed_message;
    for (size_t i = 0; i < 32; ++i) signed_message[i] = static_shared[i] ^ nonce_a[i];
    EXPECT_EQ(to_hex(signed_message), vectors::kSignedMessage);
    const PublicKey eph_a = recover(ByteView{auth_plain}.first(65), signed_message).value();
    EXPECT_EQ(to_hex(eph_a.bytes()), vectors::kEphPubA);

    const Hash32 shared = ecdh(test::private_key(vectors::kEphKeyB), eph_a).value();
    EXPECT_EQ(to_hex(shared), vectors::kEphemeralShared);
    Secrets s = derive_secrets(Role::kRecipient, shared, nonce_a, hash(vectors::kNonceB), auth, ack,
                               test::public_key(vectors::kPubA));
    EXPECT_EQ(to_hex(s.aes), vectors::kAesSecret);
    EXPECT_EQ(to_hex(s.mac), vectors::kMacSecret);
}

// Both roles in memory with fresh keys, then frames both ways over the derived secrets.
TEST(Handshake, FullHandshakeThenFramesBothWays) {
    const PrivateKey ki = PrivateKey::generate().value();
    const PrivateKey kr = PrivateKey::generate().value();
    Handshake initiator = Handshake::initiator(ki, kr.public_key());
    Handshake recipient = Handshake::recipient(kr);

    const Bytes auth = initiator.write_auth().value();
    read_all(recipient, auth);
    EXPECT_EQ(*recipient.remote(), ki.public_key());
    const Bytes ack = recipient.write_ack().value();
    read_all(initiator, ack);
    ASSERT_TRUE(initiator.done() && recipient.done());

    Secrets si = initiator.secrets().value();
    Secrets sr = recipient.secrets().value();
    EXPECT_EQ(si.aes, sr.aes);
    EXPECT_EQ(si.mac, sr.mac);
    EXPECT_EQ(si.egress_mac.digest(), sr.ingress_mac.digest());
    EXPECT_EQ(si.ingress_mac.digest(), sr.egress_mac.digest());
    EXPECT_NE(si.egress_mac.digest(), si.ingress_mac.digest());
    EXPECT_EQ(si.remote, kr.public_key());
    EXPECT_EQ(sr.remote, ki.public_key());

    FrameCodec ci(std::move(si));
    FrameCodec cr(std::move(sr));
    // Sizes around block edges, then a spread up to 70000.
    std::vector<size_t> sizes = {0, 1, 2, 15, 16, 17, 31, 32, 33, 255, 256, 1023, 1024, 65535, 65536, 70000};
    for (size_t s = 3; s < 70000; s = s * 5 / 3 + 7) sizes.push_back(s);

    Bytes wire;
    Bytes buf;
    for (int round = 0; round < 3; ++round) {
        for (size_t size : sizes) {
            for (int dir = 0; dir < 2; ++dir) {
                FrameCodec& writer = dir == 0 ? ci : cr;
                FrameCodec& reader = dir == 0 ? cr : ci;
                Bytes data(size);
                for (size_t i = 0; i < size; ++i) data[i] = static_cast<uint8_t>(i * 31 + size + dir + round);
                wire.clear();
                ASSERT_TRUE(writer.write_frame(data, wire));
                ASSERT_EQ(wire.size(), FrameCodec::wire_size(size));
                auto got = reader.read_header(ByteView{wire}.first(kFrameHeaderSize));
                ASSERT_TRUE(got) << size << " " << got.error().message();
                ASSERT_EQ(*got, size);
                auto frame = reader.read_body(ByteView{wire}.subspan(kFrameHeaderSize), buf);
                ASSERT_TRUE(frame) << size << " " << frame.error().message();
                ASSERT_TRUE(std::equal(frame->begin(), frame->end(), data.begin(), data.end())) << size;
            }
        }
    }
}

// ---- bad input -----------------------------------------------------------------------------------

Result<size_t> feed(Handshake& h, const Bytes& bytes) {
    ByteView in{bytes};
    return h.read(in);
}

TEST(Handshake, TruncatedAuthWaitsForMoreBytes) {
    Handshake b = recipient_b();
    Bytes auth = hex(vectors::kAuth2);
    auth.resize(auth.size() - 10);
    auto r = feed(b, auth);
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, 10u);
    EXPECT_FALSE(b.done());
    EXPECT_EQ(b.write_ack().error(), Errc::kHandshakeWrongState);
    EXPECT_EQ(b.secrets().error(), Errc::kHandshakeWrongState);
}

TEST(Handshake, AuthTruncatedUnderItsOwnPrefixFailsMac) {
    Handshake b = recipient_b();
    Bytes auth = hex(vectors::kAuth2);
    auth.resize(auth.size() - 10);
    store_be16(auth.data(), static_cast<uint16_t>(auth.size() - 2));
    auto r = feed(b, auth);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), Errc::kEciesBadMac);
}

TEST(Handshake, AuthRejections) {
    const PublicKey pub_b = test::public_key(vectors::kPubB);
    // An EIP-8 packet around any plaintext, correctly encrypted to B.
    auto seal = [&](const Bytes& plain) {
        Bytes packet(2);
        store_be16(packet.data(), static_cast<uint16_t>(plain.size() + ecies::kOverhead));
        append(packet, ecies::encrypt(pub_b, plain, packet).value());
        return packet;
    };
    auto auth_list = [](ByteView sig, ByteView pub, ByteView nonce, bool with_version) {
        Bytes payload;
        rlp::encode(payload, sig);
        rlp::encode(payload, pub);
        rlp::encode(payload, nonce);
        if (with_version) rlp::encode(payload, uint64_t{4});
        Bytes out;
        rlp::encode_header(out, {.list = true, .payload_length = payload.size()});
        append(out, payload);
        out.resize(out.size() + 100);
        return out;
    };
    const Bytes sig = hex(vectors::kAuthSignature);
    const Bytes pub_a = hex(vectors::kPubA);
    const Bytes nonce_a = hex(vectors::kNonceA);
    Bytes bad_flip = hex(vectors::kAuth2);
    bad_flip.back() ^= 0x80;
    Bytes bad_point = hex(vectors::kAuth2);
    bad_point[2] = 0x03;
    Bytes garbage(2 + 300, 0x77);
    store_be16(garbage.data(), 300);
    Bytes off_curve = pub_a;
    off_curve[63] ^= 1;
    Bytes bad_sig = sig;
    bad_sig[64] = 7;
    Bytes other_sig = sig;
    other_sig[10] ^= 1;

    struct Case {
        const char* what;
        Bytes packet;
        Errc expected;
    };
    const Case cases[] = {
        {"flipped mac", bad_flip, Errc::kEciesBadMac},
        {"R not uncompressed", bad_point, Errc::kEciesInvalidPoint},
        {"garbage", garbage, Errc::kEciesInvalidPoint},
        {"prefix 2049", Bytes{0x08, 0x01}, Errc::kHandshakeSizeTooLarge},
        {"prefix 65535", Bytes{0xff, 0xff, 0x00}, Errc::kHandshakeSizeTooLarge},
        {"prefix below overhead", Bytes{0x00, 0x70}, Errc::kHandshakeSizeTooSmall},
        {"prefix zero", Bytes{0x00, 0x00}, Errc::kHandshakeSizeTooSmall},
        {"plaintext not rlp", seal(Bytes(200, 0xff)), Errc::kMalformedAuth},
        {"empty list", seal(Bytes{0xc0}), Errc::kMalformedAuth},
        {"no version", seal(auth_list(sig, pub_a, nonce_a, false)), Errc::kMalformedAuth},
        {"short signature", seal(auth_list(ByteView{sig}.first(64), pub_a, nonce_a, true)), Errc::kMalformedAuth},
        {"short nonce", seal(auth_list(sig, pub_a, ByteView{nonce_a}.first(31), true)), Errc::kMalformedAuth},
        {"pubkey off curve", seal(auth_list(sig, off_curve, nonce_a, true)), Errc::kInvalidPublicKey},
        {"recovery id 7", seal(auth_list(bad_sig, pub_a, nonce_a, true)), Errc::kInvalidSignature},
    };
    for (const auto& c : cases) {
        Handshake b = recipient_b();
        auto r = feed(b, c.packet);
        ASSERT_FALSE(r) << c.what;
        EXPECT_EQ(r.error(), c.expected) << c.what << ": " << r.error().message();
        // A failed handshake stays failed.
        EXPECT_EQ(feed(b, hex(vectors::kAuth2)).error(), Errc::kHandshakeWrongState) << c.what;
        EXPECT_EQ(b.write_ack().error(), Errc::kHandshakeWrongState);
        EXPECT_FALSE(b.done());
    }

    // A well-formed auth with a tampered signature recovers some other ephemeral key (or none):
    // the handshake then produces secrets the initiator does not share, and the first frame MAC
    // fails. Here we only check it does not crash and yields no usable match.
    Handshake b = recipient_b();
    auto r = feed(b, seal(auth_list(other_sig, pub_a, nonce_a, true)));
    if (r) {
        ASSERT_TRUE(b.write_ack());
        EXPECT_NE(to_hex(b.secrets().value().aes), vectors::kAesSecret);
    } else {
        EXPECT_EQ(r.error(), Errc::kInvalidSignature);
    }
}

// Random packets under every valid size prefix: always an error, never a crash or a hang.
TEST(Handshake, RandomPacketsAreRejected) {
    for (int i = 0; i < 300; ++i) {
        uint8_t r[2];
        ASSERT_TRUE(random_bytes(r));
        const size_t size = ecies::kOverhead + load_be16(r) % (kMaxHandshakePacketSize - ecies::kOverhead + 1);
        Bytes packet(2 + size);
        ASSERT_TRUE(random_bytes(packet));
        store_be16(packet.data(), static_cast<uint16_t>(size));
        if (i % 2 == 0) packet[2] = 0x04;  // get past the prefix-byte check half of the time
        Handshake b = recipient_b();
        auto res = feed(b, packet);
        ASSERT_FALSE(res) << size;
        EXPECT_TRUE(res.error() == Errc::kEciesInvalidPoint || res.error() == Errc::kEciesBadMac)
            << res.error().message();
    }
}

// The legacy 307-byte auth is not EIP-8: its first two bytes read as a 1164-byte size, so the
// recipient waits for bytes that never come (the server's deadline ends it), like geth.
TEST(Handshake, LegacyAuthIsNotAccepted) {
    Handshake b = recipient_b();
    auto r = feed(b, hex(vectors::kAuth1));
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, 0x048cu + 2 - 307);
    EXPECT_FALSE(b.done());
}

TEST(Handshake, AckRejections) {
    // An ack for someone else (EIP-8 Ack2 is encrypted to A; C has another key).
    Handshake c = Handshake::initiator(PrivateKey::generate().value(), test::public_key(vectors::kPubB));
    ASSERT_TRUE(c.write_auth());
    auto r = feed(c, hex(vectors::kAck2));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), Errc::kEciesBadMac);

    // An ack whose ephemeral key is off the curve, and one that is not a list.
    const PublicKey pub_a = test::public_key(vectors::kPubA);
    auto seal = [&](const Bytes& plain) {
        Bytes packet(2);
        store_be16(packet.data(), static_cast<uint16_t>(plain.size() + ecies::kOverhead));
        append(packet, ecies::encrypt(pub_a, plain, packet).value());
        return packet;
    };
    Bytes eph = hex(vectors::kEphPubB);
    eph[63] ^= 1;
    Bytes payload;
    rlp::encode(payload, eph);
    rlp::encode(payload, hex(vectors::kNonceB));
    rlp::encode(payload, uint64_t{4});
    Bytes list;
    rlp::encode_header(list, {.list = true, .payload_length = payload.size()});
    append(list, payload);

    struct Case {
        const char* what;
        Bytes packet;
        Errc expected;
    };
    const Case cases[] = {
        {"ephemeral key off curve", seal(list), Errc::kInvalidPublicKey},
        {"string, not list", seal(Bytes{0x83, 1, 2, 3}), Errc::kMalformedAck},
        {"oversize prefix", Bytes{0x08, 0x01}, Errc::kHandshakeSizeTooLarge},
    };
    for (const auto& k : cases) {
        Handshake a = initiator_a();
        ASSERT_TRUE(a.write_auth());
        auto res = feed(a, k.packet);
        ASSERT_FALSE(res) << k.what;
        EXPECT_EQ(res.error(), k.expected) << k.what;
    }
}

TEST(Handshake, CallsOutOfOrder) {
    Handshake a = initiator_a();
    EXPECT_EQ(a.bytes_needed(), 0u);
    EXPECT_EQ(feed(a, hex(vectors::kAck2)).error(), Errc::kHandshakeWrongState);
    EXPECT_EQ(a.write_ack().error(), Errc::kHandshakeWrongState);
    EXPECT_EQ(a.secrets().error(), Errc::kHandshakeWrongState);
    ASSERT_TRUE(a.write_auth());
    EXPECT_EQ(a.write_auth().error(), Errc::kHandshakeWrongState);
    EXPECT_EQ(a.bytes_needed(), 2u);

    Handshake b = recipient_b();
    EXPECT_EQ(b.write_auth().error(), Errc::kHandshakeWrongState);
    EXPECT_EQ(b.write_ack().error(), Errc::kHandshakeWrongState);
    read_all(b, hex(vectors::kAuth2));
    EXPECT_EQ(feed(b, hex(vectors::kAuth2)).error(), Errc::kHandshakeWrongState);
    ASSERT_TRUE(b.write_ack());
    EXPECT_EQ(b.write_ack().error(), Errc::kHandshakeWrongState);
}

}  // namespace
}  // namespace headerd::rlpx
