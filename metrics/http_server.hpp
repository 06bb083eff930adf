#pragma once

// The operator's HTTP endpoint: GET/HEAD /metrics (Prometheus text format 0.0.4) and /healthz; or,
// given a handler of its own, any small HTTP service (serve --rpc's JSON-RPC, rpc/rpc_server.hpp).
// It runs on the node's own io_context beside the p2p server, one coroutine per connection, so it
// adds no thread; a scrape therefore runs the collectors on that thread, which is cheap (the
// registry's atomics and a few procfs reads). Every read and write has a deadline, request
// headers are capped and request bodies refused (or capped, for a handler that takes them), and connections beyond a
// cap are closed at once, so a misbehaving client costs a bounded amount of memory and time and never stops the server.
//
// Thread-safety: every member must be called on the thread that runs the io_context (or while
// it is not running). The collectables themselves may be updated from any thread.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <prometheus/collectable.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "core/result.hpp"

namespace headerd::metrics {

namespace detail {
struct HttpServerState;
}  // namespace detail

// What /healthz answers: 200 with `body` when ok, else 503 with `body`.
struct Health {
    bool ok{true};
    std::string body;
};

struct HttpOptions {
    // Open connections; one more is closed as soon as it is accepted. Prometheus keeps one.
    size_t max_connections{64};
    // Deadline for reading one request (also the keep-alive idle time) and for writing one reply.
    std::chrono::seconds timeout{30};
    // Largest request body taken; a longer one is answered 413. 0: every body is refused (400), as
    // /metrics and /healthz take none.
    size_t max_body_bytes{0};
    // What the server is, in its log lines and errors ("metrics", "JSON-RPC").
    std::string name{"metrics"};
};

// One request as a handler sees it: views into the parsed request, valid during the call.
struct HttpRequest {
    std::string_view method;  // "GET", "POST", ...
    std::string_view target;  // as sent: path and query
    std::string_view host;    // the Host header, empty when absent
    std::string_view content_type;
    std::string_view body;
};

// What a handler answers. The server adds Content-Length and Connection, and drops the body of a
// reply to HEAD.
struct HttpResponse {
    unsigned status{200};
    std::string content_type{"text/plain; charset=utf-8"};
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;  // more header fields, e.g. Allow
};

// Called on the io_context's thread for every request; a throw is answered 500.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// The handler of the metrics endpoint: /metrics collects `collectables` in order (expired ones
// skipped; their family names must be distinct), /healthz calls `health` (an empty function:
// always healthy); GET and HEAD only.
HttpHandler metrics_handler(std::vector<std::weak_ptr<prometheus::Collectable>> collectables,
                            std::function<Health()> health);

// Content-Type of /metrics replies.
inline constexpr std::string_view kPrometheusTextContentType = "text/plain; version=0.0.4; charset=utf-8";

namespace detail {
// What a connection of the server answers a client that sends `bytes` and then closes its sending
// side: each reply as written on the wire, in order. The session's own parser limits, request
// handling and error replies run over an in-memory stream instead of a socket (for the fuzz target
// and tests); `collectables` and `health` as for HttpServer.
std::vector<std::string> answer_bytes(std::string_view bytes,
                                      std::vector<std::weak_ptr<prometheus::Collectable>> collectables,
                                      std::function<Health()> health);
// The same for any handler and options.
std::vector<std::string> answer_bytes(std::string_view bytes, HttpHandler handler, HttpOptions options);
}  // namespace detail

class HttpServer {
  public:
    // `collectables` are collected, in order, on every scrape; expired ones are skipped. Their
    // metric family names must be distinct. `health` is called for every /healthz request; an empty
    // function means always healthy.
    HttpServer(boost::asio::io_context& io, std::vector<std::weak_ptr<prometheus::Collectable>> collectables,
               std::function<Health()> health, HttpOptions options = {});
    // A server that answers every request with `handler`.
    HttpServer(boost::asio::io_context& io, HttpHandler handler, HttpOptions options = {});
    // Stops the server. Coroutines still pending in the io_context own what they use, so they
    // may finish after this object is gone.
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Binds and listens; the error names the address.
    Outcome<void> listen(const boost::asio::ip::tcp::endpoint& endpoint);
    // The bound address (the real port when listen() was given port 0); empty when not listening.
    boost::asio::ip::tcp::endpoint local_endpoint() const;
    // Starts accepting. REQUIRES: listen() succeeded.
    void start();
    // Closes the acceptor and every open connection (a reply being written is cut off), so the
    // io_context runs out of this server's work. Idempotent; the server cannot be restarted.
    void stop();

  private:
    // Shared with the accept and connection coroutines, which keep it alive until they end.
    std::shared_ptr<detail::HttpServerState> state_;
};

}  // namespace headerd::metrics
