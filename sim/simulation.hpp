#pragma once

// A deterministic simulation of node discovery at internet scale, in one process on virtual time
// (docs/discovery.md, "Simulation"; figures in docs/performance.md, "Discovery simulation").
//
// Every honest node is a real V4Service and/or V5Service (disc/) on a SimTransport of one
// SimNetwork (disc/sim_network.hpp: per-pair log-normal latency, loss, NAT filtering), with a
// record signed by its own key; keys, addresses, latencies and every random choice derive from the
// seed, and time is a VirtualEnv's (disc/env.hpp), so a run with the same configuration takes the
// same steps. The network:
//
// - honest nodes running discv4 only, discv5 only (discv4 passive on the socket, as
//   `--discovery v5` does) or both; a share behind NATs (an endpoint-dependent filter, and a
//   record without an address); they join over the first `join_window` and bootstrap from
//   `bootnodes` of them;
// - churn: honest nodes leave (stop, transport closed) and as many join with fresh keys; some move
//   (re-sign their record with a higher seq at a new address, keeping their node database);
// - adversaries (sim/adversary.hpp): identities of their own on random addresses and sybils on one
//   /24, poisoning discv4 endpoints and replaying stale discv5 records; spoofers sending requests
//   with victims' source addresses.
//
// Measured: lookup convergence (share of the true 16 closest found, hops, virtual time), coverage
// (the share of live nodes each node's table found, over time), eclipse (adversarial table
// entries), amplification per incoming packet type (sim/metering.hpp), wall time and peak RSS.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "disc/sim_network.hpp"
#include "sim/metering.hpp"

