#pragma once

// HistorySource: where the server reads block bodies and receipt lists from, beside the headers of
// a HeaderSource. headerd's EraStore (db/era_store.hpp) serves them from verified era1 files; a
// server without one answers GetBlockBodies and GetReceipts empty, as a headers-only peer does.
// Forms and the rules of what is announced: docs/history.md.

#include <cstdint>
#include <optional>

#include "core/bytes.hpp"
#include "core/result.hpp"

namespace headerd {

// Blocks [first, last], both held.
struct BlockRange {
    uint64_t first{0};
    uint64_t last{0};
    bool operator==(const BlockRange&) const = default;
};

// Thread-safety: the server calls every member from any of its workers at once. Calls may block
// the calling worker on a disk read.
class HistorySource {
  public:
    virtual ~HistorySource() = default;
    // The longest run of consecutive blocks, ending at the highest one held, whose bodies and
    // receipts are all held; nullopt when none is.
    virtual std::optional<BlockRange> range() const = 0;
    // Appends the body of canonical block `number` (rlp([transactions, uncles]), with
    // withdrawals after Shanghai) to `out`; false when the block is not held. An error means a held
    // block cannot be read intact (a damaged file); its message names the block, and nothing is
    // appended.
    virtual Outcome<bool> append_body(uint64_t number, Bytes& out) const = 0;
    // The same for the block's receipt list in the consensus form (eth/68's: typed receipts as
    // strings, each with its bloom).
    virtual Outcome<bool> append_receipts(uint64_t number, Bytes& out) const = 0;
};

}  // namespace headerd
