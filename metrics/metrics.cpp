#include "metrics/metrics.hpp"

#include <sstream>

#include <prometheus/text_serializer.h>

#include "metrics/process_collector.hpp"

namespace headerd::metrics {
namespace {

template <typename Builder>
auto& build(Builder builder, const char* name, const char* help, prometheus::Registry& registry) {
    return builder.Name(name).Help(help).Register(registry);
}

}  // namespace

const Histogram::BucketBoundaries& duration_buckets() {
    static const Histogram::BucketBoundaries kBuckets{50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3,
                                                      50e-3, 100e-3, 250e-3, 500e-3, 1.0,  2.5,    5.0,  10.0,  30.0};
    return kBuckets;
}

Families::Families(prometheus::Registry& r)
    : peers(build(prometheus::BuildGauge(), "headerd_p2p_peers", "Peers past the eth Status exchange.", r)),
      handshake_errors(build(prometheus::BuildCounter(), "headerd_p2p_handshake_errors_total",
                             "Connections that ended before serving or requesting began, by reason.", r)),
      ingress_bytes(build(prometheus::BuildCounter(), "headerd_p2p_ingress_bytes_total",
                          "Bytes received in RLPx frames (header, body and MACs), by message.", r)),
      egress_bytes(build(prometheus::BuildCounter(), "headerd_p2p_egress_bytes_total",
                         "Bytes sent in RLPx frames (header, body and MACs), by message.", r)),
      ingress_messages(
          build(prometheus::BuildCounter(), "headerd_p2p_ingress_messages_total", "Messages received, by message.", r)),
      egress_messages(
          build(prometheus::BuildCounter(), "headerd_p2p_egress_messages_total", "Messages sent, by message.", r)),
      serve_seconds(build(prometheus::BuildHistogram(), "headerd_p2p_serve_seconds",
                          "Time from receiving a request to having written its reply, by request message.", r)),
      tracked_requests(build(prometheus::BuildGauge(), "headerd_p2p_tracked_requests",
                             "Requests this node sent that await a reply, by request message.", r)),
      request_rtt(build(prometheus::BuildHistogram(), "headerd_p2p_request_rtt_seconds",
                        "Round-trip time of requests this node sent, by request message.", r)),
      requests_lost(build(prometheus::BuildCounter(), "headerd_p2p_requests_lost_total",
                          "Requests this node sent that got no reply before their timeout.", r)),
      responses_stale(build(prometheus::BuildCounter(), "headerd_p2p_responses_stale_total",
                            "Replies to no pending request (unknown id, or after the timeout).", r)),
      tracker_rejected(build(prometheus::BuildCounter(), "headerd_p2p_tracker_rejected_total",
                             "Requests refused before sending by the pending-request tracker, by reason.", r)),
      headers_served(build(prometheus::BuildCounter(), "headerd_headers_served_total",
                           "Headers sent in BlockHeaders replies, by the store they were read from.", r)),
      header_requests(build(prometheus::BuildCounter(), "headerd_header_requests_total",
                            "GetBlockHeaders requests served, by how they were served.", r)),
      db_read_seconds(build(prometheus::BuildHistogram(), "headerd_db_read_seconds",
                            "Time of one header range read from a store.", r)),
      chain_head_number(
          build(prometheus::BuildGauge(), "headerd_chain_head_number", "Number of the stored head header.", r)),
      ancient_items(build(prometheus::BuildGauge(), "headerd_ancient_items",
                          "Headers in the ancient (freezer) store: blocks [0, ancient_items).", r)),
      reply_cache_requests(build(prometheus::BuildCounter(), "headerd_reply_cache_requests_total",
                                 "GetBlockHeaders requests by number looked up in the cache of compressed "
                                 "replies, by result (hit, miss).",
                                 r)),
      reply_cache_evictions(build(prometheus::BuildCounter(), "headerd_reply_cache_evictions_total",
                                  "Compressed replies dropped from the cache to make room.", r)),
      reply_cache_bytes(build(prometheus::BuildGauge(), "headerd_reply_cache_bytes",
                              "Bytes the cache of compressed replies holds, all workers together.", r)),
      reply_cache_entries(build(prometheus::BuildGauge(), "headerd_reply_cache_entries",
                                "Compressed replies the cache holds, all workers together.", r)),
      history_items_served(build(prometheus::BuildCounter(), "headerd_history_items_served_total",
                                 "Block bodies and receipt lists sent, by reply message (BlockBodies, Receipts).", r)),
      history_bytes_served(build(prometheus::BuildCounter(), "headerd_history_bytes_served_total",
                                 "Bytes of block bodies and receipt lists sent (before compression), by reply message.",
                                 r)) {}

// The gauges of Metrics::add_scraped_gauge, read on every Collect().
class ScrapedGauges : public prometheus::Collectable {
  public:
    struct Gauge {
        std::string name;
        std::string help;
        std::function<std::optional<double>()> read;
    };
    std::vector<Gauge> gauges;  // fixed before the first scrape

    std::vector<prometheus::MetricFamily> Collect() const override {
        std::vector<prometheus::MetricFamily> out;
        for (const Gauge& g : gauges) {
            const std::optional<double> v = g.read();
            if (!v) continue;
            prometheus::MetricFamily f;
            f.name = g.name;
            f.help = g.help;
            f.type = prometheus::MetricType::Gauge;
            f.metric.emplace_back().gauge.value = *v;
            out.push_back(std::move(f));
        }
        return out;
    }
};

Metrics::Metrics(const std::string& version, const std::string& commit)
    : registry_(std::make_shared<prometheus::Registry>()),
      families_(std::make_unique<Families>(*registry_)),
      process_(std::make_shared<ProcessCollector>()),
      scraped_(std::make_shared<ScrapedGauges>()) {
    register_build_info(*registry_, version, commit);
}

void Metrics::add_scraped_gauge(std::string name, std::string help, std::function<std::optional<double>()> read) {
    scraped_->gauges.push_back({std::move(name), std::move(help), std::move(read)});
}

void Metrics::add_collectable(std::shared_ptr<prometheus::Collectable> c) { extra_.push_back(std::move(c)); }

std::vector<std::weak_ptr<prometheus::Collectable>> Metrics::collectables() const {
    std::vector<std::weak_ptr<prometheus::Collectable>> out{registry_, process_, scraped_};
    for (const auto& c : extra_) out.push_back(c);
    return out;
}

std::string Metrics::scrape() const {
    std::vector<prometheus::MetricFamily> all = registry_->Collect();
    for (auto& f : process_->Collect()) all.push_back(std::move(f));
    for (auto& f : scraped_->Collect()) all.push_back(std::move(f));
    for (const auto& c : extra_) {
        for (auto& f : c->Collect()) all.push_back(std::move(f));
    }
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, all);
    return out.str();
}

}  // namespace headerd::metrics
