#pragma once

// A matching pair of RLPx frame codecs from fixed secrets, for the in-process serving benchmarks
// (serve_benchmark, history_benchmark): what the client encrypts, the server decrypts, and the other
// way round, as an RLPx handshake would leave them.

#include <string_view>

#include "core/keccak.hpp"
#include "p2p/connection.hpp"
#include "p2p/rlpx/frame.hpp"
#include "p2p/rlpx/secrets.hpp"

namespace headerd::bench {

inline Hash32 fixed_hash(std::string_view label) {
    return keccak256(ByteView{reinterpret_cast<const uint8_t*>(label.data()), label.size()});
}

struct CodecPair {
    rlpx::FrameCodec client;
    rlpx::FrameCodec server;
};

inline CodecPair make_codecs() {
    const Hash32 shared = fixed_hash("serve_benchmark ephemeral shared secret");
    const Hash32 nonce_a = fixed_hash("serve_benchmark initiator nonce");
    const Hash32 nonce_b = fixed_hash("serve_benchmark recipient nonce");
    const Bytes auth(307, 0xa1);  // stand-ins for the two handshake packets the secrets hash
    const Bytes ack(210, 0xb2);
    const Hash32 key_a = fixed_hash("serve_benchmark client key");
    const Hash32 key_b = fixed_hash("serve_benchmark server key");
    const auto client_key = rlpx::PrivateKey::from_bytes(key_a).value();
    const auto server_key = rlpx::PrivateKey::from_bytes(key_b).value();
    return CodecPair{
        rlpx::FrameCodec(
            rlpx::derive_secrets(rlpx::Role::kInitiator, shared, nonce_a, nonce_b, auth, ack, server_key.public_key()),
            p2p::SessionLimits{}.max_frame),
        rlpx::FrameCodec(
            rlpx::derive_secrets(rlpx::Role::kRecipient, shared, nonce_a, nonce_b, auth, ack, client_key.public_key()),
            p2p::SessionLimits{}.max_frame),
    };
}

}  // namespace headerd::bench
