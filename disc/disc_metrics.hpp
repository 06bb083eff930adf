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
//   headerd_discovery_handshakes_total{protocol="discv5", result}   (sent, accepted)
//   headerd_discovery_handshake_failures_total{protocol="discv5", reason}
// protocol is discv4 or discv5 (the latter when the collector is given the discv5 service; its
// packets by message type, WHOAREYOU as type "whoareyou").

#include <memory>
#include <vector>

#include <prometheus/collectable.h>

#include "disc/v4_udp.hpp"
#include "disc/v5_udp.hpp"

namespace headerd::disc {

class DiscoveryCollector final : public prometheus::Collectable {
  public:
    // The collector holds the services, so they outlive every scrape; v5 may be null.
    explicit DiscoveryCollector(std::shared_ptr<const V4Service> v4, std::shared_ptr<const V5Service> v5 = nullptr)
        : v4_(std::move(v4)), v5_(std::move(v5)) {}
    std::vector<prometheus::MetricFamily> Collect() const override;

  private:
    std::shared_ptr<const V4Service> v4_;
    std::shared_ptr<const V5Service> v5_;
};

}  // namespace headerd::disc
