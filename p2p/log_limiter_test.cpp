#include "p2p/log_limiter.hpp"

#include <gtest/gtest.h>

#include <string>

namespace headerd::p2p {
namespace log_limiter_test {

using namespace std::chrono_literals;

// The fake clock: any point will do, the limiter only compares times.
const LogLimiter::TimePoint kT0 = LogLimiter::TimePoint{} + 1000h;

TEST(LogLimiter, OnePerKeyPerIntervalAndTheNextReportsWhatWasHeldBack) {
    LogLimiter limiter;
    auto first = limiter.allow("10.0.0.1:30303", kT0);
    EXPECT_TRUE(first);
    EXPECT_EQ(first.suppressed, 0u);
    EXPECT_FALSE(limiter.allow("10.0.0.1:30303", kT0));
    EXPECT_FALSE(limiter.allow("10.0.0.1:30303", kT0 + 1s));
    EXPECT_FALSE(limiter.allow("10.0.0.1:30303", kT0 + 9999ms));
    auto again = limiter.allow("10.0.0.1:30303", kT0 + 10s);
    EXPECT_TRUE(again);
    EXPECT_EQ(again.suppressed, 3u);
    // The count starts over after it was reported.
    EXPECT_FALSE(limiter.allow("10.0.0.1:30303", kT0 + 11s));
    auto third = limiter.allow("10.0.0.1:30303", kT0 + 20s);
    EXPECT_TRUE(third);
    EXPECT_EQ(third.suppressed, 1u);
    EXPECT_EQ(limiter.suppressed_total(), 4u);
}

TEST(LogLimiter, KeysAreLimitedIndependently) {
    LogLimiter limiter;
    EXPECT_TRUE(limiter.allow("a", kT0));
    EXPECT_FALSE(limiter.allow("a", kT0 + 1s));
    EXPECT_TRUE(limiter.allow("b", kT0 + 1s));
    EXPECT_FALSE(limiter.allow("b", kT0 + 2s));
    EXPECT_FALSE(limiter.allow("b", kT0 + 3s));
    auto a = limiter.allow("a", kT0 + 10s);
    auto b = limiter.allow("b", kT0 + 11s);
    EXPECT_TRUE(a);
    EXPECT_TRUE(b);
    EXPECT_EQ(a.suppressed, 1u);
    EXPECT_EQ(b.suppressed, 2u);
}

TEST(LogLimiter, AtMostMaxPerSecondInAnySecondOverall) {
    LogLimiter limiter;  // 10 per second
    for (int i = 0; i < 10; ++i) EXPECT_TRUE(limiter.allow("k" + std::to_string(i), kT0)) << i;
    EXPECT_FALSE(limiter.allow("k10", kT0));
    EXPECT_FALSE(limiter.allow("k10", kT0 + 999ms));
    // A key held back by the overall cap is still due: it goes through once there is room, with
    // its count.
    auto late = limiter.allow("k10", kT0 + 1s);
    EXPECT_TRUE(late);
    EXPECT_EQ(late.suppressed, 2u);
    for (int i = 11; i < 20; ++i) EXPECT_TRUE(limiter.allow("k" + std::to_string(i), kT0 + 1s)) << i;
    EXPECT_FALSE(limiter.allow("k20", kT0 + 1s));
    EXPECT_EQ(limiter.suppressed_total(), 3u);
}

TEST(LogLimiter, TheWindowSlidesInsteadOfResettingEachSecond) {
    LogLimiter::Options options;
    options.max_per_second = 4;
    LogLimiter limiter(options);
    EXPECT_TRUE(limiter.allow("a", kT0));
    EXPECT_TRUE(limiter.allow("b", kT0));
    EXPECT_TRUE(limiter.allow("c", kT0 + 900ms));
    EXPECT_TRUE(limiter.allow("d", kT0 + 900ms));
    EXPECT_FALSE(limiter.allow("e", kT0 + 999ms));
    // At +1s the two from kT0 left the window; the two from +900ms are still in it.
    EXPECT_TRUE(limiter.allow("e", kT0 + 1s));
    EXPECT_TRUE(limiter.allow("f", kT0 + 1s));
    EXPECT_FALSE(limiter.allow("g", kT0 + 1s));
    EXPECT_FALSE(limiter.allow("g", kT0 + 1899ms));
    EXPECT_TRUE(limiter.allow("g", kT0 + 1900ms));
}

TEST(LogLimiter, PerKeyIntervalIsAnOption) {
    LogLimiter::Options options;
    options.per_key_interval = 2s;
    LogLimiter limiter(options);
    EXPECT_TRUE(limiter.allow("a", kT0));
    EXPECT_FALSE(limiter.allow("a", kT0 + 1999ms));
    EXPECT_TRUE(limiter.allow("a", kT0 + 2s));
}

TEST(LogLimiter, MemoryIsBoundedByEvictingTheKeySeenLeastRecently) {
    LogLimiter::Options options;
    options.max_keys = 2;
    LogLimiter limiter(options);
    EXPECT_TRUE(limiter.allow("a", kT0));
    EXPECT_TRUE(limiter.allow("b", kT0));
    EXPECT_FALSE(limiter.allow("a", kT0 + 1s));  // held back, and now seen more recently than b
    EXPECT_TRUE(limiter.allow("c", kT0 + 1s));   // evicts b
    EXPECT_EQ(limiter.keys(), 2u);
    EXPECT_FALSE(limiter.allow("a", kT0 + 2s));  // a was kept: still limited
    EXPECT_TRUE(limiter.allow("b", kT0 + 2s));   // b was forgotten: new again (evicts c)
    EXPECT_EQ(limiter.keys(), 2u);
    EXPECT_FALSE(limiter.allow("a", kT0 + 3s));
    EXPECT_TRUE(limiter.allow("c", kT0 + 3s));  // c was forgotten too; it evicts b
    // a's count survived all of that.
    auto a = limiter.allow("a", kT0 + 10s);
    EXPECT_TRUE(a);
    EXPECT_EQ(a.suppressed, 3u);

    // Many distinct keys (a peer cycling addresses) stay within the cap.
    LogLimiter flood;
    for (int i = 0; i < 5000; ++i) (void)flood.allow("peer" + std::to_string(i), kT0 + std::chrono::seconds(i));
    EXPECT_EQ(flood.keys(), 1024u);
}

TEST(LogLimiter, LongKeysAreCutSoTheyCannotGrowMemory) {
    LogLimiter limiter;
    const std::string prefix(LogLimiter::kMaxKeyBytes, 'x');
    EXPECT_TRUE(limiter.allow(prefix + "first", kT0));
    EXPECT_FALSE(limiter.allow(prefix + "second", kT0 + 1s));  // the same key once cut
    EXPECT_EQ(limiter.keys(), 1u);
    EXPECT_TRUE(limiter.allow(prefix.substr(1), kT0 + 1s));  // a shorter key is another key
}

}  // namespace log_limiter_test
}  // namespace headerd::p2p
