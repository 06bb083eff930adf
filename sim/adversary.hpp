#pragma once

// The adversaries of the discovery simulation (sim/simulation.hpp, docs/discovery.md
// "Simulation"), written against the wire codecs directly (disc/v4wire.hpp, the v5::Codec of
// disc/v5wire.hpp) with keys of their own:
//
// - Adversary: one adversarial identity on both protocols. It answers Ping/PING (so it bonds), pings
//   back a node that pinged it, completes discv5 handshakes, pings honest nodes itself to get into
//   their tables, and answers FindNode/FINDNODE with what the Coalition makes: on discv4 the
//   adversary identities closest to the target mixed with the closest honest nodes at endpoints
//   the adversaries choose (S1 endpoint poisoning: Neighbors entries are not signed), on discv5
//   (whose records are signed) adversary records and stale-record replays: old records of honest
//   nodes that have since moved, with a lower seq and their former endpoint.
// - Sybils are Adversary identities whose addresses all lie in one /24.
// - Spoofer: sends requests whose source address is a victim's (in the simulated network it sits
//   at the victim's endpoint and counts what reaches it, never answering): the honest nodes'
//   answers then go to the victim.
//
// Everything runs on the simulation's one thread.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include <boost/asio/ip/udp.hpp>

#include "core/bytes.hpp"
#include "disc/enr.hpp"
#include "disc/env.hpp"
#include "disc/sim_network.hpp"
#include "disc/table.hpp"
#include "disc/v4wire.hpp"
#include "disc/v5wire.hpp"
#include "p2p/rlpx/secp256k1.hpp"
#include "sim/metering.hpp"

namespace headerd::sim {

using udp = boost::asio::ip::udp;

// An honest node as the adversaries know it (their crawl of the network).
struct HonestRef {
    disc::NodeId id{};
    disc::v4::NodeKey key{};
    udp::endpoint ep;
    const disc::Enr* record = nullptr;  // its current record
    bool v4 = false;                    // runs discv4 (not only its socket)
    bool v5 = false;
};

// What every adversary identity shares: the list of identities, the stale records, what they know of
// the honest nodes, and how they answer a lookup.
class Coalition {
  public:
    struct Member {
        disc::NodeId id{};
        disc::v4::NodeKey key{};
        udp::endpoint ep;
        Bytes record;  // its signed record (RLP)
    };

    void add_member(Member m);
    // An honest node's record it has since replaced by one with a higher seq and another endpoint.
    void add_stale(const disc::Enr& old);
    size_t members() const noexcept { return members_.size(); }
    size_t stale() const noexcept { return stale_.size(); }

    // Supplied by the simulation: the n honest discv4 nodes closest to a target, and a random honest
    // node of a protocol (nullptr when there is none).
    std::function<void(const disc::NodeId& target, size_t n, std::vector<const HonestRef*>& out)> closest_honest;
    std::function<const HonestRef*(bool v5, std::mt19937_64& rng)> random_honest;

    // A discv4 FindNode answer towards `target`: the 16 closest of the adversary identities and of the
    // honest nodes, the honest ones at adversary endpoints (a random adversary's IP, a random port).
    std::vector<disc::v4::NeighborNode> neighbors(const disc::NodeId& target, std::mt19937_64& rng);
    // A discv5 NODES answer of `responder` for `distances`: stale honest records and adversary
    // records at those distances from it, at most 16, half of each where there are enough.
    std::vector<Bytes> records_at(const disc::NodeId& responder, const std::vector<uint64_t>& distances,
                                  std::mt19937_64& rng);

    // What the answers carried.
    uint64_t poisoned_sent = 0;  // honest nodes at adversary endpoints (discv4)
    uint64_t members_sent = 0;   // adversary identities (both)
    uint64_t stale_sent = 0;     // stale honest records (discv5)

  private:
    void index();

    std::vector<Member> members_;
    std::vector<disc::NodeId> sorted_ids_;  // the members' ids, ascending, for neighbors()
    std::vector<size_t> sorted_index_;      // the member of each
    bool indexed_{false};
    std::vector<Bytes> stale_;
    std::vector<disc::NodeId> stale_ids_;
};

struct AdversaryStats {
    uint64_t pings_sent = 0;
    uint64_t findnodes_answered = 0;
    uint64_t handshakes = 0;  // discv5 handshakes completed with it (either side)
};

class Adversary {
  public:
    Adversary(disc::VirtualEnv& env, std::shared_ptr<disc::SimTransport> transport, Coalition& coalition,
              const rlpx::PrivateKey& key, disc::Enr record, uint64_t seed, size_t session_capacity);
    ~Adversary();
    Adversary(const Adversary&) = delete;
    Adversary& operator=(const Adversary&) = delete;

