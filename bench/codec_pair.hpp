#pragma once

// A matching pair of RLPx frame codecs from fixed secrets, for the in-process serving benchmarks
// (serve_benchmark, history_benchmark): what the client encrypts, the server decrypts, and the other
// way round, as an RLPx handshake would leave them; and the client's stream of request frames.

#include <string_view>
#include <utility>
#include <vector>

#include "core/keccak.hpp"
#include "core/result.hpp"
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

// The client side of a benchmark: the frame data (id + snappy payload) of its requests, made once;
// refill() encrypts them back to back with the client codec, in the order the server will read
// them (each frame advances the MAC and CTR state of the pair). The requests repeat every size()
// frames, which the server does not mind; in return a refill only encrypts, into buffers of a
// fixed size, and allocates nothing.
class FrameStream {
  public:
    FrameStream(rlpx::FrameCodec codec, std::vector<Bytes> data) : codec_(std::move(codec)), data_(std::move(data)) {}

    Outcome<void> refill() {
        wire_.clear();
        ends_.clear();
        for (const Bytes& d : data_) {
            if (auto r = codec_.write_frame(d, wire_); !r) return make_error("request: " + r.error().message());
            ends_.push_back(wire_.size());
        }
        return {};
    }
    size_t size() const noexcept { return ends_.size(); }
    ByteView frame(size_t i) const noexcept {
        const size_t begin = i == 0 ? 0 : ends_[i - 1];
        return ByteView{wire_}.subspan(begin, ends_[i] - begin);
    }
    rlpx::FrameCodec& codec() noexcept { return codec_; }

  private:
    rlpx::FrameCodec codec_;
    std::vector<Bytes> data_;  // frame data per request
    Bytes wire_;
    std::vector<size_t> ends_;
};

}  // namespace headerd::bench
