#pragma once

// Session secrets agreed by the RLPx handshake (docs/rlpx.md "Secrets").

#include "core/bytes.hpp"
#include "core/keccak.hpp"
#include "p2p/rlpx/secp256k1.hpp"

namespace headerd::rlpx {

enum class Role { kInitiator, kRecipient };

// a XOR b, byte by byte: the handshake signs static-shared XOR nonce, and the frame MACs are seeded
// with mac-secret XOR nonce.
inline Hash32 xor32(const Hash32& a, const Hash32& b) noexcept {
    Hash32 out;
    for (size_t i = 0; i < out.size(); ++i) out[i] = a[i] ^ b[i];
    return out;
}

struct Secrets {
    Hash32 aes;             // AES-256-CTR key of both frame streams
    Hash32 mac;             // AES-256-ECB key of the frame MACs
    Keccak256 egress_mac;   // running MAC of frames we send, already seeded
    Keccak256 ingress_mac;  // running MAC of frames we receive, already seeded
    PublicKey remote;       // the peer's static key (its node id is remote.node_id())
};

// Derives the secrets from the ephemeral ECDH result, both nonces and both handshake packets
// exactly as they crossed the wire (EIP-8: including the 2-byte size prefix). The pre-EIP-8
// formats derive the same way from their 307/210-byte blobs, which is how the legacy test
// vectors are checked.
Secrets derive_secrets(Role role, const Hash32& ephemeral_shared, const Hash32& initiator_nonce,
                       const Hash32& recipient_nonce, ByteView auth_packet, ByteView ack_packet,
                       const PublicKey& remote);

}  // namespace headerd::rlpx
