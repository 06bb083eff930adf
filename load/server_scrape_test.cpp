// `headerd load --server-metrics URL`: the Prometheus text parser on headerd's own exporter output
// and on malformed bodies, Prometheus' histogram_quantile interpolation, the report object of two
// scrapes, URL checks, and http_get against the real /metrics server (metrics::HttpServer) and
// against canned HTTP servers on 127.0.0.1 (HTML, 500, no reply, not HTTP). Every failure is an
// error naming the URL (and the line of the body), never a crash or a silent zero.

#include "load/server_scrape.hpp"

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "load/html_report.hpp"
#include "metrics/http_server.hpp"
#include "metrics/metrics.hpp"

namespace headerd::load {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using asio::ip::tcp;
using namespace std::chrono_literals;

// ---- the exporter's text ------------------------------------------------------------------------

// What a serving node's /metrics holds after it served three GetBlockHeaders requests on eth/68
// (0.3 ms each), one on eth/69 (4 ms) and a GetBlockBodies (10 s, not a header request): 200
// headers, 192 of them from the freezer.
std::string serving_node_text() {
    static metrics::Metrics m("test", "0000000");
    static const bool once = [] {
        metrics::Families& f = m.families();
        f.headers_served.Add({{"store", "ancient"}}).Increment(192);
        f.headers_served.Add({{"store", "leveldb"}}).Increment(8);
        f.header_requests.Add({{"kind", "number"}}).Increment(3);
        f.header_requests.Add({{"kind", "hash"}}).Increment(1);
        auto& v68 =
            f.serve_seconds.Add({{"proto", "eth"}, {"version", "68"}, {"code", "0x03"}}, metrics::duration_buckets());
        for (int i = 0; i < 3; ++i) v68.Observe(0.0003);
        f.serve_seconds.Add({{"proto", "eth"}, {"version", "69"}, {"code", "0x03"}}, metrics::duration_buckets())
            .Observe(0.004);
        f.serve_seconds.Add({{"proto", "eth"}, {"version", "68"}, {"code", "0x05"}}, metrics::duration_buckets())
            .Observe(10);
        return true;
    }();
    (void)once;
    return m.scrape();
}

TEST(ServerScrape, ParsesAServingNodesMetrics) {
    const std::string text = serving_node_text();
    auto samples = parse_prometheus_text(text);
    ASSERT_TRUE(samples) << samples.error().message;
    EXPECT_GT(samples->size(), 50u);
    const ServerSnapshot s = snapshot_of(*samples);
    ASSERT_TRUE(s.cpu_seconds);  // the process collector's
    EXPECT_GE(*s.cpu_seconds, 0);
    EXPECT_EQ(s.headers, 200.0);
    EXPECT_EQ(s.requests, 4.0);
    EXPECT_TRUE(s.has_any());
    // The GetBlockHeaders buckets of both versions, summed; GetBlockBodies' 10 s left out.
    ASSERT_EQ(s.serve_buckets.size(), metrics::duration_buckets().size() + 1);
    EXPECT_EQ(s.serve_buckets.at(250e-6), 0.0);
    EXPECT_EQ(s.serve_buckets.at(500e-6), 3.0);
    EXPECT_EQ(s.serve_buckets.at(2.5e-3), 3.0);
    EXPECT_EQ(s.serve_buckets.at(5e-3), 4.0);
    EXPECT_EQ(s.serve_buckets.at(30.0), 4.0);
    EXPECT_EQ(s.serve_buckets.at(std::numeric_limits<double>::infinity()), 4.0);
}

TEST(ServerScrape, ParsesTheFormatsCorners) {
    auto samples = parse_prometheus_text(
        "# HELP a_total A counter.\n"
        "# TYPE a_total counter\n"
        "\n"
        "a_total 3\n"
        "b{x=\"1\",y=\"q\\\"uote\\\\back\\nline\",} 2.5e3 1700000000000\n"
        "c{le=\"+Inf\"} +Inf\n"
        "d -Inf\n"
        "e NaN\n"
        "f{} 7");
    ASSERT_TRUE(samples) << samples.error().message;
    ASSERT_EQ(samples->size(), 6u);
    const auto& v = *samples;
    EXPECT_EQ(v[0].name, "a_total");
    EXPECT_EQ(v[0].value, 3);
    EXPECT_TRUE(v[0].labels.empty());
    EXPECT_EQ(v[1].name, "b");
    EXPECT_EQ(v[1].value, 2500);  // the timestamp after it ignored
    EXPECT_EQ(v[1].labels.at("x"), "1");
    EXPECT_EQ(v[1].labels.at("y"), "q\"uote\\back\nline");  // the three escapes of the format
    EXPECT_EQ(v[2].labels.at("le"), "+Inf");
    EXPECT_TRUE(std::isinf(v[2].value) && v[2].value > 0);
    EXPECT_TRUE(std::isinf(v[3].value) && v[3].value < 0);
    EXPECT_TRUE(std::isnan(v[4].value));
    EXPECT_EQ(v[5].name, "f");
    EXPECT_EQ(v[5].value, 7);
    // Nothing but comments: no samples, and a snapshot without any series the report uses.
    auto none = parse_prometheus_text("# nothing here\n\n");
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
    EXPECT_FALSE(snapshot_of(*none).has_any());
    EXPECT_FALSE(snapshot_of(*parse_prometheus_text("node_load1 0.5\n")).has_any());
}

TEST(ServerScrape, MalformedBodiesNameTheirLine) {
    const auto error_of = [](std::string_view text) {
        auto r = parse_prometheus_text(text);
        return r ? std::string("parsed") : r.error().message;
    };
    EXPECT_EQ(error_of("ok 1\nbroken\n"), "metrics line 2: bad sample");             // no value
    EXPECT_EQ(error_of("a 1\nb one\n"), "metrics line 2: bad sample");               // not a number
    EXPECT_EQ(error_of("x{a=1} 1"), "metrics line 1: bad label");                    // unquoted value
    EXPECT_EQ(error_of("x{a} 1"), "metrics line 1: bad label");                      // no '='
    EXPECT_EQ(error_of("x{a=\"1} 1"), "metrics line 1: unterminated label");         // no closing quote
    EXPECT_EQ(error_of("x{a=\"1\" 1"), "metrics line 1: bad label");                 // no closing brace
    EXPECT_EQ(error_of(" 1"), "metrics line 1: bad sample");                         // no name
    EXPECT_EQ(error_of("# ok\n\n<!DOCTYPE html>\n"), "metrics line 3: bad sample");  // an HTML page
    EXPECT_EQ(error_of("{\"cpu\": 1.5}\n"), "metrics line 1: bad label");            // JSON
}

// ---- quantiles and the report object ---------------------------------------------------------

TEST(ServerScrape, BucketQuantileInterpolatesAsPrometheusDoes) {
    const double inf = std::numeric_limits<double>::infinity();
    // The serving node's buckets above: 3 at 0.25-0.5 ms, 1 at 2.5-5 ms.
    const ServerSnapshot s = snapshot_of(*parse_prometheus_text(serving_node_text()));
    // rank 2 of 4 lies in (0.25 ms, 0.5 ms], which holds 3: 0.25 + 0.25 x 2/3 ms.
    EXPECT_NEAR(*bucket_quantile(0.5, s.serve_buckets), 250e-6 + 250e-6 * 2 / 3, 1e-12);
    // rank 3.96 lies in (2.5 ms, 5 ms], which holds 1 (the 4th): 2.5 + 2.5 x 0.96 ms.
    EXPECT_NEAR(*bucket_quantile(0.99, s.serve_buckets), 2.5e-3 + 2.5e-3 * 0.96, 1e-12);
    // The first bucket starts at 0.
    EXPECT_NEAR(*bucket_quantile(0.5, {{0.1, 10}, {inf, 10}}), 0.05, 1e-12);
    // A rank in the +Inf bucket: the largest finite bound, as histogram_quantile answers.
    EXPECT_EQ(*bucket_quantile(0.99, {{0.1, 10}, {1.0, 90}, {inf, 100}}), 1.0);
    // No observations, or no buckets: no quantile.
    EXPECT_FALSE(bucket_quantile(0.5, {{0.1, 0}, {inf, 0}}));
    EXPECT_FALSE(bucket_quantile(0.5, {}));
}

TEST(ServerScrape, ServerDeltaOfTwoScrapes) {
    ServerSnapshot before;
    before.cpu_seconds = 10.0;
    before.headers = 1000;
    before.requests = 10;
    before.serve_buckets = {{0.001, 8}, {0.01, 10}, {std::numeric_limits<double>::infinity(), 10}};
    ServerSnapshot after = before;
    after.cpu_seconds = 10.5;
    after.headers = 1000 + 192 * 100;
    after.requests = 110;
    after.serve_buckets = {{0.001, 58}, {0.01, 110}, {std::numeric_limits<double>::infinity(), 110}};
    const json::object o = server_delta("http://127.0.0.1:6060/metrics", before, after);
    EXPECT_EQ(o.at("url").as_string(), "http://127.0.0.1:6060/metrics");
    EXPECT_DOUBLE_EQ(o.at("cpu_seconds").to_number<double>(), 0.5);
    EXPECT_DOUBLE_EQ(o.at("headers_served").to_number<double>(), 19200);
    EXPECT_DOUBLE_EQ(o.at("requests_served").to_number<double>(), 100);
    EXPECT_NEAR(o.at("cpu_us_per_header").to_number<double>(), 0.5e6 / 19200, 1e-9);
    EXPECT_NEAR(o.at("cpu_us_per_request").to_number<double>(), 5000, 1e-9);
    // Of the run's 100: 50 below 1 ms, 50 in (1 ms, 10 ms]; in seconds, as docs/load-report.md says.
    const json::object& serve = o.at("serve_seconds").as_object();
    EXPECT_NEAR(serve.at("p50").to_number<double>(), 0.001, 1e-12);
    EXPECT_NEAR(serve.at("p99").to_number<double>(), 0.001 + 0.009 * 49 / 50, 1e-12);
    EXPECT_EQ(o.if_contains("serve_ms"), nullptr);

    // The page shows what the object says (it reads serve_seconds).
    const std::string html = render_html_report(json::object{{"server_metrics", o}});
    EXPECT_NE(html.find("<dt>serve time p50</dt><dd>1.00 ms</dd>"), std::string::npos) << html;
    EXPECT_NE(html.find("<dt>serve time p99</dt><dd>9.82 ms</dd>"), std::string::npos);
    EXPECT_NE(html.find("<dt>headers served</dt><dd>19,200</dd>"), std::string::npos);

    // Another server: the series it lacks are null, not zero; nothing is divided by them.
    const json::object other = server_delta("http://x/metrics", ServerSnapshot{}, ServerSnapshot{});
    for (const char* k :
         {"cpu_seconds", "headers_served", "requests_served", "cpu_us_per_header", "cpu_us_per_request"})
        EXPECT_TRUE(other.at(k).is_null()) << k;
    EXPECT_TRUE(other.at("serve_seconds").at("p50").is_null());
    EXPECT_TRUE(other.at("serve_seconds").at("p99").is_null());
    // CPU but no header counter (a process exporter): CPU seconds, no per-header figure.
    ServerSnapshot cpu_only_before;
    cpu_only_before.cpu_seconds = 1;
    ServerSnapshot cpu_only_after;
    cpu_only_after.cpu_seconds = 3;
    const json::object cpu_only = server_delta("http://x/metrics", cpu_only_before, cpu_only_after);
    EXPECT_DOUBLE_EQ(cpu_only.at("cpu_seconds").to_number<double>(), 2);
    EXPECT_TRUE(cpu_only.at("cpu_us_per_header").is_null());
    EXPECT_TRUE(cpu_only.at("headers_served").is_null());
}

// ---- URLs and HTTP ------------------------------------------------------------------------------

TEST(ServerScrape, UrlsAreCheckedBeforeAnyConnection) {
    auto u = parse_http_url("http://127.0.0.1:6060/metrics");
    ASSERT_TRUE(u) << u.error().message;
    EXPECT_EQ(u->host, "127.0.0.1");
    EXPECT_EQ(u->port, 6060);
    EXPECT_EQ(u->target, "/metrics");
    u = parse_http_url("http://localhost");
    ASSERT_TRUE(u);
    EXPECT_EQ(u->port, 80);
    EXPECT_EQ(u->target, "/metrics");
    u = parse_http_url("http://[::1]:9100/x?y=1");
    ASSERT_TRUE(u);
    EXPECT_EQ(u->host, "::1");
    EXPECT_EQ(u->hostport, "[::1]:9100");
    EXPECT_EQ(u->port, 9100);
    EXPECT_EQ(u->target, "/x?y=1");

    const auto error_of = [](const std::string& url) {
        auto r = parse_http_url(url);
        return r ? std::string("parsed") : r.error().message;
    };
    EXPECT_EQ(error_of("https://127.0.0.1:6060/metrics"),
              "https://127.0.0.1:6060/metrics: only http:// URLs are supported");
    EXPECT_EQ(error_of("127.0.0.1:6060"), "127.0.0.1:6060: only http:// URLs are supported");
    EXPECT_EQ(error_of("http://"), "http://: no host");
    EXPECT_EQ(error_of("http://:6060/metrics"), "http://:6060/metrics: no host");
    EXPECT_EQ(error_of("http://127.0.0.1:/metrics"), "http://127.0.0.1:/metrics: bad port '' (1..65535)");
    EXPECT_EQ(error_of("http://127.0.0.1:0/metrics"), "http://127.0.0.1:0/metrics: bad port '0' (1..65535)");
    EXPECT_EQ(error_of("http://127.0.0.1:65536/"), "http://127.0.0.1:65536/: bad port '65536' (1..65535)");
    EXPECT_EQ(error_of("http://127.0.0.1:60x0/"), "http://127.0.0.1:60x0/: bad port '60x0' (1..65535)");
    EXPECT_EQ(error_of("http://127.0.0.1:-1/"), "http://127.0.0.1:-1/: bad port '-1' (1..65535)");
    EXPECT_EQ(error_of("http://[::1/metrics"), "http://[::1/metrics: unterminated [IPv6 address]");
    EXPECT_EQ(error_of("http://[::1]x/metrics"), "http://[::1]x/metrics: bad host");
    // http_get refuses them the same way, without a connection.
    auto r = http_get("ftp://127.0.0.1/metrics", 1s);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "ftp://127.0.0.1/metrics: only http:// URLs are supported");
}

