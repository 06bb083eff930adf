#include "p2p/server.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/awaitable.hpp"
#include "p2p/eth/messages.hpp"
#include "p2p/eth/status.hpp"
#include "p2p/peer.hpp"
#include "p2p/server_session.hpp"

namespace headerd::p2p {
namespace {

// "1.2.3.4:5678" -> "1.2.3.4": a reconnecting peer gets a new port but is the same source.
std::string conn_host(const std::string& address) {
    const size_t colon = address.rfind(':');
    return colon == std::string::npos ? address : address.substr(0, colon);
}

// A coroutine that ended by an exception other than PeerError is a bug: say so loudly.
auto log_exceptions(const char* what) {
    return [what](std::exception_ptr e) {
        if (!e) return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            spdlog::error("{} failed                       err=\"{}\"", what, ex.what());
        }
    };
}

void count_handshake_failure(const NetMetrics* metrics, const PeerError& e) {
    if (metrics == nullptr) return;
    switch (e.kind()) {
        case PeerErrorKind::kHandshakeTimeout:
        case PeerErrorKind::kFrameTimeout:
            metrics->handshake_error(HandshakeFailure::kTimeout).Increment();
            break;
        default:
            metrics->handshake_error(e.reason()).Increment();
    }
}

}  // namespace

struct Server::Session {
    std::shared_ptr<Connection> conn;
    std::optional<EthLink> link;  // set once Hello and Status are done
};

Server::Server(asio::io_context& control, WorkerPool& workers, const HeaderSource& source, const rlpx::PrivateKey& key,
               ServerOptions options)
    : control_(control),
      workers_(workers),
      source_(source),
      key_(key),
      options_(std::move(options)),
      headers_(source),
      admission_(options_.max_peers, options_.max_pending, key.public_key().bytes()),
      inbound_(options_.inbound),
      acceptor_(control),
      accept_wake_(control, Clock::time_point::max()),
      per_worker_(workers.size()) {
    if (options_.reply_cache_bytes > 0) {
        for (auto& w : per_worker_) w.reply_cache = std::make_unique<eth::ReplyCache>(options_.reply_cache_bytes);
    }
    admission_.on_slot_free([this] { asio::post(control_, [this] { accept_wake_.cancel(); }); });
}

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

void Server::start() { asio::co_spawn(control_, accept_loop(), log_exceptions("Accept loop")); }

void Server::stop() {
    if (stopping_.exchange(true)) return;
    asio::post(control_, [this] {
        boost::system::error_code ec;
        acceptor_.close(ec);
        accept_wake_.cancel();
    });
    // Wakes every session from its read; each then says "client quitting" and closes.
    for (size_t i = 0; i < workers_.size(); ++i) {
        asio::post(workers_[i].io(), [this, i] {
            for (auto& [conn, session] : per_worker_[i].live) conn->cancel();
        });
    }
}

std::optional<uint64_t> Server::earliest(const Head& head) const {
    if (options_.history == nullptr) return std::nullopt;
    return eth::announced_earliest(head, options_.history->range());
}

void Server::announce(const Head& head) {
    for (size_t i = 0; i < workers_.size(); ++i) {
        Worker& worker = workers_[i];
        asio::post(worker.io(), [this, &worker, head] {
            Bytes payload;
            eth::make_block_range_update(head, earliest(head)).encode(payload);
            for (auto& [conn, session] : per_worker_[worker.index()].live) {
                if (!session->link || !eth::has_block_range(session->link->version)) continue;
                const uint64_t id = session->link->offset + static_cast<uint64_t>(eth::MessageId::kBlockRangeUpdate);
                // Written beside whatever the session is writing; a failure ends the session through
                // its own reader, so it is not reported here.
                asio::co_spawn(
                    worker.io(),
                    [](std::shared_ptr<Session> s, uint64_t msg_id, Bytes msg) -> asio::awaitable<void> {
                        try {
                            co_await s->conn->write_message(msg_id, msg);
                        } catch (const PeerError&) {
                        }
                    }(session, id, payload),
                    log_exceptions("BlockRangeUpdate"));
            }
        });
    }
}

asio::awaitable<void> Server::accept_loop() {
    Clock::time_point last_accept_warning{};
    while (!stopping_) {
        if (!admission_.try_begin_handshake()) {
            // At the cap of pending handshakes: let the backlog hold new connections until one ends.
            co_await accept_wake_.async_wait(kTuple);
            continue;
        }
        Worker& worker = workers_.next();
        auto [ec, socket] = co_await acceptor_.async_accept(worker.io(), kTuple);
        if (ec) {
            admission_.end_handshake();
            if (stopping_ || ec == asio::error::operation_aborted) break;
            // Typically out of file descriptors: back off instead of spinning, and say so at most
            // once every 10 s so a connection flood cannot flood the log too.
            const auto now = Clock::now();
            if (now - last_accept_warning >= std::chrono::seconds(10)) {
                spdlog::warn("Accept failed, backing off              err=\"{}\"", ec.message());
                last_accept_warning = now;
            }
            asio::steady_timer backoff(control_, options_.accept_backoff);
            co_await backoff.async_wait(kTuple);
            continue;
        }
        // A socket already gone has no remote address; its session's first read says so.
        boost::system::error_code gone;
        const tcp::endpoint remote = socket.remote_endpoint(gone);
        std::optional<asio::ip::address> counted;
        if (!gone) {
            if (!admit_inbound(remote)) {
                socket.close(gone);
                admission_.end_handshake();
                continue;
            }
            counted = remote.address();
        }
        spawn(worker, std::move(socket), std::move(counted));
    }
}

