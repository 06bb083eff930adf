#include "p2p/tracker/capacity.hpp"

#include <algorithm>
#include <cmath>

#include "p2p/tracker/tracker.hpp"

namespace headerd::tracker {

static_assert(kMaxKinds == kMaxCodes, "capacity kinds are the tracker's request codes");

namespace {

double clamp_rate(double rate) noexcept {
    // NaN (from a bad initial value) becomes the floor rather than poisoning every later average.
    if (!(rate >= kMinItemsPerSecond)) return kMinItemsPerSecond;
    return std::min(rate, kMaxItemsPerSecond);
}

double smooth(double old_value, double measured) noexcept {
    return (1 - kMeasurementImpact) * old_value + kMeasurementImpact * measured;
}

}  // namespace

Capacity::Capacity(CapacityConfig config) noexcept
    : initial_rate_(clamp_rate(config.initial_items_per_second)),
      rtt_seconds_(std::max(0.0, std::chrono::duration<double>(config.initial_rtt).count())) {
    rate_.fill(initial_rate_);
}

void Capacity::update(uint64_t kind, Duration rtt, uint64_t items) noexcept {
    if (items == 0) return;
    const double seconds = std::chrono::duration<double>(std::max(rtt, Duration{1})).count();

    if (kind < kMaxKinds) {
        const double measured = clamp_rate(static_cast<double>(items) / seconds);
        rate_[kind] = measured_[kind] ? clamp_rate(smooth(rate_[kind], measured)) : measured;
        measured_[kind] = true;
    }
    rtt_seconds_ = rtt_measured_ ? smooth(rtt_seconds_, seconds) : seconds;
    rtt_measured_ = true;
}

void Capacity::timeout(uint64_t kind) noexcept {
    if (kind < kMaxKinds) rate_[kind] = clamp_rate(rate_[kind] * kTimeoutFactor);
}

double Capacity::items_per_second(uint64_t kind) const noexcept {
    return kind < kMaxKinds ? rate_[kind] : initial_rate_;
}

Capacity::Duration Capacity::rtt() const noexcept {
    return std::chrono::round<Duration>(std::chrono::duration<double>(rtt_seconds_));
}

namespace {

Capacity::Duration clamped_roundtrip(Capacity::Duration rtt) noexcept {
    return std::clamp(rtt, kRttMinEstimate, kRttMaxEstimate);
}

}  // namespace

Capacity::Duration Capacity::target_rtt() const noexcept {
    return std::chrono::round<Duration>(clamped_roundtrip(rtt()) * kRttPushdown);
}

Capacity::Duration Capacity::target_timeout(double confidence, Duration ttl_limit) const noexcept {
    const auto timeout =
        std::chrono::round<Duration>(clamped_roundtrip(rtt()) * kTtlScaling / std::max(confidence, kMinConfidence));
    return std::min(timeout, ttl_limit);
}

uint64_t Capacity::target_items(uint64_t kind, Duration target_rtt, uint64_t max_items) const noexcept {
    if (max_items == 0) return 0;
    const double seconds = std::chrono::duration<double>(std::max(target_rtt, Duration::zero())).count();
    const double want = std::ceil(items_per_second(kind) * seconds * kOverestimation);
    // Compared as double first: the product can exceed what a uint64_t holds.
    if (want >= static_cast<double>(max_items)) return max_items;
    return std::max<uint64_t>(1, static_cast<uint64_t>(want));
}

}  // namespace headerd::tracker
