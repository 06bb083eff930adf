#pragma once

// Where the discovery services send and receive datagrams: the UDP socket (UdpTransport, the only
// socket I/O of discovery) or a simulated network (bench/disc_sim.cpp, the virtual-time tests).

#include <functional>
#include <memory>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include "core/bytes.hpp"
#include "core/result.hpp"

namespace headerd::disc {

class Transport {
  public:
    using udp = boost::asio::ip::udp;
    using Receiver = std::function<void(ByteView datagram, const udp::endpoint& from)>;

    virtual ~Transport() = default;
    // A lost datagram is no error: the protocols expect loss.
    virtual void send(const udp::endpoint& to, ByteView datagram) = 0;
    virtual udp::endpoint local_endpoint() const = 0;
    // Hands every datagram that arrives to `receive` until close(). Called once.
    virtual void start(Receiver receive) = 0;
    // Idempotent; nothing is delivered after it.
    virtual void close() = 0;
};

// A UDP socket. Each wake-up reads every datagram waiting, up to 32 per recvmmsg(2): under a flood
// that is one readiness wait and one system call per batch instead of two per datagram.
// Made with std::make_shared: its read loop holds it until close().
class UdpTransport final : public Transport, public std::enable_shared_from_this<UdpTransport> {
  public:
    // Datagrams over this size are delivered as max_datagram + 1 bytes, so the receiver sees them
    // as too big.
    UdpTransport(boost::asio::io_context& io, size_t max_datagram);

    // An error names the address.
    Outcome<void> bind(const udp::endpoint& listen);
    void send(const udp::endpoint& to, ByteView datagram) override;
    udp::endpoint local_endpoint() const override;
    void start(Receiver receive) override;
    void close() override;

  private:
    boost::asio::awaitable<void> read_loop(Receiver receive);

    boost::asio::io_context& io_;
    udp::socket socket_;
    size_t max_datagram_;
    bool closed_{false};
};

}  // namespace headerd::disc
