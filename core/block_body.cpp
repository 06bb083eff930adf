#include "core/block_body.hpp"

#include <string>

#include "core/keccak.hpp"
#include "core/rlp.hpp"
#include "core/trie_root.hpp"

namespace headerd {

const Hash32 kEmptyOmmersHash = keccak256(Bytes{0xc0});

namespace {

class BodyCategory final : public std::error_category {
  public:
    const char* name() const noexcept override { return "body"; }
    std::string message(int ev) const override {
        switch (static_cast<BodyError>(ev)) {
            case BodyError::kBadBody:
                return "body is not an RLP list of transactions, uncles and (after Shanghai) withdrawals";
            case BodyError::kBadTransaction:
                return "malformed transaction in the body";
            case BodyError::kBadUncle:
                return "malformed uncle in the body";
            case BodyError::kBadWithdrawal:
                return "malformed withdrawal in the body";
            case BodyError::kTransactionsRootMismatch:
                return "transactions do not match the header's transactions root";
            case BodyError::kOmmersHashMismatch:
                return "uncles do not match the header's ommers hash";
            case BodyError::kWithdrawalsRootMismatch:
                return "withdrawals do not match the header's withdrawals root";
            case BodyError::kWithdrawalsMissing:
                return "the header has a withdrawals root but the body no withdrawals";
            case BodyError::kWithdrawalsUnexpected:
                return "the body has withdrawals but the header no withdrawals root";
            case BodyError::kBadReceipts:
                return "receipt list is not one RLP list";
            case BodyError::kBadReceipt:
                return "malformed receipt";
            case BodyError::kReceiptsRootMismatch:
                return "receipts do not match the header's receipts root";
        }
        return "unknown body error";
    }
};

// The items of a list's payload, each as encoded (header and payload).
Result<std::vector<ByteView>> items(ByteView payload, BodyError bad) noexcept {
    std::vector<ByteView> out;
    while (!payload.empty()) {
        auto item = rlp::next_item(payload);
        if (!item) return bad;
        out.push_back(*item);
    }
    return out;
}

bool is_list(ByteView item) noexcept { return !item.empty() && item[0] >= 0xc0; }

// A typed receipt's or transaction's content: type byte (0x01-0x7f) and payload.
Result<ByteView> typed_content(ByteView item) noexcept {
    ByteView in = item;
    auto content = rlp::decode_string(in);
    if (!content || !in.empty() || content->empty() || (*content)[0] == 0 || (*content)[0] > 0x7f) {
        return rlp::DecodeError::kUnexpectedString;
    }
    return *content;
}

// A consensus-form receipt's type (0: legacy) and the payload of its field list.
struct ReceiptFields {
    uint8_t type{0};
    ByteView status;  // post-state or status, as encoded
    ByteView cumulative_gas;
    ByteView bloom;  // absent (empty) in the eth/69 form
    ByteView logs;
};

Result<ReceiptFields> consensus_receipt(ByteView item) noexcept {
    ReceiptFields r;
    ByteView list = item;
    if (!is_list(item)) {
        auto content = typed_content(item);
        if (!content) return BodyError::kBadReceipt;
        r.type = (*content)[0];
        list = content->subspan(1);
    }
    ByteView in = list;
    auto fields = rlp::decode_list(in);
    if (!fields || !in.empty()) return BodyError::kBadReceipt;
    ByteView f = *fields;
    auto status = rlp::next_item(f);
    auto gas = rlp::next_item(f);
    auto bloom = rlp::next_item(f);
    auto logs = rlp::next_item(f);
    if (!status || !gas || !bloom || !logs || !f.empty() || is_list(*status) || is_list(*gas) || !is_list(*logs) ||
        bloom->size() != 3 + 256) {
        return BodyError::kBadReceipt;
    }
    r.status = *status;
    r.cumulative_gas = *gas;
    r.bloom = *bloom;
    r.logs = *logs;
    return r;
}

void append_list(Bytes& out, ByteView payload) {
    rlp::encode_header(out, {true, payload.size()});
    append(out, payload);
}

}  // namespace

const std::error_category& body_category() noexcept {
    static const BodyCategory category;
    return category;
}

std::error_code make_error_code(BodyError e) noexcept { return {static_cast<int>(e), body_category()}; }

Result<ByteView> trie_value(ByteView item) noexcept {
    if (is_list(item)) return item;
    return typed_content(item);
}

Result<BodyView> parse_body(ByteView body) noexcept {
    ByteView in = body;
    auto fields = rlp::decode_list(in);
    if (!fields || !in.empty()) return BodyError::kBadBody;
    ByteView f = *fields;
    auto txs = rlp::decode_list(f);
    if (!txs) return BodyError::kBadBody;
    auto uncles_item = rlp::next_item(f);
    if (!uncles_item || !is_list(*uncles_item)) return BodyError::kBadBody;
    BodyView view;
    view.uncles = *uncles_item;
    auto transactions = items(*txs, BodyError::kBadTransaction);
    if (!transactions) return transactions.error();
    for (ByteView tx : *transactions) {
        if (!trie_value(tx)) return BodyError::kBadTransaction;
    }
    view.transactions = std::move(*transactions);
    ByteView uncle_payload = *uncles_item;
    auto uncle_list = rlp::decode_list(uncle_payload);
    if (!uncle_list) return BodyError::kBadBody;
    auto uncles = items(*uncle_list, BodyError::kBadUncle);
    if (!uncles) return uncles.error();
    for (ByteView u : *uncles) {
        if (!is_list(u)) return BodyError::kBadUncle;
    }
    view.uncle_count = uncles->size();
    if (!f.empty()) {
        auto withdrawals = rlp::decode_list(f);
        if (!withdrawals || !f.empty()) return BodyError::kBadBody;
        auto list = items(*withdrawals, BodyError::kBadWithdrawal);
        if (!list) return list.error();
        for (ByteView w : *list) {
            if (!is_list(w)) return BodyError::kBadWithdrawal;
        }
        view.withdrawals = std::move(*list);
    }
    return view;
}

Result<void> verify_body(const BlockHeader& header, ByteView body) noexcept {
    auto view = parse_body(body);
    if (!view) return view.error();
    std::vector<ByteView> values;
    values.reserve(view->transactions.size());
    for (ByteView tx : view->transactions) values.push_back(*trie_value(tx));
    if (ordered_trie_root(values) != header.transactions_root) return BodyError::kTransactionsRootMismatch;
    if (keccak256(view->uncles) != header.ommers_hash) return BodyError::kOmmersHashMismatch;
    if (header.withdrawals_root && !view->withdrawals) return BodyError::kWithdrawalsMissing;
    if (!header.withdrawals_root && view->withdrawals) return BodyError::kWithdrawalsUnexpected;
    if (view->withdrawals && ordered_trie_root(*view->withdrawals) != *header.withdrawals_root) {
        return BodyError::kWithdrawalsRootMismatch;
    }
    return {};
}

Result<std::vector<ByteView>> parse_receipts(ByteView receipts) noexcept {
    ByteView in = receipts;
    auto list = rlp::decode_list(in);
    if (!list || !in.empty()) return BodyError::kBadReceipts;
    auto out = items(*list, BodyError::kBadReceipt);
    if (!out) return out.error();
    for (ByteView r : *out) {
        if (!consensus_receipt(r)) return BodyError::kBadReceipt;
    }
    return out;
}

Result<void> verify_receipts(const BlockHeader& header, ByteView receipts) noexcept {
    auto list = parse_receipts(receipts);
    if (!list) return list.error();
    std::vector<ByteView> values;
    values.reserve(list->size());
    for (ByteView r : *list) values.push_back(*trie_value(r));
    if (ordered_trie_root(values) != header.receipts_root) return BodyError::kReceiptsRootMismatch;
    return {};
}

Result<void> receipt_to_eth69(ByteView receipt, Bytes& out) {
    auto r = consensus_receipt(receipt);
    if (!r) return r.error();
    // The type as an RLP integer: 0x80 for a legacy receipt, the type byte itself (0x01-0x7f) otherwise.
    const uint8_t type = r->type == 0 ? uint8_t{0x80} : r->type;
    rlp::encode_header(out, {true, 1 + r->status.size() + r->cumulative_gas.size() + r->logs.size()});
    out.push_back(type);
    append(out, r->status);
    append(out, r->cumulative_gas);
    append(out, r->logs);
    return {};
}

Result<void> receipts_to_eth69(ByteView receipts, Bytes& out) {
    // receipt_to_eth69 checks each receipt as it converts it: no separate parse_receipts pass.
    ByteView in = receipts;
    auto list = rlp::decode_list(in);
    if (!list || !in.empty()) return BodyError::kBadReceipts;
    Bytes payload;
    for (ByteView rest = *list; !rest.empty();) {
        auto item = rlp::next_item(rest);
        if (!item) return BodyError::kBadReceipt;
        if (auto r = receipt_to_eth69(*item, payload); !r) return r;
    }
    append_list(out, payload);
    return {};
}

Result<void> receipts_from_eth69(ByteView receipts, Bytes& out) {
    ByteView in = receipts;
    auto list = rlp::decode_list(in);
    if (!list || !in.empty()) return BodyError::kBadReceipts;
    auto entries = items(*list, BodyError::kBadReceipt);
    if (!entries) return entries.error();
    Bytes payload;
    Bytes fields;
    Bytes typed;
    for (ByteView item : *entries) {
        ByteView e = item;
        auto body = rlp::decode_list(e);
        if (!body) return BodyError::kBadReceipt;
        ByteView f = *body;
        auto type = rlp::decode_uint64(f);
        auto status = rlp::next_item(f);
        auto gas = rlp::next_item(f);
        auto logs = rlp::next_item(f);
        if (!type || *type > 0x7f || !status || !gas || !logs || !f.empty() || is_list(*status) || is_list(*gas) ||
            !is_list(*logs)) {
            return BodyError::kBadReceipt;
        }
        auto bloom = logs_bloom(*logs);
        if (!bloom) return bloom.error();
        fields.clear();
        append(fields, *status);
        append(fields, *gas);
        rlp::encode(fields, ByteView{*bloom});
        append(fields, *logs);
        if (*type == 0) {
            append_list(payload, fields);
        } else {
            typed.clear();
            typed.push_back(static_cast<uint8_t>(*type));
            append_list(typed, fields);
            rlp::encode(payload, typed);
        }
    }
    append_list(out, payload);
    return {};
}

void bloom_add(Bloom& bloom, ByteView data) noexcept {
    const Hash32 h = keccak256(data);
    for (size_t i = 0; i < 6; i += 2) {
        const unsigned bit = ((unsigned{h[i]} << 8) | h[i + 1]) & 2047u;
        bloom[255 - bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
    }
}

Result<Bloom> logs_bloom(ByteView logs) noexcept {
    Bloom bloom{};
    ByteView in = logs;
    auto list = rlp::decode_list(in);
    if (!list || !in.empty()) return BodyError::kBadReceipt;
    ByteView l = *list;
    while (!l.empty()) {
        auto log = rlp::decode_list(l);
        if (!log) return BodyError::kBadReceipt;
        ByteView f = *log;
        auto address = rlp::decode_string(f);
        auto topics = rlp::decode_list(f);
        auto data = rlp::decode_string(f);
        if (!address || address->size() != 20 || !topics || !data || !f.empty()) return BodyError::kBadReceipt;
        bloom_add(bloom, *address);
        ByteView t = *topics;
        while (!t.empty()) {
            auto topic = rlp::decode_string(t);
            if (!topic || topic->size() != 32) return BodyError::kBadReceipt;
            bloom_add(bloom, *topic);
        }
    }
    return bloom;
}

}  // namespace headerd
