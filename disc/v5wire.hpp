#pragma once

// The discv5.1 wire protocol (devp2p discv5-wire.md and discv5-theory.md), sans-I/O: the messages
// (PING, PONG, FINDNODE, NODES, TALKREQ, TALKRESP) and their RLP, the three packet kinds (ordinary
// message, WHOAREYOU, handshake), and a Codec that owns the local key and record, the sessions and
// the pending handshake challenges. A UDP service calls Codec::decode on every datagram and
// Codec::encode* for every datagram it sends; the codec never touches a socket or a clock of its
// own (time and randomness are injectable, see CodecHooks). It does what geth's
// p2p/discover/v5wire does; docs/discovery.md ("discv5.1 wire") lists the constants and choices.
//
// A packet is masking-iv (16) || masked(static-header (23) || authdata) || message, where
// static-header = "discv5" || version (2) || flag (1) || nonce (12) || authdata-size (2) and the
// message is AES-128-GCM ciphertext with the unmasked masking-iv || static-header || authdata as
// associated data. Not safe for concurrent use: one codec per UDP socket, used from one strand.

#include <array>
#include <chrono>
#include <compare>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <optional>
#include <span>
#include <system_error>
#include <type_traits>
#include <variant>
#include <vector>

#include "core/bytes.hpp"
#include "core/result.hpp"
#include "disc/enr.hpp"
#include "disc/v5crypto.hpp"
#include "p2p/rlpx/secp256k1.hpp"

namespace headerd::disc::v5 {

// ---- constants (the spec's, as geth has them) ---------------------------------------------------

inline constexpr size_t kMinPacketSize = 63;    // masking-iv + static header + the smallest authdata
inline constexpr size_t kMaxPacketSize = 1280;  // the IPv6 minimum MTU: a datagram no link splits
inline constexpr size_t kStaticHeaderSize = 23;
inline constexpr size_t kHeaderStart = kMaskingIvSize + kStaticHeaderSize;  // where authdata starts
// Non-WHOAREYOU packets carry at least this much after the static header: 32 bytes of authdata
// (the source id) and a 16-byte GCM tag.
inline constexpr size_t kMinMessageSize = 48;
inline constexpr uint16_t kProtocolVersion = 1;
inline constexpr size_t kMaxRequestIdSize = 8;
inline constexpr size_t kIdNonceSize = 16;
// A random packet (sent to provoke WHOAREYOU when there is no session) has this much random
// "ciphertext", as geth's.
inline constexpr size_t kRandomMessageSize = 20;
// How long a sent WHOAREYOU waits for its handshake (geth: handshakeTimeout).
inline constexpr std::chrono::milliseconds kHandshakeTimeout{1000};
// Sessions kept, least recently used dropped first (geth: NewSessionCache(1024, ...)).
inline constexpr size_t kDefaultSessionCapacity = 1024;
// Pending WHOAREYOU challenges kept, the oldest dropped first (headerd's own: geth's map has no
// bound, so a flood of packets from forged ids would grow it for a handshake timeout).
inline constexpr size_t kDefaultChallengeCapacity = 4096;
// The most NODES packets a requester waits for, whatever `total` says (geth:
// totalNodesResponseLimit); see Nodes::expected_packets.
inline constexpr uint8_t kMaxNodesPackets = 5;

using IdNonce = std::array<uint8_t, kIdNonceSize>;

enum class WireError {
    kPacketTooShort = 1,   // below 63 bytes
    kPacketTooBig,         // above 1280 bytes (decoding, or a message too big to send)
    kBadProtocolId,        // static header does not start with "discv5": not discv5, or not for us
    kBadVersion,           // version below 1
    kBadFlag,              // flag other than 0, 1, 2
    kMessageTooShort,      // a message or handshake packet with under 48 bytes after its header
    kBadAuthSize,          // authdata size beyond the packet or wrong for the flag
    kUnexpectedHandshake,  // a handshake with no pending WHOAREYOU for (id, ip:port): late or replayed
    kBadEphemeralKey,      // handshake ephemeral key is not a compressed point on the curve
    kNoRecord,             // handshake without a record when we have none for the sender
    kBadRecord,            // handshake record does not decode or verify (EIP-778)
    kRecordIdMismatch,     // handshake record's key is not the sender's node id
    kBadIdSignature,       // handshake id-signature does not verify
    kDecryptFailed,        // the message of a handshake does not decrypt
    kEmptyMessage,         // decrypted message with no type byte
    kUnknownMessageType,   // a message type this codec does not handle (REGTOPIC, ...): ignore it
    kMalformedMessage,     // a message that is not the RLP its type needs
    kRequestIdTooLong,     // request id above 8 bytes
    kBadRecipientIp,       // PONG recipient ip neither 4 nor 16 bytes
    kBadChallenge,         // encode_handshake: a challenge not decoded by a codec, or a record of another id
};

const std::error_category& wire_category() noexcept;
std::error_code make_error_code(WireError e) noexcept;

// A UDP address: sessions and challenges are bound to it (with the node id). An IPv4 address and
// its IPv4-mapped IPv6 form are different endpoints: a service should give one form for one peer.
struct Endpoint {
    std::array<uint8_t, 16> ip{};  // IPv4 in the first 4 bytes, the rest zero
    bool v4{true};
    uint16_t port{0};

