#pragma once

// headerd's Prometheus metric families (names and meanings: docs/operations.md), registered once on
// one registry. Label children are created at start-up by the layer that owns the labels (p2p
// builds a table per protocol version and message code), so the hot path only touches a counter or
// histogram it already holds, never a label lookup.
//
// Thread-safety: prometheus-cpp metrics are thread-safe; Families is immutable after construction.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace headerd::metrics {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

// Bucket bounds in seconds for round trips and service times: 50 µs to 30 s in 1-2.5-5 steps, so a
// loopback reply (~100 µs), a LAN or WAN round trip (ms) and a lost-looking request (s) each fall
// into buckets of their own.
const Histogram::BucketBoundaries& duration_buckets();

struct Families {
    explicit Families(prometheus::Registry& registry);

    Family<Gauge>& peers;                    // headerd_p2p_peers{direction}
    Family<Counter>& handshake_errors;       // headerd_p2p_handshake_errors_total{reason}
    Family<Counter>& ingress_bytes;          // headerd_p2p_ingress_bytes_total{proto,version,code}
    Family<Counter>& egress_bytes;           // headerd_p2p_egress_bytes_total{proto,version,code}
    Family<Counter>& ingress_messages;       // headerd_p2p_ingress_messages_total{proto,version,code}
    Family<Counter>& egress_messages;        // headerd_p2p_egress_messages_total{proto,version,code}
    Family<Histogram>& serve_seconds;        // headerd_p2p_serve_seconds{proto,version,code}
    Family<Gauge>& tracked_requests;         // headerd_p2p_tracked_requests{proto,version,code}
    Family<Histogram>& request_rtt;          // headerd_p2p_request_rtt_seconds{proto,version,code}
    Family<Counter>& requests_lost;          // headerd_p2p_requests_lost_total
    Family<Counter>& responses_stale;        // headerd_p2p_responses_stale_total
    Family<Counter>& tracker_rejected;       // headerd_p2p_tracker_rejected_total{reason}
    Family<Counter>& headers_served;         // headerd_headers_served_total{store}
    Family<Counter>& header_requests;        // headerd_header_requests_total{kind}
    Family<Histogram>& db_read_seconds;      // headerd_db_read_seconds{store}
    Family<Gauge>& chain_head_number;        // headerd_chain_head_number
    Family<Gauge>& ancient_items;            // headerd_ancient_items
    Family<Counter>& reply_cache_requests;   // headerd_reply_cache_requests_total{result}
    Family<Counter>& reply_cache_evictions;  // headerd_reply_cache_evictions_total
    Family<Gauge>& reply_cache_bytes;        // headerd_reply_cache_bytes
    Family<Gauge>& reply_cache_entries;      // headerd_reply_cache_entries
    Family<Counter>& history_items_served;   // headerd_history_items_served_total{message}
    Family<Counter>& history_bytes_served;   // headerd_history_bytes_served_total{message}
};

// The registry of one process with headerd's families, the process metrics and
// headerd_build_info. Scrape with collectables().
class Metrics {
  public:
    Metrics(const std::string& version, const std::string& commit);
    Metrics(const Metrics&) = delete;
    Metrics& operator=(const Metrics&) = delete;

    Families& families() noexcept { return *families_; }
    prometheus::Registry& registry() noexcept { return *registry_; }
    // Gauges whose value is read when scraped (e.g. from a library's own counters), as `name` with
    // `help`. `read` runs on the scraping thread and must be thread-safe; nullopt leaves the gauge
    // out of that scrape. Call before the first scrape.
    void add_scraped_gauge(std::string name, std::string help, std::function<std::optional<double>()> read);
    // A collector of another layer's own counters (discovery's, read when scraped); kept alive
    // here. Call before the first scrape.
    void add_collectable(std::shared_ptr<prometheus::Collectable> c);
    // Everything a scrape collects: the registry, then the process collector and scraped gauges.
    std::vector<std::weak_ptr<prometheus::Collectable>> collectables() const;
    // The Prometheus text format of one scrape (tests, `--metrics` off debugging).
    std::string scrape() const;

  private:
    std::shared_ptr<prometheus::Registry> registry_;
    std::unique_ptr<Families> families_;
    std::shared_ptr<prometheus::Collectable> process_;
    std::shared_ptr<class ScrapedGauges> scraped_;
    std::vector<std::shared_ptr<prometheus::Collectable>> extra_;
};

}  // namespace headerd::metrics
