#include "p2p/tracker/tracker.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace headerd::tracker {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

constexpr uint64_t kGetBlockHeaders = 0x03;
constexpr uint64_t kBlockHeaders = 0x04;
constexpr uint64_t kGetBlockBodies = 0x05;
constexpr uint64_t kBlockBodies = 0x06;

// The fake clock: an arbitrary steady_clock epoch, advanced by adding durations.
const TimePoint t0 = TimePoint{} + std::chrono::hours(1000);

// The families headerd's metrics library registers, with one peer protocol's label children.
struct Metrics {
    prometheus::Registry registry;
    prometheus::Family<prometheus::Gauge>& tracked_family = prometheus::BuildGauge()
                                                                .Name("headerd_p2p_tracked_requests")
                                                                .Help("Requests pending a response")
                                                                .Register(registry);
    prometheus::Family<prometheus::Histogram>& rtt_family = prometheus::BuildHistogram()
                                                                .Name("headerd_p2p_request_rtt_seconds")
                                                                .Help("Request round trip time")
                                                                .Register(registry);
    prometheus::Family<prometheus::Counter>& rejected_family = prometheus::BuildCounter()
                                                                   .Name("headerd_p2p_tracker_rejected_total")
                                                                   .Help("Requests refused by a tracker")
                                                                   .Register(registry);
    prometheus::Counter& lost = prometheus::BuildCounter()
                                    .Name("headerd_p2p_requests_lost_total")
                                    .Help("Requests that timed out")
                                    .Register(registry)
                                    .Add({});
    prometheus::Counter& stale = prometheus::BuildCounter()
                                     .Name("headerd_p2p_responses_stale_total")
                                     .Help("Responses to unknown or expired requests")
                                     .Register(registry)
                                     .Add({});
    prometheus::Counter& rejected_cap = rejected_family.Add({{"reason", "cap"}});
    prometheus::Counter& rejected_duplicate = rejected_family.Add({{"reason", "duplicate_id"}});
    prometheus::Gauge& tracked_headers = tracked_gauge("0x03");
    prometheus::Gauge& tracked_bodies = tracked_gauge("0x05");
    prometheus::Histogram& rtt_headers = rtt_histogram("0x03");
    prometheus::Histogram& rtt_bodies = rtt_histogram("0x05");

    prometheus::Gauge& tracked_gauge(const std::string& code) {
        return tracked_family.Add({{"proto", "eth"}, {"version", "68"}, {"code", code}});
    }
    prometheus::Histogram& rtt_histogram(const std::string& code) {
        return rtt_family.Add({{"proto", "eth"}, {"version", "68"}, {"code", code}},
                              prometheus::Histogram::BucketBoundaries{0.05, 0.1, 0.5, 1, 5});
    }

    TrackerMetrics hooks() {
        TrackerMetrics m;
        m.tracked[kGetBlockHeaders] = &tracked_headers;
        m.tracked[kGetBlockBodies] = &tracked_bodies;
        m.rtt[kGetBlockHeaders] = &rtt_headers;
        m.rtt[kGetBlockBodies] = &rtt_bodies;
        m.lost = &lost;
        m.stale = &stale;
        m.rejected_cap = &rejected_cap;
        m.rejected_duplicate = &rejected_duplicate;
        return m;
    }

    // A value as a scrape sees it, found by family name and one label (empty: the unlabelled one).
    double scraped(const std::string& family, const std::string& label, const std::string& value) {
        for (const auto& f : registry.Collect()) {
            if (f.name != family) continue;
            for (const auto& m : f.metric) {
                const bool match =
                    label.empty() ? m.label.empty() : std::any_of(m.label.begin(), m.label.end(), [&](const auto& l) {
                        return l.name == label && l.value == value;
                    });
                if (match) return f.type == prometheus::MetricType::Gauge ? m.gauge.value : m.counter.value;
            }
        }
        ADD_FAILURE() << "no " << family << "{" << label << "=" << value << "}";
        return -1;
    }
};

Result<void> track_headers(Tracker& t, uint64_t id, TimePoint now, uint64_t max_items = 192) {
    return t.track(id, kGetBlockHeaders, kBlockHeaders, max_items, now);
}

