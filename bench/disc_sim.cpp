// The discovery simulation at scale (sim/simulation.hpp; docs/performance.md, "Discovery
// simulation"): real discv4 and discv5 services on a simulated network in virtual time, with
// latency, loss, churn, NATs, adversaries and spoofers; prints the figures as tables. Nothing here
// opens a socket.
//
//   disc_sim --nodes 10000 --minutes 30 --seed 1 --adversaries 0.1 --nat 0.2 --loss 0.01 --churn 0.5

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "sim/simulation.hpp"

namespace {

void usage(const char* argv0) {
    std::fprintf(stderr,
                 "usage: %s [--nodes N] [--minutes M] [--seed S] [--adversaries SHARE] [--sybils SHARE]\n"
                 "          [--nat SHARE] [--loss P] [--churn SHARE_PER_HOUR] [--moves SHARE] [--v4-only SHARE]\n"
                 "          [--v5-only SHARE] [--bootnodes N] [--lookups N] [--spoofers N] [--spoof-rate R]\n"
                 "          [--refresh SECONDS] [--revalidate MS] [--join-window SECONDS] [--report MINUTES]\n"
                 "          [--sessions N] [--node-db N] [--median-latency MS] [--progress] [--figures]\n"
                 "Defaults: those of SimulationConfig (sim/simulation.hpp): geth's timers, 500 nodes, 30 minutes.\n"
                 "--figures also prints every figure in the form the determinism check compares.\n",
                 argv0);
}

}  // namespace

int main(int argc, char** argv) {
    headerd::sim::SimulationConfig c;
    bool figures = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        const auto next = [&]() -> const char* {
            if (i + 1 >= argc) {
                usage(argv[0]);
                std::exit(2);
            }
            return argv[++i];
        };
        const auto num = [&] { return std::strtod(next(), nullptr); };
        const auto count = [&] { return static_cast<size_t>(std::strtoull(next(), nullptr, 10)); };
        if (a == "--nodes") {
            c.nodes = count();
        } else if (a == "--minutes") {
            c.duration = std::chrono::seconds(static_cast<long>(num() * 60));
        } else if (a == "--seed") {
            c.seed = std::strtoull(next(), nullptr, 10);
        } else if (a == "--adversaries") {
            c.adversaries = num();
        } else if (a == "--sybils") {
            c.sybil_share = num();
        } else if (a == "--nat") {
            c.nat = num();
        } else if (a == "--loss") {
            c.loss = num();
        } else if (a == "--churn") {
            c.churn_per_hour = num();
        } else if (a == "--moves") {
            c.move_share = num();
        } else if (a == "--v4-only") {
            c.v4_only = num();
        } else if (a == "--v5-only") {
            c.v5_only = num();
        } else if (a == "--bootnodes") {
            c.bootnodes = count();
        } else if (a == "--lookups") {
            c.lookup_samples = count();
        } else if (a == "--spoofers") {
            c.spoofers = count();
        } else if (a == "--spoof-rate") {
            c.spoof_rate = num();
        } else if (a == "--refresh") {
            c.refresh_interval = std::chrono::seconds(count());
        } else if (a == "--revalidate") {
            c.revalidate_interval = std::chrono::milliseconds(count());
        } else if (a == "--join-window") {
            c.join_window = std::chrono::seconds(count());
        } else if (a == "--report") {
            c.report_interval = std::chrono::seconds(static_cast<long>(num() * 60));
        } else if (a == "--sessions") {
            c.v5_session_capacity = count();
        } else if (a == "--node-db") {
            c.node_db_max_nodes = count();
        } else if (a == "--median-latency") {
            c.network.median_latency = std::chrono::milliseconds(count());
        } else if (a == "--progress") {
            c.progress = true;
        } else if (a == "--figures") {
            figures = true;
        } else {
            usage(argv[0]);
            return a == "--help" || a == "-h" ? 0 : 2;
        }
    }
    if (c.duration <= c.join_window) {
        std::fprintf(stderr, "disc_sim: --minutes must be longer than the join window (%ld s)\n",
                     static_cast<long>(c.join_window.count()));
        return 2;
    }
    headerd::sim::Simulation sim(c);
    const auto r = sim.run();
    std::fputs(headerd::sim::format_result(r).c_str(), stdout);
    if (figures) std::fputs(("\n" + headerd::sim::deterministic_figures(r)).c_str(), stdout);
    return 0;
}
