#pragma once

// A simulated UDP network on virtual time (disc/env.hpp), for the discovery services' virtual-time
// tests and the simulation of bench/disc_sim.cpp: every node gets a SimTransport at an endpoint
// of its own, and a datagram arrives after the link's latency unless it is lost. Nothing here
// touches a socket.
//
// - Latency: each pair of endpoints has its own one-way latency, drawn once from a log-normal
//   distribution (median `median_latency`, spread `latency_sigma`, clipped to [min, max]), plus
//   a uniform jitter per datagram: a realistic internet spread of tens to hundreds of ms.
// - Loss: each datagram is lost with probability `loss`.
// - NAT: a node behind a NAT sends from its endpoint, but a datagram reaches it only from an
//   endpoint it sent to within `nat_timeout` (an endpoint-dependent filter, as a home router's);
//   it has no reachable address of its own.
// - Interception: a test or a simulation may look at (and drop) every datagram first.
//
// Everything runs on the VirtualEnv's thread. Datagrams in flight to a transport that closed are
// dropped.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <unordered_map>

#include "disc/env.hpp"
#include "disc/transport.hpp"

namespace headerd::disc {

struct SimNetworkConfig {
    std::chrono::milliseconds median_latency{60};
    double latency_sigma = 0.6;  // of the log-normal distribution: 60 ms median gives ~20..250 ms
    std::chrono::milliseconds min_latency{5};
    std::chrono::milliseconds max_latency{600};
    std::chrono::milliseconds jitter{5};
    double loss = 0;
    std::chrono::seconds nat_timeout{30};
    uint64_t seed = 1;
};

struct SimNetworkStats {
    uint64_t sent = 0;
    uint64_t delivered = 0;
    uint64_t lost = 0;
    uint64_t unreachable = 0;  // nobody at the endpoint (left, or never there)
    uint64_t filtered = 0;     // a NAT refused it
    uint64_t bytes = 0;
};

class SimNetwork;

class SimTransport final : public Transport {
  public:
    SimTransport(SimNetwork& net, udp::endpoint at, bool behind_nat) : net_(&net), at_(at), behind_nat_(behind_nat) {}
    void send(const udp::endpoint& to, ByteView datagram) override;
    udp::endpoint local_endpoint() const override { return at_; }
    void start(Receiver receive) override { receive_ = std::move(receive); }
    void close() override;
    bool behind_nat() const noexcept { return behind_nat_; }

  private:
    friend class SimNetwork;
    SimNetwork* net_;
    udp::endpoint at_;
    bool behind_nat_;
    bool closed_{false};
    Receiver receive_;
    // Where a NAT lets datagrams in from: endpoint key -> when we last sent there.
    std::unordered_map<uint64_t, Clock::time_point> opened_;
};

class SimNetwork {
  public:
    using udp = boost::asio::ip::udp;
    // Sees each datagram as it is sent (from, to, bytes); returns false to drop it.
    using Interceptor = std::function<bool(const udp::endpoint&, const udp::endpoint&, ByteView)>;

    SimNetwork(VirtualEnv& env, SimNetworkConfig config = {});

    // A transport at `at` (IPv4), until it closes. An endpoint held by an open transport is refused
    // (nullptr).
    std::shared_ptr<SimTransport> attach(const udp::endpoint& at, bool behind_nat = false);
    // The one-way latency between two endpoints, without jitter.
    Clock::duration latency(const udp::endpoint& a, const udp::endpoint& b) const;
    const SimNetworkStats& stats() const noexcept { return stats_; }
    Interceptor intercept;

  private:
    friend class SimTransport;
    static uint64_t key(const udp::endpoint& e);
    void send(SimTransport& from, const udp::endpoint& to, ByteView datagram);
    void deliver(const udp::endpoint& from, const udp::endpoint& to, const Bytes& datagram);

    VirtualEnv& env_;
    SimNetworkConfig config_;
    std::mt19937_64 rng_;
    std::unordered_map<uint64_t, std::weak_ptr<SimTransport>> at_;
    SimNetworkStats stats_;
};

}  // namespace headerd::disc
