#include "p2p/net_metrics.hpp"

#include <fmt/format.h>

#include "p2p/eth/messages.hpp"

namespace headerd::p2p {
namespace {

constexpr uint64_t kRequestCodes[] = {
    static_cast<uint64_t>(eth::MessageId::kGetBlockHeaders),
    static_cast<uint64_t>(eth::MessageId::kGetBlockBodies),
    static_cast<uint64_t>(eth::MessageId::kGetPooledTransactions),
    static_cast<uint64_t>(eth::MessageId::kGetReceipts),
    static_cast<uint64_t>(eth::MessageId::kGetBlockAccessLists),  // eth/71+
    static_cast<uint64_t>(eth::MessageId::kGetCells),             // eth/72
};
constexpr uint64_t kBaseCodes = 4;  // Hello, Disconnect, Ping, Pong
// The requests this node sends (get, sync, load): headers, and bodies and receipts (get --bodies,
// --receipts; load's history profiles).
constexpr uint64_t kTrackedCodes[] = {
    static_cast<uint64_t>(eth::MessageId::kGetBlockHeaders),
    static_cast<uint64_t>(eth::MessageId::kGetBlockBodies),
    static_cast<uint64_t>(eth::MessageId::kGetReceipts),
};

constexpr DisconnectReason kReasons[] = {
    DisconnectReason::kRequested,           DisconnectReason::kNetworkError,    DisconnectReason::kProtocolBreach,
    DisconnectReason::kUselessPeer,         DisconnectReason::kTooManyPeers,    DisconnectReason::kAlreadyConnected,
    DisconnectReason::kIncompatibleVersion, DisconnectReason::kInvalidIdentity, DisconnectReason::kQuitting,
    DisconnectReason::kUnexpectedIdentity,  DisconnectReason::kConnectedToSelf, DisconnectReason::kPingTimeout,
    DisconnectReason::kSubprotocolError,
};

constexpr eth::ServeKind kKinds[] = {eth::ServeKind::kZeroAmount, eth::ServeKind::kUnknownHash,
                                     eth::ServeKind::kContiguous, eth::ServeKind::kSkip, eth::ServeKind::kNonCanonical};

MessageMeters make_meters(metrics::Families& f, const std::string& proto, uint64_t version, uint64_t codes,
                          bool (*exists)(uint64_t version, uint64_t code)) {
    MessageMeters m;
    const std::string v = std::to_string(version);
    for (uint64_t code = 0; code < codes; ++code) {
        if (!exists(version, code)) continue;
        const prometheus::Labels labels{{"proto", proto}, {"version", v}, {"code", code_label(code)}};
        m.ingress_bytes[code] = &f.ingress_bytes.Add(labels);
        m.ingress_messages[code] = &f.ingress_messages.Add(labels);
        m.egress_bytes[code] = &f.egress_bytes.Add(labels);
        m.egress_messages[code] = &f.egress_messages.Add(labels);
    }
    if (proto == "eth") {
        for (uint64_t code : kRequestCodes) {
            if (!exists(version, code)) continue;
            const prometheus::Labels labels{{"proto", proto}, {"version", v}, {"code", code_label(code)}};
            m.serve_seconds[code] = &f.serve_seconds.Add(labels, metrics::duration_buckets());
        }
    }
    return m;
}

tracker::TrackerMetrics make_tracker(metrics::Families& f, uint64_t version) {
    tracker::TrackerMetrics t;
    for (uint64_t code : kTrackedCodes) {
        const prometheus::Labels labels{
            {"proto", "eth"}, {"version", std::to_string(version)}, {"code", code_label(code)}};
        t.tracked[code] = &f.tracked_requests.Add(labels);
        t.rtt[code] = &f.request_rtt.Add(labels, metrics::duration_buckets());
    }
    t.lost = &f.requests_lost.Add({});
    t.stale = &f.responses_stale.Add({});
    t.rejected_cap = &f.tracker_rejected.Add({{"reason", "cap"}});
    t.rejected_duplicate = &f.tracker_rejected.Add({{"reason", "duplicate_id"}});
    return t;
}

}  // namespace

std::string code_label(uint64_t code) { return fmt::format("0x{:02x}", code); }

std::string_view reason_label(DisconnectReason r) noexcept {
    switch (r) {
        case DisconnectReason::kRequested:
            return "requested";
        case DisconnectReason::kNetworkError:
            return "network_error";
        case DisconnectReason::kProtocolBreach:
            return "protocol_breach";
        case DisconnectReason::kUselessPeer:
            return "useless_peer";
        case DisconnectReason::kTooManyPeers:
            return "too_many_peers";
        case DisconnectReason::kAlreadyConnected:
            return "already_connected";
        case DisconnectReason::kIncompatibleVersion:
            return "incompatible_version";
        case DisconnectReason::kInvalidIdentity:
            return "invalid_identity";
        case DisconnectReason::kQuitting:
            return "quitting";
        case DisconnectReason::kUnexpectedIdentity:
            return "unexpected_identity";
        case DisconnectReason::kConnectedToSelf:
            return "connected_to_self";
        case DisconnectReason::kPingTimeout:
            return "ping_timeout";
        case DisconnectReason::kSubprotocolError:
            return "subprotocol_error";
    }
    return "unknown";
}

NetMetrics::NetMetrics(metrics::Families& f)
    : base_(make_meters(f, "p2p", kBaseProtocolVersion, kBaseCodes, [](uint64_t, uint64_t) { return true; })),
      eth_{},
      tracker_{} {
    for (size_t i = 0; i < kEthVersions; ++i) {
        const uint64_t version = kFirstEthVersion + i;
        if (eth::message_space(version) == 0) continue;  // not a version headerd speaks
        eth_[i] = make_meters(f, "eth", version, eth::message_space(version), &eth::is_message_of);
        tracker_[i] = make_tracker(f, version);
    }
    peers_[static_cast<size_t>(Direction::kInbound)] = &f.peers.Add({{"direction", "inbound"}});
    peers_[static_cast<size_t>(Direction::kOutbound)] = &f.peers.Add({{"direction", "outbound"}});
    for (DisconnectReason r : kReasons) {
        handshake_reasons_[static_cast<size_t>(r)] =
            &f.handshake_errors.Add({{"reason", std::string(reason_label(r))}});
    }
    handshake_failures_[static_cast<size_t>(HandshakeFailure::kTimeout)] =
        &f.handshake_errors.Add({{"reason", "timeout"}});
    handshake_failures_[static_cast<size_t>(HandshakeFailure::kNetwork)] = &f.handshake_errors.Add({{"reason", "io"}});
    headers_served_[static_cast<size_t>(Store::kAncient)] = &f.headers_served.Add({{"store", "ancient"}});
    headers_served_[static_cast<size_t>(Store::kLevelDb)] = &f.headers_served.Add({{"store", "leveldb"}});
    for (eth::ServeKind k : kKinds) {
        header_requests_[static_cast<size_t>(k)] = &f.header_requests.Add({{"kind", std::string(eth::to_string(k))}});
    }
    db_read_[static_cast<size_t>(Store::kAncient)] =
        &f.db_read_seconds.Add({{"store", "ancient"}}, metrics::duration_buckets());
    db_read_[static_cast<size_t>(Store::kLevelDb)] =
        &f.db_read_seconds.Add({{"store", "leveldb"}}, metrics::duration_buckets());
    history_items_[0] = &f.history_items_served.Add({{"message", "BlockBodies"}});
    history_items_[1] = &f.history_items_served.Add({{"message", "Receipts"}});
    history_bytes_[0] = &f.history_bytes_served.Add({{"message", "BlockBodies"}});
    history_bytes_[1] = &f.history_bytes_served.Add({{"message", "Receipts"}});
    head_ = &f.chain_head_number.Add({});
    ancient_ = &f.ancient_items.Add({});
    reply_cache_hits_ = &f.reply_cache_requests.Add({{"result", "hit"}});
    reply_cache_misses_ = &f.reply_cache_requests.Add({{"result", "miss"}});
    reply_cache_evictions_ = &f.reply_cache_evictions.Add({});
    reply_cache_bytes_ = &f.reply_cache_bytes.Add({});
    reply_cache_entries_ = &f.reply_cache_entries.Add({});
}

void NetMetrics::reply_cache_changed(int64_t bytes, int64_t entries, uint64_t evicted) const noexcept {
    reply_cache_bytes_->Increment(static_cast<double>(bytes));
    reply_cache_entries_->Increment(static_cast<double>(entries));
    if (evicted > 0) reply_cache_evictions_->Increment(static_cast<double>(evicted));
}

const MessageMeters* NetMetrics::eth(uint64_t version) const noexcept {
    if (version < kFirstEthVersion || version - kFirstEthVersion >= kEthVersions) return nullptr;
    if (eth::message_space(version) == 0) return nullptr;
    return &eth_[version - kFirstEthVersion];
}

const tracker::TrackerMetrics& NetMetrics::tracker_metrics(uint64_t version) const noexcept {
    if (eth(version) == nullptr) return no_tracker_;
    return tracker_[version - kFirstEthVersion];
}

prometheus::Counter& NetMetrics::handshake_error(DisconnectReason r) const noexcept {
    const auto code = static_cast<size_t>(r);
    if (code < handshake_reasons_.size() && handshake_reasons_[code] != nullptr) return *handshake_reasons_[code];
    return *handshake_reasons_[static_cast<size_t>(DisconnectReason::kProtocolBreach)];
}

void NetMetrics::set_chain(uint64_t head_number, uint64_t ancient_items) const noexcept {
    head_->Set(static_cast<double>(head_number));
    ancient_->Set(static_cast<double>(ancient_items));
}

void NetMetrics::on_read(Store store, uint64_t, std::chrono::steady_clock::duration elapsed) noexcept {
    db_read_[static_cast<size_t>(store)]->Observe(std::chrono::duration<double>(elapsed).count());
}

void NetMetrics::history_served(eth::MessageId reply, size_t items, size_t bytes) const noexcept {
    const size_t i = reply == eth::MessageId::kBlockBodies ? 0 : 1;
    history_items_[i]->Increment(static_cast<double>(items));
    history_bytes_[i]->Increment(static_cast<double>(bytes));
}

}  // namespace headerd::p2p
