#include "load/stats.hpp"

namespace headerd::load {

void MessageStats::merge(const MessageStats& o) {
    requests += o.requests;
    replies += o.replies;
    items += o.items;
    bytes += o.bytes;
    receipts += o.receipts;
    empty += o.empty;
    short_replies += o.short_replies;
    lost += o.lost;
    verification_failures += o.verification_failures;
    rtt.merge(o.rtt);
}

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
    for (size_t i = 0; i < kMessages; ++i) messages[i].merge(o.messages[i]);
}

void IntervalStats::merge(const IntervalStats& o) {
    requests += o.requests;
    replies += o.replies;
    headers += o.headers;
    bodies += o.bodies;
    receipt_lists += o.receipt_lists;
    bytes += o.bytes;
    errors += o.errors;
    rtt.merge(o.rtt);
}

}  // namespace headerd::load