    static Endpoint ipv4(const std::array<uint8_t, 4>& address, uint16_t port) noexcept;
    static Endpoint ipv6(const std::array<uint8_t, 16>& address, uint16_t port) noexcept;
    // 4 or 16 bytes.
    ByteView ip_bytes() const noexcept { return ByteView{ip}.first(v4 ? 4 : 16); }

    friend auto operator<=>(const Endpoint&, const Endpoint&) = default;
};

// ---- messages -------------------------------------------------------------------------------------

enum class MessageType : uint8_t {
    kPing = 1,
    kPong = 2,
    kFindNode = 3,
    kNodes = 4,
    kTalkReq = 5,
    kTalkResp = 6,
};

// At most kMaxRequestIdSize bytes; the requester chooses it, the responder echoes it.
using RequestId = Bytes;

struct Ping {
    RequestId req_id;
    uint64_t enr_seq{0};  // the sender's record seq
    friend bool operator==(const Ping&, const Ping&) = default;
};

struct Pong {
    RequestId req_id;
    uint64_t enr_seq{0};
    Endpoint recipient;  // where the PING came from, as the responder saw it
    friend bool operator==(const Pong&, const Pong&) = default;
};

struct FindNode {
    RequestId req_id;
    std::vector<uint64_t> distances;  // log2 distances; the handler ignores any above 256
    friend bool operator==(const FindNode&, const FindNode&) = default;
};

struct Nodes {
    RequestId req_id;
    uint8_t total{1};  // how many NODES packets answer the request
    // Each record as sent (an RLP list), not yet verified: the caller runs Enr::decode on each and
    // drops the bad ones, so one bad record does not spoil the others (as geth does).
    std::vector<Bytes> records;

