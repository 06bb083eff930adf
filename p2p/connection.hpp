#pragma once

// One devp2p connection over TCP: the RLPx handshake, then framed and (after Hello)
// snappy-compressed messages. Full duplex: one reader and any number of writers at a time, each
// side under its own deadline, so a session can answer Pings or push a BlockRangeUpdate while a
// reply is being written, and a client can pipeline requests while its reader waits for replies.
// Wire format: docs/rlpx.md and docs/wire.md; sessions and limits: docs/wire.md, "Sessions".
//
// Writes are serialized in call order: write_message() encrypts its frame before its first
// suspension (the frame MAC and the AES-CTR stream must advance in wire order), then either writes
// it or queues it behind the frame being written, and returns once its frame is on the wire.
//
// Thread-safety: none. A connection, and the WriteBuffers it shares, belong to the one thread
// (worker) that runs its session.

#include <array>
#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "core/bytes.hpp"
#include "p2p/peer_error.hpp"
#include "p2p/rlpx/frame.hpp"
#include "p2p/rlpx/handshake.hpp"
#include "p2p/rlpx/secp256k1.hpp"
#include "p2p/wire/base_protocol.hpp"
#include "p2p/wire/message_codec.hpp"

namespace headerd::p2p {

struct MessageMeters;

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// Per-session limits. The defaults are geth's; tests and load tools set short ones.
struct SessionLimits {
    // RLPx handshake, Hello and Status together (geth gives RLPx 5 s and Status another 5 s).
    Clock::duration handshake{std::chrono::seconds(5)};
    // A peer that sends nothing for this long gets a Ping; one silent for two periods is dropped
    // (geth pings every 15 s and drops after 30 s without a frame). A frame that started arriving
    // must also be complete within one period.
    Clock::duration idle{std::chrono::seconds(15)};
    // The peer must take each frame we write within this (geth: 20 s per frame).
    Clock::duration write{std::chrono::seconds(10)};
    // Largest frame accepted: a BlockHeaders reply of 1024 headers is about 600 KB; eth messages are
    // capped at 10 MiB. Snappy output is at most that plus a little, and the 24-bit size field
    // cannot say more than 16 MiB - 1.
    size_t max_frame{rlpx::kMaxFrameSizeField};
};

// Encrypted frames waiting to be written, or just written, kept for reuse so that steady-state
// writing does not allocate and an idle connection holds no reply-sized buffer.
class FramePool {
  public:
    Bytes take() {
        if (free_.empty()) return Bytes();
        Bytes b = std::move(free_.back());
        free_.pop_back();
        b.clear();
        return b;
    }
    // Keeps at most kMaxKept buffers of at most kMaxKeptBytes each: a pool serves the writes in
    // progress on one thread, and one 1024-header reply must not pin its size forever.
    void give(Bytes&& b) {
        if (b.capacity() <= kMaxKeptBytes && free_.size() < kMaxKept) free_.push_back(std::move(b));
    }
    size_t size() const noexcept { return free_.size(); }

    static constexpr size_t kMaxKept = 16;
    static constexpr size_t kMaxKeptBytes = size_t{1} << 20;

  private:
    std::vector<Bytes> free_;
};

// What writing needs besides the codec: the encode buffer (id + compressed payload, consumed before
// the frame is queued) and the frame pool. Connections driven by one thread share one set (a
// server worker's); a lone connection owns its own.
struct WriteBuffers {
    Bytes encoded;
    FramePool frames;
};

class Connection {
  public:
    // `shared`: write buffers of the thread that drives this connection; null: its own. REQUIRES:
    // shared outlives the connection and is used only on that thread.
    explicit Connection(tcp::socket socket, SessionLimits limits = {}, WriteBuffers* shared = nullptr);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    // RLPx handshake as the side that accepted (recipient) or dialed (initiator), done by
    // `deadline`. Throws PeerError (kHandshakeTimeout, kBadHandshake, kNetwork).
    asio::awaitable<void> accept_handshake(const rlpx::PrivateKey& key, Clock::time_point deadline);
    asio::awaitable<void> dial_handshake(const rlpx::PrivateKey& key, const rlpx::PublicKey& remote,
                                         Clock::time_point deadline);

    // Reads one message. nullopt when no frame began to arrive by `deadline`: an idle peer, a
    // value, and the stream is intact. A frame that began must complete within limits().idle, else
    // kFrameTimeout. The payload view stays valid until the next read. Throws PeerError.
    // REQUIRES: one reader at a time.
    asio::awaitable<std::optional<Message>> read_message(Clock::time_point deadline);

