#include "p2p/eth/history.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/block_body.hpp"
#include "core/rlp.hpp"

namespace headerd::eth {

namespace {

// eth/70: the receipt list of one block in the eth/69 form, from receipt `first` on, at most
// `room` bytes with its list header. Returns false when not even the first receipt fits (nothing
// appended); sets `cut` when a later one does not.
Result<bool> append_partial_receipts(ByteView stored, uint64_t first, size_t room, Bytes& out, bool& cut,
                                     Bytes& receipt) {
    // receipt_to_eth69 checks each receipt it converts; the ones skipped are only delimited.
    ByteView in = stored;
    auto list = rlp::decode_list(in);
    if (!list || !in.empty()) return {boost::system::in_place_error, make_error_code(BodyError::kBadReceipts)};
    Bytes payload;
    ByteView rest = *list;
    for (uint64_t i = 0; !rest.empty(); ++i) {
        auto item = rlp::next_item(rest);
        if (!item) return {boost::system::in_place_error, make_error_code(BodyError::kBadReceipt)};
        if (i < first) continue;
        receipt.clear();
        if (auto r = receipt_to_eth69(*item, receipt); !r) return {boost::system::in_place_error, r.error()};
        if (rlp::length_of_list(payload.size() + receipt.size()) > room) {
            if (i == first) return false;
            cut = true;
            break;
        }
        append(payload, receipt);
    }
    rlp::encode_header(out, {true, payload.size()});
    append(out, payload);
    return true;
}

}  // namespace

Result<HistoryServed> serve_history(uint64_t version, MessageId request, ByteView payload, const HeaderSource& headers,
                                    const HistorySource& history, const HistoryLimits& limits, Bytes& scratch,
                                    Bytes& out) {
    if (!is_history_request(request)) return MessageError::kWrongMessage;
    const bool bodies = request == MessageId::kGetBlockBodies;
    const bool partial = !bodies && version >= kEth70;
    uint64_t request_id = 0;
    uint64_t first_index = 0;
    ByteView hashes;
    if (partial) {
        auto r = GetReceiptsRequest70::decode(payload);
        if (!r) return r.error();
        request_id = r->request_id;
        first_index = r->first_block_receipt_index;
        hashes = r->hashes;
    } else {
        auto r = HashListRequest::decode(payload);
        if (!r) return r.error();
        request_id = r->request_id;
        hashes = r->hashes;
    }

    HistoryServed served;
    served.reply = bodies ? MessageId::kBlockBodies : MessageId::kReceipts;
    scratch.clear();
    thread_local Bytes stored;
    thread_local Bytes receipt;
    const size_t count = hashes.size() / kHashItemSize;
    // Syncing clients ask for runs of consecutive blocks: while they do, the hash asked for is
    // compared with the canonical hash of the block after the last one served, read ahead in runs
    // of up to kReadAhead (ChainDb reads a freezer run at once; a reply the byte limit ends early
    // then reads few it does not use), instead of being looked up and then checked to be canonical
    // (two reads each). The first miss ends the guessing.
    constexpr size_t kReadAhead = 128;  // geth's bodies per request
    std::optional<uint64_t> number;
    bool guessing = true;
    thread_local std::vector<Hash32> ahead;  // canonical hashes of ahead_from, ahead_from + 1, ...
    ahead.clear();
    uint64_t ahead_from = 0;
    for (size_t i = 0; i < count; ++i) {
        if (scratch.size() >= limits.soft_response_bytes || served.items >= limits.max_items) break;
        if (!partial && i >= limits.max_lookups) break;
        const Hash32 hash = hash_at(hashes, i);
        bool known = false;
        if (number && guessing) {
            const uint64_t next = *number + 1;
            if (next - ahead_from >= ahead.size()) {
                ahead.clear();
                ahead_from = next;
                const size_t left = std::min({count - i, limits.max_items - served.items, kReadAhead});
                if (auto r = headers.canonical_hashes(next, left, ahead); !r) {
                    served.damaged = r.error();
                    break;
                }
            }
            known = next - ahead_from < ahead.size() && ahead[next - ahead_from] == hash;
            guessing = known;
            if (known) number = next;
        }
        if (!known) {
            auto found = headers.number_by_hash(hash);
            if (!found) {
                served.damaged = found.error();
                break;
            }
            if (!*found) break;  // unknown: the reply ends here, as geth's
            auto canonical = headers.canonical_hash(**found);
            if (!canonical) {
                served.damaged = canonical.error();
                break;
            }
            if (!*canonical || **canonical != hash) break;  // a side-chain block: its body is not kept
            number = **found;
        }

        Outcome<bool> got = false;
        if (bodies) {
            got = history.append_body(*number, scratch);
        } else if (version < kEth69) {
            got = history.append_receipts(*number, scratch);  // stored in the eth/68 form
        } else {
            stored.clear();
            got = history.append_receipts(*number, stored);
            if (got && *got) {
                if (!partial) {
                    if (auto r = receipts_to_eth69(stored, scratch); !r) {
                        got = corrupt_error(fmt::format("block {}: stored receipts: {}", *number, r.error().message()),
                                            *number);
                    }
                } else {
                    const size_t room = limits.max_packet_bytes - std::min(limits.max_packet_bytes, scratch.size());
                    auto fit = append_partial_receipts(stored, i == 0 ? first_index : 0, room, scratch,
                                                       served.incomplete, receipt);
                    if (!fit) {
                        got = corrupt_error(
                            fmt::format("block {}: stored receipts: {}", *number, fit.error().message()), *number);
                    } else if (!*fit) {
                        break;  // not even its first receipt fits: the reply ends before this block
                    }
                }
            }
        }
        if (!got) {
            served.damaged = got.error();
            break;
        }
        if (!*got) break;  // not held
        ++served.items;
        if (served.incomplete) break;
    }
    served.item_bytes = scratch.size();

    Bytes head;
    rlp::encode(head, request_id);
    if (partial) head.push_back(served.incomplete ? 0x01 : 0x80);
    const size_t list_length = rlp::length_of_list(scratch.size());
    out.clear();
    out.reserve(rlp::length_of_list(head.size() + list_length));
    rlp::encode_header(out, {true, head.size() + list_length});
    append(out, head);
    rlp::encode_header(out, {true, scratch.size()});
    append(out, scratch);
    return served;
}

void encode_history_request(Bytes& out, uint64_t version, MessageId request, uint64_t request_id,
                            std::span<const Hash32> hashes, uint64_t first_block_receipt_index) {
    const bool partial = request == MessageId::kGetReceipts && version >= kEth70;
    const size_t list = hashes.size() * kHashItemSize;
    const size_t payload =
        rlp::length(request_id) + (partial ? rlp::length(first_block_receipt_index) : 0) + rlp::length_of_list(list);
    rlp::encode_header(out, {true, payload});
    rlp::encode(out, request_id);
    if (partial) rlp::encode(out, first_block_receipt_index);
    rlp::encode_header(out, {true, list});
    for (const Hash32& h : hashes) rlp::encode(out, h);
}

Result<HistoryReply> decode_history_reply(uint64_t version, MessageId reply, ByteView payload) noexcept {
    if (reply != MessageId::kBlockBodies && reply != MessageId::kReceipts) return MessageError::kWrongMessage;
    if (role_of(version, static_cast<uint64_t>(reply)) != MessageRole::kResponse) return MessageError::kWrongMessage;
    ByteView in = payload;
    auto envelope = rlp::decode_list(in);
    if (!envelope) return envelope.error();
    if (!in.empty()) return rlp::DecodeError::kTrailingBytes;
    HistoryReply out;
    ByteView fields = *envelope;
    auto id = rlp::decode_uint64(fields);
    if (!id) return id.error();
    out.request_id = *id;
    if (reply == MessageId::kReceipts && version >= kEth70) {
        auto flag = rlp::decode_string(fields);
        if (!flag) return flag.error();
        if (flag->size() == 1 && (*flag)[0] == 0x01) {
            out.last_block_incomplete = true;
        } else if (!flag->empty()) {
            return MessageError::kBadFlag;
        }
    }
    auto items = rlp::decode_list(fields);
    if (!items) return items.error();
    if (!fields.empty()) return rlp::DecodeError::kTrailingBytes;
    for (ByteView rest = *items; !rest.empty();) {
        auto item = rlp::next_item(rest);
        if (!item) return item.error();
        if ((*item)[0] < 0xc0) return rlp::DecodeError::kUnexpectedString;
        out.items.push_back(*item);
    }
    return out;
}

Result<void> verify_history_item(uint64_t version, MessageId reply, const BlockHeader& header, ByteView item) {
    if (reply == MessageId::kBlockBodies) return verify_body(header, item);
    if (version < kEth69) return verify_receipts(header, item);
    Bytes consensus;
    if (auto r = receipts_from_eth69(item, consensus); !r) return r;
    return verify_receipts(header, consensus);
}

Result<void> join_receipt_lists(Bytes& into, ByteView more) {
    auto held = rlp::list_items(into);
    if (!held) return held.error();
    auto rest = rlp::list_items(more);
    if (!rest) return rest.error();
    held->insert(held->end(), rest->begin(), rest->end());
    Bytes joined;
    rlp::encode_list(joined, *held);
    into = std::move(joined);
    return {};
}

}  // namespace headerd::eth
