#pragma once

// The listening side of headerd: accepts TCP connections on a control thread, hands each to the
// next worker of a WorkerPool, and runs one coroutine per peer there (RLPx handshake, Hello,
// Status, then serving). Admission (pending handshakes, peers, node ids) is one thread-safe
// PeerAdmission. Shuts down gracefully: every peer of every worker is told "client quitting".
//
// Threads: listen(), start() and the acceptor run on the `control` io_context; sessions on the
// workers. stop(), peers() and announce() may be called from any thread.
// Lifetime: the Server must outlive the control io_context's run() and the workers' (stop, let
// control run out, then WorkerPool::release() and join(), then destroy the Server).

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "core/header_source.hpp"
#include "core/result.hpp"
#include "p2p/admission.hpp"
#include "p2p/connection.hpp"
#include "p2p/eth/history.hpp"
#include "p2p/eth/reply_cache.hpp"
#include "p2p/eth/serve.hpp"
#include "p2p/inbound_limit.hpp"
#include "p2p/net_metrics.hpp"
#include "p2p/rlpx/secp256k1.hpp"
#include "p2p/worker.hpp"

namespace headerd::p2p {

// serve --reply-cache's default, per worker.
inline constexpr size_t kDefaultReplyCacheBytes = size_t{16} << 20;

struct ServerOptions {
    tcp::endpoint listen{asio::ip::make_address("127.0.0.1"), 30303};
    // Peers past the RLPx handshake; one more gets Disconnect "too many peers".
    size_t max_peers{50};
    // Connections in the RLPx handshake at once. At the cap the acceptor waits: new connections
    // queue in the kernel's listen backlog and are taken as handshakes finish.
    size_t max_pending{64};
    std::string client_id{"headerd/v0.1.0"};
    SessionLimits limits;
    // What our Hello offers (tests narrow it to one version).
    std::span<const ProtocolOffer> offers{kEthOffers};
    // Wait after a failed accept (typically out of file descriptors) before trying again.
    Clock::duration accept_backoff{std::chrono::milliseconds(100)};
    // Where sessions count messages, peers, handshake errors and service times; nullptr: metrics off.
    // REQUIRES: outlives the server.
    const NetMetrics* metrics{nullptr};
    // Test option: delay before each GetBlockHeaders is served (ServeContext::reply_delay).
    Clock::duration reply_delay{};
    // Bytes of compressed header lists each worker keeps for requests that come again
    // (p2p/eth/reply_cache.hpp); 0 turns the cache off.
    size_t reply_cache_bytes{kDefaultReplyCacheBytes};
    // Per-address and per-subnet connection limits and the reconnect throttle, checked as each
    // connection is accepted; a refused one is closed before any byte is read.
    InboundLimits inbound{InboundLimits::defaults()};
    // Counts the refused connections by reason; nullptr: metrics off. REQUIRES: outlives the server.
    const InboundMetrics* inbound_metrics{nullptr};
    // Bodies and receipts to serve (docs/history.md); nullptr: GetBlockBodies and GetReceipts are
    // answered empty, and eth/69 announces the head alone. REQUIRES: outlives the server.
    const HistorySource* history{nullptr};
    eth::HistoryLimits history_limits;
};

class Server {
  public:
    // REQUIRES: source holds a chain (a config and a head); source, key and the pool outlive the
    // server.
    Server(asio::io_context& control, WorkerPool& workers, const HeaderSource& source, const rlpx::PrivateKey& key,
           ServerOptions options);
    ~Server();

    // Binds and listens; the error names the address.
    Outcome<void> listen();
    tcp::endpoint local_endpoint() const;
    // Starts accepting (after listen()).
    void start();
    // Stops accepting and disconnects every peer with "client quitting"; the control context and
    // the workers run out of work once they are gone. Any thread; idempotent.
    void stop();
    // Sends BlockRangeUpdate for `head` to every eth/69+ peer: the head moved. Any thread.
    void announce(const Head& head);

    size_t peers() const noexcept { return admission_.peers(); }
    size_t pending_handshakes() const noexcept { return admission_.pending(); }
    // Sessions still running (handshaking or serving), any thread.
    size_t sessions() const noexcept { return sessions_.load(std::memory_order_relaxed); }

  private:
    struct Session;
    // What one worker's sessions share; touched only on that worker's thread.
    struct WorkerSessions {
        std::unordered_map<Connection*, std::shared_ptr<Session>> live;
        std::unique_ptr<eth::ReplyCache> reply_cache;  // null: off (reply_cache_bytes 0)
    };

    asio::awaitable<void> accept_loop();
    asio::awaitable<void> start_session(Worker& worker, tcp::socket socket);
    asio::awaitable<void> run_session(Worker& worker, std::shared_ptr<Session> session);
    asio::awaitable<void> serve_session(Worker& worker, Session& session, bool& serving);
    void spawn(Worker& worker, tcp::socket socket, std::optional<asio::ip::address> counted);
    // Whether the inbound limits let a connection from `remote` in (counted until it closes if so).
    bool admit_inbound(const tcp::endpoint& remote);
    // The first block of the full-block range announced with `head` (eth/69+).
    std::optional<uint64_t> earliest(const Head& head) const;

    asio::io_context& control_;
    WorkerPool& workers_;
    const HeaderSource& source_;
    const rlpx::PrivateKey& key_;
    ServerOptions options_;
    eth::HeaderServer headers_;
    PeerAdmission admission_;
    InboundLimiter inbound_;
    tcp::acceptor acceptor_;
    asio::steady_timer accept_wake_;  // never expires; cancelled when a handshake slot frees
    std::vector<WorkerSessions> per_worker_;
    std::atomic<bool> stopping_{false};
    std::atomic<size_t> sessions_{0};
};

}  // namespace headerd::p2p
