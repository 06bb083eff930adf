#include "p2p/connection.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <functional>
#include <utility>

#include <fmt/format.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/awaitable.hpp"
#include "p2p/eth/messages.hpp"
#include "p2p/net_metrics.hpp"
#include "p2p/rlpx/handshake.hpp"

namespace headerd::p2p {
namespace {

using namespace boost::asio::experimental::awaitable_operators;

// Buffers are reused between messages, but one huge (legal) frame must not pin its memory for the
// rest of the connection: anything above this is given back before the next read.
constexpr size_t kKeepBufferBytes = size_t{1} << 20;
// A Disconnect is a courtesy: never wait long for a peer to take it.
constexpr auto kDisconnectTimeout = std::chrono::seconds(1);

void release_if_large(Bytes& b) {
    if (b.capacity() > kKeepBufferBytes) Bytes().swap(b);
}

bool would_block(const boost::system::error_code& ec) {
    return ec == asio::error::would_block || ec == asio::error::try_again;
}

std::string address_of(const tcp::socket& socket) {
    boost::system::error_code ec;
    const auto ep = socket.remote_endpoint(ec);
    return ec ? std::string("?") : fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

}  // namespace

Connection::Connection(tcp::socket socket, SessionLimits limits, WriteBuffers* shared)
    : socket_(std::move(socket)),
      limits_(limits),
      address_(address_of(socket_)),
      read_timer_(socket_.get_executor()),
      write_timer_(socket_.get_executor()),
      written_(socket_.get_executor(), Clock::time_point::max()),
      own_buffers_(shared == nullptr ? std::make_unique<WriteBuffers>() : nullptr),
      buffers_(shared == nullptr ? own_buffers_.get() : shared) {
    boost::system::error_code ec;
    socket_.set_option(tcp::no_delay(true), ec);  // replies are single writes; never wait for Nagle
    // Reads and writes are first tried directly: when the bytes are there (or the socket buffer has
    // room) no timer is armed and no reactor round trip is made.
    socket_.non_blocking(true, ec);
}

Connection::~Connection() {
    for (auto& [seq, frame] : queue_) buffers_->frames.give(std::move(frame));
}

void Connection::cancel() noexcept {
    reads_cancelled_ = true;
    // Every read waits on the socket raced against read_timer_: cancelling the timer ends the wait.
    read_timer_.cancel();
}

void Connection::close() noexcept {
    boost::system::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
    read_timer_.cancel();
    write_timer_.cancel();
    written_.cancel();
}

size_t Connection::buffered_bytes() const noexcept {
    size_t n = frame_.capacity() + message_.capacity();
    if (own_buffers_) n += own_buffers_->encoded.capacity();
    for (const auto& [seq, frame] : queue_) n += frame.capacity();
    return n;
}

size_t Connection::take_buffered(std::span<uint8_t> out) noexcept {
    const size_t n = std::min(out.size(), ahead_end_ - ahead_begin_);
    if (n > 0) std::memcpy(out.data(), ahead_.data() + ahead_begin_, n);
    ahead_begin_ += n;
    return n;
}

asio::awaitable<bool> Connection::wait_readable(Clock::time_point deadline) {
    if (reads_cancelled_) throw PeerError(PeerErrorKind::kNetwork, "read: cancelled");
    read_timer_.expires_at(deadline);
    auto result = co_await (socket_.async_wait(tcp::socket::wait_read, kTuple) || read_timer_.async_wait(kTuple));
    if (result.index() == 1) {
        // The timer fired (a deadline), or was cancelled because the connection is closing.
        const auto [ec] = std::get<1>(result);
        if (ec) throw PeerError(PeerErrorKind::kNetwork, "read: cancelled");
        co_return false;
    }
    const auto [ec] = std::get<0>(result);
    if (ec) throw PeerError(PeerErrorKind::kNetwork, "read: " + ec.message());
    co_return true;
}

asio::awaitable<bool> Connection::read_exact(std::span<uint8_t> out, Clock::time_point deadline) {
    size_t got = take_buffered(out);
    while (got < out.size()) {
        const size_t want = out.size() - got;
        boost::system::error_code ec;
        if (want < ahead_.size()) {
            const size_t n = socket_.read_some(asio::buffer(ahead_), ec);
            if (!ec) {
                ahead_begin_ = 0;
                ahead_end_ = n;
                got += take_buffered(out.subspan(got));
                continue;
            }
        } else {
            const size_t n = socket_.read_some(asio::buffer(out.data() + got, want), ec);
            if (!ec) {
                got += n;
                continue;
            }
        }
        if (!would_block(ec)) throw PeerError(PeerErrorKind::kNetwork, "read: " + ec.message());
        if (!co_await wait_readable(deadline)) co_return false;
    }
    co_return true;
}

asio::awaitable<void> Connection::write_all(ByteView data, Clock::time_point deadline) {
    size_t done = 0;
    while (done < data.size()) {
        boost::system::error_code ec;
        done += socket_.write_some(asio::buffer(data.data() + done, data.size() - done), ec);
        if (!ec) continue;
        // A write cut short leaves a partial frame on the wire: nothing more can be sent.
        if (!would_block(ec)) fail_write(PeerErrorKind::kNetwork, "write: " + ec.message());
        write_timer_.expires_at(deadline);
        auto result = co_await (socket_.async_wait(tcp::socket::wait_write, kTuple) || write_timer_.async_wait(kTuple));
        if (result.index() == 1) {
            const auto [tec] = std::get<1>(result);
            if (tec) fail_write(PeerErrorKind::kNetwork, "write: cancelled");
            fail_write(PeerErrorKind::kWriteTimeout, "write timed out");
        }
        if (const auto [wec] = std::get<0>(result); wec) fail_write(PeerErrorKind::kNetwork, "write: " + wec.message());
    }
}

void Connection::fail_write(PeerErrorKind kind, const std::string& what) {
    broken_ = true;
    write_error_kind_ = kind;
    write_error_ = what;
    throw PeerError(kind, what);
}

void Connection::wake_writers() noexcept { written_.cancel(); }

asio::awaitable<void> Connection::read_handshake(rlpx::Handshake& hs, Clock::time_point deadline) {
    Bytes buf;
    while (hs.bytes_needed() > 0) {
        buf.resize(hs.bytes_needed());
        if (!co_await read_exact(buf, deadline))
            throw PeerError(PeerErrorKind::kHandshakeTimeout, "RLPx handshake timed out");
        ByteView in{buf};
        auto r = hs.read(in);
        if (!r) throw PeerError(PeerErrorKind::kBadHandshake, "handshake: " + r.error().message());
        if (*r == 0) break;
    }
}

void Connection::start_framing(rlpx::Handshake& hs) {
    auto secrets = hs.secrets();
    if (!secrets) throw PeerError(PeerErrorKind::kBadHandshake, "handshake: " + secrets.error().message());
    remote_ = secrets->remote;
    codec_.emplace(std::move(*secrets), limits_.max_frame);
}

asio::awaitable<void> Connection::accept_handshake(const rlpx::PrivateKey& key, Clock::time_point deadline) {
    rlpx::Handshake hs = rlpx::Handshake::recipient(key);
    co_await read_handshake(hs, deadline);
    auto ack = hs.write_ack();
    if (!ack) throw PeerError(PeerErrorKind::kBadHandshake, "handshake: " + ack.error().message());
    co_await write_all(*ack, deadline);
    start_framing(hs);
}

asio::awaitable<void> Connection::dial_handshake(const rlpx::PrivateKey& key, const rlpx::PublicKey& remote,
                                                 Clock::time_point deadline) {
    rlpx::Handshake hs = rlpx::Handshake::initiator(key, remote);
    auto auth = hs.write_auth();
    if (!auth) throw PeerError(PeerErrorKind::kBadHandshake, "handshake: " + auth.error().message());
    co_await write_all(*auth, deadline);
    co_await read_handshake(hs, deadline);
    start_framing(hs);
}

asio::awaitable<std::optional<Message>> Connection::read_message(Clock::time_point deadline) {
    if (reads_cancelled_) throw PeerError(PeerErrorKind::kNetwork, "read: cancelled");
    // The previous message's payload view dies here, as documented.
    release_if_large(frame_);
    release_if_large(message_);
    // Idle until the first byte of a frame; from then on the frame has one idle period to arrive.
    while (ahead_begin_ == ahead_end_) {
        boost::system::error_code ec;
        const size_t n = socket_.read_some(asio::buffer(ahead_), ec);
        if (!ec) {
            ahead_begin_ = 0;
            ahead_end_ = n;
            break;
        }
        if (!would_block(ec)) throw PeerError(PeerErrorKind::kNetwork, "read: " + ec.message());
        if (!co_await wait_readable(deadline)) co_return std::nullopt;
    }
    const auto frame_deadline = Clock::now() + limits_.idle;
    std::array<uint8_t, rlpx::kFrameHeaderSize> header;
    if (!co_await read_exact(header, frame_deadline)) {
        throw PeerError(PeerErrorKind::kFrameTimeout, "read timed out inside a frame header");
    }
    auto size = codec_->read_header(header);
    if (!size) throw_peer_error(size.error(), "frame header");
    frame_.resize(rlpx::FrameCodec::body_size(*size));
    // The codec now expects this body, so the stream cannot be read again without it.
    if (!co_await read_exact(frame_, frame_deadline)) {
        throw PeerError(PeerErrorKind::kFrameTimeout, "read timed out inside a frame");
    }
    auto data = codec_->read_body(std::span<uint8_t>(frame_));
    if (!data) throw_peer_error(data.error(), "frame");
    // geth drops peers whose messages exceed 10 MiB (maxMessageSize); so do we.
    auto msg = decode_frame_data(*data, snappy_, message_, eth::kMaxMessageSize);
    if (!msg) throw_peer_error(msg.error(), "message");
    count(true, msg->id, header.size() + frame_.size());
    co_return *msg;
}

Bytes Connection::take_payload_buffer(ByteView payload) {
    const auto holds = [&](const Bytes& b) {
        const std::less_equal<const uint8_t*> le;  // a total order, also across unrelated buffers
        return !payload.empty() && le(b.data(), payload.data()) &&
               le(payload.data() + payload.size(), b.data() + b.size());
    };
    Bytes* holder = holds(message_) ? &message_ : holds(frame_) ? &frame_ : nullptr;  // snappy, or not
    if (holder == nullptr) {
        assert(payload.empty() && "take_payload_buffer: not the last read message's payload");
        return Bytes();
    }
    return std::exchange(*holder, std::exchange(spare_, Bytes()));
}

void Connection::give_payload_buffer(Bytes buffer) noexcept {
    if (buffer.capacity() <= kKeepBufferBytes && buffer.capacity() > spare_.capacity()) spare_ = std::move(buffer);
}

asio::awaitable<void> Connection::write_message(uint64_t id, ByteView payload) {
    co_await write_frame(id, payload, limits_.write);
}

asio::awaitable<void> Connection::write_spliced_message(uint64_t id, ByteView prefix, const CompressedBody& body) {
    assert(snappy_ && "write_spliced_message: snappy is off");
    co_await write_frame(id, prefix, limits_.write, &body);
}

asio::awaitable<void> Connection::write_frame(uint64_t id, ByteView payload, Clock::duration timeout,
                                              const CompressedBody* body) {
    if (broken_) throw PeerError(write_error_kind_, "connection unusable after a failed write: " + write_error_);
    const bool compress = snappy_ && id != kHelloId;
    auto data = body != nullptr ? encode_spliced_frame_data(id, payload, *body, buffers_->encoded)
                                : encode_frame_data(id, payload, compress, buffers_->encoded);
    if (!data) throw_peer_error(data.error(), "encode");
    Bytes frame = buffers_->frames.take();
    if (auto r = codec_->write_frame(*data, frame); !r) {
        buffers_->frames.give(std::move(frame));
        throw_peer_error(r.error(), "frame");
    }
    count(false, id, frame.size());
    const uint64_t seq = ++encrypted_seq_;
    if (writing_) {
        // Another call is writing: it writes this frame too, in order, and wakes us.
        queue_.emplace_back(seq, std::move(frame));
        while (written_seq_ < seq && !broken_) co_await written_.async_wait(kTuple);
        if (written_seq_ < seq) throw PeerError(write_error_kind_, write_error_);
        co_return;
    }
    writing_ = true;
    try {
        co_await write_all(frame, Clock::now() + timeout);
        buffers_->frames.give(std::move(frame));
        written_seq_ = seq;
        while (!queue_.empty()) {
            wake_writers();
            co_await write_all(queue_.front().second, Clock::now() + limits_.write);
            written_seq_ = queue_.front().first;
            buffers_->frames.give(std::move(queue_.front().second));
            queue_.pop_front();
        }
    } catch (...) {
        writing_ = false;
        for (auto& [s, f] : queue_) buffers_->frames.give(std::move(f));
        queue_.clear();
        wake_writers();
        throw;
    }
    writing_ = false;
    wake_writers();
}

void Connection::count(bool ingress, uint64_t id, size_t wire_bytes) const noexcept {
    if (id < kBaseProtocolLength) {
        count_message(base_meters_, ingress, id, wire_bytes);
    } else if (id >= eth_offset_) {
        count_message(eth_meters_, ingress, id - eth_offset_, wire_bytes);
    }
}

asio::awaitable<void> Connection::disconnect(DisconnectReason reason) {
    if (codec_ && !broken_ && socket_.is_open()) {
        Bytes payload;
        encode_disconnect(payload, reason);
        try {
            co_await write_frame(kDisconnectId, payload, std::min<Clock::duration>(limits_.write, kDisconnectTimeout));
            co_await linger(Clock::now() + kDisconnectTimeout);
        } catch (const std::exception&) {
            // The peer is gone or stuck; closing is all that is left.
        }
    }
    close();
}

asio::awaitable<void> Connection::linger(Clock::time_point deadline) {
    // Closing a socket with unread input makes the kernel send a reset, and a reset can discard
    // the Disconnect still in the peer's receive buffer. So: no more sending, then read and drop
    // what the peer still sends (requests it pipelined) until it closes or `deadline`.
    boost::system::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    std::array<uint8_t, 4096> sink;
    for (;;) {
        socket_.read_some(asio::buffer(sink), ec);
        if (!ec) continue;
        if (!would_block(ec)) co_return;  // the peer closed, or the socket failed: done either way
        read_timer_.expires_at(deadline);
        auto result = co_await (socket_.async_wait(tcp::socket::wait_read, kTuple) || read_timer_.async_wait(kTuple));
        if (result.index() == 1) co_return;  // deadline, or cancelled by close()
        if (const auto [wec] = std::get<0>(result); wec) co_return;
    }
}

}  // namespace headerd::p2p
