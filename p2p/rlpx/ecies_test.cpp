#include "p2p/rlpx/ecies.hpp"

#include <gtest/gtest.h>

#include "core/keccak.hpp"
#include "p2p/rlpx/test_util.hpp"
#include "p2p/rlpx/test_vectors.hpp"

namespace headerd::rlpx {
namespace {

using test::hex;
using test::to_hex;

// go-ethereum TestKDF (E1): Z = "input", SHA-256, empty s1.
TEST(Ecies, ConcatKdf) {
    struct Case {
        size_t length;
        const char* output;
    };
    const Case cases[] = {
        {6, "858b192fa2ed"},
        {32, "858b192fa2ed4395e2bf88dd8d5770d67dc284ee539f12da8bceaa45d06ebae0"},
        {48, "858b192fa2ed4395e2bf88dd8d5770d67dc284ee539f12da8bceaa45d06ebae0700f1ab918a5f0413b8140f9940d6955"},
        {64,
         "858b192fa2ed4395e2bf88dd8d5770d67dc284ee539f12da8bceaa45d06ebae0700f1ab918a5f0413b8140f9940d6955"
         "f3467fd6672cce1024c5b1effccc0f61"},
    };
    for (const auto& c : cases) {
        auto out = ecies::concat_kdf(as_bytes("input"), c.length);
        ASSERT_TRUE(out);
        EXPECT_EQ(to_hex(*out), c.output) << c.length;
    }
}

// silkworm "EciesCipher.decrypt" (E3): a captured EIP-8 auth, s2 = its size prefix.
TEST(Ecies, DecryptCapturedAuth) {
    const PrivateKey key = test::private_key(vectors::kE3Key);
    auto plain = ecies::decrypt(key, hex(vectors::kE3Ciphertext), hex(vectors::kE3SharedMacData));
    ASSERT_TRUE(plain) << plain.error().message();
    EXPECT_EQ(to_hex(*plain), to_hex(hex(vectors::kE3Plaintext)));

    // silkworm "decrypt.invalid_mac": same bytes, other shared data.
    auto bad = ecies::decrypt(key, hex(vectors::kE3Ciphertext), hex("0121"));
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error(), Errc::kEciesBadMac);
}

// Legacy Auth1 / Ack1 of section A (s2 empty), and their decoded layouts.
TEST(Ecies, DecryptLegacyAuthAndAckOfEip8Vectors) {
    auto auth = ecies::decrypt(test::private_key(vectors::kKeyB), hex(vectors::kAuth1), {});
    ASSERT_TRUE(auth) << auth.error().message();
    ASSERT_EQ(auth->size(), 194u);
    const ByteView a{*auth};
    EXPECT_EQ(to_hex(a.subspan(0, 65)), vectors::kAuthSignature);
    EXPECT_EQ(to_hex(a.subspan(65, 32)), to_hex(keccak256(hex(vectors::kEphPubA))));
    EXPECT_EQ(to_hex(a.subspan(97, 64)), vectors::kPubA);
    EXPECT_EQ(to_hex(a.subspan(161, 32)), vectors::kNonceA);
    EXPECT_EQ(a[193], 0);

    auto ack = ecies::decrypt(test::private_key(vectors::kKeyA), hex(vectors::kAck1), {});
    ASSERT_TRUE(ack) << ack.error().message();
    ASSERT_EQ(ack->size(), 97u);
    EXPECT_EQ(to_hex(ByteView{*ack}.subspan(0, 64)), vectors::kEphPubB);
    EXPECT_EQ(to_hex(ByteView{*ack}.subspan(64, 32)), vectors::kNonceB);
    EXPECT_EQ((*ack)[96], 0);
}

// Section B: the legacy auth and ack decrypt to the published plaintexts.
TEST(Ecies, DecryptLegacySetB) {
    auto auth = ecies::decrypt(test::private_key(vectors::kLegacyReceiverKey), hex(vectors::kLegacyAuthCiphertext), {});
    ASSERT_TRUE(auth) << auth.error().message();
    EXPECT_EQ(to_hex(*auth), to_hex(hex(vectors::kLegacyAuthPlaintext)));
    auto ack = ecies::decrypt(test::private_key(vectors::kLegacyInitiatorKey), hex(vectors::kLegacyAckCiphertext), {});
    ASSERT_TRUE(ack) << ack.error().message();
    EXPECT_EQ(to_hex(*ack), to_hex(hex(vectors::kLegacyAckPlaintext)));
}

// EIP-8 packets decrypt with their own prefix as s2, and only with it.
TEST(Ecies, Eip8PacketsUseTheirPrefixAsSharedData) {
    struct Case {
        const char* packet;
        const char* key;
    };
    const Case cases[] = {{vectors::kAuth2, vectors::kKeyB},
                          {vectors::kAuth3, vectors::kKeyB},
                          {vectors::kAck2, vectors::kKeyA},
                          {vectors::kAck3, vectors::kKeyA}};
    for (const auto& c : cases) {
        const Bytes packet = hex(c.packet);
        const ByteView prefix = ByteView{packet}.first(2);
        const ByteView blob = ByteView{packet}.subspan(2);
        ASSERT_EQ(load_be16(packet.data()), blob.size());
        const PrivateKey key = test::private_key(c.key);
        auto plain = ecies::decrypt(key, blob, prefix);
        ASSERT_TRUE(plain) << plain.error().message();
        EXPECT_EQ(plain->size(), blob.size() - ecies::kOverhead);
        auto without = ecies::decrypt(key, blob, {});
        ASSERT_FALSE(without);
        EXPECT_EQ(without.error(), Errc::kEciesBadMac);
    }
}

TEST(Ecies, RoundTrip) {
    const PrivateKey key = PrivateKey::generate().value();
    const Bytes shared = hex("01cf");
    for (size_t size : {0u, 1u, 15u, 16u, 17u, 169u, 1000u, 5000u}) {
        Bytes plain(size);
        ASSERT_TRUE(random_bytes(plain));
        auto sealed = ecies::encrypt(key.public_key(), plain, shared);
        ASSERT_TRUE(sealed);
        EXPECT_EQ(sealed->size(), size + ecies::kOverhead);
        EXPECT_EQ((*sealed)[0], 0x04);
        auto opened = ecies::decrypt(key, *sealed, shared);
        ASSERT_TRUE(opened) << size << ": " << opened.error().message();
        EXPECT_EQ(*opened, plain);
        // Fresh ephemeral key and IV each time.
        EXPECT_NE(ecies::encrypt(key.public_key(), plain, shared).value(), *sealed);
    }
}

TEST(Ecies, Rejections) {
    const PrivateKey key = PrivateKey::generate().value();
    const PrivateKey other = PrivateKey::generate().value();
    const Bytes plain(100, 0xab);
    const Bytes sealed = ecies::encrypt(key.public_key(), plain, {}).value();

    struct Case {
        const char* what;
        Bytes message;
        Errc expected;
    };
    auto flipped = [&](size_t i) {
        Bytes b = sealed;
        b[i] ^= 0x01;
        return b;
    };
    Bytes compressed = sealed;
    compressed[0] = 0x02;
    const Case cases[] = {
        {"empty", {}, Errc::kEciesTooShort},
        {"one short of overhead", Bytes(sealed.begin(), sealed.begin() + ecies::kOverhead - 1), Errc::kEciesTooShort},
        {"truncated body", Bytes(sealed.begin(), sealed.end() - 1), Errc::kEciesBadMac},
        {"compressed R prefix", compressed, Errc::kEciesInvalidPoint},
        {"R off the curve", flipped(64), Errc::kEciesInvalidPoint},
        {"iv flipped", flipped(65), Errc::kEciesBadMac},
        {"ciphertext flipped", flipped(81 + 50), Errc::kEciesBadMac},
        {"mac flipped", flipped(sealed.size() - 1), Errc::kEciesBadMac},
        {"garbage", Bytes(300, 0x5a), Errc::kEciesInvalidPoint},
    };
    for (const auto& c : cases) {
        auto r = ecies::decrypt(key, c.message, {});
        ASSERT_FALSE(r) << c.what;
        EXPECT_EQ(r.error(), c.expected) << c.what << ": " << r.error().message();
    }
    auto wrong_key = ecies::decrypt(other, sealed, {});
    ASSERT_FALSE(wrong_key);
    EXPECT_EQ(wrong_key.error(), Errc::kEciesBadMac);
    auto wrong_shared = ecies::decrypt(key, sealed, hex("00"));
    ASSERT_FALSE(wrong_shared);
    EXPECT_EQ(wrong_shared.error(), Errc::kEciesBadMac);
}

}  // namespace
}  // namespace headerd::rlpx
