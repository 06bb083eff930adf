#pragma once

// What the load generator counts: per profile, per one-second interval (the timeline), and the
// first failures with their reasons. Each worker thread records into its own Shard under the
// shard's mutex (uncontended but for the once-a-second collection by the main thread).

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "metrics/histogram.hpp"

namespace headerd::load {

// Error kinds, the keys of `errors` in reports.
inline constexpr const char* kErrorKinds[] = {"timeout", "closed", "rejected", "verification", "connect"};

struct ProfileStats {
    uint64_t clients{0};
    uint64_t requests{0};  // sent
    uint64_t replies{0};   // received (good or not)
    uint64_t headers{0};
    uint64_t bytes{0};  // header RLP bytes received
    uint64_t lost{0};   // timed out
    uint64_t stale{0};  // replies to ids not pending
    uint64_t verification_failures{0};
    std::map<std::string, uint64_t> errors;
    uint64_t drops{0};
    uint64_t penalties{0};
    std::map<std::string, uint64_t> verdict_reasons;
    metrics::LatencyHistogram rtt;

    void merge(const ProfileStats& o);
};

struct IntervalStats {
    uint64_t requests{0};
    uint64_t replies{0};
    uint64_t headers{0};
    uint64_t bytes{0};
    uint64_t errors{0};
    metrics::LatencyHistogram rtt;

    void merge(const IntervalStats& o);
};

struct FailureRecord {
    uint64_t client{0};
    std::string profile;
    std::string request;  // verify.hpp describe()
    // The request's fields, for the JSON report.
    std::string origin;  // a number, or a 0x hash
    uint64_t amount{0};
    uint64_t skip{0};
    bool reverse{false};
    uint64_t id{0};
    std::string reason;
};

struct Shard {
    std::mutex mu;
    std::vector<ProfileStats> profiles;  // indexed like profiles()
    IntervalStats interval;
    std::vector<FailureRecord> failures;
    uint64_t failures_seen{0};
    uint64_t connect_attempts{0};
    uint64_t connect_failures{0};
};

// One second of the run.
struct TimelinePoint {
    double t{0};
    uint64_t clients{0};
    uint64_t requests{0};
    uint64_t replies{0};
    uint64_t headers{0};
    uint64_t bytes{0};
    uint64_t errors{0};
    double p50_ms{0};
    double p99_ms{0};
};

inline double to_ms(uint64_t nanos) { return static_cast<double>(nanos) / 1e6; }

}  // namespace headerd::load
