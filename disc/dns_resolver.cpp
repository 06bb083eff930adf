#include "disc/dns_resolver.hpp"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>

namespace headerd::disc {
namespace {

class ResolveCategory final : public std::error_category {
  public:
    const char* name() const noexcept override { return "dns resolve"; }
    std::string message(int c) const override {
        switch (static_cast<ResolveError>(c)) {
            case ResolveError::kNotFound:
                return "no such name (NXDOMAIN)";
            case ResolveError::kNoData:
                return "no TXT record";
            case ResolveError::kTryAgain:
                return "no usable answer from the DNS server (timeout, SERVFAIL or REFUSED)";
            case ResolveError::kRefused:
                return "the DNS server refused the query";
            case ResolveError::kMalformedAnswer:
                return "malformed DNS answer";
            case ResolveError::kBadName:
                return "name too long for a DNS query";
            case ResolveError::kBadServer:
                return "DNS server is not IPv4-address:port";
            case ResolveError::kInit:
                return "cannot set up the resolver (res_ninit)";
        }
        return "unknown DNS resolve error";
    }
};

std::optional<sockaddr_in> parse_server(std::string_view server) noexcept {
    const size_t colon = server.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    const std::string host(server.substr(0, colon));
    const std::string_view port_text = server.substr(colon + 1);
    unsigned port = 0;
    const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc{} || end != port_text.data() + port_text.size() || port == 0 || port > 65535) {
        return std::nullopt;
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) return std::nullopt;
    return address;
}

}  // namespace

const std::error_category& resolve_category() noexcept {
    static const ResolveCategory category;
    return category;
}

std::error_code make_error_code(ResolveError e) noexcept { return {static_cast<int>(e), resolve_category()}; }

// res_state is a large struct that res_ninit fills and res_nclose releases; each resolver has its
// own, so two resolvers never share a server list.
struct UdpTxtResolver::State {
    struct __res_state res {};
    bool initialized = false;
    ~State() {
        if (initialized) res_nclose(&res);
    }
};

UdpTxtResolver::UdpTxtResolver(std::unique_ptr<State> state) : state_(std::move(state)) {}
UdpTxtResolver::~UdpTxtResolver() = default;

Result<std::unique_ptr<UdpTxtResolver>> UdpTxtResolver::create(const UdpTxtResolverConfig& config) {
    std::optional<sockaddr_in> server;
    if (config.server) {
        server = parse_server(*config.server);
        if (!server) return make_error_code(ResolveError::kBadServer);
    }
    auto state = std::make_unique<State>();
    if (res_ninit(&state->res) != 0) return make_error_code(ResolveError::kInit);
    state->initialized = true;
    // res_nquery asks for the name as given: no search domains appended (those belong to
    // res_nsearch, but clear them so nothing can add one).
    state->res.options &= ~static_cast<decltype(state->res.options)>(RES_DNSRCH | RES_DEFNAMES);
    // EDNS0 lets an entry of up to 512 characters come back in one UDP answer (above plain DNS's
    // 512-byte message) instead of truncated and asked again over TCP.
    state->res.options |= RES_USE_EDNS0;
    const auto seconds = std::clamp<std::chrono::seconds::rep>(config.timeout.count(), 1, 60);
    state->res.retrans = static_cast<int>(seconds);
    state->res.retry = std::clamp(config.attempts, 1, 5);
    if (server) {
        // Only the named server: the list read from resolv.conf is replaced, not extended, so no
        // query can reach another server. glibc notices the changed list on the next send.
        state->res.nscount = 1;
        state->res.nsaddr_list[0] = *server;
    }
    return std::unique_ptr<UdpTxtResolver>(new UdpTxtResolver(std::move(state)));
}

Result<std::vector<std::string>> UdpTxtResolver::lookup_txt(std::string_view name) {
    if (name.empty() || name.size() > 253) return make_error_code(ResolveError::kBadName);
    const std::string query(name);
    // Large enough for any answer over TCP (a 16-bit length), which a truncated UDP answer leads to.
    Bytes answer(std::numeric_limits<uint16_t>::max());
    const int n =
        res_nquery(&state_->res, query.c_str(), ns_c_in, ns_t_txt, answer.data(), static_cast<int>(answer.size()));
    if (n < 0) {
        switch (state_->res.res_h_errno) {
            case HOST_NOT_FOUND:
                return make_error_code(ResolveError::kNotFound);
            case NO_DATA:
                return make_error_code(ResolveError::kNoData);
            case NO_RECOVERY:
                return make_error_code(ResolveError::kRefused);
            default:
                return make_error_code(ResolveError::kTryAgain);
        }
    }
    answer.resize(std::min(answer.size(), static_cast<size_t>(n)));
    return txt_records_of_answer(answer);
}

Result<std::vector<std::string>> txt_records_of_answer(ByteView message) noexcept {
    if (message.size() > std::numeric_limits<uint16_t>::max()) return make_error_code(ResolveError::kMalformedAnswer);
    ns_msg msg;
    if (ns_initparse(message.data(), static_cast<int>(message.size()), &msg) != 0) {
        return make_error_code(ResolveError::kMalformedAnswer);
    }
    std::vector<std::string> out;
    const int count = ns_msg_count(msg, ns_s_an);
    for (int i = 0; i < count; ++i) {
        ns_rr rr;
        if (ns_parserr(&msg, ns_s_an, i, &rr) != 0) return make_error_code(ResolveError::kMalformedAnswer);
        if (ns_rr_type(rr) != ns_t_txt || ns_rr_class(rr) != ns_c_in) continue;
        // RDATA is one or more character-strings, each a length byte and that many bytes; a
        // record longer than 255 bytes is split into several, which make one text again.
        const ByteView rdata{ns_rr_rdata(rr), static_cast<size_t>(ns_rr_rdlen(rr))};
        std::string text;
        for (size_t at = 0; at < rdata.size();) {
            const size_t len = rdata[at];
            if (at + 1 + len > rdata.size()) return make_error_code(ResolveError::kMalformedAnswer);
            text.append(reinterpret_cast<const char*>(rdata.data() + at + 1), len);
            at += 1 + len;
        }
        out.push_back(std::move(text));
    }
    return out;
}

}  // namespace headerd::disc
