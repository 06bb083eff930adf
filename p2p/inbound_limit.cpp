#include "p2p/inbound_limit.hpp"

#include <algorithm>
#include <charconv>
#include <span>

#include <fmt/format.h>
#include <prometheus/counter.h>
#include <prometheus/registry.h>

namespace headerd::p2p {
namespace {

namespace ip = boost::asio::ip;

// Every address as 16 bytes: IPv4 as the IPv4-mapped IPv6 address ::ffff:a.b.c.d, so that an
// IPv4 peer reaching a dual-stack socket and one reaching an IPv4 socket are the same peer.
std::array<uint8_t, 16> bytes_of(const ip::address& a) noexcept {
    if (a.is_v6()) return a.to_v6().to_bytes();
    std::array<uint8_t, 16> out{};
    out[10] = 0xff;
    out[11] = 0xff;
    const auto v4 = a.to_v4().to_bytes();
    std::copy(v4.begin(), v4.end(), out.begin() + 12);
    return out;
}

bool is_v4(const std::array<uint8_t, 16>& b) noexcept {
    for (size_t i = 0; i < 10; ++i) {
        if (b[i] != 0) return false;
    }
    return b[10] == 0xff && b[11] == 0xff;
}

void mask(std::array<uint8_t, 16>& b, unsigned bits) noexcept {
    for (size_t i = 0; i < b.size(); ++i) {
        const unsigned first = static_cast<unsigned>(i) * 8;
        if (first >= bits) {
            b[i] = 0;
        } else if (bits - first < 8) {
            b[i] = static_cast<uint8_t>(b[i] & (0xff << (8 - (bits - first))));
        }
    }
}

Outcome<IpPrefix> parse_prefix(std::string_view text) {
    const size_t slash = text.find('/');
    const std::string host(text.substr(0, slash));
    boost::system::error_code ec;
    const ip::address address = ip::make_address(host, ec);
    if (ec) return make_error(fmt::format("{}: not an IP address or CIDR range", text));
    IpPrefix p;
    p.bytes = bytes_of(address);
    const unsigned offset = address.is_v4() ? 96 : 0;
    const unsigned max = address.is_v4() ? 32 : 128;
    unsigned length = max;
    if (slash != std::string_view::npos) {
        const std::string_view digits = text.substr(slash + 1);
        const auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), length);
        if (digits.empty() || err != std::errc() || end != digits.data() + digits.size() || length > max) {
            return make_error(fmt::format("{}: the prefix length must be 0 to {}", text, max));
        }
    }
    p.bits = offset + length;
    mask(p.bytes, p.bits);
    return p;
}

// go-ethereum's netutil.AddrIsLAN: loopback, private (RFC 1918, RFC 4193) and link-local unicast.
constexpr std::string_view kLan[] = {"127.0.0.0/8",    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
                                     "169.254.0.0/16", "::1/128",    "fc00::/7",      "fe80::/10"};
constexpr std::string_view kLoopback[] = {"127.0.0.0/8", "::1/128"};

}  // namespace

bool IpPrefix::contains(const ip::address& a) const noexcept {
    auto b = bytes_of(a);
    mask(b, bits);
    return b == bytes;
}

Outcome<std::vector<IpPrefix>> parse_ip_prefixes(std::string_view list) {
    std::vector<IpPrefix> out;
    size_t words = 0;
    while (!list.empty()) {
        const size_t comma = list.find(',');
        std::string_view item = list.substr(0, comma);
        list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        if (item.empty()) continue;
        ++words;
        if (item == "none") continue;
        if (item == "lan" || item == "loopback") {
            for (std::string_view p : item == "lan" ? std::span<const std::string_view>(kLan)
                                                    : std::span<const std::string_view>(kLoopback)) {
                out.push_back(*parse_prefix(p));
            }
            continue;
        }
        auto p = parse_prefix(item);
        if (!p) return p.error();
        out.push_back(*p);
    }
    if (words == 0) return make_error("an empty list: name ranges, lan, loopback or none");
    return out;
}

InboundLimits InboundLimits::defaults() {
    InboundLimits l;
    l.exempt = *parse_ip_prefixes("lan");
    return l;
}

std::string_view reject_label(InboundReject r) noexcept {
    switch (r) {
        case InboundReject::kThrottled:
            return "throttled";
        case InboundReject::kIpLimit:
            return "ip_limit";
        case InboundReject::kSubnetLimit:
            return "subnet_limit";
    }
    return "unknown";
}

