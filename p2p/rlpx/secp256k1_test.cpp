#include "p2p/rlpx/secp256k1.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/keccak.hpp"
#include "p2p/rlpx/test_util.hpp"
#include "p2p/rlpx/test_vectors.hpp"

namespace headerd::rlpx {
namespace {

using test::hash;
using test::hex;
using test::to_hex;

struct KeyPair {
    const char* private_key;
    const char* public_key;
};

// Section A (ethereumjs testdata.json pubkeys) and E2 (go-ethereum TestSharedKeyPadding: a
// private key with a leading zero byte).
TEST(Secp256k1, PublicKeyFromPrivateKey) {
    const KeyPair pairs[] = {
        {vectors::kKeyA, vectors::kPubA},
        {vectors::kKeyB, vectors::kPubB},
        {vectors::kEphKeyA, vectors::kEphPubA},
        {vectors::kEphKeyB, vectors::kEphPubB},
        {"1adf5c18167d96a1f9a0b1ef63be8aa27eaf6032c233b2b38f7850cf5b859fd9",
         "1a8ed022ff7aec59dc1b440446bdda5ff6bcb3509a8b109077282b361efffbd8"
         "e040bd480b1deccc3bc40bd5b1fdcb7bfd352500b477cb9471366dbd4493f923"},
        {"0097a076fc7fcd9208240668e31c9abee952cbb6e375d1b8febc7499d6e16f1a",
         "6ab3ac374251f638d0abb3ef596d1dc67955b507c104e5f2009724812dc027b8"
         "8ad915f2b503a8be6facab6588731fefeb584fd2dfa9a77a5e0bba1ec439e4fa"},
    };
    for (const auto& p : pairs) {
        auto key = PrivateKey::from_bytes(hex(p.private_key));
        ASSERT_TRUE(key) << p.private_key;
        EXPECT_EQ(to_hex(key->public_key().bytes()), p.public_key);
        EXPECT_EQ(to_hex(key->bytes()), p.private_key);
        auto pub = PublicKey::from_bytes(hex(p.public_key));
        ASSERT_TRUE(pub);
        EXPECT_EQ(*pub, key->public_key());
    }
}

TEST(Secp256k1, NodeIdIsKeccakOfPublicKey) {
    const PublicKey pub = test::public_key(vectors::kPubA);
    EXPECT_EQ(pub.node_id(), keccak256(hex(vectors::kPubA)));
}

// go-ethereum TestSharedKeyStatic (E2) and the section A static shared secret.
TEST(Secp256k1, EcdhIsRawXCoordinate) {
    const PrivateKey prv1 = test::private_key("7ebbc6a8358bc76dd73ebc557056702c8cfc34e5cfcd90eb83af0347575fd2ad");
    const PrivateKey prv2 = test::private_key("6a3d6396903245bba5837752b9e0348874e72db0c4e11e9c485a81b4ea4353b9");
    const char* shared = "167ccc13ac5e8a26b131c3446030c60fbfac6aa8e31149d0869f93626a4cdf62";
    EXPECT_EQ(to_hex(ecdh(prv1, prv2.public_key()).value()), shared);
    EXPECT_EQ(to_hex(ecdh(prv2, prv1.public_key()).value()), shared);

    const PrivateKey a = test::private_key(vectors::kKeyA);
    const PrivateKey b = test::private_key(vectors::kKeyB);
    EXPECT_EQ(to_hex(ecdh(a, b.public_key()).value()), vectors::kStaticSharedAB);
    EXPECT_EQ(to_hex(ecdh(b, a.public_key()).value()), vectors::kStaticSharedAB);
    EXPECT_NE(to_hex(ecdh(a, b.public_key()).value()), vectors::kStaticSharedABDefaultHash);

    const PrivateKey eph_a = test::private_key(vectors::kEphKeyA);
    const PrivateKey eph_b = test::private_key(vectors::kEphKeyB);
    EXPECT_EQ(to_hex(ecdh(eph_a, eph_b.public_key()).value()), vectors::kEphemeralShared);
}

// discv5 (devp2p discv5-wire-test-vectors.md, "ECDH"): the shared point compressed, its first
// byte the parity of Y; its X is what RLPx's ecdh returns. Both sides agree.
TEST(Secp256k1, EcdhCompressedIsDiscv5SharedSecret) {
    const PrivateKey key = test::private_key("fb757dc581730490a1d7a00deea65e9b1936924caaea8f44d476014856b68736");
    const PublicKey point =
        PublicKey::from_compressed(hex("039961e4c2356d61bedb83052c115d311acb3a96f5777296dcf297351130266231")).value();
    const auto shared = ecdh_compressed(key, point).value();
    EXPECT_EQ(to_hex(shared), "033b11a2a1f214567e1537ce5e509ffd9b21373247f2a3ff6841f4976f53165e7e");
    EXPECT_EQ(to_hex(ByteView{shared}.subspan(1)), to_hex(ecdh(key, point).value()));

    const PrivateKey a = test::private_key(vectors::kKeyA);
    const PrivateKey b = test::private_key(vectors::kKeyB);
    EXPECT_EQ(ecdh_compressed(a, b.public_key()).value(), ecdh_compressed(b, a.public_key()).value());
}

// The auth signature of section A recovers to the ephemeral public key (v = 0). It was not made
// with RFC 6979 nonces, so ours differs in bytes but must recover to the same key.
TEST(Secp256k1, SignAndRecoverAuthSignature) {
    const Hash32 message = hash(vectors::kSignedMessage);
    auto pub = recover(hex(vectors::kAuthSignature), message);
    ASSERT_TRUE(pub);
    EXPECT_EQ(to_hex(pub->bytes()), vectors::kEphPubA);

    const PrivateKey eph_a = test::private_key(vectors::kEphKeyA);
    auto sig = sign_recoverable(eph_a, message);
    ASSERT_TRUE(sig);
    EXPECT_EQ(sign_recoverable(eph_a, message).value(), *sig);  // deterministic
    auto ours = recover(*sig, message);
    ASSERT_TRUE(ours);
    EXPECT_EQ(to_hex(ours->bytes()), vectors::kEphPubA);
}

TEST(Secp256k1, SignRecoverRoundTripWithFreshKeys) {
    for (int i = 0; i < 16; ++i) {
        auto key = PrivateKey::generate();
        ASSERT_TRUE(key);
        Hash32 message;
        ASSERT_TRUE(random_bytes(message));
        auto sig = sign_recoverable(*key, message);
        ASSERT_TRUE(sig);
        EXPECT_LE((*sig)[64], 1);
        auto pub = recover(*sig, message);
        ASSERT_TRUE(pub);
        EXPECT_EQ(*pub, key->public_key());
        // Another message recovers some other key, or none.
        message[0] ^= 1;
        auto other = recover(*sig, message);
        if (other) {
            EXPECT_NE(*other, key->public_key());
        }
    }
}

TEST(Secp256k1, GeneratedKeysDiffer) {
    auto a = PrivateKey::generate();
    auto b = PrivateKey::generate();
    ASSERT_TRUE(a && b);
    EXPECT_NE(a->bytes(), b->bytes());
    EXPECT_EQ(PrivateKey::from_bytes(a->bytes()).value().public_key(), a->public_key());
}

TEST(Secp256k1, InvalidPrivateKeys) {
    const char* bad[] = {
        "0000000000000000000000000000000000000000000000000000000000000000",
        "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141",  // n
        "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364142",  // n + 1
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "49a7b37aa6f6645917e7b807e9d1c00d4fa71f18343b0d4122a4d2df64dd6f",  // 31 bytes
        "49a7b37aa6f6645917e7b807e9d1c00d4fa71f18343b0d4122a4d2df64dd6fee00", "",
    };
    for (const char* h : bad) {
        auto key = PrivateKey::from_bytes(hex(h));
        ASSERT_FALSE(key) << h;
        EXPECT_EQ(key.error(), Errc::kInvalidPrivateKey);
    }
    EXPECT_TRUE(PrivateKey::from_bytes(hex("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364140")));
}

TEST(Secp256k1, InvalidPublicKeys) {
    Bytes off_curve = hex(vectors::kPubA);
    off_curve[63] ^= 1;
    Bytes prefixed = hex(vectors::kPubA);
    prefixed.insert(prefixed.begin(), 0x04);
    const Bytes cases[] = {off_curve, Bytes(64, 0), Bytes(63, 1), prefixed, Bytes{}};
    for (const Bytes& b : cases) {
        auto pub = PublicKey::from_bytes(b);
        ASSERT_FALSE(pub) << to_hex(b);
        EXPECT_EQ(pub.error(), Errc::kInvalidPublicKey);
    }
}

TEST(Secp256k1, InvalidSignatures) {
    const Hash32 message = hash(vectors::kSignedMessage);
    const Bytes good = hex(vectors::kAuthSignature);
    Bytes v4 = good;
    v4[64] = 4;
    Bytes v27 = good;
    v27[64] = 27;
    Bytes zero_r = good;
    std::fill(zero_r.begin(), zero_r.begin() + 32, 0);
    Bytes short_sig(good.begin(), good.end() - 1);
    const Bytes cases[] = {v4, v27, zero_r, short_sig, Bytes(65, 0xff)};
    for (const Bytes& b : cases) {
        auto pub = recover(b, message);
        ASSERT_FALSE(pub) << to_hex(b);
        EXPECT_EQ(pub.error(), Errc::kInvalidSignature);
    }
}

// The compressed form (ENR's "secp256k1" entry): 0x02 or 0x03 by the parity of Y, then X, and
// back to the same key; other lengths, prefixes and X values off the curve are refused.
TEST(Secp256k1, CompressedKeysRoundTrip) {
    for (int i = 0; i < 16; ++i) {
        const PrivateKey key = *PrivateKey::generate();
        const auto c = key.public_key().compressed();
        EXPECT_EQ(c[0], 0x02 | (key.public_key().bytes()[63] & 1));
        EXPECT_TRUE(std::equal(c.begin() + 1, c.end(), key.public_key().bytes().begin()));
        auto back = PublicKey::from_compressed(c);
        ASSERT_TRUE(back);
        EXPECT_EQ(*back, key.public_key());
    }
    const auto c = PrivateKey::generate()->public_key().compressed();
    Bytes prefix04(c.begin(), c.end());
    prefix04[0] = 0x04;
    const Bytes cases[] = {Bytes(c.begin(), c.end() - 1), prefix04, Bytes(33, 0x00), Bytes(65, 0x04), Bytes{}};
    for (const Bytes& b : cases) {
        auto key = PublicKey::from_compressed(b);
        ASSERT_FALSE(key) << to_hex(b);
        EXPECT_EQ(key.error(), Errc::kInvalidPublicKey);
    }
}

// verify() takes the 64-byte r || s of a signature: the signer's key and message pass; another
// key, another message, a changed byte, a high s and other lengths do not.
TEST(Secp256k1, VerifyPlainSignatures) {
    const PrivateKey key = *PrivateKey::generate();
    const Hash32 message = keccak256(ByteView{reinterpret_cast<const uint8_t*>("enr"), 3});
    const Signature sig = *sign_recoverable(key, message);
    const ByteView plain{sig.data(), kPlainSignatureSize};
    EXPECT_TRUE(verify(plain, message, key.public_key()));
    EXPECT_EQ(verify(plain, message, PrivateKey::generate()->public_key()).error(), Errc::kInvalidSignature);
    Hash32 other = message;
    other[0] ^= 1;
    EXPECT_EQ(verify(plain, other, key.public_key()).error(), Errc::kInvalidSignature);
    Bytes changed(plain.begin(), plain.end());
    changed[40] ^= 1;
    EXPECT_EQ(verify(changed, message, key.public_key()).error(), Errc::kInvalidSignature);
    EXPECT_EQ(verify(ByteView{sig}, message, key.public_key()).error(), Errc::kInvalidSignature);  // 65 bytes
    EXPECT_EQ(verify(plain.first(63), message, key.public_key()).error(), Errc::kInvalidSignature);
    // s replaced by n - s: the same signature in its high-s form, which libsecp256k1 refuses.
    const Bytes n = hex("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141");
    Bytes high(plain.begin(), plain.end());
    int borrow = 0;
    for (int i = 31; i >= 0; --i) {
        const int d = n[static_cast<size_t>(i)] - plain[32 + static_cast<size_t>(i)] - borrow;
        high[32 + static_cast<size_t>(i)] = static_cast<uint8_t>(d & 0xff);
        borrow = d < 0 ? 1 : 0;
    }
    EXPECT_EQ(verify(high, message, key.public_key()).error(), Errc::kInvalidSignature);
}

}  // namespace
}  // namespace headerd::rlpx
