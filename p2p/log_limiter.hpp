#pragma once

// Rate limit for warnings a peer can cause, so that no peer (or crowd of peers) can make the log
// grow without bound. A warning is let through when
//   - its key (a peer address, a reason, ...) was last let through at least `per_key_interval` ago
//     (or never), and
//   - fewer than `max_per_second` warnings were let through in the second before `now`.
// What is held back is counted per key and handed back with that key's next allowed warning:
//
//   if (auto v = limiter.allow(address, now)) {
//       spdlog::warn("Peer sent a bad message                 peer={} err=\"{}\" suppressed={}", address, why,
//                    v.suppressed);
//   }
//
// The limiter never reads a clock: every call takes `now`, so tests drive it with made-up times.
// Memory is bounded: at most `max_keys` keys of at most kMaxKeyBytes each; a new key beyond that
// evicts the key seen least recently, whose pending count then only remains in suppressed_total().
// Thread-safety: none; one limiter per thread or strand, or a lock around it.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace headerd::p2p {

class LogLimiter {
  public:
    using Clock = std::chrono::steady_clock;
    using TimePoint = Clock::time_point;

    // Longer keys are cut to this many bytes: keys may carry text a peer chose.
    static constexpr size_t kMaxKeyBytes = 128;

    struct Options {
        Clock::duration per_key_interval{std::chrono::seconds(10)};
        size_t max_per_second{10};  // values below 1 count as 1
        size_t max_keys{1024};      // values below 1 count as 1
    };

    struct Verdict {
        bool allowed{false};
        // When allowed: the warnings of this key held back since its previous allowed one. 0 otherwise.
        uint64_t suppressed{0};
        explicit operator bool() const noexcept { return allowed; }
    };

    LogLimiter() : LogLimiter(Options{}) {}
    explicit LogLimiter(const Options& options);

    // Decides about one warning for `key` at `now` and counts it if it is held back.
    Verdict allow(std::string_view key, TimePoint now);

    // Warnings held back since construction, for every key (evicted ones included).
    uint64_t suppressed_total() const noexcept { return suppressed_total_; }
    // Keys remembered now (<= max_keys).
    size_t keys() const noexcept { return lru_.size(); }

  private:
    struct Entry {
        std::string key;
        std::optional<TimePoint> last_allowed;
        uint64_t suppressed{0};
    };

    bool global_room(TimePoint now) const;

    Options options_;
    std::list<Entry> lru_;  // most recently seen first; nodes never move, so index_ may view their keys
    std::unordered_map<std::string_view, std::list<Entry>::iterator> index_;
    std::vector<TimePoint> recent_;  // ring of the last max_per_second allowed times
    size_t oldest_{0};               // index of the oldest time in recent_ once it is full
    uint64_t suppressed_total_{0};
};

}  // namespace headerd::p2p
