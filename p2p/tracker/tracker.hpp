#pragma once

// Pending-request tracker for requests this node sends to one peer over one protocol (docs/wire.md,
// "Requests this node sends"). Sans-I/O and clock-agnostic: every call takes `now`, nothing here reads a
// clock, owns a timer or touches Asio, so tests drive it with a fake clock.
//
// Lifecycle of a request:
//   track()   before the request is sent; fails at the cap or on an id already pending.
//   fulfil()  when a response arrives, after peeking its request id and item count but BEFORE
//             decoding its body: rejects unknown/late ids, a wrong response code and more items
//             than asked, so a bad response is refused before any work is spent on it.
//   expire()  from the caller's single timer: removes every request whose deadline passed.
//   clear()   when the peer stops.
//
// The caller runs ONE timer per tracker: after each call it reads next_deadline() and re-arms the
// timer when the value changed (nullopt: nothing pending, cancel it). Pending requests are kept in
// deadline order: with one timeout for every request that is insertion order, so expiry costs O(1)
// per request; a request with a shorter timeout of its own is inserted before the later ones.
//
// Memory: at most `cap` requests are held; slots and index grow on demand up to that and are then
// reused, so steady-state tracking does not allocate.
//
// Thread safety: none; a tracker belongs to one peer session and is used only from the one worker
// thread (io_context) that runs that session.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <system_error>
#include <type_traits>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

#include "core/result.hpp"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
}  // namespace prometheus

namespace headerd::tracker {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = Clock::duration;

// Request codes are relative eth message ids (GetBlockHeaders = 0x03, ...), all below 32. Codes at
// or above this are still tracked, but no per-code metric is observed for them.
inline constexpr size_t kMaxCodes = 32;

// Failsafe against a bug or a runaway caller, far above any sane pipeline depth (geth's
// maxTrackedPackets is 100,000 for all peers; this is per peer and protocol).
inline constexpr size_t kDefaultCap = 10'000;
// geth drops an eth request after 5 minutes; a request older than that is lost, not slow.
inline constexpr Duration kDefaultTimeout = std::chrono::minutes(5);

struct TrackerConfig {
    size_t cap{kDefaultCap};            // most requests pending at once (at most 2^32 - 2); track() fails at it
    Duration timeout{kDefaultTimeout};  // REQUIRES: >= 0 and small enough that now + timeout fits
};

// Metric hooks, owned by the caller (headerd's metrics library registers the families and creates
// the label children once per peer protocol/version). Any pointer may be null: that metric is not
// observed; all null is "metrics off". REQUIRES: non-null metrics outlive the tracker (its
// destructor gives back its share of the gauges).
//
// Names (docs/operations.md, "3. Metrics"):
//   tracked[code]      gauge     headerd_p2p_tracked_requests{proto,version,code}
//                                requests pending now; shared by all peers' trackers, each adds and
//                                removes only its own requests (clear() and the destructor too)
//   rtt[code]          histogram headerd_p2p_request_rtt_seconds{proto,version,code}
//                                seconds from track() to a successful fulfil()
//   lost               counter   headerd_p2p_requests_lost_total: requests that timed out
//   stale              counter   headerd_p2p_responses_stale_total: responses to an unknown, already
//                                fulfilled or expired request id
//   rejected_cap       counter   headerd_p2p_tracker_rejected_total{reason="cap"}
//   rejected_duplicate counter   headerd_p2p_tracker_rejected_total{reason="duplicate_id"}
// `code` is the request's code (the metric label is the request, e.g. "0x03", also for the RTT).
struct TrackerMetrics {
    std::array<prometheus::Gauge*, kMaxCodes> tracked{};
    std::array<prometheus::Histogram*, kMaxCodes> rtt{};
    prometheus::Counter* lost{nullptr};
    prometheus::Counter* stale{nullptr};
    prometheus::Counter* rejected_cap{nullptr};
    prometheus::Counter* rejected_duplicate{nullptr};
};

enum class TrackerError {
    // track(): our own failures; the request must not be sent.
    kCapReached = 1,  // cap requests already pending
    kDuplicateId,     // the request id is already pending (id collision: a bug in the caller)
    // fulfil(): the peer's failures; each maps to a disconnect reason.
    kStale,              // response to an id never sent, already fulfilled, or expired (late)
    kWrongResponseCode,  // the id is pending but was asked with another message
    kTooManyItems,       // more items than the request asked for
};

const std::error_category& tracker_category() noexcept;
std::error_code make_error_code(TrackerError e) noexcept;

class Tracker {
  public:
    explicit Tracker(TrackerConfig config = {}, TrackerMetrics metrics = {});
    // Gives back this tracker's share of the shared gauges, as clear() does.
    ~Tracker();

