#include "load/server_scrape.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace headerd::load {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

std::optional<double> parse_value(std::string_view v) {
    if (v == "+Inf") return std::numeric_limits<double>::infinity();
    if (v == "-Inf") return -std::numeric_limits<double>::infinity();
    if (v == "NaN") return std::nan("");
    const std::string s(v);
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) return std::nullopt;
    return d;
}

}  // namespace

Outcome<std::vector<PromSample>> parse_prometheus_text(std::string_view text) {
    std::vector<PromSample> out;
    size_t line_no = 0;
    while (!text.empty()) {
        const size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
        ++line_no;
        if (line.empty() || line.front() == '#') continue;
        PromSample s;
        size_t i = 0;
        while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
        s.name = std::string(line.substr(0, i));
        if (i < line.size() && line[i] == '{') {
            ++i;
            while (i < line.size() && line[i] != '}') {
                const size_t eq = line.find('=', i);
                if (eq == std::string_view::npos || eq + 1 >= line.size() || line[eq + 1] != '"') {
                    return make_error(fmt::format("metrics line {}: bad label", line_no));
                }
                std::string key(line.substr(i, eq - i));
                std::string value;
                size_t j = eq + 2;
                for (; j < line.size() && line[j] != '"'; ++j) {
                    if (line[j] == '\\' && j + 1 < line.size()) {
                        ++j;  // the format's escapes: \\, \" and \n
                        value += line[j] == 'n' ? '\n' : line[j];
                        continue;
                    }
                    value += line[j];
                }
                if (j >= line.size()) return make_error(fmt::format("metrics line {}: unterminated label", line_no));
                s.labels.emplace(std::move(key), std::move(value));
                i = j + 1;
                if (i < line.size() && line[i] == ',') ++i;
            }
            ++i;  // '}'
        }
        while (i < line.size() && line[i] == ' ') ++i;
        std::string_view rest = line.substr(std::min(i, line.size()));
        rest = rest.substr(0, rest.find(' '));  // an optional timestamp follows
        auto v = parse_value(rest);
        if (s.name.empty() || !v) return make_error(fmt::format("metrics line {}: bad sample", line_no));
        s.value = *v;
        out.push_back(std::move(s));
    }
    return out;
}

Outcome<HttpUrl> parse_http_url(const std::string& url) {
    constexpr std::string_view kScheme = "http://";
    if (url.rfind(kScheme, 0) != 0) return make_error(fmt::format("{}: only http:// URLs are supported", url));
    const std::string rest = url.substr(kScheme.size());
    const size_t slash = rest.find('/');
    HttpUrl u;
    u.hostport = rest.substr(0, slash);
    u.target = slash == std::string::npos ? "/metrics" : rest.substr(slash);
    std::optional<std::string> port;                         // as written after the colon
    if (!u.hostport.empty() && u.hostport.front() == '[') {  // [IPv6]:PORT
        const size_t close = u.hostport.find(']');
        if (close == std::string::npos) return make_error(fmt::format("{}: unterminated [IPv6 address]", url));
        u.host = u.hostport.substr(1, close - 1);
        const std::string after = u.hostport.substr(close + 1);
        if (!after.empty() && after.front() != ':') return make_error(fmt::format("{}: bad host", url));
        if (!after.empty()) port = after.substr(1);
    } else {
        const size_t colon = u.hostport.rfind(':');
        u.host = u.hostport.substr(0, colon);
        if (colon != std::string::npos) port = u.hostport.substr(colon + 1);
    }
    if (u.host.empty()) return make_error(fmt::format("{}: no host", url));
    if (port) {
        unsigned value = 0;
        const char* end = port->data() + port->size();
        const auto [at, ec] = std::from_chars(port->data(), end, value);
        if (port->empty() || ec != std::errc{} || at != end || value == 0 || value > 65535) {
            return make_error(fmt::format("{}: bad port '{}' (1..65535)", url, *port));
        }
        u.port = static_cast<uint16_t>(value);
    }
    return u;
}

