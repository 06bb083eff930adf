#include "metrics/http_server.hpp"
#include "core/awaitable.hpp"

#include <algorithm>
#include <array>
#include <exception>
#include <optional>
#include <sstream>
#include <string_view>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>
#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

namespace headerd::metrics {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

using Clock = std::chrono::steady_clock;

// A scrape or probe request is a few hundred bytes; 8 KiB is what common servers allow per header.
constexpr uint32_t kMaxHeaderBytes = 8 * 1024;
// Holds one header at the limit plus pipelined bytes; a connection's buffer never grows past it.
constexpr size_t kMaxBufferedBytes = 16 * 1024;
// Accept fails mostly when the process is out of descriptors: retrying at once would spin.
constexpr auto kAcceptBackoff = std::chrono::milliseconds(100);
constexpr auto kWarningInterval = std::chrono::seconds(10);
// Lingering close after an error reply: how long and how much to drain (see linger()).
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr size_t kMaxLingerBytes = size_t{1} << 20;

using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

std::string where(const tcp::endpoint& endpoint) {
    const auto address = endpoint.address();
    return address.is_v6() ? fmt::format("[{}]:{}", address.to_string(), endpoint.port())
                           : fmt::format("{}:{}", address.to_string(), endpoint.port());
}

// At most one warning per interval, so a failure that repeats on every accept or scrape cannot
// flood the log.
bool should_warn(Clock::time_point& last) {
    const auto now = Clock::now();
    if (now - last < kWarningInterval && last != Clock::time_point{}) return false;
    last = now;
    return true;
}

constexpr const char* kPlainText = "text/plain; charset=utf-8";

Response text_response(http::status status, unsigned version, std::string body) {
    Response res{status, version};
    res.set(http::field::content_type, kPlainText);
    res.body() = std::move(body);
    return res;
}

}  // namespace

namespace detail {

struct HttpServerState {
    HttpServerState(asio::io_context& io_context, HttpHandler request_handler, HttpOptions opts)
        : io(io_context), handler(std::move(request_handler)), options(std::move(opts)), acceptor(io_context) {}

    asio::io_context& io;
    const HttpHandler handler;
    const HttpOptions options;
    tcp::acceptor acceptor;
    std::unordered_set<std::shared_ptr<beast::tcp_stream>> connections;
    Clock::time_point last_accept_warning{};
    Clock::time_point last_handler_warning{};
    bool started{false};
    bool stopping{false};
};

}  // namespace detail

namespace {

using State = detail::HttpServerState;

std::string scrape(const std::vector<std::weak_ptr<prometheus::Collectable>>& collectables) {
    std::vector<prometheus::MetricFamily> families;
    for (const auto& weak : collectables) {
        const auto collectable = weak.lock();
        if (!collectable) continue;
        auto collected = collectable->Collect();
        families.insert(families.end(), std::make_move_iterator(collected.begin()),
                        std::make_move_iterator(collected.end()));
    }
    return prometheus::TextSerializer().Serialize(families);
}

Response respond(State& s, const Request& req) {
    const auto field = [&req](http::field f) -> std::string_view {
        const auto it = req.find(f);
        return it == req.end() ? std::string_view{} : std::string_view(it->value());
    };
    const HttpRequest view{req.method_string(), req.target(), field(http::field::host),
                           field(http::field::content_type), req.body()};
    Response res;
    // Handlers (and the collectors and health checks behind the metrics handler) are other people's
    // code: a throw is a 500 for this request, not the end of the connection.
    try {
        HttpResponse answer = s.handler(view);
        res = text_response(static_cast<http::status>(answer.status), req.version(), std::move(answer.body));
        res.set(http::field::content_type, answer.content_type);
        for (const auto& [name, value] : answer.headers) res.set(name, value);
    } catch (const std::exception& e) {
        if (should_warn(s.last_handler_warning)) {
            const std::string_view target = req.target();
            spdlog::warn("HTTP request failed                      server={} path={} err=\"{}\"", s.options.name,
                         target.substr(0, target.find('?')), e.what());
        }
        res = text_response(http::status::internal_server_error, req.version(), "internal error\n");
    }
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    // A HEAD reply carries the Content-Length of the GET reply but no body.
    if (req.method() == http::verb::head) res.body().clear();
    return res;
}

// The reply to a request that could not be parsed, or nothing when the connection just ended
// (closed, reset, timed out or cancelled). With bodies refused (max_body_bytes 0) a body is a bad
// request; over a limit that takes bodies, 413.
std::optional<Response> reply_to_read_error(const boost::system::error_code& ec, size_t max_body_bytes) {
    if (ec.category() != http::make_error_code(http::error::bad_target).category()) return std::nullopt;
    if (ec == http::error::end_of_stream || ec == http::error::partial_message) return std::nullopt;
    std::optional<Response> reply;
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
        reply = text_response(http::status::request_header_fields_too_large, 11, "request header too large\n");
    } else if (ec == http::error::body_limit && max_body_bytes > 0) {
        reply = text_response(http::status::payload_too_large, 11,
                              fmt::format("request body larger than {} bytes\n", max_body_bytes));
    } else {
        reply = text_response(http::status::bad_request, 11, "bad request\n");
    }
    reply->keep_alive(false);
    reply->prepare_payload();
    return reply;
}

