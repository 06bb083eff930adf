#pragma once

// Amplification accounting for the discovery simulation (sim/simulation.hpp): what an honest node
// sends back for each datagram it did not ask for, by the kind of that datagram.
//
// Every honest node's services run on a MeteredTransport, a Transport around its SimTransport. A
// datagram it receives is classified (classify(): discv4 by its type byte, discv5 by the flag of
// its static header, which the receiver's node id unmasks) and counted; every datagram the node
// then sends to that datagram's source at the same virtual instant counts as its direct response
// (the discovery services answer synchronously, and a discv4 ping back is sent by a coroutine that
// runs before the virtual clock moves on). Datagrams from forged source addresses (the spoofers of
// sim/adversary.hpp) are counted apart.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <boost/asio/ip/udp.hpp>

#include "core/bytes.hpp"
#include "disc/env.hpp"
#include "disc/sim_network.hpp"
#include "disc/table.hpp"
#include "disc/transport.hpp"

namespace headerd::sim {

enum class PacketClass : uint8_t {
    kV4Ping = 0,
    kV4Pong,
    kV4FindNode,
    kV4Neighbors,
    kV4EnrRequest,
    kV4EnrResponse,
    kV5Random,     // flag 0 of exactly the size of a random packet (no session: it asks for WHOAREYOU)
    kV5Message,    // flag 0, any other size: a message over a session (a request or a response)
    kV5Whoareyou,  // flag 1
    kV5Handshake,  // flag 2
    kJunk,         // neither
    kCount_,
};
inline constexpr size_t kPacketClasses = static_cast<size_t>(PacketClass::kCount_);
const char* to_string(PacketClass c) noexcept;

// The size of a discv5 random packet: masking IV, static header, the source id, 20 random bytes.
inline constexpr size_t kV5RandomPacketSize = 16 + 23 + 32 + 20;

// What kind of datagram `datagram` is, sent to the node `receiver`.
PacketClass classify(ByteView datagram, const disc::NodeId& receiver);

// Per incoming class: datagrams, their bytes, the bytes sent to their source in direct response,
// and how many drew any response.
struct Tally {
    std::array<uint64_t, kPacketClasses> packets{};
    std::array<uint64_t, kPacketClasses> bytes_in{};
    std::array<uint64_t, kPacketClasses> bytes_out{};
    std::array<uint64_t, kPacketClasses> answered{};
};

struct Amplification {
    Tally regular;  // from honest and adversarial nodes (their own addresses)
    Tally spoofed;  // from forged source addresses
};

class MeteredTransport final : public disc::Transport {
  public:
    // `spoofed` tells whether a source address is a forged one.
    MeteredTransport(std::shared_ptr<disc::SimTransport> inner, disc::VirtualEnv& env, const disc::NodeId& self,
                     Amplification& tally, std::function<bool(const udp::endpoint&)> spoofed);
    ~MeteredTransport() override;
    MeteredTransport(const MeteredTransport&) = delete;
    MeteredTransport& operator=(const MeteredTransport&) = delete;

    void send(const udp::endpoint& to, ByteView datagram) override;
    udp::endpoint local_endpoint() const override { return inner_->local_endpoint(); }
    void start(Receiver receive) override;
    void close() override { inner_->close(); }

  private:
    struct Recent {
        udp::endpoint from;
        PacketClass cls;
        bool spoofed;
        bool answered;
    };
    void received(ByteView datagram, const udp::endpoint& from);

    std::shared_ptr<disc::SimTransport> inner_;
    disc::VirtualEnv& env_;
    disc::NodeId self_;
    Amplification& tally_;
    std::function<bool(const udp::endpoint&)> spoofed_;
    // The datagrams received at recent_at_ (a virtual instant): their sources' responses count.
    disc::Clock::time_point recent_at_{};
    std::vector<Recent> recent_;
};

}  // namespace headerd::sim
