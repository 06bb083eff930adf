// The discovery simulation (sim/simulation.hpp) on a small network: 300 nodes for 3 virtual minutes,
// with every hazard of the benchmark on (latency, loss, churn, moves, NATs, 10% adversaries with
// sybils, spoofers), and the figures docs/performance.md reports for it checked against thresholds.
// About 31 s of CPU in a RelWithDebInfo build (500 nodes took 63 s: every datagram is really signed,
// recovered or encrypted, docs/performance.md "Discovery simulation"). A sanitizer build runs 150
// nodes to look for memory errors and checks the rules that hold at any size (no verified poisoned
// entry, amplification), not the figures of the 300. Nothing here opens a socket.

#include "sim/simulation.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>

namespace headerd::sim {
namespace {

using namespace std::chrono_literals;

bool sanitized() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    return true;
#endif
#endif
    // scripts/sanitize.sh sets it for the instrumented builds.
    const char* scale = std::getenv("HEADERD_TEST_TIME_SCALE");
    return scale != nullptr && std::atof(scale) > 1;
}

// The small network of the README's test command (docs/performance.md, "Discovery simulation").
SimulationConfig small_network() {
    SimulationConfig c;
    c.nodes = sanitized() ? 150 : 300;
    c.seed = 1;
    c.duration = 3min;
    c.join_window = 45s;
    c.report_interval = 1min;
    c.lookup_samples = 40;
    c.churn_per_hour = 0.5;
    return c;
}

const AmplificationRow& row(const std::vector<AmplificationRow>& rows, PacketClass c) {
    for (const auto& r : rows) {
        if (r.type == c) return r;
    }
    static const AmplificationRow none{};
    ADD_FAILURE() << "no row for " << to_string(c);
    return none;
}

void check_amplification(const SimulationResult& r);

TEST(Simulation, SmallNetworkFindsItsNodesAndResistsTheAdversaries) {
    const SimulationConfig c = small_network();
    const auto r = Simulation(c).run();
    std::printf("%s", format_result(r).c_str());

    // Everything happened that the figures rely on.
    if (!sanitized()) {
        EXPECT_GT(r.leaves, 0u);
    }
    EXPECT_EQ(r.joins, r.leaves);
    EXPECT_GT(r.moves, 0u);
    EXPECT_GT(r.poisoned_sent, 0u);
    EXPECT_GT(r.stale_sent, 0u);
    ASSERT_FALSE(r.coverage.empty());

    // Eclipse, the rule that holds at any size: relayed news never moved a node to an endpoint it does
    // not hold, so no poisoned or replayed entry is verified.
    for (size_t p : {kV4, kV5}) {
        SCOPED_TRACE(p == kV4 ? "discv4" : "discv5");
        EXPECT_EQ(r.eclipse[p].poisoned_verified, 0u);
        EXPECT_EQ(r.eclipse[p].replayed_verified, 0u);
        EXPECT_GT(r.eclipse[p].adversary, 0u);  // they did get in: the table's rules, not their absence, hold them
    }
    // The sybils share one /24: at most 10 in a table (2 per bucket).
    EXPECT_LE(r.eclipse[kV4].sybil, 10 * r.eclipse[kV4].tables);
    EXPECT_LE(r.eclipse[kV5].sybil, 10 * r.eclipse[kV5].tables);
    check_amplification(r);
    if (sanitized()) return;  // the figures below are those of the 300-node network

    // Lookup convergence: measured 2026-12-04 (seed 1): discv4 80.9%, discv5 83.5% of the true 16
    // closest found (docs/performance.md); the adversaries' poisoned and replayed entries and their own
    // identities take some of the 16 places. Coverage: fill 78.9% and 82.6%, found 32.4% and 36.5%.
    for (size_t p : {kV4, kV5}) {
        SCOPED_TRACE(p == kV4 ? "discv4" : "discv5");
        const auto& l = r.lookup[p];
        EXPECT_GE(l.lookups, 20u);
        EXPECT_GE(l.found.mean, 0.70);
        EXPECT_GE(l.hops.median, 1);
        EXPECT_LE(l.hops.p90, 8);
        EXPECT_LT(l.millis.p90, 15000);
        // Coverage: the tables hold most of what their buckets could hold of the live nodes.
        EXPECT_GE(r.coverage.back().fill[p].mean, 0.60);
        EXPECT_GE(r.coverage.back().found[p].mean, 0.20);
    }

    // Eclipse: no honest table more than half adversarial (the most: 30.2%; mean 11.3% and 15.5%). In
    // smaller networks a node that restarted moments before the end can be (docs/performance.md).
    EXPECT_EQ(r.nodes_over_half, 0u);
    EXPECT_GT(r.nodes_measured, c.nodes / 2);
    for (size_t p : {kV4, kV5}) {
        SCOPED_TRACE(p == kV4 ? "discv4" : "discv5");
        EXPECT_EQ(r.eclipse[p].over_half, 0u);
        EXPECT_LT(r.eclipse[p].share.mean, 0.25);
    }
}

void check_amplification(const SimulationResult& r) {
    // Amplification from forged source addresses: what reaches the victim is at most what was sent,
    // per packet type, except discv4's Ping, which geth answers with a Pong and a Ping back (the ping
    // back bonds us with an unknown node): about 2.2 times its bytes (docs/performance.md).
    for (PacketClass t : {PacketClass::kV4FindNode, PacketClass::kV4EnrRequest, PacketClass::kV5Random,
                          PacketClass::kV5Whoareyou, PacketClass::kV5Handshake}) {
        SCOPED_TRACE(to_string(t));
        const auto& a = row(r.spoofed, t);
        EXPECT_GT(a.packets, 0u);
        EXPECT_LE(a.ratio(), 1.0);
    }
    EXPECT_EQ(row(r.spoofed, PacketClass::kV4FindNode).bytes_out, 0u);    // no endpoint proof, no answer
    EXPECT_EQ(row(r.spoofed, PacketClass::kV4EnrRequest).bytes_out, 0u);  // the same
    EXPECT_EQ(row(r.spoofed, PacketClass::kV5Handshake).bytes_out, 0u);   // answers no challenge
    EXPECT_EQ(row(r.spoofed, PacketClass::kV5Whoareyou).bytes_out, 0u);   // answers no request
    EXPECT_LE(row(r.spoofed, PacketClass::kV5Random).ratio(), 0.75);      // a WHOAREYOU is smaller
    EXPECT_LE(row(r.spoofed, PacketClass::kV4Ping).ratio(), 2.3);
    // And from real senders, the random packet that starts a handshake gets a smaller WHOAREYOU.
    EXPECT_LE(row(r.amplification, PacketClass::kV5Random).ratio(), 1.0);
}

// Two runs with the same seed take the same steps: every figure but wall time and memory is equal.
// The discv5 codecs draw their nonces, masking IVs, id-nonces and ephemeral keys from generators
// seeded by the simulation (CodecHooks), so even the bytes of every datagram repeat.
TEST(Simulation, SameSeedSameFigures) {
    SimulationConfig c;
    c.nodes = 40;
    c.seed = 7;
    c.duration = 90s;
    c.join_window = 20s;
    c.report_interval = 1min;
    c.lookup_samples = 10;
    c.churn_per_hour = 3;
    c.move_share = 0.1;
    c.spoof_rate = 5;
    const auto a = Simulation(c).run();
    const auto b = Simulation(c).run();
    EXPECT_GT(a.leaves, 0u);
    EXPECT_GT(a.moves, 0u);
    EXPECT_EQ(deterministic_figures(a), deterministic_figures(b));
    // Another seed is another network.
    c.seed = 8;
    const auto other = Simulation(c).run();
    EXPECT_NE(deterministic_figures(a), deterministic_figures(other));
}

}  // namespace
}  // namespace headerd::sim
