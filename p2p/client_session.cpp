#include "p2p/client_session.hpp"

#include <algorithm>
#include <random>

#include <fmt/format.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/awaitable.hpp"
#include "core/block_header.hpp"
#include "p2p/eth/history.hpp"

namespace headerd::p2p {
namespace {

using namespace boost::asio::experimental::awaitable_operators;
using eth::MessageId;
constexpr uint64_t kRequestCode = static_cast<uint64_t>(MessageId::kGetBlockHeaders);
constexpr uint64_t kResponseCode = static_cast<uint64_t>(MessageId::kBlockHeaders);

RequestResult failure(RequestFailure::Kind kind, std::string message) {
    return RequestFailure{kind, std::move(message)};
}

// A TCP connection to host:port by `deadline`, from `bind` when given; PeerError kNetwork otherwise.
asio::awaitable<tcp::socket> dial(const Enode& peer, Clock::time_point deadline,
                                  const std::optional<asio::ip::address>& bind) {
    auto executor = co_await asio::this_coro::executor;
    tcp::resolver resolver(executor);
    auto [rec, endpoints] = co_await resolver.async_resolve(peer.host, std::to_string(peer.port), kTuple);
    if (rec) throw PeerError(PeerErrorKind::kNetwork, fmt::format("resolve {}: {}", peer.host, rec.message()));
    tcp::socket socket(executor);
    asio::steady_timer timer(executor, deadline);
    boost::system::error_code ec;
    if (!bind) {
        auto result = co_await (asio::async_connect(socket, endpoints, kTuple) || timer.async_wait(kTuple));
        if (result.index() == 1) throw PeerError(PeerErrorKind::kNetwork, "connect timed out");
        ec = std::get<0>(std::get<0>(result));
    } else {
        // Bound to a local address: the first endpoint of its family (async_connect over a range
        // would reopen the socket unbound).
        const auto it = std::find_if(endpoints.begin(), endpoints.end(),
                                     [&](const auto& e) { return e.endpoint().address().is_v4() == bind->is_v4(); });
        if (it == endpoints.end()) {
            throw PeerError(PeerErrorKind::kNetwork,
                            fmt::format("{} has no address of the family of --bind {}", peer.host, bind->to_string()));
        }
        const tcp::endpoint remote = it->endpoint();
        socket.open(remote.protocol());
        if (socket.bind(tcp::endpoint(*bind, 0), ec); ec) {
            throw PeerError(PeerErrorKind::kNetwork, fmt::format("bind {}: {}", bind->to_string(), ec.message()));
        }
        auto result = co_await (socket.async_connect(remote, kTuple) || timer.async_wait(kTuple));
        if (result.index() == 1) throw PeerError(PeerErrorKind::kNetwork, "connect timed out");
        ec = std::get<0>(std::get<0>(result));
    }
    if (ec) throw PeerError(PeerErrorKind::kNetwork, fmt::format("connect: {}", ec.message()));
    co_return socket;
}

}  // namespace

// A request waiting for its reply. A history reply travels as a HeadersReply too (its items in
// `headers`), which request_history hands on as what it is.
struct ClientSession::Waiter {
    explicit Waiter(const asio::any_io_executor& executor) : wake(executor, Clock::time_point::max()) {}
    asio::steady_timer wake;  // never expires; cancelled when `result` is set
    std::optional<RequestResult> result;
    Clock::duration ttl{};
    uint64_t group{0};
    uint64_t code{kRequestCode};           // the request's code (the capacity estimate's kind)
    uint64_t response{kResponseCode};      // its reply's
    bool* last_block_incomplete{nullptr};  // eth/70 Receipts: where the reply's flag goes
};

asio::awaitable<std::shared_ptr<ClientSession>> ClientSession::connect(const Enode& peer, const LocalNode& local,
                                                                       ClientOptions options) {
    const auto deadline = Clock::now() + options.limits.handshake;
    auto conn = std::make_unique<Connection>(co_await dial(peer, deadline, options.bind), options.limits);
    co_await conn->dial_handshake(*local.key, peer.key, deadline);
    EthLink link = co_await establish(*conn, local, deadline);
    std::shared_ptr<ClientSession> session(new ClientSession(std::move(conn), std::move(link), local, options));
    session->start();
    co_return session;
}

ClientSession::ClientSession(std::unique_ptr<Connection> conn, EthLink link, const LocalNode& local,
                             ClientOptions options)
    : conn_(std::move(conn)),
      link_(std::move(link)),
      options_(options),
      tracker_(tracker::TrackerConfig{options.max_in_flight, tracker::kDefaultTimeout},
               local.metrics != nullptr ? local.metrics->tracker_metrics(link_.version) : tracker::TrackerMetrics{}),
      expiry_(conn_->executor()),
      next_id_(std::random_device{}()) {}

ClientSession::~ClientSession() = default;

uint64_t ClientSession::target_headers(uint64_t max) const noexcept {
    return capacity_.target_items(kRequestCode, capacity_.target_rtt(), max);
}

uint64_t ClientSession::target_items(eth::MessageId request, uint64_t max) const noexcept {
    return capacity_.target_items(static_cast<uint64_t>(request), capacity_.target_rtt(), max);
}

void ClientSession::start() {
    // Each loop holds the session alive until it ends; neither throws (errors end the session).
    auto executor = expiry_.get_executor();
    asio::co_spawn(executor, read_loop(shared_from_this()), asio::detached);
    asio::co_spawn(executor, expiry_loop(shared_from_this()), asio::detached);
}

asio::awaitable<RequestResult> ClientSession::request(eth::GetBlockHeadersRequest request,
                                                      std::optional<Clock::duration> timeout, uint64_t group) {
    request.request_id = next_id_++;
    Bytes payload;
    request.encode(payload);
    co_return co_await send_tracked(kRequestCode, kResponseCode, request.request_id, request.amount, payload, timeout,
                                    group);
}

asio::awaitable<HistoryResult> ClientSession::request_history(eth::MessageId request, std::span<const Hash32> hashes,
                                                              std::optional<Clock::duration> timeout,
                                                              uint64_t first_receipt_index) {
    if (!eth::is_history_request(request)) {
        co_return RequestFailure{RequestFailure::Kind::kRejected, "not a GetBlockBodies or GetReceipts request"};
    }
    const uint64_t id = next_id_++;
    Bytes payload;
    eth::encode_history_request(payload, link_.version, request, id, hashes, first_receipt_index);
    const auto response =
        request == eth::MessageId::kGetBlockBodies ? eth::MessageId::kBlockBodies : eth::MessageId::kReceipts;
    bool incomplete = false;
    auto r = co_await send_tracked(static_cast<uint64_t>(request), static_cast<uint64_t>(response), id, hashes.size(),
                                   payload, timeout, 0, &incomplete);
    if (!r) co_return r.error();
    co_return HistoryItemsReply{r->request_id, std::move(r->payload), std::move(r->headers), incomplete, r->rtt};
}

asio::awaitable<RequestResult> ClientSession::send_tracked(uint64_t code, uint64_t response, uint64_t id,
                                                           uint64_t max_items, const Bytes& payload,
                                                           std::optional<Clock::duration> timeout, uint64_t group,
                                                           bool* last_block_incomplete) {
    if (closed_) co_return failure(RequestFailure::Kind::kClosed, error_ ? error_->what() : "session closed");
    if (waiters_.size() >= options_.max_in_flight) {
        co_return failure(RequestFailure::Kind::kRejected,
                          fmt::format("{} requests in flight (the session's cap)", waiters_.size()));
    }
    const Clock::duration ttl = timeout ? *timeout : options_.request_timeout.value_or(target_timeout());
    const auto now = Clock::now();
    if (auto t = tracker_.track(id, code, response, max_items, now, ttl); !t) {
        co_return failure(RequestFailure::Kind::kRejected,
                          fmt::format("request {} not sent: {}", id, t.error().message()));
    }
    // The expiry timer sleeps until the earliest deadline; a request that is now the earliest wakes
    // it to re-arm.
    if (tracker_.next_deadline() == now + ttl) expiry_.cancel();
    Waiter waiter(expiry_.get_executor());
    waiter.ttl = ttl;
    waiter.group = group;
    waiter.code = code;
    waiter.response = response;
    waiter.last_block_incomplete = last_block_incomplete;
    waiters_.emplace(id, &waiter);
    try {
        co_await conn_->write_message(link_.offset + code, payload);
        ++stats_.requests;
    } catch (const PeerError& e) {
        // The reader sees the broken connection too and ends the session.
        if (!waiter.result) waiter.result = failure(RequestFailure::Kind::kClosed, e.what());
    }
    // The reply may already have arrived while the request was being written.
    if (!waiter.result) co_await waiter.wake.async_wait(kTuple);
    waiters_.erase(id);
    if (!waiter.result) co_return failure(RequestFailure::Kind::kClosed, "session closed");
    co_return std::move(*waiter.result);
}

void ClientSession::finish(Waiter& w, RequestResult result) {
    w.result = std::move(result);
    w.wake.cancel();
}

void ClientSession::abandon(uint64_t group) {
    if (group == 0) return;
    for (auto& [id, w] : waiters_) {
        if (w->group == group && !w->result) {
            finish(*w,
                   failure(RequestFailure::Kind::kAbandoned, fmt::format("request {} abandoned by its caller", id)));
        }
    }
}

void ClientSession::recycle(HeadersReply&& reply) noexcept {
    reply.headers.clear();
    conn_->give_payload_buffer(std::move(reply.payload));
}

void ClientSession::fail_all(const std::string& why) {
    for (auto& [id, w] : waiters_) {
        if (!w->result) finish(*w, failure(RequestFailure::Kind::kClosed, why));
    }
    tracker_.clear();
}

asio::awaitable<void> ClientSession::close(DisconnectReason reason) {
    if (closing_ || closed_) co_return;
    closing_ = true;
    co_await conn_->disconnect(reason);
}

asio::awaitable<void> ClientSession::read_loop(std::shared_ptr<ClientSession> /*self*/) {
    try {
        int silent_periods = 0;
        for (;;) {
            auto m = co_await conn_->read_message(Clock::now() + conn_->limits().idle);
            if (!m) {
                if (++silent_periods >= 2) throw PeerError(PeerErrorKind::kSilent, "peer silent for two idle periods");
                Bytes ping;
                encode_ping(ping);
                co_await conn_->write_message(kPingId, ping);
                continue;
            }
            silent_periods = 0;
            if (m->id == kPingId) ++stats_.pings;
            if (co_await handle_base(*conn_, *m)) continue;
            co_await on_message(*m);
            // Reads complete at once while the peer keeps the socket busy: let the thread's other
            // sessions and timers run after every message, or one fast peer would hold the thread
            // (the load generator runs many sessions per thread; the server does the same).
            co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
        }
    } catch (const PeerError& e) {
        error_ = closing_ ? PeerError(PeerErrorKind::kRequested, "closed by this node") : e;
    }
    closed_ = true;
    fail_all(error_->what());
    expiry_.cancel();
    if (!closing_) {
        const auto kind = error_->kind();
        if (kind == PeerErrorKind::kRemoteDisconnect || kind == PeerErrorKind::kNetwork) {
            conn_->close();
        } else {
            co_await conn_->disconnect(error_->reason());
        }
    }
}

asio::awaitable<void> ClientSession::expiry_loop(std::shared_ptr<ClientSession> /*self*/) {
    std::vector<uint64_t> lost;
    while (!closed_) {
        const auto next = tracker_.next_deadline();
        expiry_.expires_at(next ? *next : Clock::time_point::max());
        co_await expiry_.async_wait(kTuple);
        if (closed_) break;
        lost.clear();
        tracker_.expire(Clock::now(), lost);
        for (uint64_t id : lost) {
            ++stats_.lost;
            auto it = waiters_.find(id);
            // An abandoned request's waiter is gone: it was a header request (sync's).
            capacity_.timeout(it != waiters_.end() ? it->second->code : kRequestCode);
            if (it != waiters_.end() && !it->second->result) {
                const double seconds = std::chrono::duration<double>(it->second->ttl).count();
                finish(*it->second, failure(RequestFailure::Kind::kTimeout,
                                            fmt::format("no {} reply to request {} within {:g} s",
                                                        eth::message_name(it->second->response), id, seconds)));
            }
        }
    }
}

asio::awaitable<void> ClientSession::on_message(const Message& m) {
    const uint64_t code = eth_code(link_, m);
    switch (eth::role_of(link_.version, code)) {
        case eth::MessageRole::kResponse:
            on_response(code, m.payload);
            co_return;
        case eth::MessageRole::kHeaderRequest:
        case eth::MessageRole::kEmptyAnsweredRequest:
            co_await answer_request(code, m.payload);
            co_return;
        case eth::MessageRole::kRangeUpdate: {
            auto update = eth::BlockRangeUpdate::decode(m.payload);
            if (!update) throw_peer_error(update.error(), "BlockRangeUpdate");
            if (auto v = update->validate(); !v) throw_peer_error(v.error(), "BlockRangeUpdate");
            ++stats_.range_updates;
            link_.chain = PeerChain{update->latest_hash, update->latest, update->earliest};
            co_return;
        }
        case eth::MessageRole::kGossip:
            co_return;
        case eth::MessageRole::kStatus:
        case eth::MessageRole::kInvalid:
            throw PeerError(PeerErrorKind::kUnexpectedMessage, fmt::format("unexpected {}", eth::message_name(code)));
    }
}

void ClientSession::on_response(uint64_t code, ByteView payload) {
    // The tracker vets the response before its items are decoded.
    auto head = eth::ResponseHead::peek(link_.version, static_cast<MessageId>(code), payload);
    if (!head) throw_peer_error(head.error(), eth::message_name(code));
    auto rtt = tracker_.fulfil(head->request_id, code, head->items, Clock::now());
    if (!rtt) {
        const auto what =
            fmt::format("{} for request {} with {} items", eth::message_name(code), head->request_id, head->items);
        if (rtt.error() == tracker::TrackerError::kStale) {
            ++stats_.stale;
            if (!options_.drop_on_stale) return;
        }
        throw_peer_error(rtt.error(), what);
    }
    auto it = waiters_.find(head->request_id);
    // Every tracked request has a waiter until its reply or deadline, unless its caller abandoned
    // it: then the reply is dropped.
    if (it == waiters_.end() || it->second->result) return;
    // The items: headers, or (the tracker matched the code to the request's) bodies or receipt lists.
    std::vector<ByteView> items;
    if (code == kResponseCode) {
        auto reply = eth::BlockHeadersMessage::decode(payload);
        if (!reply) throw_peer_error(reply.error(), "BlockHeaders");
        if (options_.check_headers) {
            for (ByteView h : reply->headers) {
                if (auto d = decode_block_header(h); !d) throw_peer_error(d.error(), "BlockHeaders: invalid header");
            }
        }
        items = std::move(reply->headers);
    } else {
        auto reply = eth::decode_history_reply(link_.version, static_cast<MessageId>(code), payload);
        if (!reply) throw_peer_error(reply.error(), eth::message_name(code));
        if (it->second->last_block_incomplete != nullptr) {
            *it->second->last_block_incomplete = reply->last_block_incomplete;
        }
        items = std::move(reply->items);
    }
    capacity_.update(it->second->code, *rtt, items.size());  // kinds are request codes
    ++stats_.replies;
    HeadersReply out;
    out.request_id = head->request_id;
    out.rtt = *rtt;
    // The connection hands its read buffer over, so the views stay valid without copying the
    // reply (up to 1,024 headers, about 530 KB) and the next read gets a buffer of its own.
    out.payload = conn_->take_payload_buffer(payload);
    out.headers = std::move(items);
    finish(*it->second, std::move(out));
}

asio::awaitable<void> ClientSession::answer_request(uint64_t code, ByteView payload) {
    // A client keeps no chain: every request gets the empty reply of the negotiated version, which
    // is always valid.
    Bytes reply;
    MessageId reply_id = MessageId::kBlockHeaders;
    if (code == kRequestCode) {
        auto req = eth::GetBlockHeadersRequest::decode(payload);
        if (!req) throw_peer_error(req.error(), "GetBlockHeaders");
        eth::encode_block_headers(reply, req->request_id, {});
    } else {
        auto id = eth::answer_empty(link_.version, static_cast<MessageId>(code), payload, reply);
        if (!id) throw_peer_error(id.error(), eth::message_name(code));
        reply_id = *id;
    }
    ++stats_.answered;
    co_await conn_->write_message(link_.offset + static_cast<uint64_t>(reply_id), reply);
}

}  // namespace headerd::p2p
