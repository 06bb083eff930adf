#pragma once

// Block bodies and receipt lists as RLP, checked against their header: the body's transactions
// against transactionsRoot, its uncles against ommersHash, its withdrawals (Shanghai) against
// withdrawalsRoot, and a block's receipts against receiptsRoot. Also the two wire forms of a
// receipt: eth/68's (the consensus form, with the bloom) and eth/69's (EIP-7642: no bloom, the
// transaction type in the list). Forms and rules: docs/history.md.
//
// Nothing here copies a transaction or a receipt: views point into the caller's bytes.

#include <optional>
#include <span>
#include <system_error>
#include <type_traits>
#include <vector>

#include "core/block_header.hpp"
#include "core/bytes.hpp"
#include "core/result.hpp"

namespace headerd {

// keccak256(rlp([])): the ommers hash of a block without uncles.
extern const Hash32 kEmptyOmmersHash;

enum class BodyError {
    kBadBody = 1,               // not one RLP list of two (transactions, uncles) or three (+ withdrawals) lists
    kBadTransaction,            // an item of the transaction list is neither a list nor a typed string (type 1-0x7f)
    kBadUncle,                  // an item of the uncle list is not a list
    kBadWithdrawal,             // an item of the withdrawal list is not a list
    kTransactionsRootMismatch,  // the transactions do not hash to the header's transactionsRoot
    kOmmersHashMismatch,        // the uncle list does not hash to the header's ommersHash
    kWithdrawalsRootMismatch,   // the withdrawals do not hash to the header's withdrawalsRoot
    kWithdrawalsMissing,        // the header has a withdrawalsRoot, the body no withdrawal list
    kWithdrawalsUnexpected,     // the body has a withdrawal list, the header no withdrawalsRoot
    kBadReceipts,               // not one RLP list
    kBadReceipt,                // a receipt is malformed: not a list or typed string, or not its four (eth/69) fields
    kReceiptsRootMismatch,      // the receipts do not hash to the header's receiptsRoot
};

const std::error_category& body_category() noexcept;
std::error_code make_error_code(BodyError e) noexcept;

// A body's parts, as views into its RLP.
struct BodyView {
    std::vector<ByteView> transactions;  // each item as listed: a legacy list, or a string holding type || payload
    ByteView uncles;                     // the whole uncle list item (its header too): ommersHash is its keccak
    size_t uncle_count{0};
    std::optional<std::vector<ByteView>> withdrawals;
};

Result<BodyView> parse_body(ByteView body) noexcept;

// The value a transaction or a receipt has in its trie, from its item in a list: a legacy one's RLP
// list itself, a typed one's string content (type byte and payload, EIP-2718). An error for a
// string that is empty or whose type byte is not 0x01-0x7f.
Result<ByteView> trie_value(ByteView item) noexcept;

// Checks the body against the header's transactionsRoot, ommersHash and withdrawalsRoot. The first
// mismatch is returned; the caller names the block.
Result<void> verify_body(const BlockHeader& header, ByteView body) noexcept;

// The receipts of a receipt list in the consensus (eth/68) form, as listed.
Result<std::vector<ByteView>> parse_receipts(ByteView receipts) noexcept;

// Checks a consensus-form receipt list against the header's receiptsRoot.
Result<void> verify_receipts(const BlockHeader& header, ByteView receipts) noexcept;

// Appends the eth/69 form of a consensus-form receipt list to `out`: each receipt becomes
// [tx-type, post-state-or-status, cumulative-gas, logs], the bloom dropped (EIP-7642).
Result<void> receipts_to_eth69(ByteView receipts, Bytes& out);
// The same for one receipt, as parse_receipts lists it.
Result<void> receipt_to_eth69(ByteView receipt, Bytes& out);

// Appends the consensus form of an eth/69 receipt list to `out`, with each bloom computed from its
// logs: what a client needs before it can check eth/69 receipts against receiptsRoot.
Result<void> receipts_from_eth69(ByteView receipts, Bytes& out);

// The 2048-bit log bloom of one receipt's logs (yellow paper, 4.3.1): address and topics of each.
Result<Bloom> logs_bloom(ByteView logs) noexcept;
// Sets the three bits of `data` in `bloom`: bits 0-10 of each of the first three byte pairs of
// keccak256(data), counted from the bloom's last byte.
void bloom_add(Bloom& bloom, ByteView data) noexcept;

}  // namespace headerd

template <>
struct std::is_error_code_enum<headerd::BodyError> : std::true_type {};
