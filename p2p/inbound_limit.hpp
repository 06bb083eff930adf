#pragma once

// Who may open an inbound TCP connection, decided by the acceptor before any byte is read:
// at most `max_per_ip` connections (in the handshake or established) from one address, at most
// `max_per_subnet` from one subnet, and a reconnect throttle of `throttle_burst` accepted attempts
// per address per `throttle_window` (go-ethereum's is one per 30 s; docs/wire.md, "Inbound
// limits"). Addresses in `exempt` (the LAN by default, as geth exempts it from its throttle) pass
// every check and are not counted.
//
// An "address" is an IPv4 address, or the /64 of an IPv6 address (one host's allocation); a
// "subnet" is its IPv4 /24 or IPv6 /48. IPv4-mapped IPv6 addresses count as IPv4.
//
// Sans I/O: the caller passes the time of every attempt. Memory is bounded: the connection counts
// hold only addresses with a connection open, and the throttle's history at most `max_history`
// addresses (the oldest is forgotten first, which lets that address in early; the other limits
// still hold). Thread-safe: admit() runs on the acceptor's thread, release() on any worker's.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "core/result.hpp"

namespace prometheus {
class Counter;
class Registry;
}  // namespace prometheus

namespace headerd::p2p {

// An address range: 16 bytes (IPv4 as ::ffff:a.b.c.d) and the number of leading bits that count.
struct IpPrefix {
    std::array<uint8_t, 16> bytes{};
    unsigned bits{0};

    bool contains(const boost::asio::ip::address& a) const noexcept;
};

// Parses a comma-separated list of CIDR ranges ("10.0.0.0/8", "fd00::/8"), bare addresses (a
// single host) and the words `lan` (loopback, private and link-local ranges: geth's
// netutil.AddrIsLAN), `loopback` (127.0.0.0/8 and ::1) and `none` (nothing).
Outcome<std::vector<IpPrefix>> parse_ip_prefixes(std::string_view list);

struct InboundLimits {
    // Connections from one address (IPv6: one /64); 0: no limit.
    size_t max_per_ip{4};
    // Connections from one IPv4 /24 or IPv6 /48; 0: no limit.
    size_t max_per_subnet{10};
    // Accepted connection attempts per address within throttle_window; a zero window turns the
    // throttle off.
    std::chrono::steady_clock::duration throttle_window{std::chrono::seconds(30)};
    size_t throttle_burst{3};
    // Addresses that pass every check uncounted; the default is parse_ip_prefixes("lan").
    std::vector<IpPrefix> exempt;
    // Addresses the throttle remembers at most.
    size_t max_history{16384};

    static InboundLimits defaults();
};

enum class InboundReject : uint8_t { kThrottled = 0, kIpLimit = 1, kSubnetLimit = 2 };
inline constexpr size_t kInboundRejectReasons = 3;
// Label values: "throttled", "ip_limit", "subnet_limit".
std::string_view reject_label(InboundReject r) noexcept;

class InboundLimiter {
  public:
    using Clock = std::chrono::steady_clock;

    explicit InboundLimiter(InboundLimits limits);

    // A connection from `remote` was accepted at `now`: nullopt lets it in (and counts it until
    // release()), otherwise the reason it must be closed at once.
    std::optional<InboundReject> admit(const boost::asio::ip::address& remote, Clock::time_point now);
    // A connection admit() let in has closed.
    void release(const boost::asio::ip::address& remote);

    bool exempt(const boost::asio::ip::address& remote) const noexcept;
    const InboundLimits& limits() const noexcept { return limits_; }
    // Addresses with a connection open / in the throttle's history (tests, memory bounds).
    size_t tracked_addresses() const;
    size_t history_size() const;

  private:
    // 16 address bytes masked to the key's prefix, then the prefix length.
    using Key = std::array<uint8_t, 17>;
    struct Recent {
        Clock::time_point until;
        size_t attempts{0};
    };

    Key ip_key(const boost::asio::ip::address& a) const noexcept;
    Key subnet_key(const boost::asio::ip::address& a) const noexcept;
    void expire(Clock::time_point now);

    const InboundLimits limits_;
    mutable std::mutex mutex_;
    std::map<Key, size_t> per_ip_;      // guarded by mutex_
    std::map<Key, size_t> per_subnet_;  // guarded by mutex_
    std::map<Key, Recent> recent_;      // guarded by mutex_
    // Throttle entries in the order they were made (so in expiry order): one per entry of recent_.
    std::deque<std::pair<Clock::time_point, Key>> expiry_;  // guarded by mutex_
};

// headerd_p2p_inbound_rejected_total{reason}: connections closed by the acceptor, by reason.
class InboundMetrics {
  public:
    explicit InboundMetrics(prometheus::Registry& registry);
    prometheus::Counter& rejected(InboundReject r) const noexcept { return *rejected_[static_cast<size_t>(r)]; }

  private:
    std::array<prometheus::Counter*, kInboundRejectReasons> rejected_{};
};

}  // namespace headerd::p2p
