#include "sim/metering.hpp"

#include <algorithm>
#include <cstring>

#include "disc/v4wire.hpp"
#include "disc/v5crypto.hpp"
#include "disc/v5wire.hpp"

namespace headerd::sim {

namespace v4 = disc::v4;
namespace v5 = disc::v5;

const char* to_string(PacketClass c) noexcept {
    switch (c) {
        case PacketClass::kV4Ping:
            return "v4 Ping";
        case PacketClass::kV4Pong:
            return "v4 Pong";
        case PacketClass::kV4FindNode:
            return "v4 FindNode";
        case PacketClass::kV4Neighbors:
            return "v4 Neighbors";
        case PacketClass::kV4EnrRequest:
            return "v4 ENRRequest";
        case PacketClass::kV4EnrResponse:
            return "v4 ENRResponse";
        case PacketClass::kV5Random:
            return "v5 random packet";
        case PacketClass::kV5Message:
            return "v5 message (session)";
        case PacketClass::kV5Whoareyou:
            return "v5 WHOAREYOU";
        case PacketClass::kV5Handshake:
            return "v5 handshake";
        case PacketClass::kJunk:
            return "junk";
        case PacketClass::kCount_:
            break;
    }
    return "unknown";
}

PacketClass classify(ByteView datagram, const disc::NodeId& receiver) {
    if (auto f = v4::frame(datagram)) {
        switch (f->type) {
            case v4::PacketType::kPing:
                return PacketClass::kV4Ping;
            case v4::PacketType::kPong:
                return PacketClass::kV4Pong;
            case v4::PacketType::kFindNode:
                return PacketClass::kV4FindNode;
            case v4::PacketType::kNeighbors:
                return PacketClass::kV4Neighbors;
            case v4::PacketType::kEnrRequest:
                return PacketClass::kV4EnrRequest;
            case v4::PacketType::kEnrResponse:
                return PacketClass::kV4EnrResponse;
        }
        return PacketClass::kJunk;
    }
    if (datagram.size() < v5::kMinPacketSize || datagram.size() > v5::kMaxPacketSize) return PacketClass::kJunk;
    // The static header, unmasked with the receiver's id as the codec does (Codec::packet_kind).
    v5::MaskingIv iv;
    std::memcpy(iv.data(), datagram.data(), iv.size());
    std::array<uint8_t, v5::kStaticHeaderSize> h;
    std::memcpy(h.data(), datagram.data() + v5::kMaskingIvSize, h.size());
    if (!v5::apply_mask(receiver, iv, h)) return PacketClass::kJunk;
    static constexpr std::array<uint8_t, 6> kProtocolId{'d', 'i', 's', 'c', 'v', '5'};
    if (!std::equal(kProtocolId.begin(), kProtocolId.end(), h.begin())) return PacketClass::kJunk;
    switch (h[8]) {
        case 0:
            return datagram.size() == kV5RandomPacketSize ? PacketClass::kV5Random : PacketClass::kV5Message;
        case 1:
            return PacketClass::kV5Whoareyou;
        case 2:
            return PacketClass::kV5Handshake;
        default:
            return PacketClass::kJunk;
    }
}

MeteredTransport::MeteredTransport(std::shared_ptr<disc::SimTransport> inner, disc::VirtualEnv& env,
                                   const disc::NodeId& self, Amplification& tally,
                                   std::function<bool(const udp::endpoint&)> spoofed)
    : inner_(std::move(inner)), env_(env), self_(self), tally_(tally), spoofed_(std::move(spoofed)) {}

// The receiver handed to the SimTransport refers to this object: nothing may arrive after it.
MeteredTransport::~MeteredTransport() { inner_->close(); }

void MeteredTransport::start(Receiver receive) {
    inner_->start([this, receive = std::move(receive)](ByteView datagram, const udp::endpoint& from) {
        received(datagram, from);
        receive(datagram, from);
    });
}

void MeteredTransport::received(ByteView datagram, const udp::endpoint& from) {
    const PacketClass cls = classify(datagram, self_);
    const bool spoofed = spoofed_ && spoofed_(from);
    Tally& t = spoofed ? tally_.spoofed : tally_.regular;
    const auto i = static_cast<size_t>(cls);
    ++t.packets[i];
    t.bytes_in[i] += datagram.size();
    const auto now = env_.now();
    if (now != recent_at_) {
        recent_.clear();
        recent_at_ = now;
    }
    // The latest datagram from a source at this instant is the one its responses answer.
    std::erase_if(recent_, [&](const Recent& r) { return r.from == from; });
    recent_.push_back(Recent{from, cls, spoofed, false});
}

void MeteredTransport::send(const udp::endpoint& to, ByteView datagram) {
    if (env_.now() == recent_at_) {
        for (auto& r : recent_) {
            if (r.from != to) continue;
            Tally& t = r.spoofed ? tally_.spoofed : tally_.regular;
            const auto i = static_cast<size_t>(r.cls);
            t.bytes_out[i] += datagram.size();
            if (!r.answered) {
                r.answered = true;
                ++t.answered[i];
            }
            break;
        }
    }
    inner_->send(to, datagram);
}

}  // namespace headerd::sim
