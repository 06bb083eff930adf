#include "disc/rate_limit.hpp"

#include <gtest/gtest.h>

namespace headerd::disc {
namespace {

using namespace std::chrono_literals;
using Clock = RateLimiter::Clock;

boost::asio::ip::address ip(const char* s) { return boost::asio::ip::make_address(s); }

int allowed(RateLimiter& l, const boost::asio::ip::address& from, int tries, Clock::time_point now) {
    int n = 0;
    for (int i = 0; i < tries; ++i) n += l.allow(from, now) ? 1 : 0;
    return n;
}

TEST(RateLimiter, OneAddressGetsItsBurstThenItsRate) {
    RateLimiter l({.per_ip_rate = 10, .per_ip_burst = 40, .global_rate = 1000, .global_burst = 1000});
    const auto t0 = Clock::now();
    EXPECT_EQ(allowed(l, ip("203.0.113.7"), 100, t0), 40);
    EXPECT_EQ(allowed(l, ip("203.0.113.7"), 100, t0 + 500ms), 5);  // 10/s for half a second
    // Another address is not held back by the first.
    EXPECT_EQ(allowed(l, ip("203.0.113.8"), 100, t0 + 500ms), 40);
    // An idle address refills to its burst, not beyond.
    EXPECT_EQ(allowed(l, ip("203.0.113.7"), 100, t0 + 1h), 40);
}

TEST(RateLimiter, TheGlobalBucketHoldsManyAddressesTogether) {
    RateLimiter l({.per_ip_rate = 10, .per_ip_burst = 10, .global_rate = 50, .global_burst = 100});
    const auto t0 = Clock::now();
    int total = 0;
    for (int i = 0; i < 50; ++i) {
        const std::string a = "198.51.100." + std::to_string(i);
        total += allowed(l, ip(a.c_str()), 10, t0);
    }
    EXPECT_EQ(total, 100);  // 50 addresses × 10 asked for, the global burst let 100 through
    EXPECT_EQ(allowed(l, ip("198.51.100.200"), 10, t0 + 100ms), 5);  // 50/s for 0.1 s
}

TEST(RateLimiter, ForgedSourcesDoNotGrowItBeyondItsBound) {
    RateLimiter l({.per_ip_rate = 1, .per_ip_burst = 2, .global_rate = 1e9, .global_burst = 1e9, .max_sources = 64});
    const auto t0 = Clock::now();
    for (uint32_t i = 0; i < 10000; ++i) {
        EXPECT_TRUE(l.allow(boost::asio::ip::address_v4(0x0a000000 + i), t0));
        ASSERT_LE(l.sources(), 64u);
    }
    // Two seconds later the forged addresses' buckets are full again (idle): room is made for new ones,
    // which are told apart again.
    const auto later = t0 + 2s;
    const auto fresh = ip("192.0.2.1");
    EXPECT_EQ(allowed(l, fresh, 5, later), 2);
    EXPECT_LE(l.sources(), 64u);
}

TEST(RateLimiter, RateZeroTurnsItOff) {
    RateLimiter l({.per_ip_rate = 0});
    EXPECT_EQ(allowed(l, ip("127.0.0.1"), 100000, Clock::now()), 100000);
    EXPECT_EQ(l.sources(), 0u);
}

}  // namespace
}  // namespace headerd::disc
