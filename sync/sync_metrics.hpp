#pragma once

// The headerd_sync_* families of `headerd sync` and `serve --follow` (docs/operations.md): where
// the download is, what it fetched, each peer's capacity estimate and why peers were dropped. The
// request RTT, tracked, lost and stale requests come from the sessions' trackers (NetMetrics).
//
// Thread-safety: prometheus-cpp metrics are thread-safe; peer() creates children, call it from the
// sync's thread.

#include <cstdint>
#include <map>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace headerd::sync {

class SyncMetrics {
  public:
    explicit SyncMetrics(prometheus::Registry& registry);

    prometheus::Gauge& target() { return *target_; }       // the trusted head's number
    prometheus::Gauge& next() { return *next_; }           // highest block not verified yet
    prometheus::Counter& fetched() { return *fetched_; }   // headers verified and stored
    prometheus::Counter& adopted() { return *adopted_; }   // heads adopted by serve --follow
    prometheus::Gauge& peers() { return *peers_; }         // peers downloading
    prometheus::Gauge& capacity(const std::string& peer);  // headers/s estimate, by peer
    prometheus::Counter& dropped(const std::string& why);  // peers dropped, by kind of fault
    // serve --follow's dials of its watched peers: connected, failed, replaced (a discovered peer
    // swapped for a spare after failed dials).
    prometheus::Counter& follow_dial(const std::string& outcome) { return follow_dials_->Add({{"outcome", outcome}}); }

  private:
    prometheus::Gauge* target_;
    prometheus::Gauge* next_;
    prometheus::Counter* fetched_;
    prometheus::Counter* adopted_;
    prometheus::Gauge* peers_;
    prometheus::Family<prometheus::Gauge>* capacity_;
    prometheus::Family<prometheus::Counter>* dropped_;
    prometheus::Family<prometheus::Counter>* follow_dials_;
};

}  // namespace headerd::sync
