#pragma once

// What both ends of a devp2p session do the same way: Hello, capability negotiation and the eth
// Status exchange (establish), and the base-protocol messages that may arrive at any time
// (handle_base). The server's session (p2p/server_session.hpp) and the client's
// (p2p/client_session.hpp) build on these. Limits and disconnect behaviour: docs/wire.md.

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "core/chain_config.hpp"
#include "core/header_source.hpp"
#include "p2p/connection.hpp"
#include "p2p/net_metrics.hpp"
#include "p2p/wire/base_protocol.hpp"

namespace headerd::p2p {

// Who we are on the wire.
struct LocalNode {
    const rlpx::PrivateKey* key{nullptr};
    std::string client_id;
    const ChainConfig* config{nullptr};
    // Our head for Status: from the database when serving, the genesis for a client without a chain.
    Head head;
    // The first block of the full-block range eth/69+ Status announces (eth::announced_earliest);
    // nullopt: the head (headers only).
    std::optional<uint64_t> earliest;
    // Message meters for every connection of this node; nullptr: metrics off.
    const NetMetrics* metrics{nullptr};
    // The capabilities our Hello lists; the highest version both sides list is used.
    std::span<const ProtocolOffer> offers{kEthOffers};
};

// What the peer says of its chain: its Status, then (eth/69+) each BlockRangeUpdate.
struct PeerChain {
    Hash32 head_hash{};
    std::optional<uint64_t> head_number;  // eth/69+ `latest`; an eth/68 Status names no number
    uint64_t earliest{0};                 // eth/69+: the oldest block it serves
};

// The result of Hello + Status.
struct EthLink {
    uint64_t version{0};  // negotiated eth version
    uint64_t offset{0};   // absolute id of eth message 0
    std::string client_id;
    PeerChain chain;
};

// Hello, capability negotiation and Status, both directions, done by `deadline`. Throws PeerError:
// kHandshakeTimeout, kRemoteDisconnect (a busy peer answers Hello with Disconnect), kUselessPeer,
// kIncompatibleVersion, kInvalidIdentity, kUnexpectedIdentity, kStatusRejected, kBadMessage, ...
asio::awaitable<EthLink> establish(Connection& conn, const LocalNode& local, Clock::time_point deadline);

// A base-protocol message that may arrive at any time: Ping is answered with Pong, Pong is noted,
// Disconnect throws PeerError kRemoteDisconnect with the peer's reason, any other base id throws
// kUnknownMessage. Returns false for a message that is not base protocol.
asio::awaitable<bool> handle_base(Connection& conn, const Message& m);

// The id of `m` relative to eth's offset, or throws kUnknownMessage when it lies outside eth's
// message space for the negotiated version.
uint64_t eth_code(const EthLink& link, const Message& m);

}  // namespace headerd::p2p
