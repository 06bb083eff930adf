#pragma once

// The dialing side of a devp2p session, shared by `headerd get`, the sync client and the load
// generator: dial, RLPx handshake, Hello and Status; then request() sends GetBlockHeaders and
// returns the reply to that request id and nothing else. Many requests may be in flight, each with
// its own deadline. One reader loop receives every message: replies are dispatched by request id
// through the Tracker (which refuses a reply to an unknown, expired or other id before its body is
// decoded), Pings are answered, gossip is dropped, and requests from the peer get empty answers (a
// client keeps no chain). One timer expires lost requests. The Capacity estimator is fed by every
// verified reply and suggests the next request's size and timeout (geth's msgrate rules).
//
// Thread-safety: none. A session, its coroutines and every call run on the one thread (worker or
// io_context) that created it.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/result.hpp>

#include "core/bytes.hpp"
#include "p2p/connection.hpp"
#include "p2p/enode/node_key.hpp"
#include "p2p/eth/messages.hpp"
#include "p2p/peer.hpp"
#include "p2p/tracker/capacity.hpp"
#include "p2p/tracker/tracker.hpp"

namespace headerd::p2p {

struct ClientOptions {
    SessionLimits limits;
    // Requests in flight at once; request() refuses more (RequestFailure::kRejected).
    size_t max_in_flight{256};
    // Timeout of a request whose caller names none; unset: the capacity estimate's target timeout
    // (3 round trips, at least 6 s, at most 1 min).
    std::optional<Clock::duration> request_timeout;
    // A reply to an id that is not pending (never sent, answered already, or expired) is counted
    // stale either way. true: it also ends the session, as geth does (kUnexpectedMessage); false:
    // it is dropped, for load tools that keep talking to a slow server.
    bool drop_on_stale{true};
    // Whether every header of a reply is decoded in full before it is handed over (a header that
    // does not decode ends the session as a bad message). A caller that compares the headers with
    // a chain of its own byte for byte (headerd load --chain) may skip it.
    bool check_headers{true};
    // The local address to connect from (any port); unset: the system's choice.
    std::optional<asio::ip::address> bind;
};

// One verified BlockHeaders reply: every header is a well-formed header RLP list unless
// ClientOptions::check_headers is off (not checked against the request; callers verify numbers and
// links).
struct HeadersReply {
    uint64_t request_id{0};
    Bytes payload;                  // holds the reply message as received (the connection's read buffer)
    std::vector<ByteView> headers;  // views into payload
    Clock::duration rtt{};          // from tracking the request (just before sending) to its reply
};

struct RequestFailure {
    enum class Kind {
        kTimeout,    // no reply by the request's deadline: counted lost, the session goes on
        kClosed,     // the session ended (the message says why)
        kRejected,   // not sent: in-flight cap, tracker cap
        kAbandoned,  // its caller gave up on it (abandon()); the session goes on
    };
    Kind kind{Kind::kClosed};
    std::string message;
};

using RequestResult = boost::system::result<HeadersReply, RequestFailure>;

// One BlockBodies or Receipts reply (request_history): each item one RLP list (a body, or a
// block's receipt list in the version's form), not checked against the request: callers verify
// them against the headers' roots.
struct HistoryItemsReply {
    uint64_t request_id{0};
    Bytes payload;                      // the reply message as received
    std::vector<ByteView> items;        // views into payload
    bool last_block_incomplete{false};  // eth/70+ Receipts: the last list is cut (EIP-7975)
    Clock::duration rtt{};
};

using HistoryResult = boost::system::result<HistoryItemsReply, RequestFailure>;

struct ClientStats {
    uint64_t requests{0};       // sent
    uint64_t replies{0};        // verified and handed to their request
    uint64_t lost{0};           // expired before a reply
    uint64_t stale{0};          // replies to an id not pending
    uint64_t answered{0};       // requests from the peer answered empty
    uint64_t pings{0};          // Pings from the peer (each answered)
    uint64_t range_updates{0};  // BlockRangeUpdates from the peer (eth/69+), each validated
};

class ClientSession : public std::enable_shared_from_this<ClientSession> {
  public:
    // Dials `peer` (TCP, RLPx, Hello, Status) within options.limits.handshake and starts the
    // reader. Throws PeerError (kNetwork when the TCP connection fails or times out). REQUIRES:
    // local.key and local.config outlive the session.
    static asio::awaitable<std::shared_ptr<ClientSession>> connect(const Enode& peer, const LocalNode& local,
                                                                   ClientOptions options = {});

