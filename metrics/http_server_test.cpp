#include "metrics/http_server.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include "core/awaitable.hpp"
#include "metrics/process_collector.hpp"

namespace headerd::metrics {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// Every client operation ends by itself; a hung server fails the test instead of hanging it.
constexpr auto kClientTimeout = std::chrono::seconds(5);
constexpr auto kTestTimeout = std::chrono::seconds(20);

struct Reply {
    unsigned status{0};
    std::string content_type;
    std::string allow;
    std::string content_length;
    std::string body;
    bool keep_alive{false};
};

asio::awaitable<beast::tcp_stream> connect(tcp::endpoint endpoint) {
    beast::tcp_stream stream(co_await asio::this_coro::executor);
    stream.expires_after(kClientTimeout);
    co_await stream.async_connect(endpoint, asio::use_awaitable);
    co_return stream;
}

// Reads one reply; throws on a transport error or a close.
asio::awaitable<Reply> read_reply(beast::tcp_stream& stream, beast::flat_buffer& buffer, bool head = false) {
    http::response_parser<http::string_body> parser;
    parser.skip(head);  // a HEAD reply has a Content-Length but no body
    stream.expires_after(kClientTimeout);
    co_await http::async_read(stream, buffer, parser, asio::use_awaitable);
    const auto& res = parser.get();
    co_return Reply{res.result_int(),
                    std::string(res[http::field::content_type]),
                    std::string(res[http::field::allow]),
                    std::string(res[http::field::content_length]),
                    res.body(),
                    res.keep_alive()};
}

// One request and its reply on an open (keep-alive) connection.
asio::awaitable<Reply> exchange(beast::tcp_stream& stream, beast::flat_buffer& buffer, http::verb verb,
                                std::string target) {
    http::request<http::empty_body> req{verb, target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.keep_alive(true);
    stream.expires_after(kClientTimeout);
    co_await http::async_write(stream, req, asio::use_awaitable);
    co_return co_await read_reply(stream, buffer, verb == http::verb::head);
}

// One request on a connection of its own.
asio::awaitable<Reply> fetch(tcp::endpoint endpoint, http::verb verb, std::string target) {
    auto stream = co_await connect(endpoint);
    beast::flat_buffer buffer;
    co_return co_await exchange(stream, buffer, verb, std::move(target));
}

// Whether the server closed the connection: the next read sees EOF or a reset, not a timeout.
asio::awaitable<bool> closed_by_server(beast::tcp_stream& stream) {
    std::array<char, 256> scratch;
    stream.expires_after(kClientTimeout);
    for (;;) {
        const auto [ec, n] = co_await stream.async_read_some(asio::buffer(scratch), kTuple);
        if (!ec) continue;  // drain whatever the server still sent
        co_return ec == asio::error::eof || ec == asio::error::connection_reset;
    }
}

// Whether GET /healthz on a new connection gets a 200; false when the connection is refused or closed.
asio::awaitable<bool> healthz_ok(tcp::endpoint endpoint) {
    try {
        co_return (co_await fetch(endpoint, http::verb::get, "/healthz")).status == 200;
    } catch (const boost::system::system_error&) {
        co_return false;
    }
}

asio::awaitable<void> scrape_into(HttpServer* server, std::string* body) {
    const Reply r = co_await fetch(server->local_endpoint(), http::verb::get, "/metrics");
    EXPECT_EQ(r.status, 200u);
    *body = r.body;
}

class HttpServerTest : public ::testing::Test {
  protected:
    // Serves registry_ (and an expired collectable, which must be skipped), then `extra`.
    void start_server(HttpOptions options = {}, std::vector<std::weak_ptr<prometheus::Collectable>> extra = {}) {
        std::vector<std::weak_ptr<prometheus::Collectable>> collectables{registry_, expired_};
        collectables.insert(collectables.end(), extra.begin(), extra.end());
        server_ = std::make_unique<HttpServer>(
            io_, std::move(collectables), [this] { return health_; }, options);
        const auto listening = server_->listen(tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
        ASSERT_TRUE(listening.has_value()) << listening.error().message;
        ASSERT_NE(server_->local_endpoint().port(), 0);
        server_->start();
    }

    // Runs the client coroutine next to the server, then stops the server, and checks that the
    // io_context runs out of work (so a node's io.run() would return).
    void run(asio::awaitable<void> client) {
        bool done = false;
        std::exception_ptr error;
        asio::co_spawn(io_, std::move(client), [&](std::exception_ptr e) {
            done = true;
            error = e;
            server_->stop();
        });
        io_.run_for(kTestTimeout);
        EXPECT_TRUE(done) << "client did not finish in time";
        EXPECT_TRUE(io_.stopped()) << "io_context still has work after stop()";
        if (error) {
            try {
                std::rethrow_exception(error);
            } catch (const std::exception& e) {
                ADD_FAILURE() << "client failed: " << e.what();
            }
        }
    }

    // `body` is a non-capturing coroutine lambda taking the server.
    template <class Body>
    void run(Body body) {
        run(body(server_.get()));
    }

    asio::io_context io_;
    std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
    std::weak_ptr<prometheus::Collectable> expired_ = std::make_shared<prometheus::Registry>();
    Health health_{true, "ok\n"};
    std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, ScrapesRegistry) {
    start_server();
    prometheus::BuildCounter()
        .Name("headerd_test_requests_total")
        .Help("Test counter.")
        .Register(*registry_)
        .Add({{"kind", "number"}})
        .Increment(42);
    run([](HttpServer* server) -> asio::awaitable<void> {
        const Reply r = co_await fetch(server->local_endpoint(), http::verb::get, "/metrics");
        EXPECT_EQ(r.status, 200u);
        EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
        EXPECT_NE(r.body.find("# TYPE headerd_test_requests_total counter\n"), std::string::npos) << r.body;
        EXPECT_NE(r.body.find("headerd_test_requests_total{kind=\"number\"} 42\n"), std::string::npos) << r.body;
        // A query string does not change the resource.
        const Reply q = co_await fetch(server->local_endpoint(), http::verb::get, "/metrics?name[]=x");
        EXPECT_EQ(q.status, 200u);
        EXPECT_EQ(q.body, r.body);
    });
}

TEST_F(HttpServerTest, Healthz) {
    start_server();
    run([](HttpServer* server) -> asio::awaitable<void> {
        const Reply r = co_await fetch(server->local_endpoint(), http::verb::get, "/healthz");
        EXPECT_EQ(r.status, 200u);
        EXPECT_EQ(r.body, "ok\n");
    });
}

TEST_F(HttpServerTest, HealthzUnhealthy) {
    health_ = Health{false, "no peers\n"};
    start_server();
    run([](HttpServer* server) -> asio::awaitable<void> {
        const Reply r = co_await fetch(server->local_endpoint(), http::verb::get, "/healthz");
        EXPECT_EQ(r.status, 503u);
        EXPECT_EQ(r.body, "no peers\n");
    });
}

TEST_F(HttpServerTest, UnknownPathAndMethod) {
    start_server();
    run([](HttpServer* server) -> asio::awaitable<void> {
        const Reply missing = co_await fetch(server->local_endpoint(), http::verb::get, "/");
        EXPECT_EQ(missing.status, 404u);
        const Reply prefixed = co_await fetch(server->local_endpoint(), http::verb::get, "/metrics/x");
        EXPECT_EQ(prefixed.status, 404u);
        const Reply post = co_await fetch(server->local_endpoint(), http::verb::post, "/metrics");
        EXPECT_EQ(post.status, 405u);
        EXPECT_EQ(post.allow, "GET, HEAD");
        const Reply del = co_await fetch(server->local_endpoint(), http::verb::delete_, "/healthz");
        EXPECT_EQ(del.status, 405u);
    });
}

TEST_F(HttpServerTest, HeadHasLengthButNoBody) {
    start_server();
    run([](HttpServer* server) -> asio::awaitable<void> {
        auto stream = co_await connect(server->local_endpoint());
        beast::flat_buffer buffer;
        const Reply head = co_await exchange(stream, buffer, http::verb::head, "/healthz");
        EXPECT_EQ(head.status, 200u);
        EXPECT_EQ(head.content_length, "3");
        EXPECT_TRUE(head.body.empty());
        // No stray body bytes: the next reply on the connection parses.
        const Reply get = co_await exchange(stream, buffer, http::verb::get, "/healthz");
        EXPECT_EQ(get.status, 200u);
        EXPECT_EQ(get.body, "ok\n");
        const Reply head_metrics = co_await exchange(stream, buffer, http::verb::head, "/metrics");
        EXPECT_EQ(head_metrics.status, 200u);
        EXPECT_EQ(head_metrics.content_type, "text/plain; version=0.0.4; charset=utf-8");
    });
}

TEST_F(HttpServerTest, KeepAliveServesSeveralRequests) {
    start_server();
    run([](HttpServer* server) -> asio::awaitable<void> {
        auto stream = co_await connect(server->local_endpoint());
        beast::flat_buffer buffer;
        const Reply first = co_await exchange(stream, buffer, http::verb::get, "/healthz");
        EXPECT_TRUE(first.keep_alive);
        const Reply second = co_await exchange(stream, buffer, http::verb::get, "/metrics");
        EXPECT_EQ(second.status, 200u);
        EXPECT_TRUE(second.keep_alive);

        // Two pipelined requests in one write get two replies in order.
        const std::string pipelined =
            "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
            "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n";
        co_await asio::async_write(stream, asio::buffer(pipelined), asio::use_awaitable);
        EXPECT_EQ((co_await read_reply(stream, buffer)).status, 200u);
        EXPECT_EQ((co_await read_reply(stream, buffer)).status, 404u);

        // HTTP/1.0 without keep-alive: one reply, then the server closes.
        const std::string once = "GET /healthz HTTP/1.0\r\n\r\n";
        co_await asio::async_write(stream, asio::buffer(once), asio::use_awaitable);
        const Reply last = co_await read_reply(stream, buffer);
        EXPECT_EQ(last.status, 200u);
        EXPECT_FALSE(last.keep_alive);
        EXPECT_TRUE(co_await closed_by_server(stream));
    });
}

TEST_F(HttpServerTest, GarbageRequestGets400AndServerGoesOn) {
    start_server();
    run([](HttpServer* server) -> asio::awaitable<void> {
        auto stream = co_await connect(server->local_endpoint());
        const std::string garbage = "\x16\x03\x01 this is not http\r\n\r\n";
        co_await asio::async_write(stream, asio::buffer(garbage), asio::use_awaitable);
        beast::flat_buffer buffer;
        const Reply r = co_await read_reply(stream, buffer);
        EXPECT_EQ(r.status, 400u);
        EXPECT_FALSE(r.keep_alive);
        EXPECT_TRUE(co_await closed_by_server(stream));

        // A request with a body is refused too (nothing here takes one).
        auto with_body = co_await connect(server->local_endpoint());
        const std::string post = "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello";
        co_await asio::async_write(with_body, asio::buffer(post), asio::use_awaitable);
        beast::flat_buffer buffer2;
        EXPECT_EQ((co_await read_reply(with_body, buffer2)).status, 400u);

        const Reply next = co_await fetch(server->local_endpoint(), http::verb::get, "/healthz");
        EXPECT_EQ(next.status, 200u);
    });
}

TEST_F(HttpServerTest, OversizedHeaderIsRefused) {
    start_server();
    run([](HttpServer* server) -> asio::awaitable<void> {
        auto stream = co_await connect(server->local_endpoint());
        const std::string big =
            "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(64 * 1024, 'a') + "\r\n\r\n";
        // The server stops parsing at its limit but drains the rest, so the 431 is not lost to a reset.
        co_await asio::async_write(stream, asio::buffer(big), asio::use_awaitable);
        beast::flat_buffer buffer;
        const Reply r = co_await read_reply(stream, buffer);
        EXPECT_EQ(r.status, 431u);
        EXPECT_FALSE(r.keep_alive);
        EXPECT_TRUE(co_await closed_by_server(stream));

        const Reply next = co_await fetch(server->local_endpoint(), http::verb::get, "/healthz");
        EXPECT_EQ(next.status, 200u);
    });
}

TEST_F(HttpServerTest, ConnectionsBeyondLimitAreClosed) {
    start_server(HttpOptions{.max_connections = 2});
    run([](HttpServer* server) -> asio::awaitable<void> {
        auto a = co_await connect(server->local_endpoint());
        auto b = co_await connect(server->local_endpoint());
        beast::flat_buffer buffer_a;
        beast::flat_buffer buffer_b;
        // A reply proves the server has taken each connection before the next one arrives.
        EXPECT_EQ((co_await exchange(a, buffer_a, http::verb::get, "/healthz")).status, 200u);
        EXPECT_EQ((co_await exchange(b, buffer_b, http::verb::get, "/healthz")).status, 200u);

        auto c = co_await connect(server->local_endpoint());
        EXPECT_TRUE(co_await closed_by_server(c));

        EXPECT_EQ((co_await exchange(a, buffer_a, http::verb::get, "/metrics")).status, 200u);
        EXPECT_EQ((co_await exchange(b, buffer_b, http::verb::get, "/healthz")).status, 200u);

        // A slot freed by a close is available again.
        a.close();
        const auto give_up = std::chrono::steady_clock::now() + kClientTimeout;
        bool served = false;
        while (!served && std::chrono::steady_clock::now() < give_up) {
            // The server notices the close on its next read; until then a new client may be refused.
            served = co_await healthz_ok(server->local_endpoint());
            if (served) break;
            asio::steady_timer pause(co_await asio::this_coro::executor, std::chrono::milliseconds(20));
            co_await pause.async_wait(asio::use_awaitable);
        }
        EXPECT_TRUE(served);
    });
}

TEST_F(HttpServerTest, IdleConnectionTimesOut) {
    start_server(HttpOptions{.timeout = std::chrono::seconds(1)});
    run([](HttpServer* server) -> asio::awaitable<void> {
        auto stream = co_await connect(server->local_endpoint());
        const auto started = std::chrono::steady_clock::now();
        EXPECT_TRUE(co_await closed_by_server(stream));
        const auto waited = std::chrono::steady_clock::now() - started;
        EXPECT_GE(waited, std::chrono::milliseconds(900));
        EXPECT_LT(waited, std::chrono::seconds(4));
    });
}

TEST_F(HttpServerTest, StopClosesOpenConnectionsAndRunReturns) {
    start_server();
    run([](HttpServer* server) -> asio::awaitable<void> {
        auto stream = co_await connect(server->local_endpoint());
        beast::flat_buffer buffer;
        EXPECT_EQ((co_await exchange(stream, buffer, http::verb::get, "/healthz")).status, 200u);
        const auto endpoint = server->local_endpoint();
        server->stop();
        // The idle keep-alive connection is closed, not left to its 30 s timeout.
        const auto started = std::chrono::steady_clock::now();
        EXPECT_TRUE(co_await closed_by_server(stream));
        EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
        // And nothing listens any more.
        beast::tcp_stream late(co_await asio::this_coro::executor);
        late.expires_after(kClientTimeout);
        const auto [ec] = co_await late.async_connect(endpoint, kTuple);
        EXPECT_TRUE(ec);
    });
}

TEST(HttpServer, ListenErrorNamesAddress) {
    asio::io_context io;
    HttpServer first(io, std::vector<std::weak_ptr<prometheus::Collectable>>{}, {});
    ASSERT_TRUE(first.listen(tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)).has_value());
    HttpServer second(io, std::vector<std::weak_ptr<prometheus::Collectable>>{}, {});
    const auto taken = second.listen(first.local_endpoint());
    ASSERT_FALSE(taken.has_value());
    const std::string expected = "127.0.0.1:" + std::to_string(first.local_endpoint().port());
    EXPECT_NE(taken.error().message.find(expected), std::string::npos) << taken.error().message;
}

bool have_promtool() { return std::system("command -v promtool > /dev/null 2>&1") == 0; }

TEST_F(HttpServerTest, PromtoolAcceptsScrape) {
    if (!have_promtool()) GTEST_SKIP() << "promtool not on PATH";
    prometheus::BuildCounter()
        .Name("headerd_test_events_total")
        .Help("Events seen by the test.")
        .Register(*registry_)
        .Add({{"kind", "a"}})
        .Increment(3);
    prometheus::BuildGauge().Name("headerd_test_level").Help("A level.").Register(*registry_).Add({}).Set(-2.5);
    auto& histogram = prometheus::BuildHistogram()
                          .Name("headerd_test_latency_seconds")
                          .Help("Latency of test operations.")
                          .Register(*registry_)
                          .Add({{"op", "read"}}, prometheus::Histogram::BucketBoundaries{0.001, 0.01, 0.1, 1});
    histogram.Observe(0.005);
    histogram.Observe(0.5);
    register_build_info(*registry_, "v0.0.0-test", "0123abc");
    auto process = std::make_shared<ProcessCollector>();
    start_server({}, {process});

    std::string body;
    run(scrape_into(server_.get(), &body));
    for (const char* name : {"headerd_test_events_total", "headerd_test_level", "headerd_test_latency_seconds_bucket",
                             "headerd_build_info", "process_cpu_seconds_total", "process_start_time_seconds"}) {
        EXPECT_NE(body.find(name), std::string::npos) << name;
    }

    const auto dir = std::filesystem::temp_directory_path();
    const auto stem = "headerd-scrape-" + std::to_string(::getpid());
    const auto input = dir / (stem + ".txt");
    const auto output = dir / (stem + ".out");
    std::ofstream(input) << body;
    const std::string command = "promtool check metrics < '" + input.string() + "' > '" + output.string() + "' 2>&1";
    const int status = std::system(command.c_str());
    std::stringstream report;
    report << std::ifstream(output).rdbuf();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << report.str() << "\n" << body;
    std::filesystem::remove(input);
    std::filesystem::remove(output);
}

// detail::answer_bytes is the server's parsing and handling without a socket (what http_fuzz
// drives): a real Prometheus 2.42 scrape request (captured from Debian 12's prometheus), then a
// pipelined HEAD and a closing GET, then a header over the limit.
TEST(HttpAnswerBytes, AnswersAsTheServerDoes) {
    auto registry = std::make_shared<prometheus::Registry>();
    prometheus::BuildCounter().Name("headerd_test_events_total").Help("h").Register(*registry).Add({}).Increment();
    const auto health = [] { return Health{true, "ok\n"}; };
    const std::string scrape =
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:16060\r\nUser-Agent: Prometheus/2.42.0+ds\r\n"
        "Accept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
        "text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\nAccept-Encoding: gzip\r\n"
        "X-Prometheus-Scrape-Timeout-Seconds: 1\r\n\r\n";
    auto replies = detail::answer_bytes(scrape, {registry}, health);
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_TRUE(replies[0].starts_with("HTTP/1.1 200 OK\r\n")) << replies[0];
    EXPECT_NE(replies[0].find(kPrometheusTextContentType), std::string::npos) << replies[0];
    EXPECT_NE(replies[0].find("headerd_test_events_total 1"), std::string::npos) << replies[0];

    replies = detail::answer_bytes(
        "HEAD /healthz HTTP/1.1\r\nHost: a\r\n\r\nGET /healthz HTTP/1.1\r\nConnection: close\r\n\r\nGET /", {}, health);
    ASSERT_EQ(replies.size(), 2u);
    EXPECT_TRUE(replies[0].starts_with("HTTP/1.1 200 OK\r\n")) << replies[0];
    EXPECT_NE(replies[0].find("Content-Length: 3\r\n"), std::string::npos) << replies[0];
    EXPECT_TRUE(replies[0].ends_with("\r\n\r\n")) << replies[0];  // no body
    EXPECT_TRUE(replies[1].ends_with("\r\n\r\nok\n")) << replies[1];
    EXPECT_NE(replies[1].find("Connection: close"), std::string::npos) << replies[1];

    replies = detail::answer_bytes("GET /metrics HTTP/1.1\r\nX: " + std::string(9000, 'a') + "\r\n\r\n", {}, health);
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_TRUE(replies[0].starts_with("HTTP/1.1 431 ")) << replies[0];
    replies = detail::answer_bytes("BREW /coffee HTCPCP/1.0\r\n\r\n", {}, health);
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_TRUE(replies[0].starts_with("HTTP/1.1 400 ")) << replies[0];
    EXPECT_TRUE(detail::answer_bytes("", {}, health).empty());
}

}  // namespace
}  // namespace headerd::metrics
