#include "disc/disc_metrics.hpp"

#include <iterator>
#include <string>

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>

namespace headerd::disc {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

MetricFamily family(std::string name, std::string help, MetricType type) {
    MetricFamily f;
    f.name = std::move(name);
    f.help = std::move(help);
    f.type = type;
    return f;
}

void add(MetricFamily& f, std::vector<ClientMetric::Label> labels, double value) {
    ClientMetric& m = f.metric.emplace_back();
    m.label = std::move(labels);
    if (f.type == MetricType::Counter) {
        m.counter.value = value;
    } else {
        m.gauge.value = value;
    }
}

double get(const std::atomic<uint64_t>& v) { return static_cast<double>(v.load(std::memory_order_relaxed)); }

const char* v5_message_name(size_t type) {
    static constexpr const char* kNames[] = {"", "ping", "pong", "findnode", "nodes", "talkreq", "talkresp"};
    return type < std::size(kNames) ? kNames[type] : "unknown";
}

// A failed discv5 handshake's reason, by the v5::WireError it failed with (0: we could not make ours).
const char* v5_handshake_failure(size_t e) {
    using v5::WireError;
    switch (static_cast<WireError>(e)) {
        case WireError::kUnexpectedHandshake:
            return "unexpected-handshake";
        case WireError::kBadEphemeralKey:
            return "bad-ephemeral-key";
        case WireError::kNoRecord:
            return "no-record";
        case WireError::kBadRecord:
            return "bad-record";
        case WireError::kRecordIdMismatch:
            return "record-id-mismatch";
        case WireError::kBadIdSignature:
            return "bad-id-signature";
        case WireError::kDecryptFailed:
            return "decrypt-failed";
        default:
            return e == 0 ? "local" : "other";
    }
}

}  // namespace

