#pragma once

// The p2p layer's view of headerd's metrics: every label child it will ever touch is created once,
// here, and kept in tables indexed by message code, store and reason, so a session only follows a
// pointer per message (names and meanings: docs/operations.md). A null table or entry means metrics
// are off (or the message does not exist in that protocol version); callers skip it.
//
// Thread-safety: immutable after construction; the prometheus-cpp metrics are thread-safe.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/header_source.hpp"
#include "metrics/metrics.hpp"
#include "p2p/eth/serve.hpp"
#include "p2p/tracker/tracker.hpp"
#include "p2p/wire/base_protocol.hpp"

namespace headerd::p2p {

// Relative message codes a protocol may use (eth/72 uses 0x00..0x15, p2p 0x00..0x03).
inline constexpr size_t kMaxMessageCodes = 32;
// The eth versions with meters: 68 and the next ones, as far as headerd offers them.
inline constexpr uint64_t kFirstEthVersion = 68;
inline constexpr size_t kEthVersions = 5;

struct MessageMeters {
    std::array<prometheus::Counter*, kMaxMessageCodes> ingress_bytes{};
    std::array<prometheus::Counter*, kMaxMessageCodes> ingress_messages{};
    std::array<prometheus::Counter*, kMaxMessageCodes> egress_bytes{};
    std::array<prometheus::Counter*, kMaxMessageCodes> egress_messages{};
    // Requests this node answers (GetBlockHeaders, GetBlockBodies, ...); null for other codes.
    std::array<prometheus::Histogram*, kMaxMessageCodes> serve_seconds{};
};

enum class Direction : uint8_t { kInbound = 0, kOutbound = 1 };

// Why a connection ended before it was serving or requesting: a disconnect reason, or one of
// these for failures that have none.
enum class HandshakeFailure : uint8_t { kTimeout = 0, kNetwork = 1 };

class NetMetrics final : public ReadObserver {
  public:
    explicit NetMetrics(metrics::Families& families);

    const MessageMeters& base() const noexcept { return base_; }
    // nullptr for an eth version we do not speak.
    const MessageMeters* eth(uint64_t version) const noexcept;
    // The tracker's gauges and histograms for requests sent over eth `version` (all null if unknown).
    const tracker::TrackerMetrics& tracker_metrics(uint64_t version) const noexcept;

    prometheus::Gauge& peers(Direction d) const noexcept { return *peers_[static_cast<size_t>(d)]; }
    prometheus::Counter& handshake_error(DisconnectReason r) const noexcept;
    prometheus::Counter& handshake_error(HandshakeFailure f) const noexcept {
        return *handshake_failures_[static_cast<size_t>(f)];
    }
    prometheus::Counter& headers_served(Store s) const noexcept { return *headers_served_[static_cast<size_t>(s)]; }
    prometheus::Counter& header_requests(eth::ServeKind k) const noexcept {
        return *header_requests_[static_cast<size_t>(k)];
    }
    void set_chain(uint64_t head_number, uint64_t ancient_items) const noexcept;
    // The cache of compressed replies (p2p/eth/reply_cache.hpp): a lookup's result, and a change.
    void reply_cache_lookup(bool hit) const noexcept { (hit ? reply_cache_hits_ : reply_cache_misses_)->Increment(); }
    void reply_cache_changed(int64_t bytes, int64_t entries, uint64_t evicted) const noexcept;
    // A BlockBodies or Receipts reply of `items` bodies or receipt lists, `bytes` of them.
    void history_served(eth::MessageId reply, size_t items, size_t bytes) const noexcept;

    // headerd_db_read_seconds{store}.
    void on_read(Store store, uint64_t headers, std::chrono::steady_clock::duration elapsed) noexcept override;

  private:
    MessageMeters base_;
    // Indexed by eth version - kFirstEthVersion, for every version headerd offers.
    std::array<MessageMeters, kEthVersions> eth_;
    std::array<tracker::TrackerMetrics, kEthVersions> tracker_;
    tracker::TrackerMetrics no_tracker_;
    std::array<prometheus::Gauge*, 2> peers_{};
    // Indexed by DisconnectReason code (0x00..0x10); null where devp2p defines no reason.
    std::array<prometheus::Counter*, 0x11> handshake_reasons_{};
    std::array<prometheus::Counter*, 2> handshake_failures_{};
    std::array<prometheus::Counter*, kStoreCount> headers_served_{};
    std::array<prometheus::Counter*, 5> header_requests_{};
    std::array<prometheus::Histogram*, kStoreCount> db_read_{};
    prometheus::Counter* reply_cache_hits_{nullptr};
    prometheus::Counter* reply_cache_misses_{nullptr};
    prometheus::Counter* reply_cache_evictions_{nullptr};
    prometheus::Gauge* reply_cache_bytes_{nullptr};
    prometheus::Gauge* reply_cache_entries_{nullptr};
    // [0]: BlockBodies, [1]: Receipts.
    std::array<prometheus::Counter*, 2> history_items_{};
    std::array<prometheus::Counter*, 2> history_bytes_{};
    prometheus::Gauge* head_{nullptr};
    prometheus::Gauge* ancient_{nullptr};
};

// Label values: "0x03" for a code, "too_many_peers" for a reason.
std::string code_label(uint64_t code);
std::string_view reason_label(DisconnectReason r) noexcept;

// Adds one message of `wire_bytes` to the ingress or egress meters, if there are any for it.
inline void count_message(const MessageMeters* meters, bool ingress, uint64_t code, size_t wire_bytes) noexcept {
    if (meters == nullptr || code >= kMaxMessageCodes) return;
    prometheus::Counter* messages = ingress ? meters->ingress_messages[code] : meters->egress_messages[code];
    if (messages == nullptr) return;
    messages->Increment();
    (ingress ? meters->ingress_bytes[code] : meters->egress_bytes[code])->Increment(static_cast<double>(wire_bytes));
}

}  // namespace headerd::p2p
