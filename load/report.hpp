#pragma once

// Turns a RunResult into what a person or a pipeline reads: the summary table, the JSON report
// (schema "headerd-load-report", version 1, docs/load-report.md), and threshold verdicts.

#include <optional>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "core/result.hpp"
#include "load/runner.hpp"

namespace headerd::load {

// Optional context the runner does not know.
struct ReportContext {
    std::vector<std::string> command;
    std::string started_at;               // ISO 8601 UTC
    std::string run_id;                   // load --run-id; empty when not given
    std::optional<std::string> start_at;  // load --start-at, as UTC
    // The measured window in Unix seconds (the run's start to its end): what report --merge compares.
    struct Window {
        double start{0};
        double end{0};
    } window;
    uint64_t seed{0};
    size_t clients_requested{0};
    std::optional<double> target_rate;
    std::optional<std::string> reference;               // --chain description
    std::optional<boost::json::object> server_metrics;  // --server-metrics figures
    std::optional<double> load_cpu_seconds;             // this process's CPU time during the run
    uint64_t network_id{0};
    Hash32 genesis{};
    std::optional<uint64_t> eth;  // load --eth: the one version offered; nullopt: each profile's own
    // Who wrote the report: headerd's version and commit, and the host it ran on.
    struct Generator {
        std::string version;
        std::string commit;
        std::string host;
    } generator;
};

// A threshold: "p99<50ms", "errors==0", "verified", optionally per profile "besu.p99<100ms".
struct Threshold {
    std::string text;
    std::string profile;  // empty: totals
    std::string metric;   // p50 p90 p99 p999 max mean errors lost stale verification_failures drops requests
                          // headers rps hps verified
    std::string op;       // < <= > >= == !=
    double value{0};      // milliseconds for latency metrics
};
Outcome<Threshold> parse_threshold(const std::string& text);

struct ThresholdResult {
    std::string expr;
    bool ok{false};
    std::string value;  // the measured value, with its unit
};

// Whether every reply verified: no verification failure, timeout or stale reply.
bool verified(const RunResult& r);

std::vector<ThresholdResult> check_thresholds(const RunResult& r, const std::vector<Threshold>& thresholds);

boost::json::object build_report(const RunResult& r, const ReportContext& ctx,
                                 const std::vector<ThresholdResult>& thresholds);

// The per-profile table and totals, for a terminal.
std::string summary_table(const RunResult& r);

// Histogram bucket bounds of the JSON report (ms): 1-2-5 per decade, 0.05 ms to 60 s.
const std::vector<double>& report_bucket_bounds_ms();

// A histogram at full resolution, as the report keeps it ("rtt_histogram", docs/load-report.md):
// {"min_ns", "max_ns", "sum_ns", "count", "buckets": [[index, count], ...]}, and back.
boost::json::object histogram_to_json(const metrics::LatencyHistogram::Snapshot& s);
Outcome<metrics::LatencyHistogram> histogram_from_json(const boost::json::value& v);

// The histogram scheme of this build ("histogram_scheme" in the report): reports whose scheme
// differs cannot be merged bucket by bucket.
boost::json::object histogram_scheme_json();

}  // namespace headerd::load