    ~ClientSession();
    ClientSession(const ClientSession&) = delete;
    ClientSession& operator=(const ClientSession&) = delete;

    // Sends `request` under a new request id (the id in `request` is ignored) and waits for its
    // reply, its deadline (`timeout`, else options.request_timeout, else target_timeout()) or the
    // end of the session. Never throws for the peer's behaviour: failures are values.
    // `group`: see abandon().
    asio::awaitable<RequestResult> request(eth::GetBlockHeadersRequest request,
                                           std::optional<Clock::duration> timeout = std::nullopt, uint64_t group = 0);

    // Sends GetBlockBodies or GetReceipts (eth/70+: from receipt `first_receipt_index` of the first
    // block) for `hashes` and waits for the reply, as request() does for headers: tracked (the
    // reply may hold at most hashes.size() items), timed, and fed to the capacity estimate under
    // its own request code.
    asio::awaitable<HistoryResult> request_history(eth::MessageId request, std::span<const Hash32> hashes,
                                                   std::optional<Clock::duration> timeout = std::nullopt,
                                                   uint64_t first_receipt_index = 0);

    // Ends every waiting request made with this non-zero `group` as kAbandoned, at once, while the
    // session and its other requests go on: a sync that borrowed the session ends its own requests
    // without closing its owner's session. An abandoned request stays tracked until its reply
    // (dropped, not stale) or its deadline (lost).
    void abandon(uint64_t group);

    // Hands a reply the caller is done with back to the connection, whose next reply then reuses
    // its buffer instead of allocating and zeroing another (the load generator does so after
    // verifying each reply). Its header views die here.
    void recycle(HeadersReply&& reply) noexcept;

    // Says Disconnect (default: requested) and closes; pending requests fail with kClosed.
    asio::awaitable<void> close(DisconnectReason reason = DisconnectReason::kRequested);

    const EthLink& link() const noexcept { return link_; }
    const Connection& connection() const noexcept { return *conn_; }
    const ClientStats& stats() const noexcept { return stats_; }
    size_t in_flight() const noexcept { return waiters_.size(); }
    bool closed() const noexcept { return closed_; }
    // Why the session ended; nullopt while it runs.
    const std::optional<PeerError>& error() const noexcept { return error_; }

    const tracker::Capacity& capacity() const noexcept { return capacity_; }
    // Headers to ask for next so the reply takes about the target round trip, at most `max`.
    uint64_t target_headers(uint64_t max = 1024) const noexcept;
    // The same for GetBlockBodies or GetReceipts (`request`): bodies or receipt lists to ask next so
    // the reply takes about the target round trip, at most `max` (geth's BodyCapacity and
    // ReceiptCapacity, eth/downloader/peer.go).
    uint64_t target_items(eth::MessageId request, uint64_t max) const noexcept;
    Clock::duration target_timeout() const noexcept { return capacity_.target_timeout(); }

  private:
    struct Waiter;
    ClientSession(std::unique_ptr<Connection> conn, EthLink link, const LocalNode& local, ClientOptions options);

    void start();
    // Tracks request `id` (`code`, answered by `response`, at most `max_items` items), sends
    // `payload` and waits for its reply, deadline or the session's end.
    asio::awaitable<RequestResult> send_tracked(uint64_t code, uint64_t response, uint64_t id, uint64_t max_items,
                                                const Bytes& payload, std::optional<Clock::duration> timeout,
                                                uint64_t group, bool* last_block_incomplete = nullptr);
    // `self` keeps the session alive while the loop runs.
    asio::awaitable<void> read_loop(std::shared_ptr<ClientSession> self);
    asio::awaitable<void> expiry_loop(std::shared_ptr<ClientSession> self);
    asio::awaitable<void> on_message(const Message& m);
    void on_response(uint64_t code, ByteView payload);
    asio::awaitable<void> answer_request(uint64_t code, ByteView payload);
    void finish(Waiter& w, RequestResult result);
    void fail_all(const std::string& why);

    std::unique_ptr<Connection> conn_;
    EthLink link_;
    ClientOptions options_;
    tracker::Tracker tracker_;
    tracker::Capacity capacity_;
    asio::steady_timer expiry_;
    std::unordered_map<uint64_t, Waiter*> waiters_;
    uint64_t next_id_;
    ClientStats stats_;
    bool closed_{false};
    bool closing_{false};
    std::optional<PeerError> error_;
};

}  // namespace headerd::p2p