// An HTTP server on 127.0.0.1 with one canned answer, on a thread of its own: each connection's
// request head is read, then `response` (raw bytes, status line included) is written and the
// connection closed; with `hang`, the request is read and nothing is ever answered.
class CannedHttp {
  public:
    explicit CannedHttp(std::string response, bool hang = false) : response_(std::move(response)), hang_(hang) {
        asio::co_spawn(io_, accept_loop(), asio::detached);
        thread_ = std::thread([this] { io_.run(); });
    }
    ~CannedHttp() {
        io_.stop();
        thread_.join();
    }
    std::string url(const std::string& path = "/metrics") const {
        return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + path;
    }

  private:
    asio::awaitable<void> accept_loop() {
        for (;;) {
            tcp::socket socket = co_await acceptor_.async_accept(asio::use_awaitable);
            asio::co_spawn(io_, answer(std::move(socket)), asio::detached);
        }
    }
    asio::awaitable<void> answer(tcp::socket socket) {
        asio::streambuf request;
        co_await asio::async_read_until(socket, request, "\r\n\r\n", asio::use_awaitable);
        if (hang_) {
            asio::streambuf more;  // waits for bytes that never come, until the client gives up
            boost::system::error_code ec;
            co_await asio::async_read(socket, more, asio::redirect_error(asio::use_awaitable, ec));
            co_return;
        }
        co_await asio::async_write(socket, asio::buffer(response_), asio::use_awaitable);
        boost::system::error_code ec;
        socket.shutdown(tcp::socket::shutdown_both, ec);
    }

