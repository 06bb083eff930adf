// libFuzzer target for the HTTP request parsing and handling of /metrics and /healthz
// (metrics/http_server.cpp on Boost.Beast): the input is what a client sends on one connection
// before closing its sending side; metrics::detail::answer_bytes runs the server's own parser
// limits, request handling and error replies over it, without a socket. The registry scraped holds
// a counter and a gauge with labels, as headerd's do.
//
// It asserts: every reply is a well-formed HTTP/1.x response (it parses back) with one of the
// statuses the server gives (200, 400, 404, 405, 431, 500, 503) and a Content-Length; its body is
// that long, or empty (a HEAD reply); a 400 or 431 is the last reply and closes the connection; a
// reply that closes is the last one; there are no more replies than the input could hold requests
// (each at least 16 bytes).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <boost/beast/core/buffer_traits.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>

#include "metrics/http_server.hpp"

namespace http = boost::beast::http;

namespace {

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "http_fuzz: %s\n", what.c_str());
    std::abort();
}

std::shared_ptr<prometheus::Registry> registry() {
    static const std::shared_ptr<prometheus::Registry> r = [] {
        auto reg = std::make_shared<prometheus::Registry>();
        prometheus::BuildCounter().Name("headerd_fuzz_requests_total").Help("h").Register(*reg).Add({}).Increment(3);
        prometheus::BuildGauge().Name("headerd_fuzz_peers").Help("h").Register(*reg).Add({{"kind", "in"}}).Set(2);
        return reg;
    }();
    return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    const auto replies = headerd::metrics::detail::answer_bytes(in, {registry()}, [] {
        return headerd::metrics::Health{true, "ok\n"};
    });
    if (replies.size() > size / 16 + 1) fail("more replies than requests");
    for (size_t i = 0; i < replies.size(); ++i) {
        const std::string& reply = replies[i];
        http::response_parser<http::empty_body> parser;
        parser.skip(true);  // read the header alone; the body is checked by hand
        boost::system::error_code ec;
        const size_t header = parser.put(boost::asio::buffer(reply), ec);
        if (ec || !parser.is_header_done()) fail("a reply that does not parse: " + reply);
        const auto& res = parser.get();
        const unsigned status = res.result_int();
        if (status != 200 && status != 400 && status != 404 && status != 405 && status != 431 && status != 500 &&
            status != 503) {
            fail("an unexpected status: " + reply);
        }
        const auto length = res.find(http::field::content_length);
        if (length == res.end()) fail("a reply without Content-Length: " + reply);
        const size_t body = reply.size() - header;
        if (body != 0 && std::to_string(body) != length->value()) fail("a body of another length: " + reply);
        const bool last = i + 1 == replies.size();
        if ((status == 400 || status == 431) && (!last || res.keep_alive())) fail("an error reply that goes on");
        if (!res.keep_alive() && !last) fail("a reply after one that closed");
    }
    return 0;
}