InboundLimiter::InboundLimiter(InboundLimits limits) : limits_(std::move(limits)) {}

bool InboundLimiter::exempt(const ip::address& remote) const noexcept {
    for (const IpPrefix& p : limits_.exempt) {
        if (p.contains(remote)) return true;
    }
    return false;
}

InboundLimiter::Key InboundLimiter::ip_key(const ip::address& a) const noexcept {
    auto b = bytes_of(a);
    const unsigned bits = is_v4(b) ? 128 : 64;
    mask(b, bits);
    Key k{};
    std::copy(b.begin(), b.end(), k.begin());
    k[16] = static_cast<uint8_t>(bits);
    return k;
}

InboundLimiter::Key InboundLimiter::subnet_key(const ip::address& a) const noexcept {
    auto b = bytes_of(a);
    const unsigned bits = is_v4(b) ? 120 : 48;
    mask(b, bits);
    Key k{};
    std::copy(b.begin(), b.end(), k.begin());
    k[16] = static_cast<uint8_t>(bits);
    return k;
}

void InboundLimiter::expire(Clock::time_point now) {
    while (!expiry_.empty() && expiry_.front().first <= now) {
        recent_.erase(expiry_.front().second);
        expiry_.pop_front();
    }
}

std::optional<InboundReject> InboundLimiter::admit(const ip::address& remote, Clock::time_point now) {
    if (exempt(remote)) return std::nullopt;
    const Key ip = ip_key(remote);
    const Key subnet = subnet_key(remote);
    const bool throttle = limits_.throttle_window > Clock::duration::zero() && limits_.throttle_burst > 0;
    std::lock_guard lock(mutex_);
    if (throttle) {
        expire(now);
        if (auto it = recent_.find(ip); it != recent_.end() && it->second.attempts >= limits_.throttle_burst) {
            return InboundReject::kThrottled;
        }
    }
    if (limits_.max_per_ip > 0) {
        if (auto it = per_ip_.find(ip); it != per_ip_.end() && it->second >= limits_.max_per_ip) {
            return InboundReject::kIpLimit;
        }
    }
    if (limits_.max_per_subnet > 0) {
        if (auto it = per_subnet_.find(subnet); it != per_subnet_.end() && it->second >= limits_.max_per_subnet) {
            return InboundReject::kSubnetLimit;
        }
    }
    // Admitted: counted, and remembered by the throttle (rejected attempts are not, as in geth: a
    // peer that keeps trying is let in again once its window has passed).
    ++per_ip_[ip];
    ++per_subnet_[subnet];
    if (throttle) {
        auto [it, fresh] = recent_.try_emplace(ip, Recent{now + limits_.throttle_window, 0});
        ++it->second.attempts;
        if (fresh) {
            expiry_.emplace_back(it->second.until, ip);
            if (expiry_.size() > limits_.max_history) {
                recent_.erase(expiry_.front().second);
                expiry_.pop_front();
            }
        }
    }
    return std::nullopt;
}

void InboundLimiter::release(const ip::address& remote) {
    if (exempt(remote)) return;
    const Key ip = ip_key(remote);
    const Key subnet = subnet_key(remote);
    std::lock_guard lock(mutex_);
    if (auto it = per_ip_.find(ip); it != per_ip_.end() && --it->second == 0) per_ip_.erase(it);
    if (auto it = per_subnet_.find(subnet); it != per_subnet_.end() && --it->second == 0) per_subnet_.erase(it);
}

size_t InboundLimiter::tracked_addresses() const {
    std::lock_guard lock(mutex_);
    return per_ip_.size();
}

size_t InboundLimiter::history_size() const {
    std::lock_guard lock(mutex_);
    return recent_.size();
}

InboundMetrics::InboundMetrics(prometheus::Registry& registry) {
    auto& family = prometheus::BuildCounter()
                       .Name("headerd_p2p_inbound_rejected_total")
                       .Help("Inbound connections closed by the acceptor before the handshake, by reason.")
                       .Register(registry);
    for (size_t r = 0; r < kInboundRejectReasons; ++r) {
        rejected_[r] = &family.Add({{"reason", std::string(reject_label(static_cast<InboundReject>(r)))}});
    }
}

}  // namespace headerd::p2p
