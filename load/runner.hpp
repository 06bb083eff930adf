#pragma once

// Runs `headerd load`: N synthetic clients, each its own RLPx session with its own node key on
// one of the worker threads, each walking the chain as its profile's client does, every reply
// verified and judged; the main thread collects a timeline point every second and prints status.
// docs/load.md describes the behaviour; report.hpp turns a RunResult into tables, JSON and HTML.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "core/chain_config.hpp"
#include "load/load_metrics.hpp"
#include "load/profile.hpp"
#include "load/stats.hpp"
#include "load/verify.hpp"
#include "p2p/connection.hpp"
#include "p2p/enode/node_key.hpp"
#include "p2p/net_metrics.hpp"

namespace headerd::load {

class ReferenceChain;

struct MixEntry {
    const ProfileSpec* profile{nullptr};
    double weight{0};
};

struct LoadConfig {
    std::vector<p2p::Enode> peers;  // clients are spread over them round-robin
    size_t clients{16};
    Clock::duration duration{std::chrono::seconds(30)};  // zero: until stop() or --requests
    std::optional<uint64_t> requests;                    // stop after this many requests in total
    std::vector<MixEntry> mix;
    std::optional<double> rate;  // open loop: requests/s in total; nullopt: closed loop
    Clock::duration ramp{};
    std::optional<uint32_t> depth;  // requests in flight per client instead of the profile's
    std::optional<uint64_t> eth;    // offer only this eth version
    const ReferenceChain* reference{nullptr};
    const ChainConfig* config{nullptr};  // the network the clients claim (Status)
    size_t workers{0};                   // 0: one per core
    uint64_t seed{1};
    size_t max_handshakes{64};  // connections in the handshake at once (all workers)
    p2p::SessionLimits limits;
    std::optional<Clock::duration> timeout;          // every request's timeout instead of the profile's
    Clock::duration drain{std::chrono::seconds(5)};  // at the end: wait this long for replies in flight
    ServeRules rules;
    LoadMetrics* metrics{nullptr};
    // The sessions' own meters (traffic per message; the tracker's RTT, in flight, lost, stale),
    // as in every headerd process; nullptr: off.
    const p2p::NetMetrics* net_metrics{nullptr};
    size_t max_failures{100};  // failures kept with their reasons
    // Every reply's RTT kept as a sample (RunResult::samples), up to this many; 0: none kept.
    size_t max_samples{0};
    // The local address the clients connect from (load --bind); unset: the system's choice.
    std::optional<boost::asio::ip::address> bind;
};

// What the server said about itself (the first client's session).
struct ServerInfo {
    std::string enode;
    std::string client_id;
    uint64_t eth_version{0};
    uint64_t head{0};
    Hash32 head_hash{};
};

inline constexpr size_t kMaxConnectErrorReasons = 16;

struct RunResult {
    std::vector<const ProfileSpec*> profile_specs;  // index -> profile
    std::vector<ProfileStats> profiles;
    std::vector<TimelinePoint> timeline;
    std::vector<FailureRecord> failures;
    uint64_t failures_seen{0};
    uint64_t connect_attempts{0};
    uint64_t connect_failures{0};
    // Why connections failed: each distinct reason (the first kMaxConnectErrorReasons) and how often.
    std::map<std::string, uint64_t> connect_errors;
    uint64_t clients_connected_max{0};
    std::optional<ServerInfo> server;
    double seconds{0};  // from the first client's start to the end of the counted window
    bool interrupted{false};
    // With LoadConfig::max_samples: every reply's RTT (the replies the histograms count), unless
    // more came than were kept.
    std::vector<RttSample> samples;
    bool samples_truncated{false};
};

// Live figures for the status line, once a second.
struct StatusLine {
    double t{0};
    uint64_t clients{0};
    uint64_t in_flight{0};
    TimelinePoint second;
    uint64_t errors_total{0};
};

class Runner {
  public:
    explicit Runner(LoadConfig config);
    ~Runner();
    Runner(const Runner&) = delete;
    Runner& operator=(const Runner&) = delete;

    // Runs to the end (duration, request count or stop()); calls on_second from this thread.
    RunResult run(const std::function<void(const StatusLine&)>& on_second);
    // Ends the run early (any thread, e.g. a signal handler's flag checked by the caller).
    void stop() noexcept { stop_requested_.store(true); }

    struct Impl;

  private:
    std::unique_ptr<Impl> impl_;
    std::atomic<bool> stop_requested_{false};
};

// Splits `clients` over the mix by weight (largest remainder; every profile with a weight > 0
// gets at least one client while clients last). Returns the profile of each client, in an order
// that keeps each fan-out group together.
std::vector<const ProfileSpec*> assign_profiles(const std::vector<MixEntry>& mix, size_t clients);

// Parses "--profile" text: "mix", or NAME[:WEIGHT],... (weight default 1).
Outcome<std::vector<MixEntry>> parse_mix(const std::string& text);

}  // namespace headerd::load
