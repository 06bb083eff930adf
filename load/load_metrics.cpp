#include "load/load_metrics.hpp"

namespace headerd::load {

const std::vector<double>& rtt_buckets() {
    static const std::vector<double> b{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                       0.25,   0.5,     1,      2.5,   5,      10,    20,   30,    60};
    return b;
}

LoadMetrics::LoadMetrics(prometheus::Registry& registry, const std::vector<std::string>& profile_names,
                         const std::string& run_id) {
    using namespace prometheus;
    // Every family carries the run's id, so the series of generators on several machines that ran
    // together sum by (run) while Prometheus tells them apart by instance.
    const prometheus::Labels run = run_id.empty() ? prometheus::Labels{} : prometheus::Labels{{"run", run_id}};
    auto& rtt = BuildHistogram()
                    .Name("headerd_load_request_seconds")
                    .Labels(run)
                    .Help("Client-side round-trip time of GetBlockHeaders requests, by profile")
                    .Register(registry);
    auto& requests = BuildCounter()
                         .Name("headerd_load_requests_total")
                         .Labels(run)
                         .Help("GetBlockHeaders requests sent")
                         .Register(registry);
    auto& headers =
        BuildCounter().Name("headerd_load_headers_total").Labels(run).Help("Headers received").Register(registry);
    auto& lost = BuildCounter()
                     .Name("headerd_load_lost_total")
                     .Labels(run)
                     .Help("Requests without a reply by their deadline")
                     .Register(registry);
    auto& stale = BuildCounter()
                      .Name("headerd_load_stale_total")
                      .Labels(run)
                      .Help("Replies to a request id that was not pending")
                      .Register(registry);
    auto& failures = BuildCounter()
                         .Name("headerd_load_verification_failures_total")
                         .Labels(run)
                         .Help("Replies that broke the serving rules or differ from the reference chain")
                         .Register(registry);
    auto& drops = BuildCounter()
                      .Name("headerd_load_verdict_drops_total")
                      .Labels(run)
                      .Help("Times the imitated client would have dropped the server, by reason")
                      .Register(registry);
    auto& errors = BuildCounter()
                       .Name("headerd_load_errors_total")
                       .Labels(run)
                       .Help("Failed requests and connections, by kind")
                       .Register(registry);
    in_flight_ =
        &BuildGauge().Name("headerd_load_in_flight").Labels(run).Help("Requests in flight").Register(registry).Add({});
    clients_ = &BuildGauge()
                    .Name("headerd_load_clients_connected")
                    .Labels(run)
                    .Help("Synthetic clients with an established session")
                    .Register(registry)
                    .Add({});
    for (const std::string& name : profile_names) {
        ProfileMeters m;
        m.profile = name;
        m.rtt = &rtt.Add({{"profile", name}}, rtt_buckets());
        m.requests = &requests.Add({{"profile", name}});
        m.headers = &headers.Add({{"profile", name}});
        m.lost = &lost.Add({{"profile", name}});
        m.stale = &stale.Add({{"profile", name}});
        m.verification_failures = &failures.Add({{"profile", name}});
        m.drops = &drops;
        m.errors = &errors;
        meters_.push_back(m);
    }
}

}  // namespace headerd::load
