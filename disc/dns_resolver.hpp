#pragma once

// TXT lookups over DNS for DnsClient, through glibc's libresolv (res_nquery): UDP to one server the
// user named, or, when none is named, to the servers of the system configuration
// (/etc/resolv.conf). Who may use the latter is a policy of the caller: headerd builds a
// resolver only for an enrtree:// URL the user gave, never by default (docs/discovery.md, "DNS
// discovery"). Queries carry EDNS0, so an entry fits one UDP answer; an answer with the truncation
// bit set is asked again over TCP, to the same server, as res_nquery does.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include "core/bytes.hpp"
#include "core/result.hpp"
#include "disc/dns_client.hpp"

namespace headerd::disc {

enum class ResolveError {
    kNotFound = 1,     // NXDOMAIN: no such name
    kNoData,           // the name exists but has no TXT record
    kTryAgain,         // no answer in time, or SERVFAIL or REFUSED from every server: may work later
    kRefused,          // the server refused or could not parse the query
    kMalformedAnswer,  // an answer that does not parse as DNS, or a TXT record that is not strings
    kBadName,          // a name res_nquery cannot encode (too long)
    kBadServer,        // the server is not IPv4-address:port
    kInit,             // res_ninit failed
};

const std::error_category& resolve_category() noexcept;
std::error_code make_error_code(ResolveError e) noexcept;

struct UdpTxtResolverConfig {
    // "IP:port" of the one server to ask (IPv4), e.g. "127.0.0.1:5353"; unset: the system's.
    std::optional<std::string> server;
    // Per try, and tries per server: res_state's retrans (whole seconds, at least 1) and retry.
    std::chrono::seconds timeout{5};
    int attempts = 2;
};

class UdpTxtResolver final : public TxtResolver {
  public:
    // kBadServer for a server that is not IPv4-address:port, kInit when the resolver state cannot
    // be set up.
    static Result<std::unique_ptr<UdpTxtResolver>> create(const UdpTxtResolverConfig& config);
    ~UdpTxtResolver() override;

    Result<std::vector<std::string>> lookup_txt(std::string_view name) override;

  private:
    struct State;
    explicit UdpTxtResolver(std::unique_ptr<State> state);
    std::unique_ptr<State> state_;
};

// The TXT records of a DNS answer message, each record's character-strings joined (sans-I/O, for
// tests and fuzzing). Records of other types in the answer section are skipped.
Result<std::vector<std::string>> txt_records_of_answer(ByteView message) noexcept;

}  // namespace headerd::disc

template <>
struct std::is_error_code_enum<headerd::disc::ResolveError> : std::true_type {};
