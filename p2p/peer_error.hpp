#pragma once

// Why a devp2p session ends, as one error shape for the whole p2p layer: every ending has a kind,
// the kind alone decides the Disconnect reason sent (disconnect_reason) and the metric label, and
// the text is only for logs. Expected events (a read deadline passing on an idle peer, a request
// timing out) are values returned by the calls that wait for them, never PeerErrors.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include "p2p/wire/base_protocol.hpp"

namespace headerd::p2p {

enum class PeerErrorKind : uint8_t {
    kNetwork,              // the socket failed, or the peer closed it
    kHandshakeTimeout,     // RLPx, Hello and Status were not done within the handshake limit
    kFrameTimeout,         // a frame started arriving but did not finish within the idle limit
    kWriteTimeout,         // the peer did not take our bytes within the write limit
    kSilent,               // nothing from the peer for two idle periods, a Ping in between
    kBadHandshake,         // RLPx auth or ack unreadable (no frames exist yet)
    kBadFrame,             // frame MAC, size or padding wrong: the stream cannot be read further
    kBadMessage,           // a message that does not decode (RLP, snappy, fields)
    kUnexpectedMessage,    // valid, but not allowed now (a second Status, an unrequested reply)
    kUnknownMessage,       // an id outside every shared protocol
    kInvalidIdentity,      // Hello node id malformed or zero
    kUnexpectedIdentity,   // Hello node id differs from the RLPx key
    kIncompatibleVersion,  // p2p version below 5
    kUselessPeer,          // no shared capability
    kStatusRejected,       // eth Status: network, genesis, fork id, version or range
    kTooManyPeers,
    kAlreadyConnected,
    kConnectedToSelf,
    kRemoteDisconnect,  // the peer sent Disconnect (its reason is PeerError::remote_reason)
    kQuitting,          // this node is shutting down
    kRequested,         // this node is done with the peer
};

// The reason this node sends for an ending of `kind` (kRemoteDisconnect and kNetwork send nothing;
// their value is what the log shows).
DisconnectReason disconnect_reason(PeerErrorKind kind) noexcept;
// Whether the peer broke the protocol (as opposed to leaving, timing out or being refused): such
// endings are logged as rate-limited warnings.
bool is_misbehaviour(PeerErrorKind kind) noexcept;
// "network", "handshake_timeout", ...: for logs.
std::string_view to_string(PeerErrorKind kind) noexcept;

// The kind of a decoder or check failure `ec` from the sans-I/O layers below the session (rlp,
// base protocol, eth messages, Status, snappy, frames, tracker): identity problems, p2p < 5,
// nothing shared and Status checks have their own kinds; anything else malformed is kBadMessage.
PeerErrorKind kind_of(const std::error_code& ec) noexcept;

class PeerError : public std::runtime_error {
  public:
    PeerError(PeerErrorKind kind, const std::string& what,
              DisconnectReason remote_reason = DisconnectReason::kRequested)
        : std::runtime_error(what), kind_(kind), remote_reason_(remote_reason) {}
    PeerErrorKind kind() const noexcept { return kind_; }
    // The reason to send, or for kRemoteDisconnect the reason the peer gave.
    DisconnectReason reason() const noexcept {
        return kind_ == PeerErrorKind::kRemoteDisconnect ? remote_reason_ : disconnect_reason(kind_);
    }

  private:
    PeerErrorKind kind_;
    DisconnectReason remote_reason_;
};

// Throws PeerError{kind_of(ec), what + ": " + ec.message()}.
[[noreturn]] void throw_peer_error(const std::error_code& ec, std::string_view what);

}  // namespace headerd::p2p
