#include "p2p/peer.hpp"

#include <fmt/format.h>

#include "p2p/eth/messages.hpp"
#include "p2p/eth/status.hpp"

namespace headerd::p2p {
namespace {

// The peer said goodbye: nothing more may be sent.
[[noreturn]] void remote_disconnect(ByteView payload) {
    auto reason = decode_disconnect(payload);
    const DisconnectReason r = reason ? *reason : DisconnectReason::kRequested;
    throw PeerError(PeerErrorKind::kRemoteDisconnect, fmt::format("peer disconnected: {}", to_string(r)), r);
}

// Reads the next message of the handshake, or throws kHandshakeTimeout.
asio::awaitable<Message> read_by(Connection& conn, Clock::time_point deadline) {
    auto m = co_await conn.read_message(deadline);
    if (!m) throw PeerError(PeerErrorKind::kHandshakeTimeout, "Hello and Status not done in time");
    co_return *m;
}

}  // namespace

asio::awaitable<bool> handle_base(Connection& conn, const Message& m) {
    if (m.id == kPingId) {
        Bytes pong;
        encode_pong(pong);
        co_await conn.write_message(kPongId, pong);
        co_return true;
    }
    if (m.id == kPongId) co_return true;
    if (m.id == kDisconnectId) remote_disconnect(m.payload);
    if (m.id < kBaseProtocolLength) {
        throw PeerError(PeerErrorKind::kUnknownMessage, fmt::format("unexpected p2p message id {}", m.id));
    }
    co_return false;
}

uint64_t eth_code(const EthLink& link, const Message& m) {
    const uint64_t code = m.id - link.offset;
    if (m.id < link.offset || !eth::is_message_of(link.version, code)) {
        throw PeerError(PeerErrorKind::kUnknownMessage, fmt::format("unknown message id {}", m.id));
    }
    return code;
}

asio::awaitable<EthLink> establish(Connection& conn, const LocalNode& local, Clock::time_point deadline) {
    if (local.metrics != nullptr) conn.set_meters(&local.metrics->base(), nullptr, 0);

    Hello ours;
    ours.client_id = local.client_id;
    ours.capabilities = capabilities_of(local.offers);
    ours.node_id = local.key->public_key().bytes();
    Bytes payload;
    ours.encode(payload);
    co_await conn.write_message(kHelloId, payload);

    Message m = co_await read_by(conn, deadline);
    if (m.id == kDisconnectId) remote_disconnect(m.payload);
    if (m.id != kHelloId) {
        throw PeerError(PeerErrorKind::kUnexpectedMessage, fmt::format("expected Hello, got message id {}", m.id));
    }
    auto hello = Hello::decode(m.payload);
    // A bad node id is "invalid identity" (0x07), not a breach (docs/wire.md).
    if (!hello) throw_peer_error(hello.error(), "Hello");
    if (hello->node_id != conn.remote_key()->bytes()) {
        throw PeerError(PeerErrorKind::kUnexpectedIdentity, "Hello node id differs from the handshake key");
    }
    auto shared = negotiate(local.offers, *hello);
    if (!shared) throw_peer_error(shared.error(), "capabilities");
    EthLink link;
    link.client_id = hello->client_id.substr(0, 128);
    for (const auto& cap : *shared) {
        if (cap.name == "eth") {
            link.version = cap.version;
            link.offset = cap.offset;
        }
    }
    if (link.version == 0) throw PeerError(PeerErrorKind::kUselessPeer, "no shared eth version");
    if (local.metrics != nullptr)
        conn.set_meters(&local.metrics->base(), local.metrics->eth(link.version), link.offset);
    // p2p v5: everything after the Hellos is snappy-compressed, in both directions.
    conn.enable_snappy();

    payload.clear();
    eth::encode_status(link.version, *local.config, local.head, payload, local.earliest);
    co_await conn.write_message(link.offset + static_cast<uint64_t>(eth::MessageId::kStatus), payload);

    for (;;) {
        m = co_await read_by(conn, deadline);
        if (co_await handle_base(conn, m)) continue;
        if (m.id != link.offset + static_cast<uint64_t>(eth::MessageId::kStatus)) {
            throw PeerError(PeerErrorKind::kUnexpectedMessage,
                            fmt::format("first eth message must be Status, got id {}", m.id));
        }
        auto check = eth::check_status(link.version, m.payload, *local.config, local.head.number, local.head.timestamp);
        if (!check) {
            // A Status that does not decode is a breach; one that decodes but does not match is 0x10.
            const bool malformed = check.error().code.category() != eth::status_category();
            throw PeerError(malformed ? PeerErrorKind::kBadMessage : PeerErrorKind::kStatusRejected,
                            "Status: " + check.error().message);
        }
        if (link.version == eth::kEth68) {
            if (auto s = eth::StatusMessage68::decode(m.payload)) link.chain.head_hash = s->head_hash;
        } else if (auto s = eth::StatusMessage69::decode(m.payload)) {
            link.chain = PeerChain{s->latest_hash, s->latest, s->earliest};
        }
        co_return link;
    }
}

}  // namespace headerd::p2p
