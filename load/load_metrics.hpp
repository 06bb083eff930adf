#pragma once

// The load generator's own Prometheus metrics (`headerd load --metrics`), one child per profile
// made up front, so worker threads only update them (prometheus-cpp's metrics are thread-safe).
// Names and meanings: docs/load.md, "Metrics".

#include <string>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace headerd::load {

struct ProfileMeters {
    prometheus::Histogram* rtt{nullptr};
    prometheus::Counter* requests{nullptr};
    prometheus::Counter* headers{nullptr};
    prometheus::Counter* lost{nullptr};
    prometheus::Counter* stale{nullptr};
    prometheus::Counter* verification_failures{nullptr};
    prometheus::Family<prometheus::Counter>* drops{nullptr};   // {profile, reason}: children on demand
    prometheus::Family<prometheus::Counter>* errors{nullptr};  // {profile, kind}
    std::string profile;
};

class LoadMetrics {
  public:
    // One set of meters per profile name, registered in `registry`; with a `run_id` (load --run-id)
    // every family has the constant label run="ID".
    LoadMetrics(prometheus::Registry& registry, const std::vector<std::string>& profile_names,
                const std::string& run_id = {});
    ProfileMeters& profile(size_t index) { return meters_[index]; }
    prometheus::Gauge& in_flight() { return *in_flight_; }
    prometheus::Gauge& clients_connected() { return *clients_; }

  private:
    std::vector<ProfileMeters> meters_;
    prometheus::Gauge* in_flight_{nullptr};
    prometheus::Gauge* clients_{nullptr};
};

// RTT bucket bounds in seconds, 100 µs to 60 s.
const std::vector<double>& rtt_buckets();

}  // namespace headerd::load
