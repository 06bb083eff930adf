#include "load/stats.hpp"

namespace headerd::load {

void ProfileStats::merge(const ProfileStats& o) {
    clients += o.clients;
    requests += o.requests;
    replies += o.replies;
    headers += o.headers;
    bytes += o.bytes;
    lost += o.lost;
    stale += o.stale;
    verification_failures += o.verification_failures;
    for (const auto& [k, v] : o.errors) errors[k] += v;
    drops += o.drops;
    penalties += o.penalties;
    for (const auto& [k, v] : o.verdict_reasons) verdict_reasons[k] += v;
    rtt.merge(o.rtt);
}

void IntervalStats::merge(const IntervalStats& o) {
    requests += o.requests;
    replies += o.replies;
    headers += o.headers;
    bytes += o.bytes;
    errors += o.errors;
    rtt.merge(o.rtt);
}

}  // namespace headerd::load
