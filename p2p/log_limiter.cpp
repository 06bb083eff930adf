#include "p2p/log_limiter.hpp"

#include <algorithm>
#include <utility>

namespace headerd::p2p {

LogLimiter::LogLimiter(const Options& options) : options_(options) {
    options_.max_per_second = std::max<size_t>(options_.max_per_second, 1);
    options_.max_keys = std::max<size_t>(options_.max_keys, 1);
    recent_.reserve(options_.max_per_second);
}

// A sliding window, not a per-second bucket: never more than max_per_second in any one second.
bool LogLimiter::global_room(TimePoint now) const {
    if (recent_.size() < options_.max_per_second) return true;
    return now - recent_[oldest_] >= std::chrono::seconds(1);
}

LogLimiter::Verdict LogLimiter::allow(std::string_view key, TimePoint now) {
    key = key.substr(0, kMaxKeyBytes);
    if (auto it = index_.find(key); it != index_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
    } else {
        if (lru_.size() >= options_.max_keys) {
            index_.erase(lru_.back().key);
            lru_.pop_back();
        }
        lru_.push_front(Entry{std::string(key), std::nullopt, 0});
        index_.emplace(lru_.front().key, lru_.begin());
    }
    Entry& entry = lru_.front();

    const bool key_due = !entry.last_allowed || now - *entry.last_allowed >= options_.per_key_interval;
    if (!key_due || !global_room(now)) {
        ++entry.suppressed;
        ++suppressed_total_;
        return {};
    }
    if (recent_.size() < options_.max_per_second) {
        recent_.push_back(now);
    } else {
        recent_[oldest_] = now;
        oldest_ = (oldest_ + 1) % recent_.size();
    }
    entry.last_allowed = now;
    return {true, std::exchange(entry.suppressed, 0)};
}

}  // namespace headerd::p2p
