#pragma once

// ECIES as RLPx uses it (go-ethereum's ECIES_AES128_SHA256 on secp256k1):
//
//   message = R(65, 0x04 || X || Y) || iv(16) || AES-128-CTR(kE, iv, plaintext) || d(32)
//   z       = ECDH(r, K) raw X;  kE || kM' = concatKDF-SHA256(z, 32);  kM = SHA-256(kM')
//   d       = HMAC-SHA-256(kM, iv || ciphertext || shared_mac_data)
//
// The KDF's "other info" (s1) is always empty in RLPx. See docs/rlpx.md.

#include <cstddef>

#include "core/bytes.hpp"
#include "core/result.hpp"
#include "p2p/rlpx/secp256k1.hpp"

namespace headerd::rlpx::ecies {

// Bytes an encryption adds to the plaintext: R(65) + iv(16) + HMAC(32).
inline constexpr size_t kOverhead = 65 + 16 + 32;

// Encrypts to `recipient` with a fresh ephemeral key and IV. `shared_mac_data` (s2) is covered by
// the MAC but not sent; the receiver must pass the same bytes to decrypt().
Result<Bytes> encrypt(const PublicKey& recipient, ByteView plaintext, ByteView shared_mac_data) noexcept;

// Checks the MAC in constant time before decrypting anything. Errors: kEciesTooShort,
// kEciesInvalidPoint (R not an uncompressed on-curve point), kEciesBadMac.
Result<Bytes> decrypt(const PrivateKey& key, ByteView message, ByteView shared_mac_data) noexcept;

// NIST SP 800-56 concatenation KDF with SHA-256 and empty other-info: the first `length` bytes
// of SHA-256(be32(1) || z) || SHA-256(be32(2) || z) || ...
Result<Bytes> concat_kdf(ByteView z, size_t length) noexcept;

}  // namespace headerd::rlpx::ecies