TEST(Tracker, FulfilReturnsExactRttAndObservesIt) {
    Metrics m;
    Tracker t({}, m.hooks());
    ASSERT_TRUE(track_headers(t, 1, t0));
    EXPECT_EQ(t.pending(), 1u);
    EXPECT_EQ(t.pending(kGetBlockHeaders), 1u);
    EXPECT_TRUE(t.is_pending(1));
    EXPECT_EQ(m.tracked_headers.Value(), 1);

    auto rtt = t.fulfil(1, kBlockHeaders, 192, t0 + nanoseconds(123'456'789));
    ASSERT_TRUE(rtt) << rtt.error().message();
    EXPECT_EQ(*rtt, nanoseconds(123'456'789));

    EXPECT_EQ(t.pending(), 0u);
    EXPECT_EQ(t.pending(kGetBlockHeaders), 0u);
    EXPECT_FALSE(t.is_pending(1));
    EXPECT_EQ(t.next_deadline(), std::nullopt);
    EXPECT_EQ(m.tracked_headers.Value(), 0);
    const auto h = m.rtt_headers.Collect().histogram;
    EXPECT_EQ(h.sample_count, 1u);
    EXPECT_DOUBLE_EQ(h.sample_sum, 0.123456789);
    // Bucket counts are cumulative: 0.123 s lands in le=0.5 and above, not in le=0.05 or le=0.1.
    ASSERT_EQ(h.bucket.size(), 6u);
    EXPECT_EQ(h.bucket[0].cumulative_count, 0u);
    EXPECT_EQ(h.bucket[1].cumulative_count, 0u);
    EXPECT_EQ(h.bucket[2].cumulative_count, 1u);
    EXPECT_EQ(m.rtt_bodies.Collect().histogram.sample_count, 0u);
    EXPECT_EQ(m.stale.Value(), 0);
    EXPECT_EQ(m.lost.Value(), 0);
}

TEST(Tracker, RttPerRequestCode) {
    Metrics m;
    Tracker t({}, m.hooks());
    ASSERT_TRUE(track_headers(t, 1, t0));
    ASSERT_TRUE(t.track(2, kGetBlockBodies, kBlockBodies, 128, t0 + milliseconds(10)));
    EXPECT_EQ(m.tracked_bodies.Value(), 1);
    EXPECT_EQ(m.tracked_headers.Value(), 1);

    auto bodies = t.fulfil(2, kBlockBodies, 0, t0 + milliseconds(710));
    ASSERT_TRUE(bodies);
    EXPECT_EQ(*bodies, milliseconds(700));
    auto headers = t.fulfil(1, kBlockHeaders, 5, t0 + milliseconds(40));
    ASSERT_TRUE(headers);
    EXPECT_EQ(*headers, milliseconds(40));

    EXPECT_EQ(m.rtt_bodies.Collect().histogram.sample_count, 1u);
    EXPECT_DOUBLE_EQ(m.rtt_bodies.Collect().histogram.sample_sum, 0.7);
    EXPECT_EQ(m.rtt_headers.Collect().histogram.sample_count, 1u);
    EXPECT_DOUBLE_EQ(m.rtt_headers.Collect().histogram.sample_sum, 0.04);
    EXPECT_EQ(m.tracked_bodies.Value(), 0);
    EXPECT_EQ(m.tracked_headers.Value(), 0);
}

