#pragma once

// `headerd load --server-metrics URL`: the server's own /metrics (Prometheus text format) read
// before and after the run, so the report can put the server's CPU per header and per request and
// its own serve-time quantiles next to the client-side RTT. Works with headerd serve's metrics;
// other servers' missing series are reported as absent.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include "core/result.hpp"

namespace headerd::load {

struct PromSample {
    std::string name;
    std::map<std::string, std::string> labels;
    double value{0};
};

// Parses the text exposition format (comments and blank lines skipped); errors name the line.
Outcome<std::vector<PromSample>> parse_prometheus_text(std::string_view text);

// GET http://HOST:PORT/PATH within `timeout`; the body of a 200 reply.
Outcome<std::string> http_get(const std::string& url, std::chrono::milliseconds timeout);

struct ServerSnapshot {
    std::optional<double> cpu_seconds;       // process_cpu_seconds_total
    double headers{0};                       // headerd_headers_served_total, every store
    double requests{0};                      // headerd_header_requests_total, every kind
    std::map<double, double> serve_buckets;  // GetBlockHeaders serve time: le -> cumulative count
};

ServerSnapshot snapshot_of(const std::vector<PromSample>& samples);
Outcome<ServerSnapshot> scrape_server(const std::string& url, std::chrono::milliseconds timeout);

// The quantile q of a cumulative histogram (Prometheus histogram_quantile's interpolation).
std::optional<double> bucket_quantile(double q, const std::map<double, double>& cumulative);

// The report's server_metrics object: url, cpu_seconds, headers_served, requests_served,
// cpu_us_per_header, cpu_us_per_request, serve_seconds{p50,p99} (null where unknown).
boost::json::object server_delta(const std::string& url, const ServerSnapshot& before, const ServerSnapshot& after);

}  // namespace headerd::load
