#pragma once

// Checks one BlockBodies or Receipts reply against its request and the headers of the blocks it
// asked for (docs/load.md, "Verification of bodies and receipts"):
//  - at most as many items as hashes asked, each in the order asked;
//  - a body against its header's transactionsRoot, ommersHash and withdrawalsRoot;
//  - a receipt list, in the negotiated version's form (eth/68 the consensus form with blooms,
//    eth/69 and later without, EIP-7642), against the header's receiptsRoot; eth/69 lists get
//    their blooms back from their logs first;
//  - eth/70: a cut last list (lastBlockIncomplete) is held, joined with its continuation, and
//    checked once whole;
//  - fewer items than asked: right where the server stopped at its 2 MiB soft limit or 1024 items,
//    or where it may not hold the blocks. On eth/69 and later the server announces the blocks it
//    serves whole ([earliest, latest] of Status and BlockRangeUpdate): a reply that stops short
//    inside that range, under both limits, is wrong. eth/68 announces nothing: there a short or
//    empty reply is counted, not failed.
// The headers come from BlockHeaders replies the load tool verified before (links and hashes, or
// byte for byte against --chain), so each item is checked against the chain itself.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/block_header.hpp"
#include "core/bytes.hpp"
#include "core/result.hpp"
#include "p2p/eth/messages.hpp"

namespace headerd::load {

// A block a history request asks for: its header, decoded once, shared by every request for it.
struct HistoryBlock {
    uint64_t number{0};
    Hash32 hash{};
    BlockHeader header;

    // geth's Header.EmptyBody: no transactions, no uncles, and no or an empty withdrawal list;
    // geth, reth and Erigon never ask for such a body.
    bool empty_body() const noexcept;
    // geth's Header.EmptyReceipts: receiptsRoot is the empty trie's; geth and Besu never ask.
    bool empty_receipts() const noexcept;
};

// The block of a header (its RLP as a verified reply held it).
Result<std::shared_ptr<const HistoryBlock>> make_history_block(ByteView header_rlp) noexcept;

// One GetBlockBodies or GetReceipts request as planned.
struct HistoryAsk {
    eth::MessageId request{eth::MessageId::kGetBlockBodies};  // or kGetReceipts
    std::vector<std::shared_ptr<const HistoryBlock>> blocks;  // in the order asked
    std::vector<Hash32> hashes;                               // their hashes, as sent
    // eth/70 GetReceipts: the receipts of blocks[0] already held from an earlier, cut reply: their
    // count (the request's firstBlockReceiptIndex) and their list (eth/69 form, one RLP list).
    uint64_t first_receipt_index{0};
    Bytes held;

    bool bodies() const noexcept { return request == eth::MessageId::kGetBlockBodies; }
};

// What the session knew of the server when the reply came.
struct HistoryContext {
    uint64_t version{68};
    // eth/69+: the range the server said it serves whole, [earliest, latest]; nullopt on eth/68.
    std::optional<std::pair<uint64_t, uint64_t>> announced;
};

struct HistoryRules {
    size_t soft_bytes{size_t{2} << 20};  // geth softResponseLimit: a reply may stop once past it
    size_t max_items{1024};              // geth maxBodiesServe, maxReceiptsServe
};

// What a good reply held.
struct HistoryFacts {
    size_t asked{0};
    size_t items{0};     // bodies or receipt lists in the reply (a cut list counts)
    size_t bytes{0};     // their bytes
    size_t complete{0};  // items checked whole against their headers: items[0..complete)
    // eth/70: the last list was cut; `partial` holds all of that block's receipts so far (eth/69
    // form, one list) and `partial_count` how many; the walk asks the rest from there.
    bool last_incomplete{false};
    Bytes partial;
    uint64_t partial_count{0};
    uint64_t receipts{0};                       // receipts in the complete lists; transactions in the bodies
    bool short_reply{false};                    // fewer items than asked, and the rules allowed it
    std::chrono::steady_clock::duration rtt{};  // set by the runner
};

struct HistoryVerifyResult {
    std::optional<HistoryFacts> facts;  // set when the reply is good
    std::string failure;                // one line naming the item and block, when it is not
    bool ok() const noexcept { return facts.has_value(); }
};

HistoryVerifyResult verify_history_reply(const HistoryAsk& ask, const HistoryContext& ctx,
                                         std::span<const ByteView> items, bool last_block_incomplete,
                                         const HistoryRules& rules = {});

// One body against its block: nullopt when it matches, else why not (no block named).
std::optional<std::string> check_body(const HistoryBlock& block, ByteView body);
// One whole receipt list of `version`'s form against its block, likewise; `count` gets its receipts.
std::optional<std::string> check_receipts(const HistoryBlock& block, ByteView list, uint64_t version,
                                          uint64_t* count = nullptr);

// "GetBlockBodies of 128 blocks 1000..1127" (numbers of the first and last block asked).
std::string describe(const HistoryAsk& ask);

}  // namespace headerd::load
