#include "load/history_verify.hpp"

#include <fmt/format.h>

#include "core/block_body.hpp"
#include "core/rlp.hpp"
#include "core/trie_root.hpp"
#include "p2p/eth/history.hpp"

namespace headerd::load {

namespace {

HistoryVerifyResult history_fail(std::string why) {
    HistoryVerifyResult r;
    r.failure = std::move(why);
    return r;
}

const char* items_name(const HistoryAsk& ask) { return ask.bodies() ? "bodies" : "receipt lists"; }

// Whether one receipt has the eth/69 form (EIP-7642) and whether it has the consensus form.
bool is_eth69_receipt(ByteView receipt) {
    const ByteView one[] = {receipt};
    Bytes list, consensus;
    rlp::encode_list(list, one);
    return static_cast<bool>(receipts_from_eth69(list, consensus));
}
bool is_consensus_receipt(ByteView receipt) {
    Bytes eth69;
    return static_cast<bool>(receipt_to_eth69(receipt, eth69));
}

// Why a receipt list of `version` does not parse in that version's form: the first receipt that
// has the wrong form, and which form it has instead when it has one.
std::string bad_form(ByteView list, uint64_t version) {
    auto receipts = rlp::list_items(list);
    if (!receipts) return "not one RLP list";
    const bool eth69 = version >= eth::kEth69;
    for (size_t j = 0; j < receipts->size(); ++j) {
        const ByteView r = (*receipts)[j];
        if (eth69 ? is_eth69_receipt(r) : is_consensus_receipt(r)) continue;
        const bool other = eth69 ? is_consensus_receipt(r) : is_eth69_receipt(r);
        if (eth69) {
            return fmt::format(
                "receipt {} is not in the eth/{} form (EIP-7642: [type, status, cumulative gas, logs], "
                "no bloom){}",
                j, version, other ? "; it has the eth/68 form, with its bloom" : "");
        }
        return fmt::format("receipt {} is not in the eth/68 form ([status, cumulative gas, 256-byte bloom, logs]){}", j,
                           other ? "; it has the eth/69 form: its bloom is missing" : "");
    }
    return "malformed receipt list";
}

}  // namespace

bool HistoryBlock::empty_body() const noexcept {
    return header.transactions_root == kEmptyTrieRoot && header.ommers_hash == kEmptyOmmersHash &&
           (!header.withdrawals_root || *header.withdrawals_root == kEmptyTrieRoot);
}

bool HistoryBlock::empty_receipts() const noexcept { return header.receipts_root == kEmptyTrieRoot; }

Result<std::shared_ptr<const HistoryBlock>> make_history_block(ByteView header_rlp) noexcept {
    auto header = decode_block_header(header_rlp);
    if (!header) return header.error();
    auto block = std::make_shared<HistoryBlock>();
    block->number = header->number;
    block->hash = header_hash(header_rlp);
    block->header = std::move(*header);
    return std::shared_ptr<const HistoryBlock>(std::move(block));
}

std::optional<std::string> check_body(const HistoryBlock& block, ByteView body) {
    if (auto v = verify_body(block.header, body); !v) return v.error().message();
    return std::nullopt;
}

std::optional<std::string> check_receipts(const HistoryBlock& block, ByteView list, uint64_t version, uint64_t* count) {
    if (auto v = eth::verify_history_item(version, eth::MessageId::kReceipts, block.header, list); !v) {
        // A list that does not parse in the version's form: which receipt, and which form it has.
        if (v.error() == BodyError::kBadReceipt || v.error() == BodyError::kBadReceipts) return bad_form(list, version);
        return v.error().message();
    }
    if (count != nullptr) {
        auto receipts = rlp::list_items(list);
        *count = receipts ? receipts->size() : 0;
    }
    return std::nullopt;
}

std::string describe(const HistoryAsk& ask) {
    const char* name = ask.bodies() ? "GetBlockBodies" : "GetReceipts";
    if (ask.blocks.empty()) return fmt::format("{} of 0 blocks", name);
    const std::string from =
        ask.first_receipt_index > 0 ? fmt::format(" (from receipt {} of the first)", ask.first_receipt_index) : "";
    return fmt::format("{} of {} blocks {}..{}{}", name, ask.blocks.size(), ask.blocks.front()->number,
                       ask.blocks.back()->number, from);
}

HistoryVerifyResult verify_history_reply(const HistoryAsk& ask, const HistoryContext& ctx,
                                         std::span<const ByteView> items, bool last_block_incomplete,
                                         const HistoryRules& rules) {
    HistoryFacts facts;
    facts.asked = ask.blocks.size();
    facts.items = items.size();
    for (ByteView i : items) facts.bytes += i.size();

    if (items.size() > ask.blocks.size()) {
        return history_fail(fmt::format("{} {} for {} hashes asked", items.size(), items_name(ask), ask.blocks.size()));
    }
    if (last_block_incomplete) {
        if (ask.bodies() || ctx.version < eth::kEth70) {
            return history_fail(fmt::format("lastBlockIncomplete set on an eth/{} {} reply", ctx.version,
                                            ask.bodies() ? "BlockBodies" : "Receipts"));
        }
        if (items.empty()) return history_fail("lastBlockIncomplete set on a reply without receipt lists");
    }

    for (size_t i = 0; i < items.size(); ++i) {
        const HistoryBlock& block = *ask.blocks[i];
        const bool cut = last_block_incomplete && i + 1 == items.size();
        if (ask.bodies()) {
            if (auto why = check_body(block, items[i])) {
                return history_fail(fmt::format("body {} (block {}): {}", i, block.number, *why));
            }
            auto body = parse_body(items[i]);
            if (body) facts.receipts += body->transactions.size();
            ++facts.complete;
            continue;
        }
        // Receipts: the first block's list continues the one held when the request asked from a
        // later receipt (eth/70).
        ByteView list = items[i];
        Bytes joined;
        if (i == 0 && ask.first_receipt_index > 0) {
            joined = ask.held;
            if (auto j = eth::join_receipt_lists(joined, items[i]); !j) {
                return history_fail(
                    fmt::format("receipt list 0 (block {}): the continuation from receipt {} is not one RLP list: {}",
                                block.number, ask.first_receipt_index, j.error().message()));
            }
            list = joined;
        }
        if (cut) {
            auto receipts = rlp::list_items(list);
            if (!receipts) {
                return history_fail(fmt::format("receipt list {} (block {}), marked incomplete: {}", i, block.number,
                                                bad_form(list, ctx.version)));
            }
            const size_t before = i == 0 ? ask.first_receipt_index : 0;
            if (receipts->size() <= before) {
                return history_fail(fmt::format("receipt list {} (block {}) is marked incomplete but holds no receipt",
                                                i, block.number));
            }
            facts.last_incomplete = true;
            facts.partial.assign(list.begin(), list.end());
            facts.partial_count = receipts->size();
            continue;
        }
        uint64_t count = 0;
        if (auto why = check_receipts(block, list, ctx.version, &count)) {
            return history_fail(fmt::format("receipt list {} (block {}): {}", i, block.number, *why));
        }
        facts.receipts += count;
        ++facts.complete;
    }

    if (items.size() < ask.blocks.size() && !last_block_incomplete) {
        // A short reply: the server stopped at a block it does not hold, or at a limit.
        const bool at_limit = facts.bytes >= rules.soft_bytes || items.size() >= rules.max_items;
        const auto& missing = *ask.blocks[items.size()];
        if (ctx.announced && !at_limit && missing.number >= ctx.announced->first &&
            missing.number <= ctx.announced->second) {
            return history_fail(fmt::format(
                "{}: {} of {} {} (the first missing is block {}, inside the announced range "
                "{}..{}), {} bytes, not at the {} byte limit",
                items.empty() ? "empty reply" : "short reply", items.size(), ask.blocks.size(), items_name(ask),
                missing.number, ctx.announced->first, ctx.announced->second, facts.bytes, rules.soft_bytes));
        }
        facts.short_reply = true;
    }
    return HistoryVerifyResult{std::move(facts), {}};
}

}  // namespace headerd::load