// Every request of a connection is read by a fresh parser with these limits, into a buffer made
// by request_buffer().
using RequestParser = http::request_parser<http::string_body>;
void limit(RequestParser& parser, const HttpOptions& options) {
    parser.header_limit(kMaxHeaderBytes);
    parser.body_limit(options.max_body_bytes);
}
beast::flat_buffer request_buffer() { return beast::flat_buffer(kMaxBufferedBytes); }

void close(beast::tcp_stream& stream) {
    boost::system::error_code ignored;
    // Shutdown sends FIN after the reply, so the client reads the reply before it sees the close.
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream.close();
}

// After an error reply the client may still be sending (the rest of an oversized header, a body).
// Closing with unread bytes makes the kernel answer with RST, which can destroy the reply before the
// client reads it; so, like nginx's lingering close, stop sending and drain for a bounded time and
// amount first.
asio::awaitable<void> linger(std::shared_ptr<beast::tcp_stream> stream, std::chrono::seconds timeout) {
    boost::system::error_code ignored;
    stream->socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream->expires_after(std::min<Clock::duration>(timeout, kLingerTime));
    std::array<char, 4096> scratch;
    size_t drained = 0;
    while (drained < kMaxLingerBytes) {
        const auto [ec, n] = co_await stream->async_read_some(asio::buffer(scratch), kTuple);
        if (ec) break;
        drained += n;
    }
}

asio::awaitable<void> run_session(std::shared_ptr<State> s, std::shared_ptr<beast::tcp_stream> stream) {
    beast::flat_buffer buffer = request_buffer();
    while (!s->stopping) {
        RequestParser parser;
        limit(parser, s->options);
        stream->expires_after(s->options.timeout);
        const auto [read_ec, read_n] = co_await http::async_read(*stream, buffer, parser, kTuple);
        if (s->stopping) break;
        if (read_ec) {
            if (auto reply = reply_to_read_error(read_ec, s->options.max_body_bytes)) {
                stream->expires_after(s->options.timeout);
                const auto [write_ec, write_n] = co_await http::async_write(*stream, *reply, kTuple);
                if (!write_ec && !s->stopping) co_await linger(stream, s->options.timeout);
            }
            break;
        }
        Response res = respond(*s, parser.get());
        const bool keep_alive = res.keep_alive();
        stream->expires_after(s->options.timeout);
        const auto [write_ec, write_n] = co_await http::async_write(*stream, res, kTuple);
        if (write_ec || !keep_alive) break;
    }
    close(*stream);
}

asio::awaitable<void> accept_loop(std::shared_ptr<State> s) {
    while (!s->stopping && s->acceptor.is_open()) {
        auto [ec, socket] = co_await s->acceptor.async_accept(kTuple);
        if (s->stopping) break;
        if (ec) {
            if (should_warn(s->last_accept_warning)) {
                spdlog::warn("HTTP accept failed, backing off          server={} err=\"{}\"", s->options.name,
                             ec.message());
            }
            asio::steady_timer backoff(s->io, kAcceptBackoff);
            co_await backoff.async_wait(kTuple);
            continue;
        }
        if (s->connections.size() >= s->options.max_connections) {
            boost::system::error_code ignored;
            socket.close(ignored);
            continue;
        }
        auto stream = std::make_shared<beast::tcp_stream>(std::move(socket));
        s->connections.insert(stream);
        asio::co_spawn(s->io, run_session(s, stream), [s, stream](std::exception_ptr e) {
            s->connections.erase(stream);
            if (!e) return;
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                // One client's failure: the stream is closed by its destructor, the server goes on.
                spdlog::debug("HTTP connection failed                   server={} err=\"{}\"", s->options.name,
                              ex.what());
            }
        });
    }
}