bool Server::admit_inbound(const tcp::endpoint& remote) {
    const auto rejected = inbound_.admit(remote.address(), Clock::now());
    if (!rejected) return true;
    if (options_.inbound_metrics != nullptr) options_.inbound_metrics->rejected(*rejected).Increment();
    spdlog::debug("Inbound connection refused               peer={}:{} reason={}", remote.address().to_string(),
                  remote.port(), reject_label(*rejected));
    return false;
}

void Server::spawn(Worker& worker, tcp::socket socket, std::optional<asio::ip::address> counted) {
    sessions_.fetch_add(1, std::memory_order_relaxed);
    asio::co_spawn(worker.io(), start_session(worker, std::move(socket)),
                   [this, counted = std::move(counted)](std::exception_ptr e) {
                       if (counted) inbound_.release(*counted);
                       sessions_.fetch_sub(1, std::memory_order_relaxed);
                       log_exceptions("Peer session")(e);
                   });
}

asio::awaitable<void> Server::start_session(Worker& worker, tcp::socket socket) {
    // Built here, on the worker's thread, which owns the write buffers the connection shares.
    auto session = std::make_shared<Session>();
    session->conn = std::make_shared<Connection>(std::move(socket), options_.limits, &worker.write_buffers());
    co_await run_session(worker, std::move(session));
}

asio::awaitable<void> Server::serve_session(Worker& worker, Session& session, bool& serving) {
    Connection& conn = *session.conn;
    const auto deadline = Clock::now() + options_.limits.handshake;
    try {
        co_await conn.accept_handshake(key_, deadline);
    } catch (...) {
        admission_.end_handshake();
        throw;
    }
    admission_.end_handshake();
    switch (admission_.admit(conn.remote_key()->bytes())) {
        case PeerAdmission::Verdict::kSelf:
            throw PeerError(PeerErrorKind::kConnectedToSelf, "connected to self");
        case PeerAdmission::Verdict::kDuplicate:
            throw PeerError(PeerErrorKind::kAlreadyConnected, "already connected to this node id");
        case PeerAdmission::Verdict::kFull:
            throw PeerError(PeerErrorKind::kTooManyPeers, "too many peers");
        case PeerAdmission::Verdict::kAdmitted:
            break;
    }
    const NetMetrics* metrics = options_.metrics;
    try {
        const Head head = *source_.head();
        LocalNode local{&key_, options_.client_id, source_.config(), head, earliest(head), metrics, options_.offers};
        session.link = co_await establish(conn, local, deadline);
        spdlog::debug("Peer connected                           peer={} client=\"{}\" eth={} worker={}",
                      conn.remote_address(), session.link->client_id, session.link->version, worker.index());
        serving = true;
        if (metrics != nullptr) metrics->peers(Direction::kInbound).Increment();
        co_await serve_peer(
            conn, *session.link,
            ServeContext{headers_, metrics, worker, options_.reply_delay, per_worker_[worker.index()].reply_cache.get(),
                         options_.history, &options_.history_limits});
    } catch (...) {
        admission_.release(conn.remote_key()->bytes());
        throw;
    }
}

asio::awaitable<void> Server::run_session(Worker& worker, std::shared_ptr<Session> session) {
    Connection& conn = *session->conn;
    auto& live = per_worker_[worker.index()].live;
    live.emplace(&conn, session);
    const NetMetrics* metrics = options_.metrics;
    bool serving = false;
    PeerError ended(PeerErrorKind::kQuitting, "server stopping");
    if (stopping_) {
        admission_.end_handshake();
    } else {
        try {
            co_await serve_session(worker, *session, serving);
        } catch (const PeerError& e) {
            ended = e;
        }
    }
    // serve_peer only ends by a PeerError; reaching here without one means nothing was served.
    if (!serving) count_handshake_failure(metrics, ended);
    if (metrics != nullptr && serving) metrics->peers(Direction::kInbound).Decrement();
    const bool quitting = stopping_.load();
    const DisconnectReason reason = quitting ? DisconnectReason::kQuitting : ended.reason();
    // Ordinary endings are logged at debug level. Misbehaviour is a warning an operator should see,
    // rate-limited per peer address so that no peer (nor a crowd of them) can flood the log.
    const std::string& address = conn.remote_address();
    if (is_misbehaviour(ended.kind()) && !quitting) {
        if (auto v = worker.limiter().allow(conn_host(address), Clock::now())) {
            spdlog::warn("Peer misbehaved, disconnected            peer={} reason=\"{}\" err=\"{}\" suppressed={}",
                         address, to_string(reason), ended.what(), v.suppressed);
        }
    } else {
        spdlog::debug("Peer disconnected                        peer={} reason=\"{}\" err=\"{}\"", address,
                      to_string(reason), ended.what());
    }
    const bool peer_gone = ended.kind() == PeerErrorKind::kRemoteDisconnect || ended.kind() == PeerErrorKind::kNetwork;
    if (quitting || !peer_gone) {
        co_await conn.disconnect(reason);
    } else {
        conn.close();
    }
    live.erase(&conn);
}

}  // namespace headerd::p2p