    // Hands over the buffer that holds the last read message's payload, so the payload outlives
    // the next read without a copy: the views into `payload` (which must be that message's) stay
    // valid and now point into the returned buffer. The next read allocates a buffer of its own.
    Bytes take_payload_buffer(ByteView payload);
    // Gives a buffer back (one whose payload the caller is done with) for the read after the next
    // take_payload_buffer to use: a buffer already that large is neither allocated nor zeroed
    // again. One is kept, the largest up to the size the connection keeps anyway.
    void give_payload_buffer(Bytes buffer) noexcept;
    // Writes one message (compressed once snappy is on, except Hello) within limits().write; see
    // the class comment for ordering. Throws PeerError (kWriteTimeout or kNetwork; every call after
    // a failed write throws that failure's kind at once: a partial frame leaves nothing sendable).
    asio::awaitable<void> write_message(uint64_t id, ByteView payload);
    // write_message of payload `prefix ‖ body` where the body comes compressed already
    // (p2p/wire/message_codec.hpp, encode_spliced_frame_data): only the prefix is compressed here.
    // REQUIRES: snappy() (without snappy the caller sends the payload as it is).
    asio::awaitable<void> write_spliced_message(uint64_t id, ByteView prefix, const CompressedBody& body);
    // Best effort: Disconnect with `reason` within one second (or limits().write if shorter), then
    // close, after up to one more second draining what the peer still sends (so the close is not a
    // reset that could discard the Disconnect). Sends nothing before the RLPx handshake or after a
    // failed write. Never throws.
    asio::awaitable<void> disconnect(DisconnectReason reason);

    // Counts every message read and written from now on: base-protocol ids in `base`, ids from
    // `eth_offset` on in `eth` (either may be null: not counted). REQUIRES: the meters outlive this.
    void set_meters(const MessageMeters* base, const MessageMeters* eth, uint64_t eth_offset) noexcept {
        base_meters_ = base;
        eth_meters_ = eth;
        eth_offset_ = eth_offset;
    }

    void enable_snappy() noexcept { snappy_ = true; }
    bool snappy() const noexcept { return snappy_; }
    const SessionLimits& limits() const noexcept { return limits_; }
    const std::optional<rlpx::PublicKey>& remote_key() const noexcept { return remote_; }
    // "1.2.3.4:5678", taken when the connection was made (still valid after close).
    const std::string& remote_address() const noexcept { return address_; }
    // Ends the pending read, and every later one, with kNetwork (a session told to stop cannot miss
    // it by being between two reads). Writes are left alone: a frame being written finishes within
    // its deadline, so the stream stays at a frame boundary and a Disconnect can still follow.
    void cancel() noexcept;
    void close() noexcept;
    bool is_open() const noexcept { return socket_.is_open(); }
    asio::any_io_executor executor() noexcept { return socket_.get_executor(); }
    // Bytes this connection holds in its own buffers now (read side, own write buffers, queued
    // frames): for memory tests and benchmarks.
    size_t buffered_bytes() const noexcept;

  private:
    // Fills `out` from the read-ahead buffer and the socket; false if `deadline` passed first.
    asio::awaitable<bool> read_exact(std::span<uint8_t> out, Clock::time_point deadline);
    // Waits until the socket has bytes to read; false if `deadline` passed first.
    asio::awaitable<bool> wait_readable(Clock::time_point deadline);
    asio::awaitable<void> write_all(ByteView data, Clock::time_point deadline);
    // Writes `payload`, or when `body` is set the payload `payload ‖ body` with the body compressed
    // already.
    asio::awaitable<void> write_frame(uint64_t id, ByteView payload, Clock::duration timeout,
                                      const CompressedBody* body = nullptr);
    // After our Disconnect: stop sending and drop the peer's input until it closes or `deadline`.
    asio::awaitable<void> linger(Clock::time_point deadline);
    [[noreturn]] void fail_write(PeerErrorKind kind, const std::string& what);
    void wake_writers() noexcept;
    size_t take_buffered(std::span<uint8_t> out) noexcept;
    void count(bool ingress, uint64_t id, size_t wire_bytes) const noexcept;
    // Feeds the peer's auth or ack to `hs` until it has the whole packet.
    asio::awaitable<void> read_handshake(rlpx::Handshake& hs, Clock::time_point deadline);
    // Derives the session secrets from a finished handshake and switches to frames.
    void start_framing(rlpx::Handshake& hs);

    tcp::socket socket_;
    SessionLimits limits_;
    std::string address_;
    asio::steady_timer read_timer_;
    asio::steady_timer write_timer_;
    // Never expires; cancel() on it wakes the writers queued behind the one writing.
    asio::steady_timer written_;
    std::optional<rlpx::FrameCodec> codec_;
    std::optional<rlpx::PublicKey> remote_;
    bool snappy_{false};
    bool reads_cancelled_{false};
    const MessageMeters* base_meters_{nullptr};
    const MessageMeters* eth_meters_{nullptr};
    uint64_t eth_offset_{0};

    // Read side. Small reads (frame headers, requests) go through the read-ahead buffer, so a frame
    // header and a small body usually take one recv.
    std::array<uint8_t, 256> ahead_{};
    size_t ahead_begin_{0};
    size_t ahead_end_{0};
    Bytes frame_;    // encrypted body as read, decrypted in place
    Bytes message_;  // decompressed payload
    Bytes spare_;    // given back by give_payload_buffer: the next buffer take_payload_buffer leaves

    // Write side.
    std::unique_ptr<WriteBuffers> own_buffers_;
    WriteBuffers* buffers_;
    bool writing_{false};
    bool broken_{false};  // a write failed part-way: the byte stream cannot carry another frame
    PeerErrorKind write_error_kind_{PeerErrorKind::kNetwork};
    std::string write_error_;
    uint64_t encrypted_seq_{0};                     // frames encrypted so far
    uint64_t written_seq_{0};                       // frames fully written so far
    std::deque<std::pair<uint64_t, Bytes>> queue_;  // encrypted, waiting behind the writer
};

}  // namespace headerd::p2p
