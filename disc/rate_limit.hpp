#pragma once

// Rate limits for the discovery requests that cost a signature check (and often a signed answer):
// a token bucket per source IP and one for all sources together, consulted before the packet's
// public key is recovered. Junk from one address, or a flood from many forged ones, then costs a
// hash and a map look-up per datagram instead of a secp256k1 recovery and a signing, so the
// serving threads keep their CPU (docs/discovery.md, "Flood limits").
//
// Memory is bounded: at most max_sources buckets; when a new address finds the map full, the
// buckets that have refilled (their sources are idle) are dropped, at most once a second (a scan of
// the map per forged address would cost more than it saves); while the map stays full, a new
// address is counted against the global bucket alone.
//
// Not thread-safe: the discovery service calls it from its one io thread.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include <boost/asio/ip/address.hpp>

namespace headerd::disc {

struct RateLimitConfig {
    double per_ip_rate = 100;    // requests per second per source address; 0 turns the limits off
    double per_ip_burst = 400;   // a fresh address may send this many at once
    double global_rate = 2000;   // requests per second from all addresses together
    double global_burst = 4000;  //
    size_t max_sources = 10000;  // buckets kept at once
};

class RateLimiter {
  public:
    using Clock = std::chrono::steady_clock;

    explicit RateLimiter(RateLimitConfig config) : config_(config) {}

    // Takes one token for a request from `ip` at `now`; false when its bucket or the global one is
    // empty (the request is dropped unread).
    bool allow(const boost::asio::ip::address& ip, Clock::time_point now);

    size_t sources() const noexcept { return buckets_.size(); }
    const RateLimitConfig& config() const noexcept { return config_; }

  private:
    struct Bucket {
        double tokens;
        Clock::time_point updated;
    };
    // Refills b for the time since its last update, at `rate` up to `burst`.
    static void refill(Bucket& b, double rate, double burst, Clock::time_point now);
    void make_room(Clock::time_point now);

    RateLimitConfig config_;
    Bucket global_{config_.global_burst, Clock::time_point{}};
    Clock::time_point last_cleanup_{};
    std::unordered_map<boost::asio::ip::address, Bucket> buckets_;
};

}  // namespace headerd::disc
