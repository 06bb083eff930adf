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

}  // namespace headerd::load