namespace headerd::sim {

struct SimulationConfig {
    size_t nodes = 500;  // all nodes at start, honest and adversarial
    uint64_t seed = 1;
    double v4_only = 0.25;  // shares of the honest nodes; the rest run both protocols
    double v5_only = 0.25;
    double nat = 0.2;             // honest nodes behind a NAT (never the bootnodes)
    double loss = 0.01;           // of each datagram
    double churn_per_hour = 0.5;  // honest nodes leaving per hour, as a share of them; each replaced by a new one
    double move_share = 0.05;     // honest public nodes that move once (new address, seq + 1)
    double adversaries = 0.1;     // share of `nodes`
    double sybil_share = 0.5;     // of the adversaries, on one /24
    size_t spoofers = 4;          // senders of spoofed-source requests
    double spoof_rate = 10;       // datagrams per second, each
    size_t bootnodes = 4;         // honest, public, both protocols, never leaving
    size_t lookup_samples = 100;  // honest nodes running a measured lookup at the end
    std::chrono::seconds duration{30 * 60};
    std::chrono::seconds join_window{120};             // the initial nodes start within it
    std::chrono::seconds coverage_interval{60};        // tables scanned for nodes found
    std::chrono::seconds report_interval{5 * 60};      // coverage reported every (and at the end)
    std::chrono::seconds adversary_ping_interval{10};  // each adversary pings an honest node
    // The services' timers: geth's values unless changed (docs/discovery.md).
    std::chrono::seconds refresh_interval{30 * 60};
    std::chrono::milliseconds revalidate_interval{3000};
    std::chrono::milliseconds v4_response_timeout{500};
    std::chrono::milliseconds v5_response_timeout{700};
    size_t v5_session_capacity = 1024;  // discv5 sessions per node (geth: 1024)
    size_t node_db_max_nodes = 10000;   // discv4 node database bound per node
    disc::SimNetworkConfig network;     // latency; its loss and seed come from `loss` and `seed`
    bool progress = false;              // a line on stderr per virtual minute
};

struct Quantiles {
    size_t n = 0;
    double mean = 0;
    double p10 = 0;
    double median = 0;
    double p90 = 0;
    double max = 0;
};
Quantiles quantiles(std::vector<double> values);

// Index 0: discv4, 1: discv5.
inline constexpr size_t kV4 = 0;
inline constexpr size_t kV5 = 1;

struct LookupFigures {
    size_t lookups = 0;
    size_t truth = 0;  // live nodes the protocol can hold when the lookups started (discv5: with an address)
    Quantiles found;   // share of the true 16 closest (at their true endpoints) in the result
    Quantiles hops;    // the query depth: seeds from the table are hop 1, a node first named by an answer from hop k is
                       // hop k + 1
    Quantiles queries;  // FindNode/FINDNODE queries sent
    Quantiles millis;   // virtual time of the lookup
};

struct CoveragePoint {
    double minutes = 0;
    std::array<size_t, 2> live{};  // live honest nodes of the protocol its tables can hold (discv5: with an address)
    std::array<Quantiles, 2> found{};  // per node: share of them its table has held at their true endpoint
    std::array<Quantiles, 2> fill{};   // per node: live correct entries / the most its buckets could hold of them
};

struct EclipseFigures {
    size_t tables = 0;     // honest live nodes' tables of the protocol
    size_t over_half = 0;  // more than half adversarial
    Quantiles share;       // adversarial share per table
    uint64_t entries = 0;
    uint64_t adversary = 0;          // adversary identities
    uint64_t sybil = 0;              // of those, on the sybil /24
    uint64_t poisoned = 0;           // honest ids at an endpoint that was never theirs
    uint64_t poisoned_verified = 0;  // of those, with liveness above 0 (must be 0)
    uint64_t stale = 0;              // honest ids at a former endpoint (the node moved)
    uint64_t replayed_verified = 0;  // stale entries added after the move with liveness above 0 (must be 0)
    uint64_t dead = 0;               // honest nodes that left
    uint64_t nat = 0;                // honest nodes behind a NAT (at their NAT's endpoint)
};

// One of the most adversarial honest tables at the end.
struct EclipseCase {
    uint32_t node = 0;  // the honest node's index
    size_t protocol = 0;
    bool nat = false;
    double minutes_up = 0;  // since it started (or moved)
    size_t entries = 0;
    size_t adversarial = 0;
    size_t verified = 0;              // entries with liveness above 0
    size_t verified_adversarial = 0;  // of those, adversarial
};

struct AmplificationRow {
    PacketClass type{};
    uint64_t packets = 0;
    uint64_t answered = 0;
    uint64_t bytes_in = 0;
    uint64_t bytes_out = 0;
    double ratio() const { return bytes_in ? static_cast<double>(bytes_out) / static_cast<double>(bytes_in) : 0; }
};

struct SimulationResult {
    SimulationConfig config;
    size_t honest = 0;  // at start
    size_t adversaries = 0;
    size_t sybils = 0;
    uint64_t joins = 0;  // after start (churn)
    uint64_t leaves = 0;
    uint64_t moves = 0;
    size_t live_at_end = 0;
    std::array<LookupFigures, 2> lookup{};
    std::vector<CoveragePoint> coverage;
    std::array<EclipseFigures, 2> eclipse{};
    size_t nodes_over_half = 0;  // honest nodes with a table more than half adversarial
    size_t nodes_measured = 0;
    std::vector<EclipseCase> worst;               // the 5 most adversarial tables, most first
    std::vector<AmplificationRow> amplification;  // unsolicited datagrams from nodes' own addresses
    std::vector<AmplificationRow> spoofed;        // from forged source addresses
    uint64_t spoofed_sent_bytes = 0;              // what the spoofers sent
    uint64_t victim_bytes = 0;                    // what reached their victims
    uint64_t poisoned_sent = 0;                   // honest nodes at adversary endpoints in adversaries' Neighbors
    uint64_t stale_sent = 0;                      // stale records in adversaries' NODES
    disc::SimNetworkStats network;
    std::array<uint64_t, 3> traffic_packets{};  // sent by honest nodes, adversaries, spoofers
    std::array<uint64_t, 3> traffic_bytes{};
    uint64_t events = 0;
    double virtual_seconds = 0;
    double wall_seconds = 0;
    double cpu_seconds = 0;    // user + system time of the process during the run (the machine may be shared)
    double setup_seconds = 0;  // of wall_seconds: keys and records
    long peak_rss_kb = 0;
};

class Simulation {
  public:
    explicit Simulation(SimulationConfig config);
    ~Simulation();
    Simulation(const Simulation&) = delete;
    Simulation& operator=(const Simulation&) = delete;

    // Builds the network, runs it for config.duration of virtual time, measures. Once.
    SimulationResult run();

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// The figures as tables (text), for the benchmark and the test's log.
std::string format_result(const SimulationResult& r);
// Every figure that depends on the seed only (not wall time or memory): two runs with the same
// configuration give the same text.
std::string deterministic_figures(const SimulationResult& r);

}  // namespace headerd::sim
