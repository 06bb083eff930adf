#include "disc/transport.hpp"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "core/awaitable.hpp"

namespace headerd::disc {

namespace asio = boost::asio;

UdpTransport::UdpTransport(asio::io_context& io, size_t max_datagram)
    : io_(io), socket_(io), max_datagram_(max_datagram) {}

Outcome<void> UdpTransport::bind(const udp::endpoint& listen) {
    boost::system::error_code ec;
    socket_.open(listen.protocol(), ec);
    if (!ec) socket_.bind(listen, ec);
    if (ec) {
        return make_error(fmt::format("discovery: cannot listen on UDP {}:{}: {}", listen.address().to_string(),
                                      listen.port(), ec.message()));
    }
    return {};
}

UdpTransport::udp::endpoint UdpTransport::local_endpoint() const {
    boost::system::error_code ec;
    return socket_.local_endpoint(ec);
}

void UdpTransport::send(const udp::endpoint& to, ByteView datagram) {
    if (closed_) return;
    boost::system::error_code ec;
    // UDP sends do not block for long; a failed one is a lost packet, which the protocols expect.
    socket_.send_to(asio::buffer(datagram.data(), datagram.size()), to, 0, ec);
    if (ec) spdlog::debug("discovery: send to {}:{} failed: {}", to.address().to_string(), to.port(), ec.message());
}

void UdpTransport::start(Receiver receive) {
    asio::co_spawn(
        io_,
        [self = shared_from_this(), receive = std::move(receive)]() mutable -> asio::awaitable<void> {
            co_await self->read_loop(std::move(receive));
        },
        asio::detached);
}

void UdpTransport::close() {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ec;
    socket_.close(ec);
}

asio::awaitable<void> UdpTransport::read_loop(Receiver receive) {
    constexpr size_t kBatch = 32;
    const size_t buffer_size = max_datagram_ + 1;
    std::vector<uint8_t> buffers(kBatch * buffer_size);
    std::array<mmsghdr, kBatch> msgs{};
    std::array<iovec, kBatch> iov{};
    std::array<sockaddr_storage, kBatch> addrs{};
    while (!closed_) {
        auto [ec] = co_await socket_.async_wait(udp::socket::wait_read, kTuple);
        if (closed_ || ec == asio::error::operation_aborted) break;
        if (ec) continue;
        for (;;) {
            for (size_t i = 0; i < kBatch; ++i) {
                iov[i] = {buffers.data() + i * buffer_size, buffer_size};
                msgs[i].msg_hdr = {};
                msgs[i].msg_hdr.msg_name = &addrs[i];
                msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
                msgs[i].msg_hdr.msg_iov = &iov[i];
                msgs[i].msg_hdr.msg_iovlen = 1;
            }
            const int n = ::recvmmsg(socket_.native_handle(), msgs.data(), kBatch, MSG_DONTWAIT, nullptr);
            // Nothing more (EAGAIN), or an error: ICMP errors surface here on Linux, and the next
            // datagram is unaffected; the next wait tells when there is more.
            if (n <= 0) break;
            for (int i = 0; i < n && !closed_; ++i) {
                udp::endpoint from;
                const auto len = std::min<size_t>(msgs[i].msg_hdr.msg_namelen, from.capacity());
                std::memcpy(from.data(), &addrs[i], len);
                from.resize(len);
                receive(ByteView{buffers.data() + static_cast<size_t>(i) * buffer_size, msgs[i].msg_len}, from);
            }
            if (closed_ || static_cast<size_t>(n) < kBatch) break;
        }
    }
}

}  // namespace headerd::disc