Outcome<std::string> http_get(const std::string& url, std::chrono::milliseconds timeout) {
    auto parsed = parse_http_url(url);
    if (!parsed) return parsed.error();
    const std::string& host = parsed->host;
    const std::string port = std::to_string(parsed->port);
    const std::string& target = parsed->target;
    const std::string& hostport = parsed->hostport;

    asio::io_context io;
    beast::tcp_stream stream(io);
    beast::flat_buffer buffer;
    http::request<http::empty_body> req{http::verb::get, target, 11};
    req.set(http::field::host, hostport);
    req.set(http::field::connection, "close");
    http::response<http::string_body> res;
    boost::system::error_code error;
    asio::ip::tcp::resolver resolver(io);
    stream.expires_after(timeout);
    resolver.async_resolve(host, port, [&](const boost::system::error_code& ec, auto results) {
        if (ec) {
            error = ec;
            return;
        }
        stream.async_connect(results, [&](const boost::system::error_code& ec2, auto) {
            if (ec2) {
                error = ec2;
                return;
            }
            http::async_write(stream, req, [&](const boost::system::error_code& ec3, size_t) {
                if (ec3) {
                    error = ec3;
                    return;
                }
                http::async_read(stream, buffer, res,
                                 [&](const boost::system::error_code& ec4, size_t) { error = ec4; });
            });
        });
    });
    io.run();
    if (error) return make_error(fmt::format("{}: {}", url, error.message()));
    if (res.result() != http::status::ok) {
        return make_error(fmt::format("{}: HTTP {}", url, static_cast<unsigned>(res.result_int())));
    }
    return Outcome<std::string>(boost::system::in_place_value, std::move(res.body()));
}

ServerSnapshot snapshot_of(const std::vector<PromSample>& samples) {
    ServerSnapshot s;
    for (const PromSample& p : samples) {
        if (p.name == "process_cpu_seconds_total") {
            s.cpu_seconds = p.value;
        } else if (p.name == "headerd_headers_served_total") {
            s.headers = s.headers.value_or(0) + p.value;
        } else if (p.name == "headerd_header_requests_total") {
            s.requests = s.requests.value_or(0) + p.value;
        } else if (p.name == "headerd_p2p_serve_seconds_bucket") {
            // GetBlockHeaders is eth message 0x03 in every version.
            auto code = p.labels.find("code");
            auto le = p.labels.find("le");
            if (code == p.labels.end() || code->second != "0x03" || le == p.labels.end()) continue;
            if (auto bound = parse_value(le->second)) s.serve_buckets[*bound] += p.value;
        }
    }
    return s;
}

Outcome<ServerSnapshot> scrape_server(const std::string& url, std::chrono::milliseconds timeout) {
    auto body = http_get(url, timeout);
    if (!body) return body.error();
    auto samples = parse_prometheus_text(*body);
    if (!samples) return make_error(fmt::format("{}: {}", url, samples.error().message));
    return snapshot_of(*samples);
}

std::optional<double> bucket_quantile(double q, const std::map<double, double>& cumulative) {
    if (cumulative.empty()) return std::nullopt;
    const double total = cumulative.rbegin()->second;
    if (!(total > 0)) return std::nullopt;
    const double rank = q * total;
    double prev_bound = 0;
    double prev_count = 0;
    for (const auto& [bound, count] : cumulative) {
        if (count >= rank) {
            if (std::isinf(bound)) return prev_bound;  // above the last finite bucket
            if (count == prev_count) return bound;
            return prev_bound + (bound - prev_bound) * (rank - prev_count) / (count - prev_count);
        }
        prev_bound = bound;
        prev_count = count;
    }
    return prev_bound;
}

boost::json::object server_delta(const std::string& url, const ServerSnapshot& before, const ServerSnapshot& after) {
    boost::json::object o;
    o["url"] = url;
    // A series missing from either scrape (another server, or an older headerd) is null.
    const auto difference = [](const std::optional<double>& a, const std::optional<double>& b) {
        return a && b ? std::optional<double>(*b - *a) : std::nullopt;
    };
    const auto value = [](const std::optional<double>& v) {
        return v ? boost::json::value(*v) : boost::json::value(nullptr);
    };
    const auto headers = difference(before.headers, after.headers);
    const auto requests = difference(before.requests, after.requests);
    const auto cpu = difference(before.cpu_seconds, after.cpu_seconds);
    const auto per = [&](const std::optional<double>& n) {
        return cpu && n && *n > 0 ? boost::json::value(*cpu * 1e6 / *n) : boost::json::value(nullptr);
    };
    o["headers_served"] = value(headers);
    o["requests_served"] = value(requests);
    o["cpu_seconds"] = value(cpu);
    o["cpu_us_per_header"] = per(headers);
    o["cpu_us_per_request"] = per(requests);
    std::map<double, double> delta;
    for (const auto& [le, c] : after.serve_buckets) {
        auto it = before.serve_buckets.find(le);
        delta[le] = c - (it == before.serve_buckets.end() ? 0 : it->second);
    }
    boost::json::object serve;
    for (const auto& [name, q] : {std::pair{"p50", 0.5}, std::pair{"p99", 0.99}}) {
        auto v = bucket_quantile(q, delta);
        serve[name] = v ? boost::json::value(*v) : boost::json::value(nullptr);
    }
    o["serve_seconds"] = serve;
    return o;
}

}  // namespace headerd::load
