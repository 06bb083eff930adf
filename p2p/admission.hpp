#pragma once

// Who may connect, decided in one thread-safe place for every worker: connections still in the
// handshake are capped (the acceptor stops accepting at the cap, so a storm of new connections
// waits in the kernel's backlog and is taken at the rate handshakes finish, instead of starving
// the peers already served); established peers are capped, and a node id may be connected once,
// never to ourselves. Counts are readable from any thread (/healthz, metrics).

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <set>

#include "p2p/wire/base_protocol.hpp"

namespace headerd::p2p {

class PeerAdmission {
  public:
    enum class Verdict { kAdmitted, kSelf, kDuplicate, kFull };

    PeerAdmission(size_t max_peers, size_t max_pending, const NodeId& self);

    // A connection is about to be accepted; false at the cap of pending handshakes.
    bool try_begin_handshake();
    // Its handshake ended (either way). Calls the slot-free callback when the cap was reached.
    void end_handshake();
    // Called, on whichever thread ends a handshake, when a pending slot frees up after
    // try_begin_handshake() had failed. REQUIRES: set before the first connection.
    void on_slot_free(std::function<void()> f) { slot_free_ = std::move(f); }

    // After the RLPx handshake: may this node id become a peer? kAdmitted counts it until release().
    Verdict admit(const NodeId& id);
    void release(const NodeId& id);

    size_t peers() const noexcept { return peers_.load(std::memory_order_relaxed); }
    size_t pending() const noexcept { return pending_.load(std::memory_order_relaxed); }
    size_t max_peers() const noexcept { return max_peers_; }
    size_t max_pending() const noexcept { return max_pending_; }

  private:
    const size_t max_peers_;
    const size_t max_pending_;
    const NodeId self_;
    std::mutex mutex_;
    std::set<NodeId> ids_;  // guarded by mutex_
    bool refused_{false};   // guarded by mutex_: try_begin_handshake failed since the last slot freed
    std::atomic<size_t> peers_{0};
    std::atomic<size_t> pending_{0};
    std::function<void()> slot_free_;
};

}  // namespace headerd::p2p
