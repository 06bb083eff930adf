#include "disc/rate_limit.hpp"

#include <algorithm>
#include <iterator>

namespace headerd::disc {

void RateLimiter::refill(Bucket& b, double rate, double burst, Clock::time_point now) {
    if (now > b.updated) {
        const double seconds = std::chrono::duration<double>(now - b.updated).count();
        b.tokens = std::min(burst, b.tokens + seconds * rate);
        b.updated = now;
    }
}

void RateLimiter::make_room(Clock::time_point now) {
    if (last_cleanup_ != Clock::time_point{} && now - last_cleanup_ < std::chrono::seconds(1)) return;
    last_cleanup_ = now;
    for (auto it = buckets_.begin(); it != buckets_.end();) {
        refill(it->second, config_.per_ip_rate, config_.per_ip_burst, now);
        it = it->second.tokens >= config_.per_ip_burst ? buckets_.erase(it) : std::next(it);
    }
}

bool RateLimiter::allow(const boost::asio::ip::address& ip, Clock::time_point now) {
    if (config_.per_ip_rate <= 0) return true;
    if (global_.updated == Clock::time_point{}) global_.updated = now;
    refill(global_, config_.global_rate, config_.global_burst, now);
    if (global_.tokens < 1) return false;

    auto it = buckets_.find(ip);
    if (it == buckets_.end()) {
        if (buckets_.size() >= config_.max_sources) make_room(now);
        if (buckets_.size() >= config_.max_sources) {
            global_.tokens -= 1;  // no room to tell this address apart: the global bucket decides
            return true;
        }
        it = buckets_.emplace(ip, Bucket{config_.per_ip_burst, now}).first;
    }
    Bucket& b = it->second;
    refill(b, config_.per_ip_rate, config_.per_ip_burst, now);
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    global_.tokens -= 1;
    return true;
}

}  // namespace headerd::disc
