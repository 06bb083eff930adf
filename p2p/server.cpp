#include "p2p/server.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/hex.hpp"
#include "p2p/peer.hpp"

namespace headerd::p2p {
namespace {

// Endings that mean the peer broke the protocol (as opposed to leaving, timing out or being refused
// for capacity).
bool misbehaved(DisconnectReason r) noexcept {
    return r == DisconnectReason::kProtocolBreach || r == DisconnectReason::kSubprotocolError ||
           r == DisconnectReason::kInvalidIdentity || r == DisconnectReason::kUnexpectedIdentity;
}

// "1.2.3.4:5678" -> "1.2.3.4": a reconnecting peer gets a new port but is the same source.
std::string conn_host(const std::string& address) {
    const size_t colon = address.rfind(':');
    return colon == std::string::npos ? address : address.substr(0, colon);
}

}  // namespace

Server::Server(asio::io_context& io, const db::ChainDb& db, const rlpx::PrivateKey& key, ServerOptions options)
    : io_(io), db_(db), key_(key), options_(std::move(options)), headers_(db), acceptor_(io) {}

Server::~Server() = default;

Outcome<void> Server::listen() {
    boost::system::error_code ec;
    const std::string where = fmt::format("{}:{}", options_.listen.address().to_string(), options_.listen.port());
    acceptor_.open(options_.listen.protocol(), ec);
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(options_.listen, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return make_error(fmt::format("cannot listen on {}: {}", where, ec.message()));
    return {};
}

tcp::endpoint Server::local_endpoint() const {
    boost::system::error_code ec;
    return acceptor_.local_endpoint(ec);
}

void Server::start() {
    asio::co_spawn(io_, accept_loop(), [](std::exception_ptr e) {
        if (!e) return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            spdlog::error("Accept loop failed                       err=\"{}\"", ex.what());
        }
    });
}

void Server::stop() {
    if (stopping_) return;
    stopping_ = true;
    boost::system::error_code ec;
    acceptor_.close(ec);
    // Wakes every session from its read; each then says "client quitting" and closes.
    for (const auto& conn : connections_) conn->socket().cancel(ec);
}

asio::awaitable<void> Server::accept_loop() {
    Clock::time_point last_accept_warning{};
    while (!stopping_) {
        auto [ec, socket] = co_await acceptor_.async_accept(asio::as_tuple(asio::use_awaitable));
        if (ec) {
            if (stopping_ || ec == asio::error::operation_aborted) break;
            // Typically out of file descriptors: back off instead of spinning, and say so at most
            // once every 10 s so a connection flood cannot flood the log too.
            const auto now = Clock::now();
            if (now - last_accept_warning >= std::chrono::seconds(10)) {
                spdlog::warn("Accept failed, backing off              err=\"{}\"", ec.message());
                last_accept_warning = now;
            }
            asio::steady_timer backoff(io_, std::chrono::milliseconds(100));
            co_await backoff.async_wait(asio::as_tuple(asio::use_awaitable));
            continue;
        }
        if (pending_ >= options_.max_pending) {
            boost::system::error_code ignored;
            socket.close(ignored);  // no frames before the handshake: nothing else to say
            continue;
        }
        auto conn = std::make_shared<Connection>(std::move(socket));
        conn->share_encode_buffer(&encode_buffer_);
        connections_.insert(conn);
        asio::co_spawn(io_, run_session(conn), [this, conn](std::exception_ptr e) {
            connections_.erase(conn);
            if (!e) return;
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                spdlog::error("Peer session failed                      peer={} err=\"{}\"", conn->remote_address(),
                              ex.what());
            }
        });
    }
}

asio::awaitable<void> Server::run_session(std::shared_ptr<Connection> conn) {
    const std::string address = conn->remote_address();
    bool established = false;
    bool serving = false;
    const NetMetrics* metrics = options_.metrics;
    DisconnectReason reason = DisconnectReason::kRequested;
    bool say_goodbye = false;
    std::string why;
    ++pending_;
    try {
        try {
            co_await conn->accept_handshake(key_, kHandshakeTimeout);
        } catch (...) {
            --pending_;
            throw;
        }
        --pending_;
        const auto& remote = conn->remote_key()->bytes();
        if (remote == key_.public_key().bytes()) {
            throw PeerError(DisconnectReason::kConnectedToSelf, "connected to self");
        }
        if (peer_ids_.count(remote) != 0) {
            throw PeerError(DisconnectReason::kAlreadyConnected, "already connected to this node id");
        }
        if (established_ >= options_.max_peers) throw PeerError(DisconnectReason::kTooManyPeers, "too many peers");
        ++established_;
        established = true;
        peer_ids_.insert(remote);
        LocalNode local{&key_, options_.client_id, db_.config(), *db_.head(), metrics};
        EthLink link = co_await establish(*conn, local);
        spdlog::debug("Peer connected                           peer={} client=\"{}\" eth={}", address, link.client_id,
                      link.version);
        serving = true;
        if (metrics != nullptr) metrics->peers(Direction::kInbound).Increment();
        co_await serve_peer(*conn, link, ServeContext{headers_, metrics, limiter_, serve_scratch_, serve_reply_});
    } catch (const PeerTimeout& e) {
        reason = e.reason();
        say_goodbye = e.can_send();
        why = e.what();
        if (metrics != nullptr && !serving) metrics->handshake_error(HandshakeFailure::kTimeout).Increment();
    } catch (const PeerError& e) {
        reason = e.reason();
        say_goodbye = e.can_send();
        why = e.what();
        if (metrics != nullptr && !serving) metrics->handshake_error(reason).Increment();
    } catch (const std::exception& e) {
        reason = DisconnectReason::kProtocolBreach;
        say_goodbye = true;
        why = e.what();
        if (metrics != nullptr && !serving) metrics->handshake_error(HandshakeFailure::kNetwork).Increment();
    }
    if (metrics != nullptr && serving) metrics->peers(Direction::kInbound).Decrement();
    if (stopping_) {
        reason = DisconnectReason::kQuitting;
        say_goodbye = true;
    }
    if (established) {
        --established_;
        peer_ids_.erase(conn->remote_key()->bytes());
    }
    // Ordinary endings are logged at debug level. Misbehaviour is a warning an operator should see,
    // rate-limited per peer address so that no peer (nor a crowd of them) can flood the log.
    if (misbehaved(reason) && !stopping_) {
        const std::string host = conn_host(address);
        if (auto v = limiter_.allow(host, Clock::now())) {
            spdlog::warn("Peer misbehaved, disconnected            peer={} reason=\"{}\" err=\"{}\" suppressed={}",
                         address, to_string(reason), why, v.suppressed);
        }
    } else {
        spdlog::debug("Peer disconnected                        peer={} reason=\"{}\" err=\"{}\"", address,
                      to_string(reason), why);
    }
    if (say_goodbye) {
        co_await conn->disconnect(reason);
    } else {
        conn->close();
    }
}

}  // namespace headerd::p2p
