#pragma once

// secp256k1 keys and the three operations RLPx needs from them: ECDH (raw X coordinate),
// recoverable ECDSA signatures, and key generation; and discv5's ECDH (the compressed point).
// Backed by libsecp256k1 with one process-wide context (randomized once, then only read, so all
// functions are thread-safe).

#include <array>
#include <cstdint>
#include <span>

#include "core/bytes.hpp"
#include "core/result.hpp"
#include "p2p/rlpx/error.hpp"

namespace headerd::rlpx {

inline constexpr size_t kPrivateKeySize = 32;
inline constexpr size_t kPublicKeySize = 64;       // X || Y, no 0x04 prefix (devp2p "pubkey64")
inline constexpr size_t kSignatureSize = 65;       // r || s || v, v in {0, 1}
inline constexpr size_t kCompressedKeySize = 33;   // 0x02 or 0x03 (the parity of Y) || X
inline constexpr size_t kPlainSignatureSize = 64;  // r || s, no recovery id (ENR's "v4" scheme)

using Signature = std::array<uint8_t, kSignatureSize>;

// A point on secp256k1. Invariant: bytes() is a valid, on-curve X || Y.
class PublicKey {
  public:
    // 64 bytes X || Y. Errc::kInvalidPublicKey if the length is wrong or the point is off the curve.
    static Result<PublicKey> from_bytes(ByteView xy) noexcept;
    // 33 bytes in SEC1 compressed form. Errc::kInvalidPublicKey if malformed or off the curve.
    static Result<PublicKey> from_compressed(ByteView sec1) noexcept;

    std::array<uint8_t, kCompressedKeySize> compressed() const noexcept;

    const std::array<uint8_t, kPublicKeySize>& bytes() const noexcept { return bytes_; }
    // devp2p node id: keccak256 of the 64 bytes.
    Hash32 node_id() const noexcept;

    friend bool operator==(const PublicKey&, const PublicKey&) = default;

  private:
    PublicKey() = default;
    friend class PrivateKey;
    std::array<uint8_t, kPublicKeySize> bytes_{};
};

// A scalar in [1, n-1] and its public key (computed once, at construction). The scalar is
// wiped when the object dies.
class PrivateKey {
  public:
    // 32 bytes big-endian. Errc::kInvalidPrivateKey if zero, >= n or the wrong length.
    static Result<PrivateKey> from_bytes(ByteView scalar) noexcept;
    // A fresh key from OpenSSL's CSPRNG.
    static Result<PrivateKey> generate() noexcept;

    PrivateKey(const PrivateKey&) = default;
    PrivateKey& operator=(const PrivateKey&) = default;
    ~PrivateKey();

    const std::array<uint8_t, kPrivateKeySize>& bytes() const noexcept { return bytes_; }
    const PublicKey& public_key() const noexcept { return public_key_; }

  private:
    PrivateKey() = default;
    std::array<uint8_t, kPrivateKeySize> bytes_{};
    PublicKey public_key_;
};

// Shared secret of RLPx and ECIES: the raw 32-byte X coordinate of key * point. Not hashed,
// unlike libsecp256k1's default ECDH output.
Result<Hash32> ecdh(const PrivateKey& key, const PublicKey& point) noexcept;
// Shared secret of discv5: the whole point key * point in SEC1 compressed form (33 bytes, the
// parity of Y then X). discv5 keeps the Y parity that RLPx's raw X drops.
Result<std::array<uint8_t, kCompressedKeySize>> ecdh_compressed(const PrivateKey& key, const PublicKey& point) noexcept;

// Signs a 32-byte value as is (the caller has already hashed or derived it). Deterministic
// (RFC 6979).
Result<Signature> sign_recoverable(const PrivateKey& key, const Hash32& message) noexcept;
// The public key that made `signature` over `message`; Errc::kInvalidSignature if none.
Result<PublicKey> recover(ByteView signature, const Hash32& message) noexcept;

// Checks a 64-byte r || s signature of `message` by `key` (libsecp256k1's rule: s in the lower
// half, as signing produces it). Errc::kInvalidSignature if it is malformed or does not match.
Result<void> verify(ByteView signature, const Hash32& message, const PublicKey& key) noexcept;

// Fills `out` from OpenSSL's CSPRNG.
Result<void> random_bytes(std::span<uint8_t> out) noexcept;

}  // namespace headerd::rlpx
