#pragma once

// Errors of the RLPx layer (keys, ECIES, handshake, frames). One enum for the whole layer so a
// server can map any failure to one metric label and one disconnect decision.

#include <system_error>
#include <type_traits>

namespace headerd::rlpx {

enum class Errc {
    // keys and signatures
    kInvalidPrivateKey = 1,  // not 32 bytes, or not a scalar in [1, n-1]
    kInvalidPublicKey,       // not 64 bytes, or not a point on secp256k1
    kInvalidSignature,       // malformed, or no public key can be recovered from it
    kRandomFailure,          // OpenSSL's RNG failed
    kCryptoFailure,          // an OpenSSL or libsecp256k1 call failed on valid arguments
    // ECIES
    kEciesTooShort,      // shorter than R(65) || iv(16) || mac(32)
    kEciesInvalidPoint,  // R is not an uncompressed point on the curve
    kEciesBadMac,        // HMAC mismatch: wrong key, tampered bytes or wrong shared data
    // handshake
    kHandshakeWrongState,    // a call out of order, or after the handshake failed
    kHandshakeSizeTooLarge,  // EIP-8 size prefix above kMaxHandshakePacketSize
    kHandshakeSizeTooSmall,  // EIP-8 size prefix below the ECIES overhead
    kMalformedAuth,          // auth plaintext is not [sig, pubkey, nonce, version, ...]
    kMalformedAck,           // ack plaintext is not [ephemeral-pubkey, nonce, version, ...]
    // frames
    kFrameWrongState,  // header/body read out of order, wrong input length, or after a failure
    kBadHeaderMac,     // header MAC mismatch
    kBadFrameMac,      // frame MAC mismatch
    kFrameTooLarge,    // frame size above the codec's limit (or above 2^24 - 1 on write)
};

const std::error_category& rlpx_category() noexcept;
std::error_code make_error_code(Errc e) noexcept;

}  // namespace headerd::rlpx

template <>
struct std::is_error_code_enum<headerd::rlpx::Errc> : std::true_type {};
