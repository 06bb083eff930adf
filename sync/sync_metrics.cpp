#include "sync/sync_metrics.hpp"

namespace headerd::sync {

SyncMetrics::SyncMetrics(prometheus::Registry& r)
    : target_(&prometheus::BuildGauge()
                   .Name("headerd_sync_target_block")
                   .Help("Number of the trusted head being synced to.")
                   .Register(r)
                   .Add({})),
      next_(&prometheus::BuildGauge()
                 .Name("headerd_sync_next_block")
                 .Help("Highest block below the trusted head not verified yet.")
                 .Register(r)
                 .Add({})),
      fetched_(&prometheus::BuildCounter()
                    .Name("headerd_sync_headers_fetched_total")
                    .Help("Headers verified by hash links and stored.")
                    .Register(r)
                    .Add({})),
      adopted_(&prometheus::BuildCounter()
                    .Name("headerd_sync_heads_adopted_total")
                    .Help("Heads agreed by the followed peers and linked into the chain (serve --follow).")
                    .Register(r)
                    .Add({})),
      peers_(&prometheus::BuildGauge()
                  .Name("headerd_sync_peers")
                  .Help("Peers the running download gets headers from.")
                  .Register(r)
                  .Add({})),
      capacity_(&prometheus::BuildGauge()
                     .Name("headerd_sync_peer_capacity_headers_per_second")
                     .Help("Each peer's capacity estimate: headers per second it delivers (geth's msgrate rules).")
                     .Register(r)),
      dropped_(&prometheus::BuildCounter()
                    .Name("headerd_sync_peers_dropped_total")
                    .Help("Peers disconnected by the download: fault (a reply that does not fit the proven chain or "
                          "the request), timeout, empty (nothing but empty replies), closed (the session ended).")
                    .Register(r)),
      follow_dials_(&prometheus::BuildCounter()
                         .Name("headerd_follow_dials_total")
                         .Help("Dials of the peers serve --follow watches, by outcome: connected, failed, replaced (a "
                               "discovered peer swapped for a spare after failed dials).")
                         .Register(r)) {
    for (const char* outcome : {"connected", "failed", "replaced"}) follow_dial(outcome);
}

prometheus::Gauge& SyncMetrics::capacity(const std::string& peer) { return capacity_->Add({{"peer", peer}}); }

prometheus::Counter& SyncMetrics::dropped(const std::string& why) { return dropped_->Add({{"reason", why}}); }

}  // namespace headerd::sync
