#pragma once

// What the load generator counts: per profile, per one-second interval (the timeline), and the
// first failures with their reasons. Each worker thread records into its own Shard under the
// shard's mutex (uncontended but for the once-a-second collection by the main thread).

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "metrics/histogram.hpp"

namespace headerd::load {

// Error kinds, the keys of `errors` in reports.
inline constexpr const char* kErrorKinds[] = {"timeout", "closed", "rejected", "verification", "connect"};

// The request messages a client sends, the index of ProfileStats::messages.
enum class Message : size_t { kHeaders = 0, kBodies = 1, kReceipts = 2 };
inline constexpr size_t kMessages = 3;
// Their names in reports: the items each reply carries.
inline constexpr const char* kMessageNames[kMessages] = {"headers", "bodies", "receipts"};
// Their request messages, for people.
inline constexpr const char* kRequestNames[kMessages] = {"GetBlockHeaders", "GetBlockBodies", "GetReceipts"};

// One request message's figures within a profile.
struct MessageStats {
    uint64_t requests{0};
    uint64_t replies{0};        // received (good or not)
    uint64_t items{0};          // headers, bodies or receipt lists received (a cut eth/70 list counts)
    uint64_t bytes{0};          // their bytes
    uint64_t receipts{0};       // receipts in the verified receipt lists; transactions in the verified bodies
    uint64_t empty{0};          // verified replies with no item though items were asked
    uint64_t short_replies{0};  // verified replies with fewer items than asked (empty ones too)
    uint64_t lost{0};
    uint64_t verification_failures{0};
    metrics::LatencyHistogram rtt;

    void merge(const MessageStats& o);
};

struct ProfileStats {
    uint64_t clients{0};
    uint64_t requests{0};  // sent, every message
    uint64_t replies{0};   // received (good or not), every message
    uint64_t headers{0};
    uint64_t bytes{0};  // header RLP bytes received
    uint64_t lost{0};   // timed out
    uint64_t stale{0};  // replies to ids not pending
    uint64_t verification_failures{0};
    std::map<std::string, uint64_t> errors;
    uint64_t drops{0};
    uint64_t penalties{0};
    std::map<std::string, uint64_t> verdict_reasons;
    metrics::LatencyHistogram rtt;  // every message's replies
    std::array<MessageStats, kMessages> messages;

    const MessageStats& message(Message m) const { return messages[static_cast<size_t>(m)]; }
    MessageStats& message(Message m) { return messages[static_cast<size_t>(m)]; }
    void merge(const ProfileStats& o);
};

struct IntervalStats {
    uint64_t requests{0};
    uint64_t replies{0};
    uint64_t headers{0};
    uint64_t bodies{0};
    uint64_t receipt_lists{0};
    uint64_t bytes{0};
    uint64_t errors{0};
    metrics::LatencyHistogram rtt;

    void merge(const IntervalStats& o);
};

struct FailureRecord {
    uint64_t client{0};
    std::string profile;
    std::string message{"GetBlockHeaders"};  // the request's message
    std::string request;                     // verify.hpp or history_verify.hpp describe()
    // The request's fields, for the JSON report.
    std::string origin;  // a number, or a 0x hash
    uint64_t amount{0};
    uint64_t skip{0};
    bool reverse{false};
    uint64_t id{0};
    // GetBlockBodies, GetReceipts: the numbers of the first and last block asked (amount: how many).
    std::optional<std::pair<uint64_t, uint64_t>> blocks;
    std::string reason;
};

// One reply's round-trip time, as `load --rtt-log` writes it down.
struct RttSample {
    uint32_t profile{0};  // index into RunResult::profile_specs
    Message message{Message::kHeaders};
    uint64_t nanos{0};
};

struct Shard {
    std::mutex mu;
    std::vector<RttSample> samples;      // LoadConfig::max_samples > 0 only
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
    uint64_t bodies{0};
    uint64_t receipt_lists{0};
    metrics::LatencyHistogram::Snapshot rtt;  // the second's replies, whole (what p50_ms and p99_ms come from)
};

inline double to_ms(uint64_t nanos) { return static_cast<double>(nanos) / 1e6; }

}  // namespace headerd::load