    void start();
    // Pings `target` on each protocol it runs, so that the target adds us once we answered its ping
    // back (discv4) or completed the handshake (discv5).
    void ping(const HonestRef& target);

    const disc::NodeId& id() const noexcept { return id_; }
    const udp::endpoint& endpoint() const noexcept { return ep_; }
    const AdversaryStats& stats() const noexcept { return stats_; }

  private:
    void receive(ByteView datagram, const udp::endpoint& from);
    void on_v4(ByteView datagram, const disc::v4::Frame& frame, const udp::endpoint& from);
    void on_v5(ByteView datagram, const udp::endpoint& from);
    void send_v4(const udp::endpoint& to, const disc::v4::Packet& p);
    void send_v5(const disc::NodeId& id, const udp::endpoint& to, const disc::v5::Message& m);
    void v4_ping(const udp::endpoint& to);
    uint64_t expiration() const;
    disc::v5::RequestId request_id();

    struct PendingPing {
        disc::v5::Nonce nonce{};
        disc::NodeId id{};
        udp::endpoint to;
        disc::Enr record;
        disc::v5::Message message;
        disc::Clock::time_point sent;
    };

    disc::VirtualEnv& env_;
    std::shared_ptr<disc::SimTransport> transport_;
    Coalition& coalition_;
    rlpx::PrivateKey key_;
    disc::Enr record_;
    disc::NodeId id_;
    udp::endpoint ep_;
    std::shared_ptr<std::mt19937_64> rng_;
    disc::v5::Codec codec_;
    std::deque<PendingPing> pending_;  // our discv5 PINGs waiting for their WHOAREYOU, oldest first
    std::unordered_map<uint64_t, disc::Clock::time_point> pinged_;  // discv4: when we last pinged an endpoint
    AdversaryStats stats_;
};

// Spoofed-source requests. It sits at the victim's endpoint: what the honest nodes send in answer
// arrives there and is counted, never answered.
class Spoofer {
  public:
    Spoofer(disc::VirtualEnv& env, std::shared_ptr<disc::SimTransport> at_victim, const rlpx::PrivateKey& key,
            disc::Enr record, uint64_t seed);
    ~Spoofer();
    Spoofer(const Spoofer&) = delete;
    Spoofer& operator=(const Spoofer&) = delete;

    // One spoofed datagram of this class to `target` (v4 Ping, FindNode, ENRRequest; v5 random packet,
    // WHOAREYOU, handshake). Returns false when the target does not run the protocol.
    bool send(const HonestRef& target, PacketClass kind);

    const udp::endpoint& victim() const noexcept { return victim_; }
    std::array<uint64_t, kPacketClasses> sent_packets{};
    std::array<uint64_t, kPacketClasses> sent_bytes{};
    uint64_t victim_packets = 0;  // what reached the victim
    uint64_t victim_bytes = 0;

  private:
    disc::VirtualEnv& env_;
    std::shared_ptr<disc::SimTransport> transport_;
    rlpx::PrivateKey key_;
    udp::endpoint victim_;
    std::shared_ptr<std::mt19937_64> rng_;
    disc::v5::Codec codec_;
};

// discv5 codec hooks whose randomness comes from `rng` (so a simulation replays), on `env`'s clock.
disc::v5::CodecOptions deterministic_codec(std::shared_ptr<std::mt19937_64> rng, disc::Env& env,
                                           size_t session_capacity);

// geth's lookupDistances: the target's distance from dest, then one more and one less, three in all.
std::vector<unsigned> lookup_distances(const disc::NodeId& target, const disc::NodeId& dest);

// Positions in `sorted` (ascending ids) of the `n` ids closest to `target`, nearest first. The XOR
// closest share the longest prefix with the target, so they lie around its place in the sorted
// order: a window of 8n ids on each side holds them unless the ids are very unevenly spread (an
// adversary's approximate view is good enough).
std::vector<size_t> closest_positions(const std::vector<disc::NodeId>& sorted, const disc::NodeId& target, size_t n);

// The key for an endpoint in the simulation's maps (IPv4 only).
inline uint64_t endpoint_key(const udp::endpoint& e) {
    const auto a = e.address();
    const uint64_t ip = a.is_v4() ? a.to_v4().to_uint() : 0;
    return (ip << 16) | e.port();
}

}  // namespace headerd::sim
