#pragma once

// `headerd load --server-metrics URL`: the server's own /metrics (Prometheus text format) read
// before and after the run, so the report can put the server's CPU per header and per request and
// its own serve-time quantiles next to the client-side RTT. Works with headerd serve's metrics;
// other servers' missing series are reported as absent.

#include <chrono>
#include <cstdint>
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

// An http:// URL taken apart: http://HOST[:PORT][/PATH] (HOST may be an [IPv6] literal; port 80
// and path /metrics when absent).
struct HttpUrl {
    std::string host;      // without brackets
    std::string hostport;  // as written, for the Host header
    uint16_t port{80};
    std::string target;  // starts with '/'
};

// Errors name the URL and what is wrong with it (scheme, host, port).
Outcome<HttpUrl> parse_http_url(const std::string& url);

// GET `url` within `timeout`; the body of a 200 reply. Errors name the URL.
Outcome<std::string> http_get(const std::string& url, std::chrono::milliseconds timeout);

struct ServerSnapshot {
    std::optional<double> cpu_seconds;       // process_cpu_seconds_total
    std::optional<double> headers;           // headerd_headers_served_total, every store
    std::optional<double> requests;          // headerd_header_requests_total, every kind
    std::map<double, double> serve_buckets;  // GetBlockHeaders serve time: le -> cumulative count

    // Whether any series the report uses was there (a headerd server's /metrics has them all).
    bool has_any() const noexcept {
        return cpu_seconds.has_value() || headers.has_value() || requests.has_value() || !serve_buckets.empty();
    }
};

ServerSnapshot snapshot_of(const std::vector<PromSample>& samples);
Outcome<ServerSnapshot> scrape_server(const std::string& url, std::chrono::milliseconds timeout);

// The quantile q of a cumulative histogram (Prometheus histogram_quantile's interpolation).
std::optional<double> bucket_quantile(double q, const std::map<double, double>& cumulative);

// The report's server_metrics object (docs/load-report.md, section 10): url, cpu_seconds,
// headers_served, requests_served, cpu_us_per_header, cpu_us_per_request, serve_seconds{p50,p99}
// in seconds; null where a series was missing from either scrape.
boost::json::object server_delta(const std::string& url, const ServerSnapshot& before, const ServerSnapshot& after);

}  // namespace headerd::load