    // How many packets to wait for: total, but at least 1 and at most kMaxNodesPackets, so a peer
    // cannot keep a request open by announcing 255.
    uint8_t expected_packets() const noexcept;
    friend bool operator==(const Nodes&, const Nodes&) = default;
};

struct TalkReq {
    RequestId req_id;
    Bytes protocol;
    Bytes request;
    friend bool operator==(const TalkReq&, const TalkReq&) = default;
};

struct TalkResp {
    RequestId req_id;
    Bytes response;  // empty: the protocol is unknown to the responder
    friend bool operator==(const TalkResp&, const TalkResp&) = default;
};

using Message = std::variant<Ping, Pong, FindNode, Nodes, TalkReq, TalkResp>;

MessageType message_type(const Message& m) noexcept;
const RequestId& request_id(const Message& m) noexcept;

// The message plaintext: type byte || RLP. The request id must be at most 8 bytes (Codec::encode
// checks it; this function writes what it is given).
Bytes encode_message(const Message& m);
// Strict: the RLP must be canonical, the list exactly the fields of its type (no extra elements).
Result<Message> decode_message(ByteView plaintext) noexcept;

// ---- packets ----------------------------------------------------------------------------------------

// The handshake challenge.
struct Whoareyou {
    Nonce request_nonce{};  // the nonce of the packet it answers
    IdNonce id_nonce{};
    uint64_t enr_seq{0};  // the seq of the challenged node's record its sender has (0: none)
    // masking-iv || static-header || authdata, unmasked: the input of key derivation and of the
    // id-signature. Set by Codec::decode and Codec::encode_whoareyou.
    Bytes challenge_data;
    friend bool operator==(const Whoareyou&, const Whoareyou&) = default;
};

// An ordinary message packet this codec cannot decrypt (no session with the sender, or a stale
// one): the caller answers with encode_whoareyou(src_id, from, nonce, ...).
struct Unknown {
    Nonce nonce{};
    friend bool operator==(const Unknown&, const Unknown&) = default;
};

using Packet = std::variant<Message, Whoareyou, Unknown>;

// The kind of packet, by its static header's flag.
enum class PacketKind : uint8_t {
    kMessage = 0,
    kWhoareyou = 1,
    kHandshake = 2,
};

struct Decoded {
    // The sender. Zero for WHOAREYOU, which does not carry it: match it by request_nonce.
    Hash32 src_id{};
    // For a handshake: the sender's record (the one it sent, or the newer one we had).
    std::optional<Enr> record;
    Packet packet;
};

struct Encoded {
    Bytes datagram;
    Nonce nonce{};  // the packet's nonce: a WHOAREYOU in reply names it as request_nonce
    // encode found no session and wrote a random packet: the message itself was not sent; send it
    // with encode_handshake when the WHOAREYOU naming `nonce` arrives.
    bool random_packet{false};
};

// What a codec draws at random, and its clock. Unset members use OpenSSL's CSPRNG (via `random`)
// and std::chrono::steady_clock. Tests fix them to replay the spec's vectors.
struct CodecHooks {
    std::function<std::chrono::steady_clock::time_point()> now;
    std::function<Result<void>(std::span<uint8_t>)> random;  // also random packet bodies and their nonces
    std::function<Result<MaskingIv>()> masking_iv;
    // The nonce of the `counter`-th message of a session: counter (big-endian) || 8 random bytes,
    // unique per session key without a shared state between packets.
    std::function<Result<Nonce>(uint32_t counter)> nonce;
    std::function<Result<IdNonce>()> id_nonce;
    std::function<Result<rlpx::PrivateKey>()> ephemeral_key;
};

struct CodecOptions {
    size_t session_capacity{kDefaultSessionCapacity};
    size_t challenge_capacity{kDefaultChallengeCapacity};
    std::chrono::milliseconds handshake_timeout{kHandshakeTimeout};
    CodecHooks hooks;
};

class Codec {
  public:
    // `record` must be signed by `key` (the record peers get in handshakes); replace it with
    // set_local_record when it changes.
    Codec(const rlpx::PrivateKey& key, Enr record, CodecOptions options = {});

    const Hash32& local_id() const noexcept { return local_id_; }
    const Enr& local_record() const noexcept { return record_; }
    void set_local_record(Enr record) { record_ = std::move(record); }

    // Sends `msg` over the session with (dest_id, dest). Without a session it sends a random
    // packet instead, which makes the peer answer WHOAREYOU naming the returned nonce; the caller
    // then sends `msg` again with encode_handshake. kRequestIdTooLong, kPacketTooBig.
    Result<Encoded> encode(const Hash32& dest_id, const Endpoint& dest, const Message& msg);

    // Answers `challenge` (a WHOAREYOU from dest, as decode returned it) with a handshake packet
    // carrying `msg`. `dest_record` is the peer's record (its key is needed for the key agreement).
    // Our record goes along when the challenge's enr_seq is below ours. Establishes the session.
    Result<Encoded> encode_handshake(const Hash32& dest_id, const Endpoint& dest, const Message& msg,
                                     const Whoareyou& challenge, const Enr& dest_record);

