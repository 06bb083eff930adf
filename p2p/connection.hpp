#pragma once

// One devp2p connection over TCP: the RLPx handshake, framed and (after Hello) snappy-compressed
// messages, each read and write under a deadline. Used by the server's sessions and by the dialing
// client. Wire format: docs/wire.md and docs/rlpx.md.
//
// Thread-safety: none; one coroutine drives a connection at a time (so there is one writer and the
// frame MAC states never interleave).

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "core/bytes.hpp"
#include "p2p/eth/base_protocol.hpp"
#include "p2p/eth/message_codec.hpp"
#include "p2p/rlpx/frame.hpp"
#include "p2p/rlpx/handshake.hpp"
#include "p2p/rlpx/secp256k1.hpp"

namespace headerd::p2p {

struct MessageMeters;

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// Why a connection ends; thrown inside a session and caught in one place, which sends the
// Disconnect (when the protocol allows one) and closes the socket.
class PeerError : public std::runtime_error {
  public:
    PeerError(DisconnectReason reason, const std::string& what, bool can_send = true)
        : std::runtime_error(what), reason_(reason), can_send_(can_send) {}
    DisconnectReason reason() const noexcept { return reason_; }
    // False before the RLPx handshake completed (no frames yet) or when the peer is gone.
    bool can_send() const noexcept { return can_send_; }

  private:
    DisconnectReason reason_;
    bool can_send_;
};

// The peer's deadline passed (no reply in time). Distinct so the session can ping an idle peer.
class PeerTimeout : public PeerError {
  public:
    explicit PeerTimeout(const std::string& what) : PeerError(DisconnectReason::kPingTimeout, what) {}
};

class Connection {
  public:
    // Largest frame we accept from a peer: a BlockHeaders reply of 1024 headers is about 600 KB; eth
    // messages are capped at 10 MiB by geth. Snappy output is at most this much plus a little.
    static constexpr size_t kMaxFrameSize = (size_t{16} << 20) - 1;

    explicit Connection(tcp::socket socket);

    // RLPx handshake as the side that accepted (recipient) or dialed (initiator), under `timeout`.
    asio::awaitable<void> accept_handshake(const rlpx::PrivateKey& key, Clock::duration timeout);
    asio::awaitable<void> dial_handshake(const rlpx::PrivateKey& key, const rlpx::PublicKey& remote,
                                         Clock::duration timeout);

    // Reads one message. The payload view stays valid until the next read.
    asio::awaitable<Message> read_message(Clock::duration timeout);
    // Writes one message (compressed once snappy is on, except Hello).
    asio::awaitable<void> write_message(uint64_t id, ByteView payload, Clock::duration timeout);
    // Best effort: Disconnect with `reason` under a short deadline, then close. Never throws.
    asio::awaitable<void> disconnect(DisconnectReason reason);

    // Counts every message read and written from now on: base-protocol ids in `base`, ids from
    // `eth_offset` on in `eth` (either may be null: not counted). REQUIRES: the meters outlive this.
    void set_meters(const MessageMeters* base, const MessageMeters* eth, uint64_t eth_offset) noexcept {
        base_meters_ = base;
        eth_meters_ = eth;
        eth_offset_ = eth_offset;
    }

    // Encodes (and compresses) outgoing messages in `shared` instead of a buffer of its own.
    // write_message() is done with that buffer before it first suspends, so connections driven by
    // one thread may share one. REQUIRES: every connection sharing it runs on the same thread, and
    // it outlives them.
    void share_encode_buffer(Bytes* shared) noexcept { shared_encoded_ = shared; }

    void enable_snappy() noexcept { snappy_ = true; }
    bool snappy() const noexcept { return snappy_; }
    const std::optional<rlpx::PublicKey>& remote_key() const noexcept { return remote_; }
    std::string remote_address() const;
    void close() noexcept;
    tcp::socket& socket() noexcept { return socket_; }

  private:
    asio::awaitable<void> read_exact(std::span<uint8_t> out, Clock::time_point deadline);
    asio::awaitable<void> write_all(ByteView data, Clock::time_point deadline);
    void count(bool ingress, uint64_t id, size_t wire_bytes) const noexcept;
    // Feeds the peer's auth or ack to `hs` until it has the whole packet.
    asio::awaitable<void> read_handshake(rlpx::Handshake& hs, Clock::time_point deadline);
    // Derives the session secrets from a finished handshake and switches to frames.
    void start_framing(rlpx::Handshake& hs);

    tcp::socket socket_;
    asio::steady_timer timer_;
    std::optional<rlpx::FrameCodec> codec_;
    std::optional<rlpx::PublicKey> remote_;
    bool snappy_{false};
    bool broken_{false};  // a write failed part-way: the byte stream cannot carry another frame
    const MessageMeters* base_meters_{nullptr};
    const MessageMeters* eth_meters_{nullptr};
    uint64_t eth_offset_{0};
    // Per-connection buffers, reused for every message.
    Bytes frame_;    // encrypted body as read, decrypted in place
    Bytes message_;  // decompressed payload
    Bytes encoded_;  // id + (compressed) payload being written, unless shared_encoded_ is set
    Bytes* shared_encoded_{nullptr};
    Bytes wire_;  // encrypted frame being written
};

}  // namespace headerd::p2p
