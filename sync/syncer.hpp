#pragma once

// Fills a ChainDb from devp2p peers, verified from a trusted head (docs/sync.md): find the head
// header (by its hash, or the hash a majority of the peers give for a number), keep it as the top
// of a skeleton, fetch the blocks below it in reverse from every peer at once (Fetcher), store each
// proven run in the skeleton, and when it joins the local chain (or reaches the network's genesis)
// move it into the canonical chain and feed the freezer. Peers whose replies do not fit the proven
// chain, or that stall, are disconnected and their work goes to the others.
//
// Thread-safety: none. A Syncer, its sessions and coroutines run on one io_context thread; the
// database writes are made from it too (the database is otherwise only read, by any thread).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "core/result.hpp"
#include "db/chain_db.hpp"
#include "metrics/histogram.hpp"
#include "p2p/client_session.hpp"
#include "p2p/enode/node_key.hpp"
#include "p2p/peer.hpp"
#include "sync/fetcher.hpp"
#include "sync/sync_metrics.hpp"

namespace headerd::sync {

namespace asio = boost::asio;

struct SyncConfig {
    std::vector<p2p::Enode> peers;
    // Sessions already open to some of `peers` (same index; a null or closed one is dialled as
    // usual). The syncer uses them as its own but leaves them open when it ends: they belong to
    // the caller (serve --follow lends the sessions that watch its peers). One it drops for a fault
    // is disconnected all the same. REQUIRES: they run on the syncer's io_context.
    std::vector<std::shared_ptr<p2p::ClientSession>> sessions;
    // The trusted head: its hash, or a number whose hash a majority (at least two) of the peers give.
    std::optional<Hash32> head_hash;
    std::optional<uint64_t> head_number;
    // Requests in flight to each peer at once.
    size_t requests_per_peer{2};
    // Most headers per request (each peer's capacity estimate sizes it below this).
    uint64_t max_request{1024};
    // Deadline of each request; unset: the peer's target timeout (3 estimated round trips, 6 s to 1 min).
    std::optional<p2p::Clock::duration> request_timeout;
    p2p::Clock::duration handshake_timeout{std::chrono::seconds(10)};
    // A peer is dropped after this many timeouts in a row, or this many empty replies in a row.
    unsigned max_timeouts{3};
    unsigned max_empty{3};
    // Most blocks below the verified point handed out or held at once (memory: ~550 B a header).
    uint64_t window{64 * 1024};
    // Whether the freezer is fed (freeze_options) once the chain grew.
    bool freeze{true};
    db::FreezeOptions freeze_options;
    // Headers moved from the skeleton to the canonical chain per synced batch.
    uint64_t link_batch{10'000};
    // nullptr: metrics off. REQUIRES: outlives the syncer.
    SyncMetrics* metrics{nullptr};
};

struct PeerSummary {
    std::string address;  // host:port
    std::string client;   // its Hello client id, once connected
    uint64_t requests{0};
    uint64_t headers{0};  // headers received in replies that were not faulty
    uint64_t timeouts{0};
    uint64_t empty{0};
    metrics::LatencyHistogram rtt;  // of every answered request
    bool connected{false};
    bool dropped{false};  // disconnected by us for a fault, a stall or uselessness
    std::string fate;     // what became of it, one line
};

// Where a running sync is, for progress lines and metrics.
struct SyncProgress {
    std::string phase;    // "connecting", "head", "fetching", "linking", "freezing", "done"
    uint64_t target{0};   // the trusted head's number
    uint64_t next{0};     // highest block not verified yet
    uint64_t floor{0};    // lowest block to fetch
    uint64_t fetched{0};  // headers verified and stored this run
    uint64_t linked{0};   // headers moved into the canonical chain this run
    size_t peers{0};      // peers still in use
};

struct SyncResult {
    db::Head head;
    bool already{false};            // the target was the local head or on the canonical chain already
    bool resumed{false};            // a skeleton for the same head was found and continued
    uint64_t resumed_tail{0};       // its tail when this run started (when resumed)
    uint64_t fetched{0};            // headers verified and stored this run
    uint64_t highest_requested{0};  // highest block asked for this run (0: none)
    uint64_t replaced{0};           // canonical headers replaced (a reorg)
    uint64_t frozen{0};             // ancient items after freezing
    std::vector<PeerSummary> peers;
};

class Syncer {
  public:
    // REQUIRES: db holds the chain config of the network (set before); local.key and local.config
    // outlive the syncer; local.head is what our Status says.
    Syncer(asio::io_context& io, db::ChainDb& db, const p2p::LocalNode& local, SyncConfig config);
    ~Syncer();
    Syncer(const Syncer&) = delete;
    Syncer& operator=(const Syncer&) = delete;

    // Runs the sync to the end: the head stored and canonical, or an error naming why (every
    // peer's fate when none is left). What was verified stays stored either way.
    asio::awaitable<Outcome<SyncResult>> run();
    // Asks a running sync to stop soon (io thread): it ends with an "interrupted" error.
    void stop();

    const SyncProgress& progress() const noexcept { return progress_; }
    // The peers as they stand (summaries are final once run() returned).
    std::vector<PeerSummary> peer_summaries() const;

  private:
    struct Peer;
    struct Target {
        uint64_t number{0};
        Hash32 hash{};
        Bytes rlp;
    };

    asio::awaitable<void> connect_all();
    asio::awaitable<Outcome<Target>> resolve_target();
    asio::awaitable<Outcome<void>> fetch(const db::Skeleton& skeleton, std::optional<db::Head> local_head);
    asio::awaitable<void> peer_loop(std::shared_ptr<Peer> peer);
    // Verifies what joins the proven chain and stores it; a false outcome is fatal.
    Outcome<void> verify();
    // kind: the headerd_sync_peers_dropped_total reason (fault, timeout, empty, closed).
    void drop(Peer& peer, const std::string& why, const char* kind = "fault");
    // Counts an answered request of `peer` in its summary.
    static void count_reply(Peer& peer, p2p::Clock::duration rtt);
    void notify();
    asio::awaitable<void> wait();
    asio::awaitable<void> close_all();
    size_t alive() const;
    std::string fates() const;

    asio::io_context& io_;
    db::ChainDb& db_;
    const p2p::LocalNode& local_;
    SyncConfig config_;
    std::vector<std::shared_ptr<Peer>> peers_;
    std::optional<Fetcher> fetcher_;
    JoinFn join_;
    asio::steady_timer wake_;
    std::optional<std::string> fatal_;
    bool stopping_{false};
    size_t loops_{0};
    SyncProgress progress_;
    SyncResult result_;
    p2p::Clock::time_point last_durable_{};
    // The group of this syncer's requests: close_all() abandons those on lent sessions.
    uint64_t group_;
};

}  // namespace headerd::sync
