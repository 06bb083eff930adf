#include "p2p/rlpx/secp256k1.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <secp256k1.h>
#include <secp256k1_ecdh.h>
#include <secp256k1_recovery.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "core/keccak.hpp"

namespace headerd::rlpx {
namespace {

// Created on first use. Randomization blinds the scalar multiplications against side channels;
// after it the context is only read, which libsecp256k1 allows from any number of threads.
const secp256k1_context* context() noexcept {
    static const secp256k1_context* const ctx = [] {
        secp256k1_context* c = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
        unsigned char seed[32];
        // Blinding is hardening only: an unblinded context still computes correct results, so a
        // failure here is not fatal.
        if (RAND_bytes(seed, sizeof(seed)) == 1 && secp256k1_context_randomize(c, seed) != 1) {
            OPENSSL_cleanse(seed, sizeof(seed));
        }
        OPENSSL_cleanse(seed, sizeof(seed));
        return c;
    }();
    return ctx;
}

// RLPx wants the bare X coordinate; libsecp256k1's default hashes the compressed point.
int copy_x(unsigned char* out, const unsigned char* x32, const unsigned char*, void*) {
    std::memcpy(out, x32, 32);
    return 1;
}

// discv5 wants the point compressed: 0x02 | (Y & 1), then X.
int compress_xy(unsigned char* out, const unsigned char* x32, const unsigned char* y32, void*) {
    out[0] = static_cast<unsigned char>(0x02 | (y32[31] & 1));
    std::memcpy(out + 1, x32, 32);
    return 1;
}

bool parse(const PublicKey& key, secp256k1_pubkey& out) noexcept {
    unsigned char buf[1 + kPublicKeySize];
    buf[0] = 0x04;
    std::memcpy(buf + 1, key.bytes().data(), kPublicKeySize);
    return secp256k1_ec_pubkey_parse(context(), &out, buf, sizeof(buf)) == 1;
}

// Writes the point's X || Y (64 bytes, the uncompressed form without its 0x04) to `xy`.
bool serialize_xy(const secp256k1_pubkey& point, uint8_t* xy) noexcept {
    unsigned char buf[1 + kPublicKeySize];
    size_t len = sizeof(buf);
    if (secp256k1_ec_pubkey_serialize(context(), buf, &len, &point, SECP256K1_EC_UNCOMPRESSED) != 1 ||
        len != sizeof(buf)) {
        return false;
    }
    std::memcpy(xy, buf + 1, kPublicKeySize);
    return true;
}

}  // namespace

Result<PublicKey> PublicKey::from_bytes(ByteView xy) noexcept {
    if (xy.size() != kPublicKeySize) return make_error_code(Errc::kInvalidPublicKey);
    PublicKey key;
    std::memcpy(key.bytes_.data(), xy.data(), kPublicKeySize);
    secp256k1_pubkey parsed;
    if (!parse(key, parsed)) return make_error_code(Errc::kInvalidPublicKey);
    return key;
}

Result<PublicKey> PublicKey::from_compressed(ByteView sec1) noexcept {
    if (sec1.size() != kCompressedKeySize) return make_error_code(Errc::kInvalidPublicKey);
    secp256k1_pubkey parsed;
    if (secp256k1_ec_pubkey_parse(context(), &parsed, sec1.data(), sec1.size()) != 1) {
        return make_error_code(Errc::kInvalidPublicKey);
    }
    PublicKey key;
    if (!serialize_xy(parsed, key.bytes_.data())) return make_error_code(Errc::kCryptoFailure);
    return key;
}

std::array<uint8_t, kCompressedKeySize> PublicKey::compressed() const noexcept {
    // The point is on the curve (the invariant): its compressed form is 0x02 | (Y & 1), then X.
    std::array<uint8_t, kCompressedKeySize> out{};
    out[0] = static_cast<uint8_t>(0x02 | (bytes_[kPublicKeySize - 1] & 1));
    std::memcpy(out.data() + 1, bytes_.data(), 32);
    return out;
}

Hash32 PublicKey::node_id() const noexcept { return keccak256(bytes_); }

Result<PrivateKey> PrivateKey::from_bytes(ByteView scalar) noexcept {
    if (scalar.size() != kPrivateKeySize) return make_error_code(Errc::kInvalidPrivateKey);
    PrivateKey key;
    std::memcpy(key.bytes_.data(), scalar.data(), kPrivateKeySize);
    if (secp256k1_ec_seckey_verify(context(), key.bytes_.data()) != 1) return make_error_code(Errc::kInvalidPrivateKey);
    secp256k1_pubkey pub;
    if (secp256k1_ec_pubkey_create(context(), &pub, key.bytes_.data()) != 1) {
        return make_error_code(Errc::kInvalidPrivateKey);
    }
    if (!serialize_xy(pub, key.public_key_.bytes_.data())) return make_error_code(Errc::kCryptoFailure);
    return key;
}

Result<PrivateKey> PrivateKey::generate() noexcept {
    // A random 256-bit string is >= n with probability about 2^-128; retry a few times anyway.
    std::array<uint8_t, kPrivateKeySize> scalar;
    for (int attempt = 0; attempt < 8; ++attempt) {
        if (auto r = random_bytes(scalar); !r) return r.error();
        auto key = from_bytes(scalar);
        OPENSSL_cleanse(scalar.data(), scalar.size());
        if (key) return key;
    }
    return make_error_code(Errc::kRandomFailure);
}

PrivateKey::~PrivateKey() { OPENSSL_cleanse(bytes_.data(), bytes_.size()); }

Result<Hash32> ecdh(const PrivateKey& key, const PublicKey& point) noexcept {
    secp256k1_pubkey parsed;
    if (!parse(point, parsed)) return make_error_code(Errc::kInvalidPublicKey);
    Hash32 x;
    if (secp256k1_ecdh(context(), x.data(), &parsed, key.bytes().data(), copy_x, nullptr) != 1) {
        return make_error_code(Errc::kCryptoFailure);
    }
    return x;
}

Result<std::array<uint8_t, kCompressedKeySize>> ecdh_compressed(const PrivateKey& key,
                                                                const PublicKey& point) noexcept {
    secp256k1_pubkey parsed;
    if (!parse(point, parsed)) return make_error_code(Errc::kInvalidPublicKey);
    std::array<uint8_t, kCompressedKeySize> shared;
    if (secp256k1_ecdh(context(), shared.data(), &parsed, key.bytes().data(), compress_xy, nullptr) != 1) {
        return make_error_code(Errc::kCryptoFailure);
    }
    return shared;
}

Result<Signature> sign_recoverable(const PrivateKey& key, const Hash32& message) noexcept {
    secp256k1_ecdsa_recoverable_signature sig;
    if (secp256k1_ecdsa_sign_recoverable(context(), &sig, message.data(), key.bytes().data(), nullptr, nullptr) != 1) {
        return make_error_code(Errc::kCryptoFailure);
    }
    Signature out;
    int recid = 0;
    if (secp256k1_ecdsa_recoverable_signature_serialize_compact(context(), out.data(), &recid, &sig) != 1) {
        return make_error_code(Errc::kCryptoFailure);
    }
    out[64] = static_cast<uint8_t>(recid);
    return out;
}

Result<PublicKey> recover(ByteView signature, const Hash32& message) noexcept {
    // v is the bare recovery id (0..3), not Ethereum's transaction-style 27/28.
    if (signature.size() != kSignatureSize || signature[64] > 3) return make_error_code(Errc::kInvalidSignature);
    secp256k1_ecdsa_recoverable_signature sig;
    if (secp256k1_ecdsa_recoverable_signature_parse_compact(context(), &sig, signature.data(), signature[64]) != 1) {
        return make_error_code(Errc::kInvalidSignature);
    }
    secp256k1_pubkey pub;
    if (secp256k1_ecdsa_recover(context(), &pub, &sig, message.data()) != 1) {
        return make_error_code(Errc::kInvalidSignature);
    }
    std::array<uint8_t, kPublicKeySize> xy;
    if (!serialize_xy(pub, xy.data())) return make_error_code(Errc::kCryptoFailure);
    return PublicKey::from_bytes(xy);
}

Result<void> verify(ByteView signature, const Hash32& message, const PublicKey& key) noexcept {
    if (signature.size() != kPlainSignatureSize) return make_error_code(Errc::kInvalidSignature);
    secp256k1_ecdsa_signature sig;
    secp256k1_pubkey parsed;
    if (secp256k1_ecdsa_signature_parse_compact(context(), &sig, signature.data()) != 1 || !parse(key, parsed) ||
        secp256k1_ecdsa_verify(context(), &sig, message.data(), &parsed) != 1) {
        return make_error_code(Errc::kInvalidSignature);
    }
    return {};
}

Result<void> random_bytes(std::span<uint8_t> out) noexcept {
    // RAND_bytes takes an int; handshake callers ask for a few hundred bytes at most.
    while (!out.empty()) {
        const size_t n = std::min<size_t>(out.size(), INT_MAX);
        if (RAND_bytes(out.data(), static_cast<int>(n)) != 1) return make_error_code(Errc::kRandomFailure);
        out = out.subspan(n);
    }
    return {};
}

}  // namespace headerd::rlpx
