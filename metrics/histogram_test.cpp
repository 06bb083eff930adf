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

}  // namespace
}  // namespace headerd::metrics
