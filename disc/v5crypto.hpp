#pragma once

// The cryptography of discv5.1 (devp2p discv5-wire.md, "Identity-Specific Cryptography in the
// Handshake" and "Packet Encoding"), identity scheme "v4": the handshake's ECDH and key
// derivation, the ID signature, the AES-128-GCM message cipher and the AES-128-CTR header mask.
// Each is a function of its arguments only, so the spec's primitive test vectors check each one
// alone (disc/v5wire_test.cpp). Sans-I/O: bytes in, bytes out; no exceptions.

#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "core/bytes.hpp"
#include "core/result.hpp"
#include "p2p/rlpx/secp256k1.hpp"

namespace headerd::disc::v5 {

inline constexpr size_t kKeySize = 16;                                 // AES-128 session keys
inline constexpr size_t kNonceSize = 12;                               // AES-GCM nonce, also the packet's nonce field
inline constexpr size_t kTagSize = 16;                                 // AES-GCM tag, appended to the ciphertext
inline constexpr size_t kMaskingIvSize = 16;                           // AES-CTR IV, the first 16 bytes of every packet
inline constexpr size_t kIdSignatureSize = rlpx::kPlainSignatureSize;  // r || s

using Key = std::array<uint8_t, kKeySize>;
using Nonce = std::array<uint8_t, kNonceSize>;
using MaskingIv = std::array<uint8_t, kMaskingIvSize>;
using IdSignature = std::array<uint8_t, kIdSignatureSize>;

// The two keys a handshake yields. The initiator (who answers WHOAREYOU) writes with
// initiator_key and reads with recipient_key; the recipient the other way round.
struct SessionKeys {
    Key initiator_key{};
    Key recipient_key{};
};

// HKDF-SHA256 over ecdh(secret, point) (the compressed shared point) with salt = challenge-data
// and info = "discovery v5 key agreement" || id_a || id_b; id_a is the initiator's node id and
// id_b the recipient's. The first 16 output bytes are initiator_key, the next 16 recipient_key.
// The initiator passes its ephemeral key and the recipient's static key, the recipient its static
// key and the initiator's ephemeral key: both get the same keys.
Result<SessionKeys> derive_keys(const rlpx::PrivateKey& secret, const rlpx::PublicKey& point, const Hash32& id_a,
                                const Hash32& id_b, ByteView challenge_data) noexcept;

// sha256("discovery v5 identity proof" || challenge-data || ephemeral-pubkey || dest-id): what
// the initiator signs to prove it holds its static key, bound to this very challenge, its
// ephemeral key and the node it talks to.
Hash32 id_signature_input(ByteView challenge_data, ByteView ephemeral_pubkey, const Hash32& dest_id) noexcept;
Result<IdSignature> make_id_signature(const rlpx::PrivateKey& key, ByteView challenge_data, ByteView ephemeral_pubkey,
                                      const Hash32& dest_id) noexcept;
// True when `signature` (64 bytes r || s) was made by `key` over these inputs.
bool verify_id_signature(ByteView signature, const rlpx::PublicKey& key, ByteView challenge_data,
                         ByteView ephemeral_pubkey, const Hash32& dest_id) noexcept;

// AES-128-GCM with a 12-byte nonce and `ad` authenticated but not encrypted; the output is the
// ciphertext with the 16-byte tag appended (as geth and the spec's vector have it).
Result<Bytes> encrypt_gcm(const Key& key, const Nonce& nonce, ByteView plaintext, ByteView ad) noexcept;
// The plaintext, or nullopt when `ciphertext` is shorter than the tag or the tag does not verify
// (wrong key, wrong nonce or ad, tampered bytes): the one answer a receiver may act on.
std::optional<Bytes> decrypt_gcm(const Key& key, const Nonce& nonce, ByteView ciphertext, ByteView ad) noexcept;

// XORs `data` in place with the AES-128-CTR keystream of key = dest_id[:16] and `iv`: masks a
// header on the way out and unmasks it on the way in (the same operation). Masking is no
// secrecy (the key is the public destination id), it only keeps packets from looking alike.
// False only if OpenSSL fails.
bool apply_mask(const Hash32& dest_id, const MaskingIv& iv, std::span<uint8_t> data) noexcept;

}  // namespace headerd::disc::v5