TEST(Tracker, DefaultsAreTenThousandAndFiveMinutes) {
    Tracker t;
    EXPECT_EQ(t.cap(), 10'000u);
    EXPECT_EQ(t.timeout(), std::chrono::minutes(5));
    ASSERT_TRUE(track_headers(t, 1, t0));
    EXPECT_EQ(t.next_deadline(), t0 + seconds(300));
}

TEST(Tracker, CapReachedFailsAndCounts) {
    Metrics m;
    Tracker t({}, m.hooks());  // the default cap, 10,000
    for (uint64_t id = 0; id < 10'000; ++id) {
        ASSERT_TRUE(track_headers(t, id, t0 + nanoseconds(id))) << id;
    }
    EXPECT_EQ(t.pending(), 10'000u);
    EXPECT_EQ(m.tracked_headers.Value(), 10'000);
    EXPECT_EQ(m.rejected_cap.Value(), 0);

    auto r = track_headers(t, 10'000, t0 + seconds(1));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), TrackerError::kCapReached);
    EXPECT_EQ(r.error().message(), "too many requests pending (cap reached)");
    EXPECT_EQ(m.rejected_cap.Value(), 1);
    EXPECT_EQ(m.rejected_duplicate.Value(), 0);
    EXPECT_EQ(t.pending(), 10'000u);
    EXPECT_FALSE(t.is_pending(10'000));
    EXPECT_EQ(m.tracked_headers.Value(), 10'000);

    // Memory stays bounded however hard the caller pushes.
    for (uint64_t id = 20'000; id < 20'100; ++id) {
        EXPECT_FALSE(track_headers(t, id, t0 + seconds(1)));
        EXPECT_EQ(t.pending(), 10'000u);
    }
    EXPECT_EQ(m.rejected_cap.Value(), 101);
    EXPECT_EQ(m.scraped("headerd_p2p_tracker_rejected_total", "reason", "cap"), 101);

    // Fulfilling one frees one place, and only one.
    ASSERT_TRUE(t.fulfil(5'000, kBlockHeaders, 1, t0 + seconds(2)));
    ASSERT_TRUE(track_headers(t, 10'000, t0 + seconds(2)));
    EXPECT_EQ(t.pending(), 10'000u);
    EXPECT_FALSE(track_headers(t, 10'001, t0 + seconds(2)));
    EXPECT_EQ(m.rejected_cap.Value(), 102);
    // The oldest request is still the head; the reused slot joined at the tail.
    EXPECT_EQ(t.next_deadline(), t0 + std::chrono::minutes(5));
}

TEST(Tracker, SmallCapChurnNeverExceedsCap) {
    Metrics m;
    Tracker t({.cap = 3, .timeout = seconds(10)}, m.hooks());
    EXPECT_EQ(t.cap(), 3u);
    uint64_t rejected = 0;
    // Slots are reused round after round, in a different order each time.
    for (uint64_t round = 0; round < 1'000; ++round) {
        const TimePoint now = t0 + milliseconds(round);
        for (uint64_t k = 0; k < 4; ++k) {
            if (!track_headers(t, round * 4 + k, now)) ++rejected;
            ASSERT_LE(t.pending(), 3u);
        }
        EXPECT_EQ(t.pending(), 3u);
        const uint64_t order[3] = {round % 3, (round + 1) % 3, (round + 2) % 3};
        for (uint64_t k : order) ASSERT_TRUE(t.fulfil(round * 4 + k, kBlockHeaders, 0, now));
        EXPECT_EQ(t.next_deadline(), std::nullopt);
    }
    EXPECT_EQ(rejected, 1'000u);
    EXPECT_EQ(m.rejected_cap.Value(), 1'000);
    EXPECT_EQ(m.tracked_headers.Value(), 0);
    EXPECT_EQ(m.rtt_headers.Collect().histogram.sample_count, 3'000u);
}

TEST(Tracker, DuplicateIdFailsAndKeepsTheOriginal) {
    Metrics m;
    Tracker t({}, m.hooks());
    ASSERT_TRUE(track_headers(t, 7, t0, 10));
    auto r = t.track(7, kGetBlockBodies, kBlockBodies, 500, t0 + seconds(1));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), TrackerError::kDuplicateId);
    EXPECT_EQ(r.error().message(), "request id already pending");
    EXPECT_EQ(m.rejected_duplicate.Value(), 1);
    EXPECT_EQ(m.rejected_cap.Value(), 0);
    EXPECT_EQ(m.scraped("headerd_p2p_tracker_rejected_total", "reason", "duplicate_id"), 1);
    EXPECT_EQ(t.pending(), 1u);
    EXPECT_EQ(t.pending(kGetBlockBodies), 0u);
    EXPECT_EQ(m.tracked_bodies.Value(), 0);
    EXPECT_EQ(m.tracked_headers.Value(), 1);
    EXPECT_EQ(t.next_deadline(), t0 + std::chrono::minutes(5));

    // The first request's code, limit and send time still hold.
    EXPECT_EQ(t.fulfil(7, kBlockBodies, 1, t0 + seconds(2)).error(), TrackerError::kWrongResponseCode);
    EXPECT_EQ(t.fulfil(7, kBlockHeaders, 11, t0 + seconds(2)).error(), TrackerError::kTooManyItems);
    auto rtt = t.fulfil(7, kBlockHeaders, 10, t0 + seconds(2));
    ASSERT_TRUE(rtt);
    EXPECT_EQ(*rtt, seconds(2));

    // Once fulfilled the id is free again.
    EXPECT_TRUE(track_headers(t, 7, t0 + seconds(3)));
    EXPECT_EQ(m.rejected_duplicate.Value(), 1);
}

TEST(Tracker, ExpireRemovesOnlyPassedDeadlinesInFifoOrder) {
    Metrics m;
    Tracker t({.cap = 100, .timeout = seconds(10)}, m.hooks());
    // Ids deliberately not in numeric order: expiry follows send order.
    ASSERT_TRUE(track_headers(t, 42, t0));
    ASSERT_TRUE(track_headers(t, 7, t0 + seconds(1)));
    ASSERT_TRUE(t.track(99, kGetBlockBodies, kBlockBodies, 1, t0 + seconds(2)));
    ASSERT_TRUE(track_headers(t, 3, t0 + seconds(5)));
    EXPECT_EQ(t.next_deadline(), t0 + seconds(10));

    std::vector<uint64_t> lost;
    EXPECT_EQ(t.expire(t0 + seconds(9), lost), 0u);
    EXPECT_TRUE(lost.empty());
    EXPECT_EQ(t.pending(), 4u);

    // Between the second and third deadlines.
    EXPECT_EQ(t.expire(t0 + milliseconds(11'500), lost), 2u);
    EXPECT_EQ(lost, (std::vector<uint64_t>{42, 7}));
    EXPECT_EQ(m.lost.Value(), 2);
    EXPECT_EQ(t.pending(), 2u);
    EXPECT_FALSE(t.is_pending(42));
    EXPECT_FALSE(t.is_pending(7));
    EXPECT_TRUE(t.is_pending(99));
    EXPECT_TRUE(t.is_pending(3));
    EXPECT_EQ(t.next_deadline(), t0 + seconds(12));
    EXPECT_EQ(m.tracked_headers.Value(), 1);
    EXPECT_EQ(m.tracked_bodies.Value(), 1);

    // A deadline equal to now has passed (the timer fires exactly at it).
    EXPECT_EQ(t.expire(t0 + seconds(12) - nanoseconds(1), lost), 0u);
    EXPECT_EQ(t.expire(t0 + seconds(12), lost), 1u);
    EXPECT_EQ(lost, (std::vector<uint64_t>{42, 7, 99}));
    EXPECT_EQ(t.next_deadline(), t0 + seconds(15));
    EXPECT_EQ(m.tracked_bodies.Value(), 0);

    // The count-only form.
    EXPECT_EQ(t.expire(t0 + seconds(100)), 1u);
    EXPECT_EQ(t.next_deadline(), std::nullopt);
    EXPECT_EQ(t.pending(), 0u);
    EXPECT_EQ(m.lost.Value(), 4);
    EXPECT_EQ(m.tracked_headers.Value(), 0);
    EXPECT_EQ(m.stale.Value(), 0);
    EXPECT_EQ(m.rtt_headers.Collect().histogram.sample_count, 0u);
    EXPECT_EQ(t.expire(t0 + seconds(200)), 0u);
}

TEST(Tracker, NextDeadlineFollowsTheHead) {
    Tracker t({.cap = 10, .timeout = seconds(10)});
    EXPECT_EQ(t.next_deadline(), std::nullopt);
    ASSERT_TRUE(track_headers(t, 1, t0));
    ASSERT_TRUE(track_headers(t, 2, t0 + seconds(1)));
    ASSERT_TRUE(track_headers(t, 3, t0 + seconds(2)));
    ASSERT_TRUE(track_headers(t, 4, t0 + seconds(3)));
    EXPECT_EQ(t.next_deadline(), t0 + seconds(10));

    // A middle request: the timer need not move.
    ASSERT_TRUE(t.fulfil(2, kBlockHeaders, 1, t0 + seconds(4)));
    EXPECT_EQ(t.next_deadline(), t0 + seconds(10));
    // The tail: neither.
    ASSERT_TRUE(t.fulfil(4, kBlockHeaders, 1, t0 + seconds(4)));
    EXPECT_EQ(t.next_deadline(), t0 + seconds(10));
    // The head: the timer moves to the next oldest, skipping the fulfilled one.
    ASSERT_TRUE(t.fulfil(1, kBlockHeaders, 1, t0 + seconds(5)));
    EXPECT_EQ(t.next_deadline(), t0 + seconds(12));
    // A new request joins behind.
    ASSERT_TRUE(track_headers(t, 5, t0 + seconds(6)));
    EXPECT_EQ(t.next_deadline(), t0 + seconds(12));
    ASSERT_TRUE(t.fulfil(3, kBlockHeaders, 1, t0 + seconds(7)));
    EXPECT_EQ(t.next_deadline(), t0 + seconds(16));
    ASSERT_TRUE(t.fulfil(5, kBlockHeaders, 1, t0 + seconds(7)));
    EXPECT_EQ(t.next_deadline(), std::nullopt);
}

TEST(Tracker, LateResponseAfterExpiryIsStale) {
    Metrics m;
    Tracker t({.cap = 10, .timeout = seconds(10)}, m.hooks());
    ASSERT_TRUE(track_headers(t, 1, t0));
    EXPECT_EQ(t.expire(t0 + seconds(10)), 1u);
    auto r = t.fulfil(1, kBlockHeaders, 1, t0 + seconds(11));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), TrackerError::kStale);
    EXPECT_EQ(m.lost.Value(), 1);
    EXPECT_EQ(m.stale.Value(), 1);
    EXPECT_EQ(m.rtt_headers.Collect().histogram.sample_count, 0u);
}

TEST(Tracker, ResponseAtDeadlineIsStaleEvenBeforeTheTimerFires) {
    Metrics m;
    Tracker t({.cap = 10, .timeout = seconds(10)}, m.hooks());
    ASSERT_TRUE(track_headers(t, 1, t0));
    ASSERT_TRUE(track_headers(t, 2, t0));

    // One nanosecond before the deadline still counts.
    auto ok = t.fulfil(1, kBlockHeaders, 1, t0 + seconds(10) - nanoseconds(1));
    ASSERT_TRUE(ok);
    EXPECT_EQ(*ok, seconds(10) - nanoseconds(1));

    // At the deadline, with expire() not yet called: the same outcome as if it had been.
    auto late = t.fulfil(2, kBlockHeaders, 1, t0 + seconds(10));
    ASSERT_FALSE(late);
    EXPECT_EQ(late.error(), TrackerError::kStale);
    EXPECT_EQ(t.pending(), 0u);
    EXPECT_EQ(t.next_deadline(), std::nullopt);
    EXPECT_EQ(m.lost.Value(), 1);
    EXPECT_EQ(m.stale.Value(), 1);
    EXPECT_EQ(m.tracked_headers.Value(), 0);
    EXPECT_EQ(m.rtt_headers.Collect().histogram.sample_count, 1u);
    EXPECT_EQ(t.expire(t0 + seconds(20)), 0u);
    EXPECT_EQ(m.lost.Value(), 1);
}

TEST(Tracker, UnknownIdIsStale) {
    Metrics m;
    Tracker t({}, m.hooks());
    ASSERT_TRUE(track_headers(t, 1, t0));

    auto never_sent = t.fulfil(2, kBlockHeaders, 1, t0 + seconds(1));
    ASSERT_FALSE(never_sent);
    EXPECT_EQ(never_sent.error(), TrackerError::kStale);
    EXPECT_EQ(never_sent.error().message(), "response to an unknown or expired request id");
    EXPECT_EQ(m.stale.Value(), 1);
    EXPECT_EQ(t.pending(), 1u);

    // Answered twice: the second answer is stale.
    ASSERT_TRUE(t.fulfil(1, kBlockHeaders, 1, t0 + seconds(1)));
    EXPECT_EQ(t.fulfil(1, kBlockHeaders, 1, t0 + seconds(1)).error(), TrackerError::kStale);
    EXPECT_EQ(m.stale.Value(), 2);
    EXPECT_EQ(m.scraped("headerd_p2p_responses_stale_total", "", ""), 2);
}

TEST(Tracker, WrongResponseCodeLeavesRequestPending) {
    Metrics m;
    Tracker t({}, m.hooks());
    ASSERT_TRUE(track_headers(t, 1, t0, 10));
    auto r = t.fulfil(1, kBlockBodies, 1, t0 + seconds(1));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), TrackerError::kWrongResponseCode);
    EXPECT_EQ(r.error().message(), "response code does not match the request");
    EXPECT_TRUE(t.is_pending(1));
    EXPECT_EQ(m.tracked_headers.Value(), 1);
    EXPECT_EQ(m.stale.Value(), 0);
    EXPECT_EQ(m.rtt_headers.Collect().histogram.sample_count, 0u);
    // The request code itself is not an answer either.
    EXPECT_EQ(t.fulfil(1, kGetBlockHeaders, 1, t0 + seconds(1)).error(), TrackerError::kWrongResponseCode);
}

TEST(Tracker, TooManyItemsLeavesRequestPending) {
    Metrics m;
    Tracker t({}, m.hooks());
    ASSERT_TRUE(track_headers(t, 1, t0, 10));
    auto r = t.fulfil(1, kBlockHeaders, 11, t0 + seconds(1));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), TrackerError::kTooManyItems);
    EXPECT_EQ(r.error().message(), "response carries more items than requested");
    EXPECT_TRUE(t.is_pending(1));
    EXPECT_EQ(m.tracked_headers.Value(), 1);
    EXPECT_EQ(t.fulfil(1, kBlockHeaders, UINT64_MAX, t0 + seconds(1)).error(), TrackerError::kTooManyItems);
    // Exactly as many as asked is fine.
    auto ok = t.fulfil(1, kBlockHeaders, 10, t0 + seconds(3));
    ASSERT_TRUE(ok);
    EXPECT_EQ(*ok, seconds(3));
    EXPECT_EQ(m.tracked_headers.Value(), 0);
}

TEST(Tracker, ErrorsAreDistinct) {
    EXPECT_STREQ(tracker_category().name(), "tracker");
    std::set<std::string> messages;
    for (auto e : {TrackerError::kCapReached, TrackerError::kDuplicateId, TrackerError::kStale,
                   TrackerError::kWrongResponseCode, TrackerError::kTooManyItems}) {
        std::error_code ec = e;
        EXPECT_EQ(&ec.category(), &tracker_category());
        EXPECT_TRUE(ec);
        messages.insert(ec.message());
    }
    EXPECT_EQ(messages.size(), 5u);
}

TEST(Tracker, ClearGivesBackItsShareOfTheSharedGauge) {
    Metrics m;
    Tracker a({}, m.hooks());
    std::optional<Tracker> b;
    b.emplace(TrackerConfig{}, m.hooks());  // another peer, same label children
    for (uint64_t id = 1; id <= 3; ++id) ASSERT_TRUE(track_headers(a, id, t0));
    ASSERT_TRUE(a.track(4, kGetBlockBodies, kBlockBodies, 16, t0));
    ASSERT_TRUE(track_headers(*b, 1, t0));
    ASSERT_TRUE(track_headers(*b, 2, t0));
    EXPECT_EQ(m.tracked_headers.Value(), 5);
    EXPECT_EQ(m.tracked_bodies.Value(), 1);
    EXPECT_EQ(m.scraped("headerd_p2p_tracked_requests", "code", "0x03"), 5);

    a.clear();
    EXPECT_EQ(a.pending(), 0u);
    EXPECT_EQ(a.pending(kGetBlockHeaders), 0u);
    EXPECT_EQ(a.pending(kGetBlockBodies), 0u);
    EXPECT_EQ(a.next_deadline(), std::nullopt);
    EXPECT_EQ(m.tracked_headers.Value(), 2);
    EXPECT_EQ(m.tracked_bodies.Value(), 0);
    EXPECT_EQ(m.scraped("headerd_p2p_tracked_requests", "code", "0x03"), 2);
    EXPECT_EQ(m.lost.Value(), 0);  // dropped, not lost
    EXPECT_EQ(a.expire(t0 + std::chrono::hours(1)), 0u);
    EXPECT_EQ(a.fulfil(1, kBlockHeaders, 1, t0 + seconds(1)).error(), TrackerError::kStale);
    EXPECT_EQ(b->pending(), 2u);

    // Usable again after clear(), with the same ids.
    ASSERT_TRUE(track_headers(a, 1, t0 + seconds(1)));
    EXPECT_EQ(a.next_deadline(), t0 + seconds(1) + std::chrono::minutes(5));
    EXPECT_EQ(m.tracked_headers.Value(), 3);
    a.clear();
    a.clear();  // idempotent
    EXPECT_EQ(m.tracked_headers.Value(), 2);

    // Destroying a tracker (the peer session ending) gives back its share too.
    b.reset();
    EXPECT_EQ(m.tracked_headers.Value(), 0);
}

TEST(Tracker, MetricsOffWorks) {
    Tracker t({.cap = 2, .timeout = seconds(10)});
    ASSERT_TRUE(track_headers(t, 1, t0, 4));
    ASSERT_TRUE(track_headers(t, 2, t0 + seconds(1), 4));
    EXPECT_EQ(track_headers(t, 3, t0 + seconds(1)).error(), TrackerError::kCapReached);
    EXPECT_EQ(track_headers(t, 2, t0 + seconds(1)).error(), TrackerError::kCapReached);  // cap checked first
    EXPECT_EQ(t.fulfil(9, kBlockHeaders, 1, t0 + seconds(2)).error(), TrackerError::kStale);
    EXPECT_EQ(t.fulfil(1, kBlockBodies, 1, t0 + seconds(2)).error(), TrackerError::kWrongResponseCode);
    EXPECT_EQ(t.fulfil(1, kBlockHeaders, 5, t0 + seconds(2)).error(), TrackerError::kTooManyItems);
    auto rtt = t.fulfil(1, kBlockHeaders, 4, t0 + seconds(2));
    ASSERT_TRUE(rtt);
    EXPECT_EQ(*rtt, seconds(2));
    ASSERT_TRUE(track_headers(t, 3, t0 + seconds(2)));
    EXPECT_EQ(track_headers(t, 3, t0 + seconds(2)).error(), TrackerError::kCapReached);
    ASSERT_TRUE(t.fulfil(3, kBlockHeaders, 0, t0 + seconds(2)));
    EXPECT_EQ(track_headers(t, 2, t0 + seconds(2)).error(), TrackerError::kDuplicateId);

    std::vector<uint64_t> lost;
    EXPECT_EQ(t.expire(t0 + seconds(11), lost), 1u);
    EXPECT_EQ(lost, std::vector<uint64_t>{2});
    EXPECT_EQ(t.fulfil(2, kBlockHeaders, 1, t0 + seconds(12)).error(), TrackerError::kStale);
    ASSERT_TRUE(track_headers(t, 5, t0 + seconds(12)));
    t.clear();
    EXPECT_EQ(t.pending(), 0u);
}

TEST(Tracker, CodesBeyondTheMetricTableAreTrackedUnobserved) {
    Metrics m;
    Tracker t({}, m.hooks());
    ASSERT_TRUE(t.track(1, 40, 41, 3, t0));
    EXPECT_EQ(t.pending(), 1u);
    EXPECT_EQ(t.pending(40), 0u);
    auto rtt = t.fulfil(1, 41, 3, t0 + milliseconds(5));
    ASSERT_TRUE(rtt);
    EXPECT_EQ(*rtt, milliseconds(5));
    EXPECT_EQ(m.tracked_headers.Value(), 0);
    EXPECT_EQ(m.rtt_headers.Collect().histogram.sample_count, 0u);
}

TEST(Tracker, ClockGoingBackwardsGivesZeroRtt) {
    Tracker t;
    ASSERT_TRUE(track_headers(t, 1, t0));
    auto rtt = t.fulfil(1, kBlockHeaders, 1, t0 - seconds(1));
    ASSERT_TRUE(rtt);
    EXPECT_EQ(*rtt, Duration::zero());
}

// ---- per-request timeouts ----------------------------------------------------------------------

// Requests with timeouts of their own are kept in deadline order, whatever order they were sent
// in: a shorter timeout expires first, ties expire in send order, and next_deadline() is always
// the earliest deadline pending.
TEST(Tracker, PerRequestTimeoutsExpireInDeadlineOrder) {
    Metrics m;
    Tracker t({.cap = 100, .timeout = seconds(10)}, m.hooks());
    ASSERT_TRUE(track_headers(t, 1, t0));  // the configured 10 s: t0 + 10
    EXPECT_EQ(t.next_deadline(), t0 + seconds(10));
    ASSERT_TRUE(t.track(2, kGetBlockHeaders, kBlockHeaders, 8, t0 + seconds(1), seconds(2)));  // t0 + 3
    EXPECT_EQ(t.next_deadline(), t0 + seconds(3)) << "a later request with a shorter timeout is the earliest";
    ASSERT_TRUE(t.track(3, kGetBlockHeaders, kBlockHeaders, 8, t0 + seconds(2), seconds(30)));  // t0 + 32
    ASSERT_TRUE(t.track(4, kGetBlockBodies, kBlockBodies, 8, t0 + seconds(2), seconds(5)));     // t0 + 7
    ASSERT_TRUE(t.track(5, kGetBlockHeaders, kBlockHeaders, 8, t0 + seconds(3), seconds(7)));   // t0 + 10, after 1
    ASSERT_TRUE(t.track(6, kGetBlockHeaders, kBlockHeaders, 8, t0 + seconds(4), seconds(0)));   // t0 + 4
    ASSERT_TRUE(t.track(7, kGetBlockHeaders, kBlockHeaders, 8, t0 + seconds(4), -seconds(1)));  // negative: t0 + 4
    EXPECT_EQ(t.next_deadline(), t0 + seconds(3));
    EXPECT_EQ(t.pending(), 7u);

    std::vector<uint64_t> lost;
    EXPECT_EQ(t.expire(t0 + seconds(3) - nanoseconds(1), lost), 0u);
    EXPECT_EQ(t.expire(t0 + seconds(3), lost), 1u);
    EXPECT_EQ(lost, std::vector<uint64_t>{2});
    EXPECT_EQ(t.next_deadline(), t0 + seconds(4));
    EXPECT_EQ(t.expire(t0 + seconds(4), lost), 2u);
    EXPECT_EQ(lost, (std::vector<uint64_t>{2, 6, 7}));
    EXPECT_EQ(t.next_deadline(), t0 + seconds(7));
    EXPECT_EQ(m.tracked_bodies.Value(), 1);
    // Everything else at once: deadline order, the tie (1 and 5 at t0 + 10) in send order.
    EXPECT_EQ(t.expire(t0 + std::chrono::hours(1), lost), 4u);
    EXPECT_EQ(lost, (std::vector<uint64_t>{2, 6, 7, 4, 1, 5, 3}));
    EXPECT_EQ(t.next_deadline(), std::nullopt);
    EXPECT_EQ(m.lost.Value(), 7);
    EXPECT_EQ(m.tracked_headers.Value(), 0);
    EXPECT_EQ(m.tracked_bodies.Value(), 0);
}

// A reply to a request past its own (short) deadline is stale and the request lost, even while
// requests sent earlier with longer timeouts are still answered normally.
TEST(Tracker, FulfilPastItsOwnDeadlineIsStaleAndLost) {
    Metrics m;
    Tracker t({.cap = 10, .timeout = seconds(10)}, m.hooks());
    ASSERT_TRUE(track_headers(t, 1, t0));                                                      // t0 + 10
    ASSERT_TRUE(t.track(2, kGetBlockHeaders, kBlockHeaders, 8, t0, milliseconds(500)));        // t0 + 0.5
    ASSERT_TRUE(t.track(3, kGetBlockHeaders, kBlockHeaders, 8, t0, milliseconds(800)));        // t0 + 0.8
    ASSERT_TRUE(t.track(4, kGetBlockHeaders, kBlockHeaders, 8, t0 + seconds(1), seconds(1)));  // t0 + 2

    // Just inside its deadline: answered.
    auto ok = t.fulfil(2, kBlockHeaders, 8, t0 + milliseconds(500) - nanoseconds(1));
    ASSERT_TRUE(ok);
    EXPECT_EQ(*ok, milliseconds(500) - nanoseconds(1));
    // At its deadline, before any timer ran expire(): stale, lost, gone.
    auto late = t.fulfil(3, kBlockHeaders, 1, t0 + milliseconds(800));
    ASSERT_FALSE(late);
    EXPECT_EQ(late.error(), TrackerError::kStale);
    EXPECT_FALSE(t.is_pending(3));
    EXPECT_EQ(m.lost.Value(), 1);
    EXPECT_EQ(m.stale.Value(), 1);
    EXPECT_EQ(t.next_deadline(), t0 + seconds(2));
    // Request 4 is past its deadline at t0 + 3 s; request 1, sent earlier, is not.
    EXPECT_EQ(t.fulfil(4, kBlockHeaders, 1, t0 + seconds(3)).error(), TrackerError::kStale);
    EXPECT_EQ(m.lost.Value(), 2);
    EXPECT_EQ(m.stale.Value(), 2);
    auto first = t.fulfil(1, kBlockHeaders, 1, t0 + seconds(3));
    ASSERT_TRUE(first);
    EXPECT_EQ(*first, seconds(3));
    EXPECT_EQ(t.pending(), 0u);
    EXPECT_EQ(t.expire(t0 + std::chrono::hours(1)), 0u) << "a request answered stale must not expire again";
    EXPECT_EQ(m.lost.Value(), 2);
    EXPECT_EQ(m.rtt_headers.Collect().histogram.sample_count, 2u);
}

// Against a model (a multiset ordered by deadline, then send order) under random timeouts, replies
// and expiry: the order expire() reports and next_deadline() always match, including after
// requests removed from the middle of the list.
TEST(Tracker, RandomPerRequestTimeoutsMatchAModel) {
    Tracker t({.cap = 64, .timeout = seconds(5)});
    std::mt19937_64 rng(7);
    // (deadline, send sequence) -> id
    std::map<std::pair<TimePoint, uint64_t>, uint64_t> model;
    uint64_t next_id = 1;
    uint64_t seq = 0;
    TimePoint now = t0;
    std::vector<uint64_t> lost;
    for (int step = 0; step < 20'000; ++step) {
        now += milliseconds(rng() % 40);
        const unsigned action = static_cast<unsigned>(rng() % 10);
        if (action < 5 && model.size() < t.cap()) {
            const uint64_t id = next_id++;
            const bool own = rng() % 4 != 0;
            const Duration timeout = own ? milliseconds(rng() % 3000) : t.timeout();
            const auto r = own ? t.track(id, kGetBlockHeaders, kBlockHeaders, 1, now, timeout)
                               : t.track(id, kGetBlockHeaders, kBlockHeaders, 1, now);
            ASSERT_TRUE(r) << "step " << step;
            model.emplace(std::pair{now + timeout, seq++}, id);
        } else if (action < 8 && !model.empty()) {
            // Answer a random pending request, maybe one whose deadline passed without expire().
            auto it = model.begin();
            std::advance(it, static_cast<long>(rng() % model.size()));
            const bool in_time = it->first.first > now;
            const auto r = t.fulfil(it->second, kBlockHeaders, 1, now);
            ASSERT_EQ(static_cast<bool>(r), in_time) << "step " << step << " id " << it->second;
            model.erase(it);
        } else {
            lost.clear();
            t.expire(now, lost);
            std::vector<uint64_t> expected;
            while (!model.empty() && model.begin()->first.first <= now) {
                expected.push_back(model.begin()->second);
                model.erase(model.begin());
            }
            ASSERT_EQ(lost, expected) << "step " << step;
        }
        ASSERT_EQ(t.pending(), model.size()) << "step " << step;
        const std::optional<TimePoint> earliest =
            model.empty() ? std::nullopt : std::optional<TimePoint>(model.begin()->first.first);
        ASSERT_EQ(t.next_deadline(), earliest) << "step " << step;
    }
}

}  // namespace
}  // namespace headerd::tracker