std::vector<MetricFamily> DiscoveryCollector::Collect() const {
    const V4Stats& s = v4_->stats();
    const ClientMetric::Label v4{"protocol", "discv4"};
    auto packets = family("headerd_discovery_packets_total", "Discovery packets by protocol, direction and type.",
                          MetricType::Counter);
    for (size_t t = 1; t < s.packets_in.size(); ++t) {
        const std::string type = v4::type_name(static_cast<v4::PacketType>(t));
        add(packets, {v4, {"direction", "in"}, {"type", type}}, get(s.packets_in[t]));
        add(packets, {v4, {"direction", "out"}, {"type", type}}, get(s.packets_out[t]));
    }
    auto bytes = family("headerd_discovery_bytes_total", "Discovery datagram bytes by protocol and direction.",
                        MetricType::Counter);
    add(bytes, {v4, {"direction", "in"}}, get(s.bytes_in));
    add(bytes, {v4, {"direction", "out"}}, get(s.bytes_out));
    auto dropped = family("headerd_discovery_dropped_total",
                          "Discovery packets not acted on, by protocol and reason (undecodable, too-big, expired, "
                          "unsolicited, unbonded, rate-limited, ...).",
                          MetricType::Counter);
    for (size_t r = 0; r < s.dropped.size(); ++r) {
        add(dropped, {v4, {"reason", to_string(static_cast<V4Drop>(r))}}, get(s.dropped[r]));
    }
    auto timeouts = family("headerd_discovery_request_timeouts_total", "Discovery requests that got no reply in time.",
                           MetricType::Counter);
    add(timeouts, {v4}, get(s.request_timeouts));
    auto lookups = family("headerd_discovery_lookups_total", "Finished discovery lookups.", MetricType::Counter);
    auto lookup_seconds =
        family("headerd_discovery_lookup_seconds_total",
               "Time spent in finished lookups (divide by lookups_total for the mean).", MetricType::Counter);
    auto table = family("headerd_discovery_table_nodes", "Nodes in the discovery table.", MetricType::Gauge);
    auto replacements = family("headerd_discovery_table_replacements",
                               "Nodes waiting in the replacement lists of full buckets.", MetricType::Gauge);
    auto buckets = family("headerd_discovery_bucket_nodes",
                          "Nodes per table bucket (bucket 0 holds distances up to 240, bucket i distance 240 + i).",
                          MetricType::Gauge);
    auto changes = family("headerd_discovery_table_changes_total",
                          "What happened to the table: moved (a held node's endpoint changed), refused-move "
                          "(relayed news without a newer record, which never moves a held node), refused-record "
                          "(a record or node whose address the address policy refused), evicted (a node that "
                          "failed its revalidation or kept leaving FindNodes unanswered).",
                          MetricType::Counter);
    // The shared core's table, once per protocol.
    const auto table_metrics = [&](const TableStats& t, const ClientMetric::Label& protocol) {
        add(lookups, {protocol}, get(t.lookups));
        add(lookup_seconds, {protocol}, get(t.lookup_micros) / 1e6);
        add(table, {protocol}, get(t.size));
        add(replacements, {protocol}, get(t.replacements));
        for (size_t b = 0; b < t.bucket_sizes.size(); ++b)
            add(buckets, {protocol, {"bucket", std::to_string(b)}}, get(t.bucket_sizes[b]));
        add(changes, {protocol, {"change", "moved"}}, get(t.moves));
        add(changes, {protocol, {"change", "refused-move"}}, get(t.refused_moves));
        add(changes, {protocol, {"change", "refused-record"}}, get(t.refused_relays));
        add(changes, {protocol, {"change", "evicted"}}, get(t.evictions));
    };
    table_metrics(v4_->table_stats(), v4);
    if (!v5_)
        return {packets, bytes, dropped, timeouts, lookups, lookup_seconds, table, replacements, buckets, changes};

    const V5Stats& s5 = v5_->stats();
    const ClientMetric::Label v5{"protocol", "discv5"};
    for (size_t t = 1; t < s5.packets_in.size(); ++t) {
        add(packets, {v5, {"direction", "in"}, {"type", v5_message_name(t)}}, get(s5.packets_in[t]));
        add(packets, {v5, {"direction", "out"}, {"type", v5_message_name(t)}}, get(s5.packets_out[t]));
    }
    add(packets, {v5, {"direction", "in"}, {"type", "whoareyou"}}, get(s5.whoareyou_in));
    add(packets, {v5, {"direction", "out"}, {"type", "whoareyou"}}, get(s5.whoareyou_out));
    add(bytes, {v5, {"direction", "in"}}, get(s5.bytes_in));
    add(bytes, {v5, {"direction", "out"}}, get(s5.bytes_out));
    for (size_t r = 0; r < s5.dropped.size(); ++r) {
        add(dropped, {v5, {"reason", to_string(static_cast<V5Drop>(r))}}, get(s5.dropped[r]));
    }
    add(timeouts, {v5}, get(s5.request_timeouts));
    table_metrics(v5_->table_stats(), v5);
    auto handshakes = family("headerd_discovery_handshakes_total",
                             "discv5 handshakes: sent (we answered a WHOAREYOU) and accepted (a peer's verified).",
                             MetricType::Counter);
    add(handshakes, {v5, {"result", "sent"}}, get(s5.handshakes_sent));
    add(handshakes, {v5, {"result", "accepted"}}, get(s5.handshakes_accepted));
    auto failures = family("headerd_discovery_handshake_failures_total", "discv5 handshakes that failed, by reason.",
                           MetricType::Counter);
    // One sample per reason a handshake can fail for (the WireErrors decode reports for handshakes),
    // plus "local" (index 0: ours could not be made).
    for (size_t e = 0; e < s5.handshakes_failed.size(); ++e) {
        const std::string reason = v5_handshake_failure(e);
        if (reason != "other") add(failures, {v5, {"reason", reason}}, get(s5.handshakes_failed[e]));
    }
    auto challenges = family("headerd_discovery_challenges", "discv5 WHOAREYOU challenges waiting for their handshake.",
                             MetricType::Gauge);
    add(challenges, {v5}, get(s5.challenges));
    return {packets,      bytes,   dropped,    timeouts, lookups,    lookup_seconds, table,
            replacements, buckets, handshakes, failures, challenges, changes};
}

}  // namespace headerd::disc
