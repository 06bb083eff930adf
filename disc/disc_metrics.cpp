#include "disc/disc_metrics.hpp"

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
                          "Discovery packets not acted on, by reason (undecodable, too-big, expired, unsolicited, "
                          "unbonded).",
                          MetricType::Counter);
    for (size_t r = 0; r < s.dropped.size(); ++r) {
        add(dropped, {v4, {"reason", to_string(static_cast<V4Drop>(r))}}, get(s.dropped[r]));
    }
    auto timeouts = family("headerd_discovery_request_timeouts_total", "Discovery requests that got no reply in time.",
                           MetricType::Counter);
    add(timeouts, {v4}, get(s.request_timeouts));
    auto lookups = family("headerd_discovery_lookups_total", "Finished discovery lookups.", MetricType::Counter);
    add(lookups, {v4}, get(s.lookups));
    auto lookup_seconds =
        family("headerd_discovery_lookup_seconds_total",
               "Time spent in finished lookups (divide by lookups_total for the mean).", MetricType::Counter);
    add(lookup_seconds, {v4}, get(s.lookup_micros) / 1e6);
    auto table = family("headerd_discovery_table_nodes", "Nodes in the discovery table.", MetricType::Gauge);
    add(table, {v4}, get(s.table_size));
    auto replacements = family("headerd_discovery_table_replacements",
                               "Nodes waiting in the replacement lists of full buckets.", MetricType::Gauge);
    add(replacements, {v4}, get(s.table_replacements));
    auto buckets = family("headerd_discovery_bucket_nodes",
                          "Nodes per table bucket (bucket 0 holds distances up to 240, bucket i distance 240 + i).",
                          MetricType::Gauge);
    for (size_t b = 0; b < s.bucket_sizes.size(); ++b)
        add(buckets, {v4, {"bucket", std::to_string(b)}}, get(s.bucket_sizes[b]));
    return {packets, bytes, dropped, timeouts, lookups, lookup_seconds, table, replacements, buckets};
}

}  // namespace headerd::disc
