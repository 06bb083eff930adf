#pragma once

// The bookkeeping of a reverse header download (docs/sync.md), without any I/O: which block ranges
// to ask peers for, and which replies are proven. Blocks are fetched downwards from `next` (the
// highest block not verified yet, whose hash is known) towards `floor`. Many requests may be out at
// once, to many peers; replies are kept until the reply above them is verified, then each is
// checked against the hash the verified chain expects and its own parent links. A reply that does
// not fit is the fault of the peer that sent it and of nobody else: the chain above it was proven
// from the trusted head.
//
// Thread-safety: none; one owner (the sync's io thread).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/bytes.hpp"
#include "db/chain_db.hpp"
#include "p2p/client_session.hpp"

namespace headerd::sync {

// Blocks origin, origin - 1, ..., origin - amount + 1: one GetBlockHeaders by number, reverse.
struct Task {
    uint64_t origin{0};
    uint64_t amount{0};
    uint64_t lowest() const noexcept { return origin + 1 - amount; }
    bool operator==(const Task&) const = default;
};

// Whether a verified header joins the local chain: block 0 with the network's genesis hash, or a
// header whose parent is the canonical header below it.
enum class Join { kNo, kLinked, kWrongGenesis };
using JoinFn = std::function<Join(uint64_t number, const Hash32& hash, const Hash32& parent_hash)>;

// Headers proven by hash links, highest first; views into replies the fetcher keeps until the next
// call that changes it.
struct Verified {
    std::vector<db::SkeletonHeader> headers;
    bool linked{false};  // the lowest one joins the local chain: nothing more to fetch
};

struct Fault {
    size_t owner{0};
    std::string reason;
};

class Fetcher {
  public:
    // next: highest block to fetch, expect: its hash; floor: lowest block to fetch unless lowered
    // (the local head + 1, or 0); window: most blocks below `next` handed out or held at once.
    Fetcher(uint64_t next, const Hash32& expect, uint64_t floor, uint64_t window);

    // The next range to ask for, at most `amount` blocks: a range handed back first, else below the
    // lowest one handed out. nullopt when nothing is left or the window is full.
    std::optional<Task> assign(uint64_t amount);
    // A task that got no usable reply (timeout, closed session): someone else asks again.
    void release(const Task& task);

    // A reply of `owner` to `task`. Checks the reply on its own: numbers origin, origin-1, ...
    // (fewer than asked is fine, the rest is handed back), not more than asked, each header the
    // parent of the one before; an empty reply hands the task back and returns no fault. A fault
    // names the reason; the task is handed back.
    std::optional<Fault> deliver(const Task& task, size_t owner, p2p::HeadersReply reply);
    // Every reply held from `owner` is discarded and its range handed back (a peer found lying).
    // What the last advance() returned stays valid.
    void drop_owner(size_t owner);

    // Verifies the replies that now join the proven chain, from `next` down. A reply whose top
    // header does not hash to what the chain expects is discarded and its owner returned as a
    // fault; `verified` gets what was proven up to there. After a join, nothing more is assigned.
    std::optional<Fault> advance(const JoinFn& join, Verified& verified);

    // Lets the download go below the floor once it is exhausted() (the chain above it did not join:
    // a reorg); does nothing otherwise.
    void lower_floor(uint64_t floor);

    uint64_t next() const noexcept { return next_; }
    const Hash32& expect() const noexcept { return expect_; }
    uint64_t floor() const noexcept { return floor_; }
    // Linked, verified down to the floor, or led to another network's genesis.
    bool done() const noexcept { return linked_ || wrong_genesis_ || exhausted(); }
    bool linked() const noexcept { return linked_; }
    bool wrong_genesis() const noexcept { return wrong_genesis_; }
    // Everything down to the floor verified without a join.
    bool exhausted() const noexcept { return !linked_ && below_floor_; }
    size_t held() const noexcept { return held_.size(); }

  private:
    struct Held {
        uint64_t origin{0};
        size_t owner{0};
        p2p::HeadersReply reply;
        std::vector<Hash32> hashes;
    };

    uint64_t next_;  // highest block not verified
    Hash32 expect_;
    uint64_t floor_;
    uint64_t window_;
    bool below_floor_{false};  // verified down through the floor
    bool linked_{false};
    bool wrong_genesis_{false};
    // Lowest block handed out so far; the next new task starts right below it.
    std::optional<uint64_t> assigned_low_;
    // Ranges handed back, by origin: highest first, as the verification needs them.
    std::map<uint64_t, uint64_t, std::greater<>> returned_;
    // Replies waiting for the chain above them, by origin.
    std::map<uint64_t, Held, std::greater<>> held_;
    // The replies verified by the last advance(): alive until the next call.
    std::vector<Held> verified_;
};

}  // namespace headerd::sync