    std::string response_;
    bool hang_;
    asio::io_context io_{1};
    tcp::acceptor acceptor_{io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)};
    std::thread thread_;
};

std::string http_reply(const std::string& status, const std::string& body) {
    return "HTTP/1.1 " + status + "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nConnection: close\r\n\r\n" + body;
}

// The real /metrics server of a serving node: its body scrapes to the same figures; another
// path is its 404, an error naming the URL.
TEST(ServerScrape, ScrapesTheMetricsHttpServer) {
    asio::io_context io(1);
    metrics::Metrics registry("test", "0000000");
    registry.families().headers_served.Add({{"store", "leveldb"}}).Increment(8192);
    registry.families().header_requests.Add({{"kind", "number"}}).Increment(43);
    metrics::HttpServer server(io, registry.collectables(), {});
    ASSERT_TRUE(server.listen(tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)));
    server.start();
    std::thread thread([&io] { io.run(); });
    const std::string base = "http://127.0.0.1:" + std::to_string(server.local_endpoint().port());

    auto snap = scrape_server(base + "/metrics", 5s);
    ASSERT_TRUE(snap) << snap.error().message;
    EXPECT_EQ(snap->headers, 8192.0);
    EXPECT_EQ(snap->requests, 43.0);
    EXPECT_TRUE(snap->cpu_seconds);
    auto bare = scrape_server(base, 5s);  // no path: /metrics
    ASSERT_TRUE(bare) << bare.error().message;
    EXPECT_EQ(bare->headers, 8192.0);
    auto missing = scrape_server(base + "/nope", 5s);
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().message, base + "/nope: HTTP 404");

    asio::post(io, [&server] { server.stop(); });
    thread.join();
}

