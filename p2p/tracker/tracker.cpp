#include "p2p/tracker/tracker.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

namespace headerd::tracker {
namespace {

class TrackerCategory final : public std::error_category {
  public:
    const char* name() const noexcept override { return "tracker"; }
    std::string message(int ev) const override {
        switch (static_cast<TrackerError>(ev)) {
            case TrackerError::kCapReached:
                return "too many requests pending (cap reached)";
            case TrackerError::kDuplicateId:
                return "request id already pending";
            case TrackerError::kStale:
                return "response to an unknown or expired request id";
            case TrackerError::kWrongResponseCode:
                return "response code does not match the request";
            case TrackerError::kTooManyItems:
                return "response carries more items than requested";
        }
        return "unknown tracker error";
    }
};

void increment(prometheus::Counter* c, size_t n = 1) noexcept {
    if (c != nullptr && n != 0) c->Increment(static_cast<double>(n));
}

}  // namespace

const std::error_category& tracker_category() noexcept {
    static const TrackerCategory category;
    return category;
}

std::error_code make_error_code(TrackerError e) noexcept { return {static_cast<int>(e), tracker_category()}; }

Tracker::Tracker(TrackerConfig config, TrackerMetrics metrics) : config_(config), metrics_(metrics) {
    // Slot indices are 32-bit with one value reserved for "none".
    config_.cap = std::min<size_t>(config_.cap, kNil - 1);
}

Tracker::~Tracker() { clear(); }

Result<void> Tracker::track(uint64_t request_id, uint64_t request_code, uint64_t response_code, uint64_t max_items,
                            TimePoint now) {
    return track(request_id, request_code, response_code, max_items, now, config_.timeout);
}

Result<void> Tracker::track(uint64_t request_id, uint64_t request_code, uint64_t response_code, uint64_t max_items,
                            TimePoint now, Duration timeout) {
    if (index_.size() >= config_.cap) [[unlikely]] {
        increment(metrics_.rejected_cap);
        return make_error_code(TrackerError::kCapReached);
    }
    // One lookup for both the collision check and the insert; the slot is filled in just below.
    auto [it, inserted] = index_.try_emplace(request_id, kNil);
    if (!inserted) [[unlikely]] {
        increment(metrics_.rejected_duplicate);
        return make_error_code(TrackerError::kDuplicateId);
    }
    uint32_t i;
    try {
        i = allocate_slot();
    } catch (...) {
        index_.erase(it);
        throw;
    }
    it->second = i;

    Slot& s = slots_[i];
    s.request_id = request_id;
    s.request_code = request_code;
    s.response_code = response_code;
    s.max_items = max_items;
    s.sent_at = now;
    s.deadline = now + std::max(timeout, Duration::zero());
    // Keep the list in deadline order. With one timeout for every request that is insertion order
    // and this loop does not run; a shorter timeout walks back only past the requests that expire
    // later than this one.
    uint32_t after = tail_;
    while (after != kNil && slots_[after].deadline > s.deadline) after = slots_[after].prev;
    s.prev = after;
    s.next = after != kNil ? slots_[after].next : head_;
    if (s.next != kNil) {
        slots_[s.next].prev = i;
    } else {
        tail_ = i;
    }
    if (after != kNil) {
        slots_[after].next = i;
    } else {
        head_ = i;
    }

    if (request_code < kMaxCodes) {
        ++pending_by_code_[request_code];
        if (auto* g = metrics_.tracked[request_code]) g->Increment();
    }
    return {};
}

uint32_t Tracker::allocate_slot() {
    if (free_ != kNil) {
        uint32_t i = free_;
        free_ = slots_[i].next;
        return i;
    }
    // No free slot means every slot is pending, and pending < cap here. Grow geometrically but
    // never reserve past the cap, so the slab's memory is bounded by it.
    if (slots_.size() == slots_.capacity()) {
        slots_.reserve(std::min(config_.cap, std::max<size_t>(16, slots_.size() * 2)));
    }
    slots_.emplace_back();
    return static_cast<uint32_t>(slots_.size() - 1);
}

void Tracker::remove(uint32_t i) noexcept {
    Slot& s = slots_[i];
    if (s.prev != kNil) {
        slots_[s.prev].next = s.next;
    } else {
        head_ = s.next;
    }
    if (s.next != kNil) {
        slots_[s.next].prev = s.prev;
    } else {
        tail_ = s.prev;
    }
    index_.erase(s.request_id);
    if (s.request_code < kMaxCodes) {
        --pending_by_code_[s.request_code];
        if (auto* g = metrics_.tracked[s.request_code]) g->Decrement();
    }
    s.prev = kNil;
    s.next = free_;
    free_ = i;
}

Result<Duration> Tracker::fulfil(uint64_t request_id, uint64_t response_code, uint64_t items, TimePoint now) {
    auto it = index_.find(request_id);
    if (it == index_.end()) [[unlikely]] {
        increment(metrics_.stale);
        return make_error_code(TrackerError::kStale);
    }
    const uint32_t i = it->second;
    const Slot& s = slots_[i];
    if (s.deadline <= now) [[unlikely]] {
        // Past its deadline: exactly what expire() would have done had the timer fired first.
        remove(i);
        increment(metrics_.lost);
        increment(metrics_.stale);
        return make_error_code(TrackerError::kStale);
    }
    if (s.response_code != response_code) [[unlikely]] {
        return make_error_code(TrackerError::kWrongResponseCode);
    }
    if (items > s.max_items) [[unlikely]] {
        return make_error_code(TrackerError::kTooManyItems);
    }
    const Duration rtt = std::max(now - s.sent_at, Duration::zero());
    if (s.request_code < kMaxCodes) {
        if (auto* h = metrics_.rtt[s.request_code]) h->Observe(std::chrono::duration<double>(rtt).count());
    }
    remove(i);
    return rtt;
}

template <class OnLost>
size_t Tracker::expire_impl(TimePoint now, OnLost on_lost) {
    size_t n = 0;
    while (head_ != kNil && slots_[head_].deadline <= now) {
        on_lost(slots_[head_].request_id);  // first: if it throws, the request is still pending
        remove(head_);
        increment(metrics_.lost);
        ++n;
    }
    return n;
}

size_t Tracker::expire(TimePoint now) {
    return expire_impl(now, [](uint64_t) {});
}

size_t Tracker::expire(TimePoint now, std::vector<uint64_t>& lost_ids) {
    return expire_impl(now, [&lost_ids](uint64_t id) { lost_ids.push_back(id); });
}

std::optional<TimePoint> Tracker::next_deadline() const noexcept {
    if (head_ == kNil) return std::nullopt;
    return slots_[head_].deadline;
}

void Tracker::clear() noexcept {
    // Per-code counts make this one gauge update per code rather than one per request.
    for (size_t code = 0; code < kMaxCodes; ++code) {
        if (pending_by_code_[code] == 0) continue;
        if (auto* g = metrics_.tracked[code]) g->Decrement(static_cast<double>(pending_by_code_[code]));
        pending_by_code_[code] = 0;
    }
    index_.clear();
    slots_.clear();
    head_ = tail_ = free_ = kNil;
}

size_t Tracker::pending(uint64_t request_code) const noexcept {
    return request_code < kMaxCodes ? pending_by_code_[request_code] : 0;
}

}  // namespace headerd::tracker
