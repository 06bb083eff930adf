#pragma once

// The discv4 wire format (devp2p discv4.md, EIP-8 and EIP-868): UDP datagrams of at most 1280
// bytes, each `hash || signature || type || rlp(data)`. The 65-byte recoverable signature is over
// keccak256(type || data) and names the sender (its public key is recovered from it); the hash,
// keccak256(signature || type || data), only makes a packet recognisable, and a Pong echoes the
// hash of the Ping it answers. Decoding follows EIP-8: extra list elements and bytes after the
// list are ignored, and a Ping of another version is read all the same. See docs/discovery.md.
//
// Sans-I/O: bytes in, bytes out. Checks that need a clock or a table (expiration, endpoint proof,
// low ports) belong to the service (disc/v4_udp.hpp).

#include <array>
#include <cstdint>
#include <optional>
#include <system_error>
#include <type_traits>
#include <variant>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "core/bytes.hpp"
#include "core/result.hpp"
#include "disc/enr.hpp"
#include "p2p/rlpx/secp256k1.hpp"

namespace headerd::disc::v4 {

inline constexpr size_t kMaxPacketSize = 1280;
inline constexpr size_t kHeaderSize = 32 + rlpx::kSignatureSize;
// Nodes per Neighbors packet: the most that fit 1280 bytes with IPv6 addresses and 5-digit ports
// (geth's v4wire.MaxNeighbors); a longer answer is split over several packets.
inline constexpr size_t kMaxNeighbors = 12;

enum class PacketType : uint8_t {
    kPing = 1,
    kPong = 2,
    kFindNode = 3,
    kNeighbors = 4,
    kEnrRequest = 5,
    kEnrResponse = 6,
};

enum class WireError {
    kTooSmall = 1,  // shorter than hash, signature and type
    kTooBig,        // longer than 1280 bytes
    kBadHash,       // the hash does not match the rest
    kBadSignature,  // no public key can be recovered from the signature
    kUnknownType,   // a packet type discv4 does not define
    kMalformed,     // the packet data is not the RLP its type expects
    kBadRecord,     // an ENRResponse whose record does not decode or verify
};

const std::error_category& wire_category() noexcept;
std::error_code make_error_code(WireError e) noexcept;

using NodeKey = std::array<uint8_t, rlpx::kPublicKeySize>;  // 64-byte X || Y, a node's id on the wire

// [ip, udp-port, tcp-port]. An ip of neither 4 nor 16 bytes decodes as the unspecified address,
// which no check accepts: geth keeps such a packet and refuses the node later.
struct Endpoint {
    boost::asio::ip::address ip;
    uint16_t udp{0};
    uint16_t tcp{0};
    bool operator==(const Endpoint&) const = default;
};

struct Ping {
    uint64_t version{4};
    Endpoint from;
    Endpoint to;
    uint64_t expiration{0};           // absolute UNIX time in seconds
    std::optional<uint64_t> enr_seq;  // EIP-868
    bool operator==(const Ping&) const = default;
};

struct Pong {
    Endpoint to;  // where the Ping came from, as the sender saw it
    Hash32 ping_hash{};
    uint64_t expiration{0};
    std::optional<uint64_t> enr_seq;
    bool operator==(const Pong&) const = default;
};

struct FindNode {
    NodeKey target{};
    uint64_t expiration{0};
    bool operator==(const FindNode&) const = default;
};

struct NeighborNode {
    Endpoint endpoint;
    NodeKey key{};
    bool operator==(const NeighborNode&) const = default;
};

struct Neighbors {
    std::vector<NeighborNode> nodes;
    uint64_t expiration{0};
    bool operator==(const Neighbors&) const = default;
};

struct EnrRequest {
    uint64_t expiration{0};
    bool operator==(const EnrRequest&) const = default;
};

struct EnrResponse {
    Hash32 request_hash{};
    std::optional<Enr> record;  // always set after decode; optional only because Enr has no empty state
};

using Packet = std::variant<Ping, Pong, FindNode, Neighbors, EnrRequest, EnrResponse>;

PacketType type_of(const Packet& p) noexcept;
const char* type_name(PacketType t) noexcept;

struct Decoded {
    Packet packet;
    rlpx::PublicKey sender;
    Hash32 hash{};  // the packet's hash: what a Pong or ENRResponse echoes
};

// What a datagram shows before its signer is recovered: size, hash and type checked (a hash and a
// byte: cheap), the signature not (a secp256k1 recovery: the costly part of a packet).
struct Frame {
    PacketType type{};
    Hash32 hash{};
};
Result<Frame> frame(ByteView datagram) noexcept;

// A packet whose data is decoded but whose signer is not yet known: a service checks what it can
// (expiration, the hash a reply echoes) before it pays for the recovery.
struct Unverified {
    Packet packet;
    Hash32 hash{};
};
// The data of a datagram frame() accepted, decoded (an ENRResponse's record verified).
Result<Unverified> decode_data(ByteView datagram, const Frame& f) noexcept;
// The signer of a datagram frame() accepted.
Result<rlpx::PublicKey> recover_sender(ByteView datagram) noexcept;

// frame(), decode_data() and recover_sender(): a whole packet.
Result<Decoded> decode(ByteView datagram) noexcept;

struct Encoded {
    Bytes datagram;
    Hash32 hash{};
};

// Signs and frames a packet. The caller keeps Neighbors at kMaxNeighbors nodes or fewer; the
// result is then at most 1280 bytes (an ENRResponse too, as records are at most 300 bytes).
Result<Encoded> encode(const rlpx::PrivateKey& key, const Packet& packet);

}  // namespace headerd::disc::v4

template <>
struct std::is_error_code_enum<headerd::disc::v4::WireError> : std::true_type {};
