#include "p2p/tracker/capacity.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace headerd::tracker {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

constexpr uint64_t kHeaders = 0x03;
constexpr uint64_t kBodies = 0x05;

TEST(Capacity, StartsFromTheDefaults) {
    Capacity c;
    EXPECT_EQ(c.items_per_second(kHeaders), 100.0);
    EXPECT_EQ(c.items_per_second(kBodies), 100.0);
    EXPECT_EQ(c.rtt(), seconds(2));
    // ceil(100 * 0.5 * 1.01) = ceil(50.5)
    EXPECT_EQ(c.target_items(kHeaders, milliseconds(500), 1024), 51u);
    // ceil(100 * 0.25 * 1.01) = ceil(25.25)
    EXPECT_EQ(c.target_items(kHeaders, milliseconds(250), 1024), 26u);
}

TEST(Capacity, StartValuesAreConfigurableAndClamped) {
    Capacity c({.initial_items_per_second = 1000, .initial_rtt = milliseconds(300)});
    EXPECT_EQ(c.items_per_second(kHeaders), 1000.0);
    EXPECT_EQ(c.rtt(), milliseconds(300));
    // ceil(1000 * 0.25 * 1.01) = ceil(252.5)
    EXPECT_EQ(c.target_items(kHeaders, milliseconds(250), 1024), 253u);

    EXPECT_EQ(Capacity({.initial_items_per_second = 0.5}).items_per_second(kHeaders), 1.0);
    EXPECT_EQ(Capacity({.initial_items_per_second = std::nan("")}).items_per_second(kHeaders), 1.0);
    EXPECT_EQ(Capacity({.initial_items_per_second = 1e9}).items_per_second(kHeaders), 1e6);
}

