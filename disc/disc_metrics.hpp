#pragma once

// discovery's Prometheus metrics (docs/operations.md, "Discovery"): read from the services' own
// atomic counters when scraped, so the discovery thread never touches a metric. Families:
//   headerd_discovery_packets_total{protocol, direction, type}
//   headerd_discovery_bytes_total{protocol, direction}
//   headerd_discovery_dropped_total{protocol, reason}
//   headerd_discovery_request_timeouts_total{protocol}
//   headerd_discovery_lookups_total{protocol}, headerd_discovery_lookup_seconds_total{protocol}
//   headerd_discovery_table_nodes{protocol}, headerd_discovery_table_replacements{protocol}
//   headerd_discovery_bucket_nodes{protocol, bucket}   (bucket 0: distances <= 240)

#include <memory>
#include <vector>

#include <prometheus/collectable.h>

#include "disc/v4_udp.hpp"

namespace headerd::disc {

class DiscoveryCollector final : public prometheus::Collectable {
  public:
    // REQUIRES: the service outlives every scrape (the collector holds it).
    explicit DiscoveryCollector(std::shared_ptr<const V4Service> v4) : v4_(std::move(v4)) {}
    std::vector<prometheus::MetricFamily> Collect() const override;

  private:
    std::shared_ptr<const V4Service> v4_;
};

}  // namespace headerd::disc
