#pragma once

// The listening side of headerd: accepts TCP connections, runs one coroutine per peer (RLPx
// handshake, Hello, Status, then serving), caps the number of peers, and shuts down gracefully.
//
// Thread-safety: all members run on the one io_context thread that drives the server.

#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <unordered_set>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "core/result.hpp"
#include "db/chain_db.hpp"
#include "p2p/connection.hpp"
#include "p2p/eth/serve.hpp"
#include "p2p/log_limiter.hpp"
#include "p2p/net_metrics.hpp"
#include "p2p/rlpx/secp256k1.hpp"

namespace headerd::p2p {

struct ServerOptions {
    tcp::endpoint listen{asio::ip::make_address("127.0.0.1"), 30303};
    // Peers past the handshake; one more gets Disconnect "too many peers".
    size_t max_peers{50};
    // Connections still in the RLPx handshake (each ends within 5 s); more are closed at once.
    size_t max_pending{256};
    std::string client_id{"headerd/v0.1.0"};
    // Where sessions count messages, peers, handshake errors and service times; nullptr: metrics off.
    // REQUIRES: outlives the server.
    const NetMetrics* metrics{nullptr};
};

class Server {
  public:
    // REQUIRES: db holds a chain (a config and a head).
    Server(asio::io_context& io, const db::ChainDb& db, const rlpx::PrivateKey& key, ServerOptions options);
    ~Server();

    // Binds and listens; the error names the address.
    Outcome<void> listen();
    tcp::endpoint local_endpoint() const;
    // Starts accepting (after listen()).
    void start();
    // Stops accepting and disconnects every peer with "client quitting"; the io_context runs out of
    // work once they are gone.
    void stop();

    size_t peers() const noexcept { return established_; }

  private:
    asio::awaitable<void> accept_loop();
    asio::awaitable<void> run_session(std::shared_ptr<Connection> conn);

    asio::io_context& io_;
    const db::ChainDb& db_;
    const rlpx::PrivateKey& key_;
    ServerOptions options_;
    eth::HeaderServer headers_;
    // Peer-caused warnings: at most one per peer address per 10 s, 10 a second overall.
    LogLimiter limiter_;
    // Reply-building buffers shared by every session (ServeContext): sessions run on one thread.
    ItemBuffer serve_scratch_;
    Bytes serve_reply_;
    Bytes encode_buffer_;
    tcp::acceptor acceptor_;
    std::unordered_set<std::shared_ptr<Connection>> connections_;
    std::set<std::array<uint8_t, 64>> peer_ids_;  // established peers, to refuse a second connection
    size_t established_{0};
    size_t pending_{0};
    bool stopping_{false};
};

}  // namespace headerd::p2p