// A SyncReadStream over bytes already received; then end of stream, as when the client shuts down
// its sending side.
class BytesStream {
  public:
    explicit BytesStream(std::string_view bytes) : rest_(bytes) {}
    template <class MutableBuffers>
    size_t read_some(const MutableBuffers& buffers, boost::system::error_code& ec) {
        ec = {};
        if (rest_.empty()) {
            ec = asio::error::eof;
            return 0;
        }
        const size_t n = asio::buffer_copy(buffers, asio::buffer(rest_.data(), rest_.size()));
        rest_.remove_prefix(n);
        return n;
    }
    template <class MutableBuffers>
    size_t read_some(const MutableBuffers& buffers) {
        boost::system::error_code ec;
        const size_t n = read_some(buffers, ec);
        if (ec) throw boost::system::system_error(ec);
        return n;
    }

  private:
    std::string_view rest_;
};

template <class Message>
std::string wire(const Message& m) {
    std::ostringstream out;
    out << m;
    return std::move(out).str();
}

}  // namespace

namespace detail {

std::vector<std::string> answer_bytes(std::string_view bytes, HttpHandler handler, HttpOptions options) {
    asio::io_context io;
    State s(io, std::move(handler), std::move(options));
    BytesStream stream(bytes);
    beast::flat_buffer buffer = request_buffer();
    std::vector<std::string> replies;
    for (;;) {
        RequestParser parser;
        limit(parser, s.options);
        boost::system::error_code ec;
        http::read(stream, buffer, parser, ec);
        if (ec) {
            if (auto reply = reply_to_read_error(ec, s.options.max_body_bytes)) replies.push_back(wire(*reply));
            break;
        }
        const Response res = respond(s, parser.get());
        replies.push_back(wire(res));
        if (!res.keep_alive()) break;
    }
    return replies;
}

std::vector<std::string> answer_bytes(std::string_view bytes,
                                      std::vector<std::weak_ptr<prometheus::Collectable>> collectables,
                                      std::function<Health()> health) {
    return answer_bytes(bytes, metrics_handler(std::move(collectables), std::move(health)), HttpOptions{});
}

}  // namespace detail

HttpHandler metrics_handler(std::vector<std::weak_ptr<prometheus::Collectable>> collectables,
                            std::function<Health()> health) {
    return [collectables = std::move(collectables), health = std::move(health)](const HttpRequest& req) {
        const std::string_view path = req.target.substr(0, req.target.find('?'));
        const bool is_metrics = path == "/metrics";
        if (!is_metrics && path != "/healthz") return HttpResponse{404, kPlainText, "not found\n", {}};
        if (req.method != "GET" && req.method != "HEAD") {
            return HttpResponse{405, kPlainText, "method not allowed\n", {{"Allow", "GET, HEAD"}}};
        }
        if (is_metrics) return HttpResponse{200, std::string(kPrometheusTextContentType), scrape(collectables), {}};
        Health h = health ? health() : Health{true, "ok\n"};
        return HttpResponse{h.ok ? 200u : 503u, kPlainText, std::move(h.body), {}};
    };
}

HttpServer::HttpServer(asio::io_context& io, std::vector<std::weak_ptr<prometheus::Collectable>> collectables,
                       std::function<Health()> health, HttpOptions options)
    : HttpServer(io, metrics_handler(std::move(collectables), std::move(health)), std::move(options)) {}

HttpServer::HttpServer(asio::io_context& io, HttpHandler handler, HttpOptions options)
    : state_(std::make_shared<State>(io, std::move(handler), std::move(options))) {}

HttpServer::~HttpServer() { stop(); }

Outcome<void> HttpServer::listen(const tcp::endpoint& endpoint) {
    auto& acceptor = state_->acceptor;
    boost::system::error_code ec;
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor.bind(endpoint, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
        boost::system::error_code ignored;
        acceptor.close(ignored);
        return make_error(
            fmt::format("cannot listen for {} on {}: {}", state_->options.name, where(endpoint), ec.message()));
    }
    return {};
}

tcp::endpoint HttpServer::local_endpoint() const {
    boost::system::error_code ec;
    return state_->acceptor.local_endpoint(ec);
}

void HttpServer::start() {
    auto& s = *state_;
    if (s.started || s.stopping || !s.acceptor.is_open()) return;
    s.started = true;
    asio::co_spawn(s.io, accept_loop(state_), [name = s.options.name](std::exception_ptr e) {
        if (!e) return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            spdlog::error("HTTP accept loop failed                   server={} err=\"{}\"", name, ex.what());
        }
    });
}

void HttpServer::stop() {
    auto& s = *state_;
    if (s.stopping) return;
    s.stopping = true;
    boost::system::error_code ignored;
    s.acceptor.close(ignored);
    // Wakes every session from its read or write with operation_aborted; each then ends.
    for (const auto& stream : s.connections) stream->close();
}

}  // namespace headerd::metrics
