#include "metrics/histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include <fmt/format.h>

namespace headerd::metrics {

namespace {
constexpr uint64_t kExact = uint64_t{1} << LatencyHistogram::kSubBits;       // 128
constexpr uint64_t kHalf = uint64_t{1} << (LatencyHistogram::kSubBits - 1);  // 64
}  // namespace

size_t LatencyHistogram::index_of(uint64_t v) noexcept {
    if (v < kExact) return static_cast<size_t>(v);
    // v >> shift lies in [64, 128): shift >= 1 here.
    const int shift = static_cast<int>(std::bit_width(v)) - LatencyHistogram::kSubBits;
    if (shift > kMaxShift) return kBuckets - 1;
    return static_cast<size_t>(kExact + (shift - 1) * kHalf + ((v >> shift) - kHalf));
}

uint64_t LatencyHistogram::upper_bound(size_t index) noexcept {
    if (index < kExact) return index;
    const uint64_t shift = (index - kExact) / kHalf + 1;
    const uint64_t mantissa = (index - kExact) % kHalf + kHalf;
    return ((mantissa + 1) << shift) - 1;
}

void LatencyHistogram::record(uint64_t nanos) noexcept {
    ++counts_[index_of(nanos)];
    ++count_;
    max_ = std::max(max_, nanos);
    min_ = std::min(min_, nanos);
    sum_ += static_cast<double>(nanos);
}

void LatencyHistogram::merge(const LatencyHistogram& other) noexcept {
    for (size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
    count_ += other.count_;
    max_ = std::max(max_, other.max_);
    min_ = std::min(min_, other.min_);
    sum_ += other.sum_;
}

void LatencyHistogram::reset() noexcept { *this = LatencyHistogram{}; }

uint64_t LatencyHistogram::quantile(double q) const noexcept {
    if (count_ == 0) return 0;
    q = std::clamp(q, 0.0, 1.0);
    // The rank of the value asked for, 1-based: at least one value.
    const auto rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_))));
    uint64_t seen = 0;
    for (size_t i = 0; i < kBuckets; ++i) {
        seen += counts_[i];
        if (seen >= rank) return std::min(upper_bound(i), max_);
    }
    return max_;
}

std::vector<uint64_t> LatencyHistogram::counts_at(const std::vector<uint64_t>& bounds) const {
    std::vector<uint64_t> out(bounds.size(), 0);
    if (bounds.empty()) return out;
    size_t b = 0;
    for (size_t i = 0; i < kBuckets; ++i) {
        if (counts_[i] == 0) continue;
        // A bucket counts under the first bound at or above its lowest value (buckets are at most
        // 1/64 of their values wide, so a value within 1.6 % above a bound may count under it).
        const uint64_t low = i == 0 ? 0 : upper_bound(i - 1) + 1;
        while (b + 1 < bounds.size() && low > bounds[b]) ++b;
        out[b] += counts_[i];
    }
    return out;
}

LatencyHistogram::Snapshot LatencyHistogram::snapshot() const {
    Snapshot s;
    for (size_t i = 0; i < kBuckets; ++i) {
        if (counts_[i] != 0) s.buckets.emplace_back(static_cast<uint32_t>(i), counts_[i]);
    }
    s.min = min();
    s.max = max_;
    s.sum = sum_;
    return s;
}

std::optional<LatencyHistogram> LatencyHistogram::restore(const Snapshot& s, std::string* why) {
    const auto bad = [why](std::string text) {
        if (why != nullptr) *why = std::move(text);
        return std::nullopt;
    };
    LatencyHistogram h;
    size_t next = 0;  // the lowest index the next bucket may have
    for (const auto& [index, count] : s.buckets) {
        if (index >= kBuckets) return bad(fmt::format("bucket {} is out of range (0..{})", index, kBuckets - 1));
        if (index < next) return bad(fmt::format("bucket {} is out of order", index));
        if (count == 0) return bad(fmt::format("bucket {} has no count", index));
        if (h.count_ + count < h.count_) return bad("the counts overflow");
        h.counts_[index] = count;
        h.count_ += count;
        next = index + size_t{1};
    }
    if (h.count_ == 0) {
        if (s.min != 0 || s.max != 0 || s.sum != 0) return bad("an empty histogram has a min, max or sum");
        return h;
    }
    if (index_of(s.min) != s.buckets.front().first)
        return bad(fmt::format("min {} is not in the lowest bucket", s.min));
    if (index_of(s.max) != s.buckets.back().first)
        return bad(fmt::format("max {} is not in the highest bucket", s.max));
    if (!std::isfinite(s.sum) || s.sum < 0) return bad("the sum is not a number of nanoseconds");
    h.min_ = s.min;
    h.max_ = s.max;
    h.sum_ = s.sum;
    return h;
}

}  // namespace headerd::metrics
