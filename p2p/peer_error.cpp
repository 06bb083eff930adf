#include "p2p/peer_error.hpp"

#include <fmt/format.h>

#include "p2p/eth/status.hpp"
#include "p2p/rlpx/error.hpp"
#include "p2p/tracker/tracker.hpp"

namespace headerd::p2p {

DisconnectReason disconnect_reason(PeerErrorKind kind) noexcept {
    switch (kind) {
        case PeerErrorKind::kNetwork:
        case PeerErrorKind::kWriteTimeout:
            return DisconnectReason::kNetworkError;
        case PeerErrorKind::kHandshakeTimeout:
        case PeerErrorKind::kFrameTimeout:
        case PeerErrorKind::kSilent:
            return DisconnectReason::kPingTimeout;
        case PeerErrorKind::kBadHandshake:
        case PeerErrorKind::kBadFrame:
        case PeerErrorKind::kBadMessage:
        case PeerErrorKind::kUnexpectedMessage:
        case PeerErrorKind::kUnknownMessage:
            return DisconnectReason::kProtocolBreach;
        case PeerErrorKind::kInvalidIdentity:
            return DisconnectReason::kInvalidIdentity;
        case PeerErrorKind::kUnexpectedIdentity:
            return DisconnectReason::kUnexpectedIdentity;
        case PeerErrorKind::kIncompatibleVersion:
            return DisconnectReason::kIncompatibleVersion;
        case PeerErrorKind::kUselessPeer:
            return DisconnectReason::kUselessPeer;
        case PeerErrorKind::kStatusRejected:
            return DisconnectReason::kSubprotocolError;
        case PeerErrorKind::kTooManyPeers:
            return DisconnectReason::kTooManyPeers;
        case PeerErrorKind::kAlreadyConnected:
            return DisconnectReason::kAlreadyConnected;
        case PeerErrorKind::kConnectedToSelf:
            return DisconnectReason::kConnectedToSelf;
        case PeerErrorKind::kQuitting:
            return DisconnectReason::kQuitting;
        case PeerErrorKind::kRemoteDisconnect:
        case PeerErrorKind::kRequested:
            return DisconnectReason::kRequested;
    }
    return DisconnectReason::kProtocolBreach;
}

bool is_misbehaviour(PeerErrorKind kind) noexcept {
    switch (kind) {
        case PeerErrorKind::kBadHandshake:
        case PeerErrorKind::kBadFrame:
        case PeerErrorKind::kBadMessage:
        case PeerErrorKind::kUnexpectedMessage:
        case PeerErrorKind::kUnknownMessage:
        case PeerErrorKind::kInvalidIdentity:
        case PeerErrorKind::kUnexpectedIdentity:
        case PeerErrorKind::kStatusRejected:
            return true;
        default:
            return false;
    }
}

std::string_view to_string(PeerErrorKind kind) noexcept {
    switch (kind) {
        case PeerErrorKind::kNetwork:
            return "network";
        case PeerErrorKind::kHandshakeTimeout:
            return "handshake_timeout";
        case PeerErrorKind::kFrameTimeout:
            return "frame_timeout";
        case PeerErrorKind::kWriteTimeout:
            return "write_timeout";
        case PeerErrorKind::kSilent:
            return "silent";
        case PeerErrorKind::kBadHandshake:
            return "bad_handshake";
        case PeerErrorKind::kBadFrame:
            return "bad_frame";
        case PeerErrorKind::kBadMessage:
            return "bad_message";
        case PeerErrorKind::kUnexpectedMessage:
            return "unexpected_message";
        case PeerErrorKind::kUnknownMessage:
            return "unknown_message";
        case PeerErrorKind::kInvalidIdentity:
            return "invalid_identity";
        case PeerErrorKind::kUnexpectedIdentity:
            return "unexpected_identity";
        case PeerErrorKind::kIncompatibleVersion:
            return "incompatible_version";
        case PeerErrorKind::kUselessPeer:
            return "useless_peer";
        case PeerErrorKind::kStatusRejected:
            return "status_rejected";
        case PeerErrorKind::kTooManyPeers:
            return "too_many_peers";
        case PeerErrorKind::kAlreadyConnected:
            return "already_connected";
        case PeerErrorKind::kConnectedToSelf:
            return "connected_to_self";
        case PeerErrorKind::kRemoteDisconnect:
            return "remote_disconnect";
        case PeerErrorKind::kQuitting:
            return "quitting";
        case PeerErrorKind::kRequested:
            return "requested";
    }
    return "unknown";
}

PeerErrorKind kind_of(const std::error_code& ec) noexcept {
    if (ec.category() == eth::status_category()) return PeerErrorKind::kStatusRejected;
    if (ec.category() == base_protocol_category()) {
        switch (static_cast<BaseProtocolError>(ec.value())) {
            case BaseProtocolError::kBadNodeIdLength:
            case BaseProtocolError::kZeroNodeId:
                return PeerErrorKind::kInvalidIdentity;
            case BaseProtocolError::kIncompatibleVersion:
                return PeerErrorKind::kIncompatibleVersion;
            case BaseProtocolError::kNoSharedCapability:
                return PeerErrorKind::kUselessPeer;
            default:
                return PeerErrorKind::kBadMessage;
        }
    }
    if (ec.category() == rlpx::rlpx_category()) {
        switch (static_cast<rlpx::Errc>(ec.value())) {
            case rlpx::Errc::kFrameWrongState:
            case rlpx::Errc::kBadHeaderMac:
            case rlpx::Errc::kBadFrameMac:
            case rlpx::Errc::kFrameTooLarge:
                return PeerErrorKind::kBadFrame;
            default:
                return PeerErrorKind::kBadHandshake;
        }
    }
    // A response the request tracker refused: stale, for another message, or too long.
    if (ec.category() == tracker::tracker_category()) return PeerErrorKind::kUnexpectedMessage;
    // rlp, eth message, snappy, fork id: the peer sent bytes that are not a valid message.
    return PeerErrorKind::kBadMessage;
}

void throw_peer_error(const std::error_code& ec, std::string_view what) {
    throw PeerError(kind_of(ec), fmt::format("{}: {}", what, ec.message()));
}

}  // namespace headerd::p2p
