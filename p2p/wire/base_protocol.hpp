#pragma once

// devp2p base protocol "p2p" version 5: message ids, Hello, capability negotiation, Disconnect,
// Ping/Pong. Sans-I/O: payloads in, payloads out; the session owns sockets, timers and snappy
// switching. Wire layouts and the rules applied here: docs/wire.md.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include "core/bytes.hpp"
#include "core/result.hpp"

namespace headerd::p2p {

inline constexpr uint64_t kBaseProtocolVersion = 5;
// Ids 0x00..0x0f belong to the base protocol; the first capability starts right after.
inline constexpr uint64_t kBaseProtocolLength = 16;
// Hello is the only message read before the peer is known; geth caps it at 2 KiB too.
inline constexpr size_t kMaxHelloSize = 2048;

enum class BaseMessageId : uint8_t { kHello = 0x00, kDisconnect = 0x01, kPing = 0x02, kPong = 0x03 };
// The same ids as the message ids Connection reads and writes.
inline constexpr uint64_t kHelloId = static_cast<uint64_t>(BaseMessageId::kHello);
inline constexpr uint64_t kDisconnectId = static_cast<uint64_t>(BaseMessageId::kDisconnect);
inline constexpr uint64_t kPingId = static_cast<uint64_t>(BaseMessageId::kPing);
inline constexpr uint64_t kPongId = static_cast<uint64_t>(BaseMessageId::kPong);

using NodeId = std::array<uint8_t, 64>;  // uncompressed secp256k1 public key without the 0x04 prefix

enum class BaseProtocolError {
    kHelloTooLarge = 1,    // Hello payload above kMaxHelloSize
    kMissingField,         // Hello list ends before the node id
    kBadCapability,        // a capability that is not [name, version]
    kBadNodeIdLength,      // node id not 64 bytes
    kZeroNodeId,           // node id all zero
    kIncompatibleVersion,  // peer speaks p2p < 5 (no snappy), which headerd does not implement
    kNoSharedCapability,   // no capability name and version in common
    kMalformedDisconnect,  // a Disconnect payload none of the lenient forms matches
};

const std::error_category& base_protocol_category() noexcept;
std::error_code make_error_code(BaseProtocolError e) noexcept;

// ---- message id ---------------------------------------------------------------------------------

// The message id prefixes every frame as an RLP integer: Hello (0) is the byte 0x80, ids 1..0x7f
// are the byte itself.
void encode_message_id(Bytes& out, uint64_t id);
// Consumes the id from the front of the frame data; rlp::DecodeError on a malformed id (0x00 is a
// non-canonical zero and is refused, as geth does).
Result<uint64_t> decode_message_id(ByteView& frame_data) noexcept;

// ---- Hello --------------------------------------------------------------------------------------

struct Capability {
    std::string name;  // compared byte for byte, case-sensitive
    uint64_t version{0};
    bool operator==(const Capability&) const = default;
};

// [version, client id, [[name, version], ...], listen port, node id (64 bytes), ...]
struct Hello {
    uint64_t version{kBaseProtocolVersion};
    std::string client_id;
    std::vector<Capability> capabilities;
    uint64_t listen_port{0};  // legacy; geth sends 0 and nobody reads it
    NodeId node_id{};

    void encode(Bytes& out) const;
    // Elements after the node id are ignored (EIP-8 forward compatibility) but must be well-formed
    // RLP items. The payload is refused above kMaxHelloSize before anything is parsed. The peer's
    // version is not checked here (see negotiate).
    static Result<Hello> decode(ByteView payload) noexcept;
    bool operator==(const Hello&) const = default;
};

// ---- capability negotiation ---------------------------------------------------------------------

// A protocol version this node offers, with the size of its message-id space.
struct ProtocolOffer {
    std::string_view name;
    uint64_t version{0};
    uint64_t length{0};
};

// What headerd offers: eth/68 through eth/72, each with the size of its message-id space
// (eth::message_space; the test checks they agree). Negotiation keeps the highest version both
// sides list: geth >= 1.17.1 (eth/69..72) gets eth/72, a peer speaking only eth/68 still gets 68.
inline constexpr std::array<ProtocolOffer, 5> kEthOffers{
    {{"eth", 68, 17}, {"eth", 69, 18}, {"eth", 70, 18}, {"eth", 71, 20}, {"eth", 72, 22}}};

// The capabilities of our Hello for a set of offers, in (name, version) order as geth sends them.
std::vector<Capability> capabilities_of(std::span<const ProtocolOffer> offers);

struct SharedCapability {
    std::string name;
    uint64_t version{0};
    uint64_t offset{0};  // first absolute message id
    uint64_t length{0};  // ids offset .. offset+length-1
    bool operator==(const SharedCapability&) const = default;
};

// The capabilities both sides list (same name and version), only the highest shared version per
// name, sorted by name, with consecutive id ranges from kBaseProtocolLength. Fails with
// kIncompatibleVersion if the remote speaks p2p < 5, kNoSharedCapability if nothing is shared.
Result<std::vector<SharedCapability>> negotiate(std::span<const ProtocolOffer> ours, const Hello& remote);

// ---- Disconnect ---------------------------------------------------------------------------------

// Any byte value may arrive; the named ones are those devp2p defines.
enum class DisconnectReason : uint8_t {
    kRequested = 0x00,
    kNetworkError = 0x01,
    kProtocolBreach = 0x02,
    kUselessPeer = 0x03,
    kTooManyPeers = 0x04,
    kAlreadyConnected = 0x05,
    kIncompatibleVersion = 0x06,
    kInvalidIdentity = 0x07,
    kQuitting = 0x08,
    kUnexpectedIdentity = 0x09,
    kConnectedToSelf = 0x0a,
    kPingTimeout = 0x0b,
    kSubprotocolError = 0x10,
};

// "too many peers", ...; "unknown" for a code devp2p does not define.
std::string_view to_string(DisconnectReason r) noexcept;

// [reason], e.g. c1 04.
void encode_disconnect(Bytes& out, DisconnectReason r);

// Lenient, because peers in the wild send every variant: the payload may be snappy-compressed or
// not (Nethermind sends it raw after Hello), so snappy is tried first and the raw bytes second;
// each may be [reason], a bare integer (04, or 80 for 0), [] or nothing at all (both read as
// kRequested). kMalformedDisconnect when no form matches. Allocates nothing.
Result<DisconnectReason> decode_disconnect(ByteView payload) noexcept;

// ---- Ping / Pong --------------------------------------------------------------------------------

// Both carry the empty list c0. Their payload is ignored on receipt, as geth does.
inline constexpr uint8_t kEmptyListByte = 0xc0;
inline void encode_ping(Bytes& out) { out.push_back(kEmptyListByte); }
inline void encode_pong(Bytes& out) { out.push_back(kEmptyListByte); }

}  // namespace headerd::p2p

template <>
struct std::is_error_code_enum<headerd::p2p::BaseProtocolError> : std::true_type {};
