#pragma once

// The serving half of an inbound session, after Hello and Status: read a message, answer it, read
// the next. Requests are answered one at a time, in order, so a peer has at most one request in
// service and what it pipelines waits in its socket buffer (the socket is the queue; nothing a peer
// sends makes the server buffer more than one reply). The connection stays full duplex: other
// coroutines (a BlockRangeUpdate announcement) may write while a reply is being written.

#include <boost/asio/awaitable.hpp>

#include "p2p/connection.hpp"
#include "p2p/eth/history.hpp"
#include "p2p/eth/reply_cache.hpp"
#include "p2p/eth/serve.hpp"
#include "p2p/net_metrics.hpp"
#include "p2p/peer.hpp"
#include "p2p/worker.hpp"

namespace headerd::p2p {

struct ServeContext {
    const eth::HeaderServer& headers;
    const NetMetrics* metrics{nullptr};  // nullptr: metrics off
    // The worker running the session: its reply buffers and log limiter. REQUIRES: the session runs
    // on this worker's thread.
    Worker& worker;
    // Test option (serve --reply-delay): each GetBlockHeaders waits this long before it is served,
    // to play a slow peer. The session reads its next message only after answering, as a busy peer.
    Clock::duration reply_delay{};
    // The worker's cache of compressed replies (p2p/eth/reply_cache.hpp), used with peers that
    // speak snappy; nullptr: off.
    eth::ReplyCache* reply_cache{nullptr};
    // Bodies and receipts (p2p/eth/history.hpp) and the limits of their replies; nullptr: the
    // requests are answered empty.
    const HistorySource* history{nullptr};
    const eth::HistoryLimits* history_limits{nullptr};
};

// Serves an established inbound peer until it disconnects or misbehaves: GetBlockHeaders through
// `context.headers`, GetBlockBodies and GetReceipts through `context.history` when set, the
// requests headerd cannot serve answered empty (the reply of the negotiated
// version), Ping/Pong, gossip ignored, anything else a protocol breach. Pings a peer silent for one
// idle period and drops it (kSilent) after two. Each request's service time (read to reply
// written) and how it was served go to context.metrics unless it is null. Throws PeerError on the
// way out (a Disconnect from the peer included).
asio::awaitable<void> serve_peer(Connection& conn, const EthLink& link, const ServeContext& context);

}  // namespace headerd::p2p
