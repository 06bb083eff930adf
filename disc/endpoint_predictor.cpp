#include "disc/endpoint_predictor.hpp"

#include <algorithm>

#include "disc/address_policy.hpp"

namespace headerd::disc {

bool EndpointPredictor::add_statement(const Endpoint& sender, const Endpoint& stated, Clock::time_point now) {
    const auto from = unmapped(sender.address());
    const Endpoint said(unmapped(stated.address()), stated.port());
    if (said.port() == 0 || check_relay(from, said.address()) != AddressVerdict::kAllowed) return false;
    const Endpoint key(from, from.is_loopback() ? sender.port() : 0);
    statements_[key] = Statement{said, now};
    // Bounded by the senders of one window; expire when it grows, so a flood of new senders cannot
    // keep old statements alive for long.
    if (statements_.size() > 4 * min_statements_ + 1024) expire(now);
    return true;
}

void EndpointPredictor::expire(Clock::time_point now) {
    std::erase_if(statements_, [&](const auto& kv) { return now - kv.second.at > window_; });
}

std::optional<EndpointPredictor::Endpoint> EndpointPredictor::predict(Clock::time_point now) {
    expire(now);
    std::map<Endpoint, size_t> counts;
    for (const auto& [sender, s] : statements_) ++counts[s.stated];
    std::optional<Endpoint> best;
    size_t best_count = 0;
    for (const auto& [endpoint, count] : counts) {
        if (count >= min_statements_ && count > best_count) {
            best = endpoint;
            best_count = count;
        }
    }
    return best;
}

size_t EndpointPredictor::senders(Clock::time_point now) {
    expire(now);
    return statements_.size();
}

}  // namespace headerd::disc
