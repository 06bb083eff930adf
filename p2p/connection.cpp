#include "p2p/connection.hpp"

#include <fmt/format.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "p2p/eth/messages.hpp"
#include "p2p/net_metrics.hpp"
#include "p2p/rlpx/handshake.hpp"

namespace headerd::p2p {
namespace {

using namespace boost::asio::experimental::awaitable_operators;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

}  // namespace

Connection::Connection(tcp::socket socket) : socket_(std::move(socket)), timer_(socket_.get_executor()) {
    boost::system::error_code ec;
    socket_.set_option(tcp::no_delay(true), ec);  // replies are single writes; never wait for Nagle
}

std::string Connection::remote_address() const {
    boost::system::error_code ec;
    const auto ep = socket_.remote_endpoint(ec);
    return ec ? std::string("?") : fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

void Connection::close() noexcept {
    boost::system::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
    timer_.cancel();
}

asio::awaitable<void> Connection::read_exact(std::span<uint8_t> out, Clock::time_point deadline) {
    timer_.expires_at(deadline);
    auto result =
        co_await (asio::async_read(socket_, asio::buffer(out.data(), out.size()), kTuple) || timer_.async_wait(kTuple));
    if (result.index() == 1) throw PeerTimeout("read timed out");
    const auto [ec, n] = std::get<0>(result);
    if (ec) throw PeerError(DisconnectReason::kNetworkError, "read: " + ec.message(), false);
}

asio::awaitable<void> Connection::write_all(ByteView data, Clock::time_point deadline) {
    timer_.expires_at(deadline);
    auto result = co_await (asio::async_write(socket_, asio::buffer(data.data(), data.size()), kTuple) ||
                            timer_.async_wait(kTuple));
    // A write cut short leaves a partial frame on the wire: nothing more can be sent.
    if (result.index() == 1) {
        broken_ = true;
        throw PeerError(DisconnectReason::kNetworkError, "write timed out", false);
    }
    const auto [ec, n] = std::get<0>(result);
    if (ec) {
        broken_ = true;
        throw PeerError(DisconnectReason::kNetworkError, "write: " + ec.message(), false);
    }
}

asio::awaitable<void> Connection::read_handshake(rlpx::Handshake& hs, Clock::time_point deadline) {
    Bytes buf;
    while (hs.bytes_needed() > 0) {
        buf.resize(hs.bytes_needed());
        co_await read_exact(buf, deadline);
        ByteView in{buf};
        auto r = hs.read(in);
        if (!r) throw PeerError(DisconnectReason::kProtocolBreach, "handshake: " + r.error().message(), false);
        if (*r == 0) break;
    }
}

void Connection::start_framing(rlpx::Handshake& hs) {
    auto secrets = hs.secrets();
    if (!secrets) throw PeerError(DisconnectReason::kProtocolBreach, "handshake: " + secrets.error().message(), false);
    remote_ = secrets->remote;
    codec_.emplace(std::move(*secrets), kMaxFrameSize);
}

asio::awaitable<void> Connection::accept_handshake(const rlpx::PrivateKey& key, Clock::duration timeout) {
    const auto deadline = Clock::now() + timeout;
    rlpx::Handshake hs = rlpx::Handshake::recipient(key);
    co_await read_handshake(hs, deadline);
    auto ack = hs.write_ack();
    if (!ack) throw PeerError(DisconnectReason::kNetworkError, "handshake: " + ack.error().message(), false);
    co_await write_all(*ack, deadline);
    start_framing(hs);
}

asio::awaitable<void> Connection::dial_handshake(const rlpx::PrivateKey& key, const rlpx::PublicKey& remote,
                                                 Clock::duration timeout) {
    const auto deadline = Clock::now() + timeout;
    rlpx::Handshake hs = rlpx::Handshake::initiator(key, remote);
    auto auth = hs.write_auth();
    if (!auth) throw PeerError(DisconnectReason::kNetworkError, "handshake: " + auth.error().message(), false);
    co_await write_all(*auth, deadline);
    co_await read_handshake(hs, deadline);
    start_framing(hs);
}

namespace {

// Buffers are reused between messages, but one huge (legal) frame must not pin its memory for the
// rest of the connection: anything above this is given back before the next read.
constexpr size_t kKeepBufferBytes = size_t{1} << 20;

void release_if_large(Bytes& b) {
    if (b.capacity() > kKeepBufferBytes) Bytes().swap(b);
}

}  // namespace

asio::awaitable<Message> Connection::read_message(Clock::duration timeout) {
    const auto deadline = Clock::now() + timeout;
    // The previous message's payload view dies here, as documented.
    release_if_large(frame_);
    release_if_large(message_);
    std::array<uint8_t, rlpx::kFrameHeaderSize> header;
    co_await read_exact(header, deadline);
    auto size = codec_->read_header(header);
    if (!size) throw PeerError(DisconnectReason::kProtocolBreach, "frame header: " + size.error().message());
    frame_.resize(rlpx::FrameCodec::body_size(*size));
    try {
        co_await read_exact(frame_, deadline);
    } catch (const PeerTimeout&) {
        // Not an idle peer: the codec now expects this body, so the stream cannot be read again.
        throw PeerError(DisconnectReason::kPingTimeout, "read timed out inside a frame");
    }
    auto data = codec_->read_body(std::span<uint8_t>(frame_));
    if (!data) throw PeerError(DisconnectReason::kProtocolBreach, "frame: " + data.error().message());
    // geth drops peers whose messages exceed 10 MiB (maxMessageSize); so do we.
    auto msg = decode_frame_data(*data, snappy_, message_, eth::kMaxMessageSize);
    if (!msg) throw PeerError(DisconnectReason::kProtocolBreach, "message: " + msg.error().message());
    count(true, msg->id, header.size() + frame_.size());
    co_return *msg;
}

asio::awaitable<void> Connection::write_message(uint64_t id, ByteView payload, Clock::duration timeout) {
    const bool compress = snappy_ && id != static_cast<uint64_t>(BaseMessageId::kHello);
    auto data = encode_frame_data(id, payload, compress, shared_encoded_ != nullptr ? *shared_encoded_ : encoded_);
    if (!data) throw PeerError(DisconnectReason::kProtocolBreach, "encode: " + data.error().message());
    wire_.clear();
    auto r = codec_->write_frame(*data, wire_);
    if (!r) throw PeerError(DisconnectReason::kNetworkError, "frame: " + r.error().message(), false);
    co_await write_all(wire_, Clock::now() + timeout);
    count(false, id, wire_.size());
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
            co_await write_message(static_cast<uint64_t>(BaseMessageId::kDisconnect), payload, std::chrono::seconds(1));
        } catch (const std::exception&) {
            // The peer is gone or stuck; closing is all that is left.
        }
    }
    close();
}

}  // namespace headerd::p2p