TEST(Capacity, FirstMeasurementReplacesLaterOnesAreSmoothed) {
    Capacity c;
    // 50 items in 250 ms = 200 items/s, replacing the start value 100.
    c.update(kHeaders, milliseconds(250), 50);
    EXPECT_DOUBLE_EQ(c.items_per_second(kHeaders), 200.0);
    EXPECT_EQ(c.rtt(), milliseconds(250));

    // 100 items in 250 ms = 400/s: 0.9 * 200 + 0.1 * 400 = 220.
    c.update(kHeaders, milliseconds(250), 100);
    EXPECT_DOUBLE_EQ(c.items_per_second(kHeaders), 220.0);
    EXPECT_EQ(c.rtt(), milliseconds(250));
    // ceil(220 * 0.5 * 1.01) = ceil(111.1)
    EXPECT_EQ(c.target_items(kHeaders, milliseconds(500), 1024), 112u);

    // 40 items in 400 ms = 100/s: 0.9 * 220 + 0.1 * 100 = 208; RTT 0.9 * 250 + 0.1 * 400 = 265 ms.
    c.update(kHeaders, milliseconds(400), 40);
    EXPECT_DOUBLE_EQ(c.items_per_second(kHeaders), 208.0);
    EXPECT_EQ(c.rtt(), milliseconds(265));
    // ceil(208 * 2 * 1.01) = ceil(420.16)
    EXPECT_EQ(c.target_items(kHeaders, seconds(2), 1024), 421u);

    // Kinds are independent; the RTT is the peer's.
    EXPECT_EQ(c.items_per_second(kBodies), 100.0);
    c.update(kBodies, milliseconds(500), 10);  // 20/s, first for this kind
    EXPECT_DOUBLE_EQ(c.items_per_second(kBodies), 20.0);
    EXPECT_DOUBLE_EQ(c.items_per_second(kHeaders), 208.0);
    // 0.9 * 265 + 0.1 * 500 = 288.5 ms
    EXPECT_EQ(c.rtt(), std::chrono::microseconds(288'500));
}

TEST(Capacity, ConvergesGeometricallyToASteadyRate) {
    Capacity c;
    c.update(kHeaders, seconds(1), 200);
    for (int i = 0; i < 50; ++i) c.update(kHeaders, seconds(1), 400);
    // The distance to 400 shrinks by 0.9 per measurement: 400 - 200 * 0.9^50 = 398.9692...
    EXPECT_NEAR(c.items_per_second(kHeaders), 400 - 200 * std::pow(0.9, 50), 1e-9);
    EXPECT_NEAR(c.items_per_second(kHeaders), 398.969, 1e-3);
}

TEST(Capacity, TargetItemsIsClamped) {
    Capacity c;
    c.update(kHeaders, milliseconds(250), 55);  // 220/s
    EXPECT_EQ(c.target_items(kHeaders, milliseconds(500), 100), 100u);
    EXPECT_EQ(c.target_items(kHeaders, milliseconds(500), 112), 112u);
    EXPECT_EQ(c.target_items(kHeaders, milliseconds(500), 111), 111u);
    // ceil(220 * 0.001 * 1.01) = ceil(0.2222)
    EXPECT_EQ(c.target_items(kHeaders, milliseconds(1), 1024), 1u);
    EXPECT_EQ(c.target_items(kHeaders, Capacity::Duration::zero(), 1024), 1u);
    EXPECT_EQ(c.target_items(kHeaders, -seconds(5), 1024), 1u);
    EXPECT_EQ(c.target_items(kHeaders, Capacity::Duration::max(), 1024), 1024u);
    EXPECT_EQ(c.target_items(kHeaders, Capacity::Duration::max(), std::numeric_limits<uint64_t>::max()),
              static_cast<uint64_t>(
                  std::ceil(220.0 * std::chrono::duration<double>(Capacity::Duration::max()).count() * 1.01)));
    // Nothing may be asked: nothing is.
    EXPECT_EQ(c.target_items(kHeaders, seconds(1), 0), 0u);
}

TEST(Capacity, TimeoutHalvesDownToTheFloor) {
    Capacity c;
    c.update(kHeaders, milliseconds(250), 100);  // 400/s
    c.timeout(kHeaders);
    EXPECT_DOUBLE_EQ(c.items_per_second(kHeaders), 200.0);
    EXPECT_EQ(c.rtt(), milliseconds(250));  // unchanged by a timeout
    // ceil(200 * 0.3 * 1.01) = ceil(60.6)
    EXPECT_EQ(c.target_items(kHeaders, milliseconds(300), 1024), 61u);
    c.timeout(kHeaders);
    EXPECT_DOUBLE_EQ(c.items_per_second(kHeaders), 100.0);
    // Still a measured kind: the next response is smoothed, 0.9 * 100 + 0.1 * 400 = 130.
    c.update(kHeaders, milliseconds(250), 100);
    EXPECT_DOUBLE_EQ(c.items_per_second(kHeaders), 130.0);

    // 100 -> 50 -> 25 -> 12.5 -> 6.25 -> 3.125 -> 1.5625 -> 1 (0.78125 raised to the floor) -> 1
    Capacity d;
    const double expected[] = {50, 25, 12.5, 6.25, 3.125, 1.5625, 1, 1};
    for (double e : expected) {
        d.timeout(kBodies);
        EXPECT_EQ(d.items_per_second(kBodies), e);
    }
    EXPECT_EQ(d.items_per_second(kHeaders), 100.0);
    // ceil(1 * 2 * 1.01) = ceil(2.02): a dead-looking peer is still asked for something.
    EXPECT_EQ(d.target_items(kBodies, seconds(2), 1024), 3u);
    // A kind that only timed out has no measurement yet: the first one replaces the estimate.
    d.update(kBodies, milliseconds(100), 3);
    EXPECT_DOUBLE_EQ(d.items_per_second(kBodies), 30.0);
}

TEST(Capacity, ZeroRttAndHugeRatesHitTheCeiling) {
    Capacity c;
    c.update(kHeaders, Capacity::Duration::zero(), 1000);  // counted as 1 ns: 1e12/s, clamped
    EXPECT_EQ(c.items_per_second(kHeaders), 1e6);
    EXPECT_EQ(c.rtt(), nanoseconds(1));
    // ceil(1e6 * 1 * 1.01)
    EXPECT_EQ(c.target_items(kHeaders, seconds(1), 1'000'000'000), 1'010'000u);
    c.update(kHeaders, nanoseconds(1), std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(c.items_per_second(kHeaders), 1e6);
}

TEST(Capacity, EmptyRepliesAreNotMeasurements) {
    Capacity c;
    c.update(kHeaders, seconds(1), 0);
    EXPECT_EQ(c.items_per_second(kHeaders), 100.0);
    EXPECT_EQ(c.rtt(), seconds(2));
    c.update(kHeaders, seconds(1), 10);  // still the first measurement
    EXPECT_DOUBLE_EQ(c.items_per_second(kHeaders), 10.0);
    EXPECT_EQ(c.rtt(), seconds(1));
}

TEST(Capacity, KindsOutsideTheTableUseTheStartValue) {
    Capacity c;
    c.update(40, milliseconds(100), 1000);
    c.timeout(41);
    EXPECT_EQ(c.items_per_second(40), 100.0);
    EXPECT_EQ(c.items_per_second(41), 100.0);
    EXPECT_EQ(c.target_items(40, milliseconds(500), 1024), 51u);
    // The RTT is the peer's, whatever the kind.
    EXPECT_EQ(c.rtt(), milliseconds(100));
}

// ---- geth's target round trip and timeout (msgrate TargetRoundTrip, TargetTimeout) -------------

// target_rtt = clamp(rtt, 2 s, 20 s) x 0.9; target_timeout = min(3 x clamp(rtt, 2 s, 20 s) /
// max(confidence, 0.1), 1 min). Examples worked by hand.
TEST(Capacity, TargetRttIsTheClampedRttPushedDown) {
    Capacity c;
    EXPECT_EQ(c.target_rtt(), milliseconds(1800)) << "the 2 s start value x 0.9";
    c.update(kHeaders, milliseconds(40), 192);  // a loopback RTT: clamped up to 2 s
    EXPECT_EQ(c.rtt(), milliseconds(40));
    EXPECT_EQ(c.target_rtt(), milliseconds(1800));
    c = Capacity();
    c.update(kHeaders, seconds(5), 192);
    EXPECT_EQ(c.target_rtt(), milliseconds(4500));
    c.update(kHeaders, seconds(15), 192);  // 0.9 x 5 + 0.1 x 15 = 6 s
    EXPECT_EQ(c.rtt(), seconds(6));
    EXPECT_EQ(c.target_rtt(), milliseconds(5400));
    c = Capacity();
    c.update(kHeaders, seconds(20), 1);
    EXPECT_EQ(c.target_rtt(), seconds(18)) << "exactly at the ceiling";
    c = Capacity();
    c.update(kHeaders, std::chrono::minutes(3), 1);  // a satellite on a bad day: clamped down to 20 s
    EXPECT_EQ(c.target_rtt(), seconds(18));
    // The configured start value counts until the first measurement.
    EXPECT_EQ(Capacity({.initial_rtt = seconds(7)}).target_rtt(), milliseconds(6300));
    EXPECT_EQ(Capacity({.initial_rtt = milliseconds(1)}).target_rtt(), milliseconds(1800));
}

TEST(Capacity, TargetTimeoutIsThreeRoundTripsOverConfidenceCappedAtAMinute) {
    Capacity c;  // RTT 2 s until measured
    EXPECT_EQ(c.target_timeout(), seconds(6));
    EXPECT_EQ(c.target_timeout(0.5), seconds(12));
    EXPECT_EQ(c.target_timeout(0.25), seconds(24));
    // Confidence below 0.1 counts as 0.1: 3 x 2 / 0.1 = 60 s, at the cap.
    EXPECT_EQ(c.target_timeout(0.1), seconds(60));
    EXPECT_EQ(c.target_timeout(0.01, std::chrono::hours(1)), seconds(60));
    EXPECT_EQ(c.target_timeout(0.0, std::chrono::hours(1)), seconds(60));
    EXPECT_EQ(c.target_timeout(-1.0, std::chrono::hours(1)), seconds(60));

    c.update(kHeaders, milliseconds(3), 192);  // loopback: still 2 s
    EXPECT_EQ(c.target_timeout(), seconds(6));

    Capacity d;
    d.update(kHeaders, seconds(3), 192);
    EXPECT_EQ(d.target_timeout(), seconds(9));
    EXPECT_EQ(d.target_timeout(0.8), milliseconds(11'250));
    EXPECT_EQ(d.target_timeout(0.05), seconds(60)) << "90 s capped";
    EXPECT_EQ(d.target_timeout(0.05, std::chrono::hours(1)), seconds(90)) << "floor 0.1, no cap in reach";
    EXPECT_EQ(d.target_timeout(1.0, seconds(5)), seconds(5)) << "a caller's own cap";
    d.timeout(kHeaders);  // a lost request leaves the RTT, and so the timeout, alone
    EXPECT_EQ(d.target_timeout(), seconds(9));

    Capacity slow;
    slow.update(kHeaders, seconds(19), 1);
    EXPECT_EQ(slow.target_timeout(), seconds(57));
    slow.update(kHeaders, seconds(29), 1);  // 0.9 x 19 + 0.1 x 29 = 20 s
    EXPECT_EQ(slow.target_timeout(), seconds(60));
    slow.update(kHeaders, std::chrono::minutes(10), 1);  // clamped to 20 s: still 60 s, never more
    EXPECT_EQ(slow.target_timeout(), seconds(60));
    EXPECT_EQ(slow.target_timeout(1.0, std::chrono::hours(1)), seconds(60));
    EXPECT_EQ(slow.target_timeout(0.5, std::chrono::hours(1)), seconds(120));
}

}  // namespace
}  // namespace headerd::tracker
