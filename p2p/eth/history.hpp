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
#include <span>

#include "core/block_header.hpp"
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

// ---- the asking side (headerd get, headerd load) ----------------------------------------------

// GetBlockBodies and eth/68-69 GetReceipts: [request id, [hash...]]; eth/70+ GetReceipts:
// [request id, firstBlockReceiptIndex, [hash...]]. Appends to `out`.
void encode_history_request(Bytes& out, uint64_t version, MessageId request, uint64_t request_id,
                            std::span<const Hash32> hashes, uint64_t first_block_receipt_index = 0);

// A BlockBodies or Receipts reply, its items not decoded: each is one RLP list (a body
// [transactions, uncles(, withdrawals)], or a block's receipt list), a view into the payload.
struct HistoryReply {
    uint64_t request_id{0};
    bool last_block_incomplete{false};  // eth/70+ Receipts only
    std::vector<ByteView> items;
};
// Decodes reply `reply` (kBlockBodies or kReceipts) of `version` strictly: the envelope, and each
// item an RLP list. Anything else is MessageError::kWrongMessage.
Result<HistoryReply> decode_history_reply(uint64_t version, MessageId reply, ByteView payload) noexcept;

// Checks one item of a reply `reply` (kBlockBodies or kReceipts) of `version` against the header of
// its block: a body against transactionsRoot, ommersHash and withdrawalsRoot; a receipt list in the
// version's form (eth/68 the consensus form with blooms, eth/69+ without, EIP-7642, its blooms
// computed from the logs) against receiptsRoot. A BodyError says what differs; the caller names
// the block.
Result<void> verify_history_item(uint64_t version, MessageId reply, const BlockHeader& header, ByteView item);

// eth/70+ (EIP-7975): appends the receipts of list `more`, the continuation of a list a reply cut
// (lastBlockIncomplete) asked again from its firstBlockReceiptIndex, to the list `into`. An error
// when either is not one RLP list.
Result<void> join_receipt_lists(Bytes& into, ByteView more);

}  // namespace headerd::eth
