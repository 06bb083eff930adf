#pragma once

// Serving GetBlockBodies and GetReceipts from a HistorySource, by hash through the HeaderSource's
// index, with geth's rules (eth/protocols/eth/handlers.go): at most 1024 items and about 2 MiB a
// reply, at most 2048 hashes looked at, and the reply ends at the first block not held. Receipts go
// out in the form of the negotiated version: eth/68 as stored (with blooms), eth/69 without blooms
// (EIP-7642), eth/70 without blooms and cut at 10 MiB with lastBlockIncomplete (EIP-7975).
// docs/history.md and docs/wire.md.

#include <cstddef>
#include <cstdint>
#include <optional>

#include "core/bytes.hpp"
#include "core/header_source.hpp"
#include "core/history_source.hpp"
#include "core/result.hpp"
#include "p2p/eth/messages.hpp"

namespace headerd::eth {

struct HistoryLimits {
    size_t soft_response_bytes{size_t{2} << 20};  // geth's softResponseLimit
    size_t max_items{1024};                       // maxBodiesServe, maxReceiptsServe
    size_t max_lookups{2048};                     // 2 x the above (bodies, eth/68-69 receipts)
    size_t max_packet_bytes{kMaxMessageSize};     // eth/70 receipts: the cut with lastBlockIncomplete
};

struct HistoryServed {
    MessageId reply{MessageId::kBlockBodies};
    size_t items{0};               // bodies or receipt lists (a partial one counts)
    size_t item_bytes{0};          // their bytes in the reply
    bool incomplete{false};        // eth/70: the last receipt list is cut
    std::optional<Error> damaged;  // a held block that could not be read intact ended the reply
};

// Whether `request` is one serve_history answers: GetBlockBodies and GetReceipts.
inline bool is_history_request(MessageId request) noexcept {
    return request == MessageId::kGetBlockBodies || request == MessageId::kGetReceipts;
}

// Decodes `payload` as request `request` (GetBlockBodies or GetReceipts) of `version`, then replaces
// `out` with the reply: [id, [item...]], or for eth/70+ Receipts [id, lastBlockIncomplete,
// [item...]]. Only canonical blocks are served (number_by_hash, then canonical_hash). A decode
// error leaves `out` as it was (the caller disconnects the peer for a protocol breach). `scratch`
// is a reusable buffer for the items.
Result<HistoryServed> serve_history(uint64_t version, MessageId request, ByteView payload, const HeaderSource& headers,
                                    const HistorySource& history, const HistoryLimits& limits, Bytes& scratch,
                                    Bytes& out);

}  // namespace headerd::eth