    // Answers an Unknown from (dest_id, dest) with a WHOAREYOU and remembers the challenge for
    // the handshake. `known_record` is the peer's record if we have one: the challenge asks for a
    // record only if the peer has a newer one. While a challenge for (dest_id, dest) is pending,
    // this sends that same challenge again, byte for byte, instead of a new one (geth's rule:
    // a peer that sent several requests at once completes the one handshake whose answer may
    // still be on its way; devp2p PR #278).
    Result<Encoded> encode_whoareyou(const Hash32& dest_id, const Endpoint& dest, const Nonce& request_nonce,
                                     const Enr* known_record);

    // Reads one datagram from `from`. A message packet without a usable session gives Unknown;
    // every other failure an error (WireError, or rlpx::Errc for a crypto failure). Decoding a
    // handshake establishes the session and consumes the challenge (also when it fails).
    Result<Decoded> decode(ByteView datagram, const Endpoint& from);
    // The kind of a datagram sent to us, from its static header alone (one AES block unmasked, no
    // key agreement): a caller can rate-limit handshakes before decode verifies them. nullopt when
    // decode would refuse the header (size, protocol id, version, flag).
    std::optional<PacketKind> packet_kind(ByteView datagram) const;

    // The challenge we sent to (id, addr) and wait for an answer to, if any (not expired). Both
    // pointers stay valid until the next non-const call.
    const Whoareyou* current_challenge(const Hash32& id, const Endpoint& addr) const;
    // The record of the node with a session at (id, addr), if any.
    const Enr* session_record(const Hash32& id, const Endpoint& addr) const;
    size_t session_count() const noexcept { return sessions_.size(); }
    // Pending challenges (expired ones may be counted until the next decode or encode_whoareyou).
    size_t challenge_count() const noexcept { return challenges_.size(); }

    // Installs session keys as a handshake would (for the spec's vectors and tools).
    void store_session(const Hash32& id, const Endpoint& addr, const Key& write_key, const Key& read_key,
                       const Enr& record);

  private:
    struct Peer {
        Hash32 id{};
        Endpoint addr;
        friend auto operator<=>(const Peer&, const Peer&) = default;
    };
    struct Session {
        Key write_key{};
        Key read_key{};
        uint32_t nonce_counter{0};
        Enr record;
    };
    struct Challenge {
        Whoareyou whoareyou;
        std::optional<Enr> record;
        std::chrono::steady_clock::time_point sent;
    };
    using SessionList = std::list<std::pair<Peer, Session>>;
    using ChallengeList = std::list<std::pair<Peer, Challenge>>;

    Session* find_session(const Peer& peer);
    void put_session(const Peer& peer, Session session);
    // Drops the challenges that have timed out: the oldest first, so it looks at those and one more.
    void expire_challenges();
    // Drops the oldest challenge.
    void drop_oldest_challenge();
    Result<Nonce> next_nonce(Session& session);
    // iv || static header || authdata, unmasked.
    Result<Bytes> header(uint8_t flag, const Nonce& nonce, ByteView authdata);
    // The header masked for dest_id, followed by `body`.
    Result<Bytes> finish(const Hash32& dest_id, Bytes header, ByteView body) const;
    Result<Bytes> seal(const Hash32& dest_id, const Key& key, const Nonce& nonce, Bytes header, const Message& msg);
    Result<Decoded> decode_handshake(const Endpoint& from, const Nonce& nonce, ByteView header_data, ByteView authdata,
                                     ByteView message);
    Result<Decoded> decode_message_packet(const Endpoint& from, const Nonce& nonce, ByteView header_data,
                                          ByteView authdata, ByteView message);

    rlpx::PrivateKey key_;
    Hash32 local_id_;
    Enr record_;
    size_t capacity_;
    size_t challenge_capacity_;
    std::chrono::milliseconds handshake_timeout_;
    CodecHooks hooks_;
    SessionList lru_;  // most recently used first
    std::map<Peer, SessionList::iterator> sessions_;
    ChallengeList challenge_order_;  // oldest first: in the order sent, so in expiry order
    std::map<Peer, ChallengeList::iterator> challenges_;
};

}  // namespace headerd::disc::v5

template <>
struct std::is_error_code_enum<headerd::disc::v5::WireError> : std::true_type {};