TEST(ServerScrape, AClosedPortIsAnErrorNamingTheUrl) {
    asio::io_context io;
    tcp::acceptor probe(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    const std::string url = "http://127.0.0.1:" + std::to_string(probe.local_endpoint().port()) + "/metrics";
    probe.close();  // nothing listens there now
    const auto start = std::chrono::steady_clock::now();
    auto r = scrape_server(url, 5s);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, url + ": Connection refused");
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST(ServerScrape, BodiesThatAreNotPrometheusTextAreErrors) {
    CannedHttp html(http_reply("200 OK", "<!DOCTYPE html>\n<html><body>Grafana</body></html>\n"));
    auto r = scrape_server(html.url(), 5s);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, html.url() + ": metrics line 1: bad sample");

    CannedHttp json_body(http_reply("200 OK", "{\"headers_served\": 1}\n"));
    r = scrape_server(json_body.url(), 5s);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, json_body.url() + ": metrics line 1: bad label");

    CannedHttp broken(http_reply("500 Internal Server Error", "collector failed\n"));
    r = scrape_server(broken.url(), 5s);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, broken.url() + ": HTTP 500");

    CannedHttp not_http("SSH-2.0-OpenSSH_9.2\r\n\r\n");
    r = scrape_server(not_http.url(), 5s);
    ASSERT_FALSE(r);
    EXPECT_TRUE(r.error().message.starts_with(not_http.url() + ": ")) << r.error().message;

    // A short body (Content-Length says more than comes): an error, not half a scrape.
    CannedHttp cut("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nheaderd_headers_served_total 1\n");
    r = scrape_server(cut.url(), 5s);
    ASSERT_FALSE(r);
    EXPECT_TRUE(r.error().message.starts_with(cut.url() + ": ")) << r.error().message;

    // Valid text without any series the report uses: parsed; the caller warns (has_any false).
    CannedHttp foreign(http_reply("200 OK", "# TYPE node_load1 gauge\nnode_load1 0.25\n"));
    auto ok = scrape_server(foreign.url(), 5s);
    ASSERT_TRUE(ok) << ok.error().message;
    EXPECT_FALSE(ok->has_any());
}

TEST(ServerScrape, AServerThatNeverAnswersTimesOut) {
    CannedHttp silent("", /*hang=*/true);
    const auto start = std::chrono::steady_clock::now();
    auto r = scrape_server(silent.url(), 300ms);
    const auto took = std::chrono::steady_clock::now() - start;
    ASSERT_FALSE(r);
    EXPECT_TRUE(r.error().message.starts_with(silent.url() + ": ")) << r.error().message;
    EXPECT_NE(r.error().message.find("timeout"), std::string::npos) << r.error().message;
    EXPECT_GE(took, 290ms);
    EXPECT_LT(took, 2300ms);
}

}  // namespace
}  // namespace headerd::load
