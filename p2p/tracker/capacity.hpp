#pragma once

// Per-peer capacity estimate, the idea of geth's p2p/msgrate: for each request kind, how many
// items per second the peer delivers, measured from every fulfilled response (items / RTT) and
// exponentially smoothed; from it, how many items to ask next so the reply takes about a target
// RTT. Items rather than bytes because a serving node's cost (disk lookups) is linear in the item
// count and mostly independent of item size. Also keeps a smoothed RTT, for comparing peers.
//
// Sans-I/O like Tracker: durations come from the caller (Tracker::fulfil's RTT). Feed it only
// responses whose body decoded and verified, so a peer cannot inflate its estimate with junk.
//
// Thread safety: none; one estimator per peer session, used only from the one worker thread
// (io_context) that runs that session.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace headerd::tracker {

// Kinds are request codes (relative eth message ids), as Tracker's codes; kinds at or above this
// are never measured and always use the start value.
inline constexpr size_t kMaxKinds = 32;

// Weight of one measurement in the smoothed values: new = (1 - k) * old + k * measured. Closer to 0
// reacts slower to real changes but rides out hiccups; 0.1 is what geth has used since 2021.
inline constexpr double kMeasurementImpact = 0.1;
// target_items asks this much more than the estimate: if a peer's RTT is mostly latency, asking
// exactly what was measured would reproduce the same measurement forever and lock the estimate
// below the peer's real capacity; a 1% overshoot lets it climb out (geth's capacityOverestimation).
inline constexpr double kOverestimation = 1.01;
// A timeout multiplies the kind's capacity by this. A lost request says the peer was overloaded or
// is gone; halving backs off fast (a few timeouts reach the floor) without throwing away all the
// measurements of a good peer that lost one request.
inline constexpr double kTimeoutFactor = 0.5;
// Bounds of an estimate: the floor keeps the next request at least one item (and a dead peer
// answering one item can recover), the ceiling keeps products with any target RTT finite and far
// above any real peer (a zero RTT measurement would otherwise be infinite).
inline constexpr double kMinItemsPerSecond = 1.0;
inline constexpr double kMaxItemsPerSecond = 1e6;
// Start values until a kind's first measurement. Modest on purpose: with a 1 s target the first
// header request asks ~100 headers, which any peer serves quickly; the first measurement then
// replaces the guess (smoothing from a guess off by 50x would take ~40 responses to forget it).
inline constexpr double kDefaultItemsPerSecond = 100.0;
// Pessimistic, so that a new peer does not look faster than the measured ones before it answered
// anything (geth clamps its RTT targets to at least 2 s too).
inline constexpr std::chrono::steady_clock::duration kDefaultRtt = std::chrono::seconds(2);

// geth's msgrate rules for sizing requests and their timeouts from the measured RTT. The round trip
// used is the smoothed RTT clamped to [kRttMinEstimate, kRttMaxEstimate]: every request costs two
// latencies plus serving time, so aiming below 2 s gives a peer no room for real work, and above
// 20 s stalls a pipeline (satellite links have ~3 s). Requests are sized for kRttPushdown of it:
// several RTTs are valid for a given rate, and the smaller one gives smaller, steadier replies.
inline constexpr std::chrono::steady_clock::duration kRttMinEstimate = std::chrono::seconds(2);
inline constexpr std::chrono::steady_clock::duration kRttMaxEstimate = std::chrono::seconds(20);
inline constexpr double kRttPushdown = 0.9;
// A request's timeout is kTtlScaling round trips over the confidence in the estimate (at least
// kMinConfidence), at most kTtlLimit: slack for a peer's load to vary, and a cap for when
// everything is slow.
inline constexpr double kTtlScaling = 3.0;
inline constexpr double kMinConfidence = 0.1;
inline constexpr std::chrono::steady_clock::duration kTtlLimit = std::chrono::minutes(1);

struct CapacityConfig {
    // A caller with other peers may start from their mean, as geth does. Clamped to the bounds.
    double initial_items_per_second{kDefaultItemsPerSecond};
    std::chrono::steady_clock::duration initial_rtt{kDefaultRtt};
};

class Capacity {
  public:
    using Duration = std::chrono::steady_clock::duration;

    explicit Capacity(CapacityConfig config = {}) noexcept;

    // A response of `items` items to a `kind` request arrived `rtt` after the request. The first
    // measurement of a kind replaces the start value, later ones are smoothed (kMeasurementImpact);
    // likewise for the RTT. An RTT <= 0 counts as 1 ns (then clamped to kMaxItemsPerSecond). A reply
    // with 0 items is ignored: it says the peer lacks the data, not how fast it serves (a caller
    // that treats it as a failure calls timeout()).
    void update(uint64_t kind, Duration rtt, uint64_t items) noexcept;
    // A `kind` request was lost: capacity *= kTimeoutFactor, not below kMinItemsPerSecond. The RTT
    // is unchanged (the timeout only bounds it from below, and would swamp the average).
    void timeout(uint64_t kind) noexcept;

    double items_per_second(uint64_t kind) const noexcept;
    Duration rtt() const noexcept;

    // The round trip to size the next request for: rtt() clamped to [kRttMinEstimate,
    // kRttMaxEstimate], times kRttPushdown (geth's TargetRoundTrip for one peer).
    Duration target_rtt() const noexcept;
    // The timeout for the next request: kTtlScaling x the clamped rtt() / max(confidence,
    // kMinConfidence), at most ttl_limit (geth's TargetTimeout). A caller tracking several peers
    // passes its confidence in their median; one peer alone is 1.
    Duration target_timeout(double confidence = 1.0, Duration ttl_limit = kTtlLimit) const noexcept;

    // Items to ask in the next `kind` request so the reply takes about `target_rtt`:
    // ceil(items_per_second * target_rtt * kOverestimation), clamped to [1, max_items]; 0 only when
    // max_items is 0.
    uint64_t target_items(uint64_t kind, Duration target_rtt, uint64_t max_items) const noexcept;

  private:
    double initial_rate_;
    std::array<double, kMaxKinds> rate_{};  // items per second
    std::array<bool, kMaxKinds> measured_{};
    double rtt_seconds_;
    bool rtt_measured_{false};
};

}  // namespace headerd::tracker
