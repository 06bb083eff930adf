#pragma once

// `serve --follow`: keeps a serving datadir current from chosen peers (docs/sync.md). One session
// per followed peer watches its head: eth/69+ peers say it in Status and BlockRangeUpdate, eth/68
// peers are asked (headers from our head upwards) every poll interval. A head is adopted when a
// majority of the followed peers, and at least two, report the same hash for it; a Syncer then
// fetches it and what lies below it in reverse down to where it joins our chain (reorgs of the
// unfrozen tip included) and links it in, on the watching sessions (no handshake per adoption).
// Served requests see the old chain or the new one, never a mix (ChainDb::skeleton_link). After
// each adoption `on_head` is told, so the server can announce the new range.
//
// Threads: the follower runs on a thread of its own and is the datadir's only writer; start() and
// stop() are called from one other thread.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "db/chain_db.hpp"
#include "p2p/enode/node_key.hpp"
#include "p2p/net_metrics.hpp"
#include "sync/syncer.hpp"

namespace headerd::sync {

struct FollowConfig {
    std::vector<p2p::Enode> peers;
    // How often eth/68 peers are asked for their head, and how often every report is weighed.
    p2p::Clock::duration poll_interval{std::chrono::seconds(12)};
    // Wait before dialling a peer again after its session ended; after a failed dial the wait
    // doubles with each failure in a row, up to max_reconnect_delay (geth's dial backoff, simplified).
    p2p::Clock::duration reconnect_delay{std::chrono::seconds(5)};
    p2p::Clock::duration max_reconnect_delay{std::chrono::minutes(5)};
    // With `replace` set, a peer whose dials failed replace_after times in a row is swapped for the
    // one replace() names (serve --follow-discovered: a spare discovered peer); nullopt keeps it.
    // replace runs on the follower's thread: it must be thread-safe and must not block.
    unsigned replace_after{3};
    std::function<std::optional<p2p::Enode>(const p2p::Enode& lost)> replace;
    // A head whose fetch failed (no peer left, a fork below the freezer) is not tried again before
    // this; another head is tried at once.
    p2p::Clock::duration retry_delay{std::chrono::seconds(60)};
    // How each adopted head is fetched (peers, head and freezing are filled in by the follower).
    SyncConfig sync;
};

// What the follower knows of one followed peer.
struct FollowedPeer {
    std::string address;
    bool connected{false};
    std::optional<uint64_t> head_number;
    std::optional<Hash32> head_hash;
};

class Follower {
  public:
    // REQUIRES: db holds a chain and its config; db and metrics outlive the follower. Its sessions
    // use keys of their own (a followed peer may also be connected to our server, with our key).
    Follower(db::ChainDb& db, std::string client_id, const p2p::NetMetrics* metrics, FollowConfig config,
             std::function<void(const db::Head&)> on_head);
    ~Follower();
    Follower(const Follower&) = delete;
    Follower& operator=(const Follower&) = delete;

    void start();
    // Ends every session and the running sync, and joins the thread. Idempotent.
    void stop();

    // Heads adopted so far (any thread).
    uint64_t adopted() const noexcept;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// The head a majority of `followed` peers (and at least two) report, if any: the highest such.
std::optional<std::pair<uint64_t, Hash32>> agreed_head(const std::vector<FollowedPeer>& peers, size_t followed);

}  // namespace headerd::sync
