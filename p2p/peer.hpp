#pragma once

// The devp2p + eth conversation on top of a Connection: Hello and capability negotiation, the eth
// Status exchange, then either serving requests (an inbound peer) or asking for headers (the
// dialing client of `headerd get`). Limits and disconnect behaviour: docs/wire.md.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "core/chain_config.hpp"
#include "db/chain_db.hpp"
#include "p2p/connection.hpp"
#include "p2p/eth/messages.hpp"
#include "p2p/eth/serve.hpp"
#include "p2p/log_limiter.hpp"
#include "p2p/net_metrics.hpp"
#include "p2p/tracker/tracker.hpp"

namespace headerd::p2p {

inline constexpr auto kHandshakeTimeout = std::chrono::seconds(5);
// A peer that sends nothing for this long gets a Ping; one that stays silent for two periods is
// dropped with "ping timeout" (geth pings every 15 s and drops after 30 s of silence).
inline constexpr auto kIdlePeriod = std::chrono::seconds(15);
inline constexpr auto kWriteTimeout = std::chrono::seconds(10);

// Who we are on the wire.
struct LocalNode {
    const rlpx::PrivateKey* key{nullptr};
    std::string client_id;
    const ChainConfig* config{nullptr};
    // Our head for Status: from the database when serving, the genesis for a client without a chain.
    db::Head head;
    // Message meters for every connection of this node; nullptr: metrics off.
    const NetMetrics* metrics{nullptr};
};

// The result of Hello + Status.
struct EthLink {
    uint64_t version{0};  // negotiated eth version (68 or 69)
    uint64_t offset{0};   // absolute id of eth message 0
    std::string client_id;
};

// Hello, capability negotiation and Status, both directions, within kHandshakeTimeout. Throws
// PeerError with the matching disconnect reason (useless peer, unexpected identity, subprotocol
// error for a bad Status, ...).
asio::awaitable<EthLink> establish(Connection& conn, const LocalNode& local);

// Serves an established inbound peer until it disconnects or misbehaves: GetBlockHeaders through
// `server`, empty replies to bodies/receipts/pooled transactions, Ping/Pong, gossip ignored,
// anything else a protocol breach. Requests are answered one at a time, in order, so a peer has at
// most one request in service; what it pipelines waits in its socket buffer. Each request's service
// time (read to reply written) and how it was served go to context.metrics unless it is null. Throws
// PeerError on the way out (a Disconnect from the peer included, with can_send() false).
struct ServeContext {
    const eth::HeaderServer& headers;
    const NetMetrics* metrics{nullptr};  // nullptr: metrics off
    // Errors a peer's requests can trigger again and again (a damaged store) go through it.
    LogLimiter& limiter;
    // Where a reply is built. Sessions driven by one thread may share them: a reply is built and
    // handed to Connection::write_message, which has encoded and encrypted it into the
    // connection's own frame buffer before its first suspension, so no other session can touch
    // them while they are in use. Sharing keeps a served peer from pinning a reply's worth of
    // memory (a 1024-header reply is about 0.5 MB) for the rest of its connection.
    ItemBuffer& scratch;
    Bytes& reply;
};
asio::awaitable<void> serve_peer(Connection& conn, const EthLink& link, const ServeContext& context);

struct HeadersReply {
    std::vector<Bytes> headers;
    Clock::duration rtt{};  // from tracking the request (just before sending) to its reply
};

// Client side: one GetBlockHeaders request through `tracker`, which must hold no request with the
// same id. Tracks it before sending; waits until the tracker's deadline for it, answering Pings and
// ignoring gossip; checks every response against the tracker before decoding it (known id, the
// response code asked for, no more items than asked) and then that each header is well formed. A
// stale, mismatched or oversized response is a protocol breach; no reply by the deadline expires
// the request (counted lost) and throws PeerTimeout.
asio::awaitable<HeadersReply> request_headers(Connection& conn, const EthLink& link, tracker::Tracker& tracker,
                                              const eth::GetBlockHeadersRequest& request);

}  // namespace headerd::p2p
