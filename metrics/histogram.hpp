#pragma once

// A latency histogram in the manner of HdrHistogram: every value is counted (nothing sampled) in a
// log-linear bucket whose width is at most 1/64 of its value, so any quantile is exact to within
// 1.6 % (and max and mean are exact). Values are nanoseconds, from 0 to about 18 minutes (larger
// values are counted in the last bucket, and max keeps the true value). 2,304 counters, 18 KiB.
// Not thread-safe: one per thread, merged for reports.
//
// Why our own: Debian 12 packages no C or C++ HdrHistogram, and this is 100 lines.

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace headerd::metrics {

class LatencyHistogram {
  public:
    static constexpr int kSubBits = 7;  // 128 exact values, then 64 buckets per power of two
    static constexpr int kMaxShift = 34;
    static constexpr size_t kBuckets = (size_t{1} << kSubBits) + kMaxShift * (size_t{1} << (kSubBits - 1));

    void record(uint64_t nanos) noexcept;
    void record(std::chrono::nanoseconds d) noexcept { record(d.count() < 0 ? 0 : static_cast<uint64_t>(d.count())); }
    void merge(const LatencyHistogram& other) noexcept;
    void reset() noexcept;

    uint64_t count() const noexcept { return count_; }
    uint64_t max() const noexcept { return max_; }
    uint64_t min() const noexcept { return count_ == 0 ? 0 : min_; }
    double mean() const noexcept { return count_ == 0 ? 0.0 : sum_ / static_cast<double>(count_); }
    // The smallest recorded bucket's upper bound below which at least q of the values lie (q in
    // [0, 1]); 0 for an empty histogram; never above max().
    uint64_t quantile(double q) const noexcept;

    // Counts at or below each of `bounds` (ascending, nanoseconds) and not below the previous one:
    // result[i] counts values in (bounds[i-1], bounds[i]], to the histogram's precision (a value
    // up to 1/64 above a bound may count under it); the last bound takes everything above.
    std::vector<uint64_t> counts_at(const std::vector<uint64_t>& bounds) const;

    // Everything the histogram holds, in a form to write down and read back (load --json, report
    // --merge): the non-empty buckets by index and the exact figures. A histogram restored from its
    // snapshot equals it, so histograms of several processes merge exactly as in one process.
    struct Snapshot {
        std::vector<std::pair<uint32_t, uint64_t>> buckets;  // (index, count): ascending, counts > 0
        uint64_t min{0};                                     // 0 when empty
        uint64_t max{0};
        double sum{0};  // of the values, nanoseconds
    };
    Snapshot snapshot() const;
    // The histogram of `s`, or why `s` is not a histogram's snapshot: an index out of range or out
    // of order, a zero count, min or max outside the lowest or highest bucket.
    static std::optional<LatencyHistogram> restore(const Snapshot& s, std::string* why = nullptr);

    static size_t index_of(uint64_t nanos) noexcept;
    // The largest value counted in bucket `index`.
    static uint64_t upper_bound(size_t index) noexcept;

  private:
    std::array<uint64_t, kBuckets> counts_{};
    uint64_t count_{0};
    uint64_t max_{0};
    uint64_t min_{UINT64_MAX};
    double sum_{0};
};

}  // namespace headerd::metrics
