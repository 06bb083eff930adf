#include "p2p/peer_error.hpp"

#include <gtest/gtest.h>

#include "core/rlp.hpp"
#include "p2p/eth/messages.hpp"
#include "p2p/eth/status.hpp"
#include "p2p/rlpx/error.hpp"
#include "p2p/tracker/tracker.hpp"
#include "p2p/wire/snappy_codec.hpp"

namespace headerd::p2p {
namespace {

// The one mapping from an ending to the reason sent, pinned for every kind (devp2p's table, as geth
// sends them).
TEST(PeerError, EveryKindHasItsDisconnectReason) {
    struct Case {
        PeerErrorKind kind;
        DisconnectReason reason;
        bool misbehaviour;
    };
    static constexpr Case kCases[] = {
        {PeerErrorKind::kNetwork, DisconnectReason::kNetworkError, false},
        {PeerErrorKind::kHandshakeTimeout, DisconnectReason::kPingTimeout, false},
        {PeerErrorKind::kFrameTimeout, DisconnectReason::kPingTimeout, false},
        {PeerErrorKind::kWriteTimeout, DisconnectReason::kNetworkError, false},
        {PeerErrorKind::kSilent, DisconnectReason::kPingTimeout, false},
        {PeerErrorKind::kBadHandshake, DisconnectReason::kProtocolBreach, true},
        {PeerErrorKind::kBadFrame, DisconnectReason::kProtocolBreach, true},
        {PeerErrorKind::kBadMessage, DisconnectReason::kProtocolBreach, true},
        {PeerErrorKind::kUnexpectedMessage, DisconnectReason::kProtocolBreach, true},
        {PeerErrorKind::kUnknownMessage, DisconnectReason::kProtocolBreach, true},
        {PeerErrorKind::kInvalidIdentity, DisconnectReason::kInvalidIdentity, true},
        {PeerErrorKind::kUnexpectedIdentity, DisconnectReason::kUnexpectedIdentity, true},
        {PeerErrorKind::kIncompatibleVersion, DisconnectReason::kIncompatibleVersion, false},
        {PeerErrorKind::kUselessPeer, DisconnectReason::kUselessPeer, false},
        {PeerErrorKind::kStatusRejected, DisconnectReason::kSubprotocolError, true},
        {PeerErrorKind::kTooManyPeers, DisconnectReason::kTooManyPeers, false},
        {PeerErrorKind::kAlreadyConnected, DisconnectReason::kAlreadyConnected, false},
        {PeerErrorKind::kConnectedToSelf, DisconnectReason::kConnectedToSelf, false},
        {PeerErrorKind::kQuitting, DisconnectReason::kQuitting, false},
        {PeerErrorKind::kRequested, DisconnectReason::kRequested, false},
    };
    for (const Case& c : kCases) {
        SCOPED_TRACE(to_string(c.kind));
        EXPECT_EQ(disconnect_reason(c.kind), c.reason);
        EXPECT_EQ(is_misbehaviour(c.kind), c.misbehaviour);
        EXPECT_EQ(PeerError(c.kind, "x").reason(), c.reason);
        EXPECT_NE(to_string(c.kind), "unknown");
    }
}

TEST(PeerError, ARemoteDisconnectCarriesThePeersReason) {
    const PeerError e(PeerErrorKind::kRemoteDisconnect, "peer disconnected: too many peers",
                      DisconnectReason::kTooManyPeers);
    EXPECT_EQ(e.kind(), PeerErrorKind::kRemoteDisconnect);
    EXPECT_EQ(e.reason(), DisconnectReason::kTooManyPeers);
    EXPECT_FALSE(is_misbehaviour(e.kind()));
}

// Errors of the sans-I/O layers are classified by category and value, never by text.
TEST(PeerError, DecoderErrorsAreClassifiedByCategory) {
    EXPECT_EQ(kind_of(BaseProtocolError::kNoSharedCapability), PeerErrorKind::kUselessPeer);
    EXPECT_EQ(kind_of(BaseProtocolError::kIncompatibleVersion), PeerErrorKind::kIncompatibleVersion);
    EXPECT_EQ(kind_of(BaseProtocolError::kZeroNodeId), PeerErrorKind::kInvalidIdentity);
    EXPECT_EQ(kind_of(BaseProtocolError::kBadNodeIdLength), PeerErrorKind::kInvalidIdentity);
    EXPECT_EQ(kind_of(BaseProtocolError::kHelloTooLarge), PeerErrorKind::kBadMessage);
    EXPECT_EQ(kind_of(eth::StatusError::kGenesisMismatch), PeerErrorKind::kStatusRejected);
    EXPECT_EQ(kind_of(rlpx::Errc::kBadFrameMac), PeerErrorKind::kBadFrame);
    EXPECT_EQ(kind_of(rlpx::Errc::kBadHeaderMac), PeerErrorKind::kBadFrame);
    EXPECT_EQ(kind_of(rlpx::Errc::kEciesBadMac), PeerErrorKind::kBadHandshake);
    EXPECT_EQ(kind_of(tracker::TrackerError::kStale), PeerErrorKind::kUnexpectedMessage);
    EXPECT_EQ(kind_of(tracker::TrackerError::kTooManyItems), PeerErrorKind::kUnexpectedMessage);
    EXPECT_EQ(kind_of(rlp::DecodeError::kTrailingBytes), PeerErrorKind::kBadMessage);
    EXPECT_EQ(kind_of(eth::MessageError::kBadOrigin), PeerErrorKind::kBadMessage);
    EXPECT_EQ(kind_of(SnappyError::kTooLarge), PeerErrorKind::kBadMessage);
}

TEST(PeerError, ThrowPeerErrorNamesWhatFailed) {
    try {
        throw_peer_error(eth::StatusError::kNetworkIdMismatch, "Status");
        FAIL() << "did not throw";
    } catch (const PeerError& e) {
        EXPECT_EQ(e.kind(), PeerErrorKind::kStatusRejected);
        EXPECT_EQ(e.reason(), DisconnectReason::kSubprotocolError);
        EXPECT_EQ(std::string(e.what()).rfind("Status: ", 0), 0u) << e.what();
    }
}

}  // namespace
}  // namespace headerd::p2p
