#include "p2p/peer.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/block_header.hpp"
#include "core/hex.hpp"
#include "p2p/eth/status.hpp"

namespace headerd::p2p {
namespace {

constexpr uint64_t kHelloId = static_cast<uint64_t>(BaseMessageId::kHello);
constexpr uint64_t kDisconnectId = static_cast<uint64_t>(BaseMessageId::kDisconnect);
constexpr uint64_t kPingId = static_cast<uint64_t>(BaseMessageId::kPing);
constexpr uint64_t kPongId = static_cast<uint64_t>(BaseMessageId::kPong);

[[noreturn]] void breach(const std::string& what) { throw PeerError(DisconnectReason::kProtocolBreach, what); }

// The peer said goodbye: nothing more may be sent.
[[noreturn]] void remote_disconnect(ByteView payload) {
    auto reason = decode_disconnect(payload);
    const DisconnectReason r = reason ? *reason : DisconnectReason::kRequested;
    throw PeerError(r, fmt::format("peer disconnected: {}", to_string(r)), false);
}

asio::awaitable<void> send_pong(Connection& conn) {
    Bytes pong;
    encode_pong(pong);
    co_await conn.write_message(kPongId, pong, kWriteTimeout);
}

// Handles a base-protocol message that may arrive at any time; false if it is not one of them.
asio::awaitable<bool> handle_base(Connection& conn, const Message& m) {
    if (m.id == kPingId) {
        co_await send_pong(conn);
        co_return true;
    }
    if (m.id == kPongId) co_return true;
    if (m.id == kDisconnectId) remote_disconnect(m.payload);
    if (m.id < kBaseProtocolLength) breach(fmt::format("unexpected p2p message id {}", m.id));
    co_return false;
}

}  // namespace

asio::awaitable<EthLink> establish(Connection& conn, const LocalNode& local) {
    const auto deadline = Clock::now() + kHandshakeTimeout;
    if (local.metrics != nullptr) conn.set_meters(&local.metrics->base(), nullptr, 0);
    auto remaining = [&] { return std::max(Clock::duration::zero(), deadline - Clock::now()); };

    Hello ours;
    ours.client_id = local.client_id;
    ours.capabilities = capabilities_of(kEthOffers);
    ours.node_id = local.key->public_key().bytes();
    Bytes payload;
    ours.encode(payload);
    co_await conn.write_message(kHelloId, payload, remaining());

    Message m = co_await conn.read_message(remaining());
    if (m.id == kDisconnectId) remote_disconnect(m.payload);
    if (m.id != kHelloId) breach(fmt::format("expected Hello, got message id {}", m.id));
    auto hello = Hello::decode(m.payload);
    // A bad node id is "invalid identity" (0x07), not a breach (docs/wire.md).
    if (!hello) throw PeerError(eth::disconnect_reason_for(hello.error()), "Hello: " + hello.error().message());
    if (hello->node_id != conn.remote_key()->bytes()) {
        throw PeerError(DisconnectReason::kUnexpectedIdentity, "Hello node id differs from the handshake key");
    }
    auto shared = negotiate(kEthOffers, *hello);
    if (!shared) {
        const bool version = shared.error() == BaseProtocolError::kIncompatibleVersion;
        throw PeerError(version ? DisconnectReason::kIncompatibleVersion : DisconnectReason::kUselessPeer,
                        "capabilities: " + shared.error().message());
    }
    EthLink link;
    link.client_id = hello->client_id.substr(0, 128);
    for (const auto& cap : *shared) {
        if (cap.name == "eth") {
            link.version = cap.version;
            link.offset = cap.offset;
        }
    }
    if (link.version == 0) throw PeerError(DisconnectReason::kUselessPeer, "no shared eth version");
    if (local.metrics != nullptr)
        conn.set_meters(&local.metrics->base(), local.metrics->eth(link.version), link.offset);
    // p2p v5: everything after the Hellos is snappy-compressed, in both directions.
    conn.enable_snappy();

    payload.clear();
    if (link.version >= eth::kEth69) {
        eth::make_status69(*local.config, local.head).encode(payload);
    } else {
        eth::make_status68(*local.config, local.head).encode(payload);
    }
    co_await conn.write_message(link.offset + static_cast<uint64_t>(eth::MessageId::kStatus), payload, remaining());

    for (;;) {
        m = co_await conn.read_message(remaining());
        if (co_await handle_base(conn, m)) continue;
        if (m.id != link.offset + static_cast<uint64_t>(eth::MessageId::kStatus)) {
            breach(fmt::format("first eth message must be Status, got id {}", m.id));
        }
        eth::StatusCheck check;
        if (link.version >= eth::kEth69) {
            auto st = eth::StatusMessage69::decode(m.payload);
            if (!st) breach("Status: " + st.error().message());
            check = eth::validate_status(*st, *local.config, local.head.number, local.head.timestamp, link.version);
        } else {
            auto st = eth::StatusMessage68::decode(m.payload);
            if (!st) breach("Status: " + st.error().message());
            check = eth::validate_status(*st, *local.config, local.head.number, local.head.timestamp, link.version);
        }
        if (!check) throw PeerError(check.error().reason, "Status: " + check.error().message);
        co_return link;
    }
}

asio::awaitable<void> serve_peer(Connection& conn, const EthLink& link, const ServeContext& context) {
    using eth::MessageId;
    const NetMetrics* metrics = context.metrics;
    const MessageMeters* meters = metrics != nullptr ? metrics->eth(link.version) : nullptr;
    // Service time of request `code` that arrived at `received`; a no-op with metrics off.
    auto observe_serve = [meters](MessageId code, Clock::time_point received) {
        if (meters == nullptr) return;
        meters->serve_seconds[static_cast<size_t>(code)]->Observe(
            std::chrono::duration<double>(Clock::now() - received).count());
    };
    ItemBuffer& scratch = context.scratch;
    Bytes& reply = context.reply;
    int silent_periods = 0;
    const uint64_t space = eth::message_space(link.version);
    for (;;) {
        Message m;
        bool idle = false;
        try {
            m = co_await conn.read_message(kIdlePeriod);
        } catch (const PeerTimeout&) {
            idle = true;
        }
        if (idle) {
            if (++silent_periods >= 2) throw PeerError(DisconnectReason::kPingTimeout, "peer silent for 30 s");
            Bytes ping;
            encode_ping(ping);
            co_await conn.write_message(kPingId, ping, kWriteTimeout);
            continue;
        }
        silent_periods = 0;
        const Clock::time_point received = meters != nullptr ? Clock::now() : Clock::time_point{};
        if (co_await handle_base(conn, m)) continue;
        if (m.id < link.offset || m.id - link.offset >= space ||
            !eth::is_message_of(link.version, m.id - link.offset)) {
            breach(fmt::format("unknown message id {}", m.id));
        }
        const auto id = static_cast<MessageId>(m.id - link.offset);
        switch (id) {
            case MessageId::kGetBlockHeaders: {
                auto req = eth::GetBlockHeadersRequest::decode(m.payload);
                if (!req) breach("GetBlockHeaders: " + req.error().message());
                // A damaged store still gets an (empty) answer; serve() logs nothing itself, the
                // session does below.
                auto summary = context.headers.serve(*req, scratch, reply);
                co_await conn.write_message(link.offset + static_cast<uint64_t>(MessageId::kBlockHeaders), reply,
                                            kWriteTimeout);
                if (metrics != nullptr && summary) {
                    metrics->header_requests(summary->kind).Increment();
                    metrics->headers_served(db::Store::kAncient)
                        .Increment(static_cast<double>(summary->ancient_headers));
                    metrics->headers_served(db::Store::kLevelDb)
                        .Increment(static_cast<double>(summary->headers - summary->ancient_headers));
                }
                observe_serve(id, received);
                // A damaged store fails every request that touches it: one line per 10 s is enough.
                if (!summary) {
                    if (auto v = context.limiter.allow("damaged store", Clock::now())) {
                        spdlog::error("Serving headers failed                   err=\"{}\" suppressed={}",
                                      summary.error().message, v.suppressed);
                    }
                }
                break;
            }
            case MessageId::kGetBlockBodies:
            case MessageId::kGetReceipts:
            case MessageId::kGetPooledTransactions: {
                auto req = eth::HashListRequest::decode(m.payload);
                if (!req) breach(fmt::format("{}: {}", eth::message_name(m.id - link.offset), req.error().message()));
                reply.clear();
                eth::encode_empty_reply(reply, req->request_id);
                co_await conn.write_message(link.offset + static_cast<uint64_t>(*eth::empty_reply_id(id)), reply,
                                            kWriteTimeout);
                observe_serve(id, received);
                break;
            }
            case MessageId::kBlockRangeUpdate: {
                auto update = eth::BlockRangeUpdate::decode(m.payload);
                if (!update || !update->validate()) breach("invalid BlockRangeUpdate");
                break;
            }
            case MessageId::kNewBlockHashes:
            case MessageId::kTransactions:
            case MessageId::kNewBlock:
            case MessageId::kNewPooledTransactionHashes:
                break;  // gossip: a header server has no use for it
            case MessageId::kBlockBodies:
            case MessageId::kPooledTransactions:
            case MessageId::kReceipts:
                break;  // replies we never asked for, but harmless and cheap to drop
            default:
                // Status again, or BlockHeaders we never asked for.
                breach(fmt::format("unexpected {}", eth::message_name(m.id - link.offset)));
        }
    }
}

asio::awaitable<HeadersReply> request_headers(Connection& conn, const EthLink& link, tracker::Tracker& tracker,
                                              const eth::GetBlockHeadersRequest& request) {
    constexpr auto kRequestCode = static_cast<uint64_t>(eth::MessageId::kGetBlockHeaders);
    constexpr auto kResponseCode = static_cast<uint64_t>(eth::MessageId::kBlockHeaders);
    if (auto t = tracker.track(request.request_id, kRequestCode, kResponseCode, request.amount, Clock::now()); !t) {
        throw PeerError(DisconnectReason::kRequested,
                        fmt::format("request {} not sent: {}", request.request_id, t.error().message()));
    }
    Bytes payload;
    request.encode(payload);
    co_await conn.write_message(link.offset + kRequestCode, payload, kWriteTimeout);
    for (;;) {
        const auto deadline = tracker.next_deadline();
        Message m;
        bool timed_out = false;
        try {
            m = co_await conn.read_message(std::max(Clock::duration::zero(), *deadline - Clock::now()));
        } catch (const PeerTimeout&) {
            timed_out = true;
        }
        if (timed_out) {
            tracker.expire(Clock::now());
            if (tracker.is_pending(request.request_id)) continue;  // woke a little early
            throw PeerTimeout(fmt::format("no BlockHeaders reply to request {} within {} s", request.request_id,
                                          std::chrono::duration_cast<std::chrono::seconds>(tracker.timeout()).count()));
        }
        if (co_await handle_base(conn, m)) continue;
        const uint64_t rel = m.id - link.offset;
        if (m.id < link.offset || !eth::is_message_of(link.version, rel))
            breach(fmt::format("unknown message id {}", m.id));
        const auto id = static_cast<eth::MessageId>(rel);
        if (id == eth::MessageId::kBlockRangeUpdate || id == eth::MessageId::kNewPooledTransactionHashes ||
            id == eth::MessageId::kTransactions || id == eth::MessageId::kNewBlockHashes ||
            id == eth::MessageId::kNewBlock) {
            continue;  // gossip
        }
        if (id != eth::MessageId::kBlockHeaders && id != eth::MessageId::kBlockBodies &&
            id != eth::MessageId::kReceipts && id != eth::MessageId::kPooledTransactions) {
            breach(fmt::format("unexpected {} while waiting for BlockHeaders", eth::message_name(rel)));
        }
        // The tracker vets the response before its items are decoded.
        auto head = eth::ResponseHead::peek(m.payload);
        if (!head) breach(fmt::format("{}: {}", eth::message_name(rel), head.error().message()));
        auto rtt = tracker.fulfil(head->request_id, rel, head->items, Clock::now());
        if (!rtt) {
            breach(fmt::format("{} for request {} with {} items: {}", eth::message_name(rel), head->request_id,
                               head->items, rtt.error().message()));
        }
        auto reply = eth::BlockHeadersMessage::decode(m.payload);
        if (!reply) breach("BlockHeaders: " + reply.error().message());
        HeadersReply out;
        out.rtt = *rtt;
        out.headers.reserve(reply->headers.size());
        for (ByteView h : reply->headers) {
            if (auto d = decode_block_header(h); !d) breach("BlockHeaders: invalid header: " + d.error().message());
            out.headers.emplace_back(h.begin(), h.end());
        }
        co_return out;
    }
}

}  // namespace headerd::p2p