    // Not copyable or movable: the tracker owns increments of shared gauges, which a copy would
    // give back twice. Hold it in place (or in a unique_ptr) in the peer session.
    Tracker(const Tracker&) = delete;
    Tracker& operator=(const Tracker&) = delete;

    // Records a request about to be sent, asking for at most `max_items` items and answered by a
    // `response_code` message. Deadline: now + timeout. Errors: kCapReached (counted as rejected
    // "cap"), kDuplicateId (counted as rejected "duplicate_id"); the pending set is unchanged and
    // the request must not be sent.
    Result<void> track(uint64_t request_id, uint64_t request_code, uint64_t response_code, uint64_t max_items,
                       TimePoint now);
    // The same with this request's own timeout instead of the configured one (a client sizing each
    // request's deadline from the peer's measured RTT). Expiry stays oldest-deadline first.
    Result<void> track(uint64_t request_id, uint64_t request_code, uint64_t response_code, uint64_t max_items,
                       TimePoint now, Duration timeout);

    // Matches a response (only its id and item count peeked, body not decoded yet). On success
    // removes the request, observes the RTT and returns it (now - time of track(), never
    // negative). Errors, checked in this order:
    //   kStale             id not pending, or pending with its deadline at or before `now` (the
    //                      timer just has not fired yet: the request is expired here, counted as
    //                      lost, so the outcome does not depend on timer jitter); counted as stale
    //   kWrongResponseCode the request stays pending (it was not answered); the caller drops the peer
    //   kTooManyItems      the request stays pending, as above
    Result<Duration> fulfil(uint64_t request_id, uint64_t response_code, uint64_t items, TimePoint now);

    // Removes every request whose deadline is at or before `now`, oldest first, counting each as
    // lost; returns how many. The second form also appends their ids, in order, to `lost_ids` (so
    // the caller can ask someone else for what they covered).
    size_t expire(TimePoint now);
    size_t expire(TimePoint now, std::vector<uint64_t>& lost_ids);

    // Deadline of the oldest pending request; nullopt when nothing is pending.
    std::optional<TimePoint> next_deadline() const noexcept;

    // Drops every pending request without counting it lost (the peer stopped) and gives back this
    // tracker's share of the tracked gauges.
    void clear() noexcept;

    size_t pending() const noexcept { return index_.size(); }
    // Pending requests with this request code (0 for codes >= kMaxCodes, which are not counted).
    size_t pending(uint64_t request_code) const noexcept;
    bool is_pending(uint64_t request_id) const noexcept { return index_.contains(request_id); }
    size_t cap() const noexcept { return config_.cap; }
    Duration timeout() const noexcept { return config_.timeout; }

  private:
    static constexpr uint32_t kNil = UINT32_MAX;

    // One pending request; slots form a doubly linked FIFO (prev/next) in deadline order, and free
    // slots a singly linked list through `next`.
    struct Slot {
        uint64_t request_id{0};
        uint64_t request_code{0};
        uint64_t response_code{0};
        uint64_t max_items{0};
        TimePoint sent_at{};
        TimePoint deadline{};
        uint32_t prev{kNil};
        uint32_t next{kNil};
    };

    uint32_t allocate_slot();
    // Unlinks slot `i` from the FIFO and the index, returns it to the free list and gives back its
    // gauge increment.
    void remove(uint32_t i) noexcept;
    template <class OnLost>
    size_t expire_impl(TimePoint now, OnLost on_lost);

    TrackerConfig config_;
    TrackerMetrics metrics_;
    boost::unordered_flat_map<uint64_t, uint32_t> index_;  // request id -> slot
    std::vector<Slot> slots_;
    uint32_t head_{kNil};  // oldest pending, next to expire
    uint32_t tail_{kNil};  // newest pending
    uint32_t free_{kNil};
    std::array<uint32_t, kMaxCodes> pending_by_code_{};
};

}  // namespace headerd::tracker

template <>
struct std::is_error_code_enum<headerd::tracker::TrackerError> : std::true_type {};
