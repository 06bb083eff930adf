#include "metrics/histogram.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace headerd::metrics {
namespace {

TEST(LatencyHistogram, BucketsCoverEveryValueWithBoundedError) {
    // Every bucket's values map back to it, buckets are contiguous, and a bucket is at most 1/64
    // of its values wide.
    uint64_t expect_low = 0;
    for (size_t i = 0; i + 1 < LatencyHistogram::kBuckets; ++i) {
        const uint64_t top = LatencyHistogram::upper_bound(i);
        ASSERT_EQ(LatencyHistogram::index_of(expect_low), i);
        ASSERT_EQ(LatencyHistogram::index_of(top), i);
        ASSERT_LE(top - expect_low, std::max<uint64_t>(expect_low / 64, 0)) << i;
        expect_low = top + 1;
    }
    EXPECT_EQ(LatencyHistogram::index_of(UINT64_MAX), LatencyHistogram::kBuckets - 1);
}

TEST(LatencyHistogram, QuantilesMatchSortedValuesWithinPrecision) {
    std::mt19937_64 rng(7);
    std::lognormal_distribution<double> dist(14.0, 1.5);  // around 1.2 ms, long tail
    std::vector<uint64_t> values;
    LatencyHistogram h;
    for (int i = 0; i < 100000; ++i) {
        const auto v = static_cast<uint64_t>(dist(rng));
        values.push_back(v);
        h.record(v);
    }
    std::sort(values.begin(), values.end());
    for (double q : {0.0, 0.5, 0.9, 0.99, 0.999, 1.0}) {
        const size_t rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(q * static_cast<double>(values.size()))));
        const uint64_t exact = values[rank - 1];
        const uint64_t got = h.quantile(q);
        EXPECT_GE(got, exact) << q;
        EXPECT_LE(static_cast<double>(got), static_cast<double>(exact) * (1 + 1.0 / 64) + 1) << q;
    }
    EXPECT_EQ(h.max(), values.back());
    EXPECT_EQ(h.min(), values.front());
    EXPECT_EQ(h.count(), values.size());
}

TEST(LatencyHistogram, MergeEqualsRecordingEverythingInOne) {
    LatencyHistogram a;
    LatencyHistogram b;
    LatencyHistogram all;
    for (uint64_t v = 1; v < 5'000'000; v = v * 3 + 1) {
        (v % 2 ? a : b).record(v);
        all.record(v);
    }
    a.merge(b);
    EXPECT_EQ(a.count(), all.count());
    EXPECT_EQ(a.max(), all.max());
    EXPECT_DOUBLE_EQ(a.mean(), all.mean());
    for (double q : {0.1, 0.5, 0.99}) EXPECT_EQ(a.quantile(q), all.quantile(q));
}

TEST(LatencyHistogram, EmptyAndCountsAtBounds) {
    LatencyHistogram h;
    EXPECT_EQ(h.quantile(0.99), 0u);
    EXPECT_EQ(h.mean(), 0.0);
    h.record(std::chrono::microseconds(50));
    h.record(std::chrono::milliseconds(3));
    h.record(std::chrono::seconds(2));
    const auto c = h.counts_at({100'000, 5'000'000, 1'000'000'000});
    EXPECT_EQ(c, (std::vector<uint64_t>{1, 1, 1}));  // the last bound takes what is above it
}

TEST(LatencyHistogram, SnapshotRestoresExactlyAndMergesAsOne) {
    // Three processes' histograms, written down and read back, merge into what one histogram of
    // every value holds: the same buckets, count, min, max and sum, so the same quantiles.
    std::mt19937_64 rng(11);
    std::lognormal_distribution<double> dist(13.0, 1.2);
    LatencyHistogram parts[3];
    LatencyHistogram all;
    for (int i = 0; i < 30000; ++i) {
        const auto v = static_cast<uint64_t>(dist(rng));
        parts[i % 3].record(v);
        all.record(v);
    }
    LatencyHistogram merged;
    for (const auto& p : parts) {
        std::string why;
        const auto back = LatencyHistogram::restore(p.snapshot(), &why);
        ASSERT_TRUE(back) << why;
        merged.merge(*back);
    }
    const auto a = merged.snapshot();
    const auto b = all.snapshot();
    EXPECT_EQ(a.buckets, b.buckets);
    EXPECT_EQ(a.min, b.min);
    EXPECT_EQ(a.max, b.max);
    EXPECT_DOUBLE_EQ(a.sum, b.sum);
    for (double q : {0.5, 0.9, 0.99, 0.999}) EXPECT_EQ(merged.quantile(q), all.quantile(q));

    const auto empty = LatencyHistogram::restore(LatencyHistogram{}.snapshot());
    ASSERT_TRUE(empty);
    EXPECT_EQ(empty->count(), 0u);
}

TEST(LatencyHistogram, RestoreRefusesWhatNoHistogramHolds) {
    LatencyHistogram h;
    h.record(1000);
    h.record(250'000);
    const auto good = h.snapshot();
    const auto refused = [](const LatencyHistogram::Snapshot& s) {
        std::string why;
        const bool ok = LatencyHistogram::restore(s, &why).has_value();
        EXPECT_FALSE(why.empty());
        return !ok;
    };
    auto s = good;
    s.buckets.back().first = static_cast<uint32_t>(LatencyHistogram::kBuckets);
    EXPECT_TRUE(refused(s));  // out of range
    s = good;
    std::swap(s.buckets.front(), s.buckets.back());
    EXPECT_TRUE(refused(s));  // out of order
    s = good;
    s.buckets.front().second = 0;
    EXPECT_TRUE(refused(s));  // no count
    s = good;
    s.max = 5'000'000;
    EXPECT_TRUE(refused(s));  // max beyond the highest bucket
    s = good;
    s.min = 0;
    EXPECT_TRUE(refused(s));  // min below the lowest bucket
    s = LatencyHistogram{}.snapshot();
    s.max = 7;
    EXPECT_TRUE(refused(s));  // an empty histogram with a max
}

}  // namespace
}  // namespace headerd::metrics
