#include "rpc/block_json.hpp"

#include <algorithm>
#include <array>
#include <span>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <boost/json/array.hpp>

#include "core/block_body.hpp"
#include "core/hex.hpp"
#include "core/keccak.hpp"
#include "core/rlp.hpp"
#include "p2p/rlpx/secp256k1.hpp"

namespace headerd::rpc {

namespace json = boost::json;

namespace {

std::string bytes_hex(ByteView b) { return to_hex0x(b); }

// The items of one RLP list, each as encoded; nullopt when it is not one well-formed list.
std::optional<std::vector<ByteView>> list_items(ByteView list) {
    auto items = rlp::list_items(list);
    if (!items) return std::nullopt;
    return std::move(*items);
}

bool is_list(ByteView item) { return !item.empty() && item[0] >= 0xc0; }

// A string item's content; nullopt for a list or a malformed item.
std::optional<ByteView> string_of(ByteView item) {
    if (is_list(item)) return std::nullopt;
    auto s = rlp::decode_string(item);
    if (!s) return std::nullopt;
    return *s;
}

// The fields of each transaction type, in order, before yParity/v, r and s.
enum class Field {
    kChainId,
    kNonce,
    kGasPrice,
    kMaxPriorityFee,
    kMaxFee,
    kGas,
    kTo,
    kValue,
    kInput,
    kAccessList,
    kMaxFeePerBlobGas,
    kBlobHashes,
    kAuthorizations,
};

struct Layout {
    uint8_t type;
    std::vector<Field> fields;
};

const Layout* layout_of(uint8_t type) {
    using F = Field;
    static const std::array<Layout, 5> layouts{{
        {0, {F::kNonce, F::kGasPrice, F::kGas, F::kTo, F::kValue, F::kInput}},
        {1, {F::kChainId, F::kNonce, F::kGasPrice, F::kGas, F::kTo, F::kValue, F::kInput, F::kAccessList}},
        {2,
         {F::kChainId, F::kNonce, F::kMaxPriorityFee, F::kMaxFee, F::kGas, F::kTo, F::kValue, F::kInput,
          F::kAccessList}},
        {3,
         {F::kChainId, F::kNonce, F::kMaxPriorityFee, F::kMaxFee, F::kGas, F::kTo, F::kValue, F::kInput, F::kAccessList,
          F::kMaxFeePerBlobGas, F::kBlobHashes}},
        {4,
         {F::kChainId, F::kNonce, F::kMaxPriorityFee, F::kMaxFee, F::kGas, F::kTo, F::kValue, F::kInput, F::kAccessList,
          F::kAuthorizations}},
    }};
    return type < layouts.size() ? &layouts[type] : nullptr;
}

const char* field_name(Field f) {
    switch (f) {
        case Field::kChainId:
            return "chainId";
        case Field::kNonce:
            return "nonce";
        case Field::kGasPrice:
            return "gasPrice";
        case Field::kMaxPriorityFee:
            return "maxPriorityFeePerGas";
        case Field::kMaxFee:
            return "maxFeePerGas";
        case Field::kGas:
            return "gas";
        case Field::kTo:
            return "to";
        case Field::kValue:
            return "value";
        case Field::kInput:
            return "input";
        case Field::kAccessList:
            return "accessList";
        case Field::kMaxFeePerBlobGas:
            return "maxFeePerBlobGas";
        case Field::kBlobHashes:
            return "blobVersionedHashes";
        case Field::kAuthorizations:
            return "authorizationList";
    }
    return "?";
}

// A 20-byte address from a string item.
std::optional<Address> address_of(ByteView item) {
    auto s = string_of(item);
    if (!s || s->size() != 20) return std::nullopt;
    Address a;
    std::copy(s->begin(), s->end(), a.begin());
    return a;
}

std::optional<U256> u256_of(ByteView item) {
    auto v = rlp::decode_u256(item);
    if (!v) return std::nullopt;
    return *v;
}

// [[address, [storageKey...]]...] as [{address, storageKeys}...].
std::optional<json::array> access_list_json(ByteView item) {
    auto entries = list_items(item);
    if (!entries) return std::nullopt;
    json::array out;
    for (ByteView entry : *entries) {
        auto parts = list_items(entry);
        if (!parts || parts->size() != 2) return std::nullopt;
        auto address = address_of((*parts)[0]);
        auto keys = list_items((*parts)[1]);
        if (!address || !keys) return std::nullopt;
        json::array key_json;
        for (ByteView k : *keys) {
            auto key = string_of(k);
            if (!key || key->size() != 32) return std::nullopt;
            key_json.emplace_back(bytes_hex(*key));
        }
        out.emplace_back(json::object{{"address", bytes_hex(*address)}, {"storageKeys", std::move(key_json)}});
    }
    return out;
}

// EIP-7702: [[chainId, address, nonce, yParity, r, s]...].
std::optional<json::array> authorizations_json(ByteView item) {
    auto entries = list_items(item);
    if (!entries) return std::nullopt;
    json::array out;
    for (ByteView entry : *entries) {
        auto parts = list_items(entry);
        if (!parts || parts->size() != 6) return std::nullopt;
        auto address = address_of((*parts)[1]);
        if (!address) return std::nullopt;
        std::array<std::optional<ByteView>, 6> s;
        for (size_t i = 0; i < 6; ++i) s[i] = string_of((*parts)[i]);
        if (std::any_of(s.begin(), s.end(), [](const auto& v) { return !v.has_value(); })) return std::nullopt;
        out.emplace_back(json::object{{"chainId", quantity(*s[0])},
                                      {"address", bytes_hex(*address)},
                                      {"nonce", quantity(*s[2])},
                                      {"yParity", quantity(*s[3])},
                                      {"r", quantity(*s[4])},
                                      {"s", quantity(*s[5])}});
    }
    return out;
}

// rlp(the first `count` of `items`, then `tail`), each already encoded: what a signature covers.
Bytes encode_list(const std::vector<ByteView>& items, size_t count, std::span<const ByteView> tail = {}) {
    std::vector<ByteView> all(items.begin(), items.begin() + static_cast<ptrdiff_t>(count));
    all.insert(all.end(), tail.begin(), tail.end());
    Bytes out;
    rlp::encode_list(out, all);
    return out;
}

Outcome<Address> sender(uint8_t type, const std::vector<ByteView>& items, size_t signed_fields, ByteView v_item,
                        ByteView r, ByteView s, std::optional<U256>* legacy_chain_id) {
    auto v = rlp::decode_u256(v_item);
    if (!v) return make_error("its v/yParity is not a number");
    uint8_t recovery = 0;
    Bytes preimage;
    if (type == 0) {
        if (*v == 27 || *v == 28) {
            recovery = static_cast<uint8_t>(*v - 27);
            preimage = encode_list(items, signed_fields);
        } else if (*v >= 35) {
            // EIP-155: v = chainId * 2 + 35 + recovery, and the chain id signed with two zeros.
            const U256 chain_id = (*v - 35) / 2;
            recovery = static_cast<uint8_t>((*v - 35) % 2);
            Bytes id;
            rlp::encode(id, chain_id);
            static constexpr uint8_t kZero = 0x80;
            const std::array<ByteView, 3> tail{ByteView(id), ByteView(&kZero, 1), ByteView(&kZero, 1)};
            preimage = encode_list(items, signed_fields, tail);
            *legacy_chain_id = chain_id;
        } else {
            return make_error(fmt::format("its v ({}) is neither 27/28 nor EIP-155's", v->str()));
        }
    } else {
        if (*v > 1) return make_error("its yParity is not 0 or 1");
        recovery = static_cast<uint8_t>(*v);
        preimage.push_back(type);
        const Bytes list = encode_list(items, signed_fields);
        preimage.insert(preimage.end(), list.begin(), list.end());
    }
    if (r.size() > 32 || s.size() > 32) return make_error("its r or s is longer than 32 bytes");
    std::array<uint8_t, 65> signature{};
    std::copy(r.begin(), r.end(), signature.begin() + static_cast<ptrdiff_t>(32 - r.size()));
    std::copy(s.begin(), s.end(), signature.begin() + static_cast<ptrdiff_t>(64 - s.size()));
    signature[64] = recovery;
    auto key = rlpx::recover(signature, keccak256(preimage));
    if (!key) return make_error("no sender can be recovered from its signature");
    const Hash32 h = keccak256(key->bytes());
    Address a;
    std::copy(h.begin() + 12, h.end(), a.begin());
    return a;
}

}  // namespace

std::string quantity(ByteView b) {
    while (!b.empty() && b.front() == 0) b = b.subspan(1);
    if (b.empty()) return "0x0";
    std::string hex = to_hex(b);
    if (hex.front() == '0') hex.erase(0, 1);
    return "0x" + hex;
}

std::string quantity(uint64_t v) { return fmt::format("0x{:x}", v); }

std::string quantity(const U256& v) {
    Bytes b;
    rlp::encode(b, v);
    ByteView in = b;
    auto s = rlp::decode_string(in);
    return quantity(s ? *s : ByteView{});
}

json::object header_json(const BlockHeader& h, const Hash32& hash) {
    json::object o{
        {"number", quantity(h.number)},
        {"hash", bytes_hex(hash)},
        {"parentHash", bytes_hex(h.parent_hash)},
        {"nonce", bytes_hex(h.nonce)},
        {"mixHash", bytes_hex(h.mix_hash)},
        {"sha3Uncles", bytes_hex(h.ommers_hash)},
        {"logsBloom", bytes_hex(h.logs_bloom)},
        {"stateRoot", bytes_hex(h.state_root)},
        {"miner", bytes_hex(h.coinbase)},
        {"difficulty", quantity(h.difficulty)},
        {"extraData", bytes_hex(h.extra_data)},
        {"gasLimit", quantity(h.gas_limit)},
        {"gasUsed", quantity(h.gas_used)},
        {"timestamp", quantity(h.timestamp)},
        {"transactionsRoot", bytes_hex(h.transactions_root)},
        {"receiptsRoot", bytes_hex(h.receipts_root)},
    };
    if (h.base_fee_per_gas) o["baseFeePerGas"] = quantity(*h.base_fee_per_gas);
    if (h.withdrawals_root) o["withdrawalsRoot"] = bytes_hex(*h.withdrawals_root);
    if (h.blob_gas_used) o["blobGasUsed"] = quantity(*h.blob_gas_used);
    if (h.excess_blob_gas) o["excessBlobGas"] = quantity(*h.excess_blob_gas);
    if (h.parent_beacon_block_root) o["parentBeaconBlockRoot"] = bytes_hex(*h.parent_beacon_block_root);
    if (h.requests_hash) o["requestsHash"] = bytes_hex(*h.requests_hash);
    return o;
}

Result<Hash32> transaction_hash(ByteView item) noexcept {
    auto value = trie_value(item);
    if (!value) return value.error();
    return keccak256(*value);
}

Outcome<json::object> transaction_json(ByteView item, const TransactionPlace& place) {
    const auto fail = [&place](std::string_view why) {
        return make_error(fmt::format("transaction {} of block {}: {}", place.index, place.block_number, why));
    };
    auto value = trie_value(item);
    if (!value) return fail("not a transaction");
    const uint8_t type = is_list(item) ? 0 : (*value)[0];
    const Layout* layout = layout_of(type);
    if (layout == nullptr) return fail(fmt::format("transaction type {:#x} is not one headerd knows", type));
    auto items = list_items(type == 0 ? *value : value->subspan(1));
    const size_t n = layout->fields.size();
    if (!items || items->size() != n + 3) {
        return fail(fmt::format("not a type-{} transaction of {} fields", type, n + 3));
    }
    std::optional<U256> legacy_chain_id;
    auto from = sender(type, *items, n, (*items)[n], string_of((*items)[n + 1]).value_or(ByteView{}),
                       string_of((*items)[n + 2]).value_or(ByteView{}), &legacy_chain_id);
    if (!from) return fail(from.error().message);

    json::object o{
        {"blockHash", bytes_hex(place.block_hash)},
        {"blockNumber", quantity(place.block_number)},
        {"from", bytes_hex(*from)},
        {"hash", bytes_hex(keccak256(*value))},
        {"transactionIndex", quantity(place.index)},
        {"type", quantity(uint64_t{type})},
    };
    std::optional<U256> max_fee, tip;
    for (size_t i = 0; i < n; ++i) {
        const Field f = layout->fields[i];
        const ByteView it = (*items)[i];
        const char* name = field_name(f);
        if (f == Field::kAccessList || f == Field::kAuthorizations) {
            auto list = f == Field::kAccessList ? access_list_json(it) : authorizations_json(it);
            if (!list) return fail(fmt::format("its {} is malformed", name));
            o[name] = std::move(*list);
        } else if (f == Field::kBlobHashes) {
            auto hashes = list_items(it);
            if (!hashes) return fail("its blob hashes are malformed");
            json::array a;
            for (ByteView h : *hashes) {
                auto s = string_of(h);
                if (!s || s->size() != 32) return fail("a blob hash is not 32 bytes");
                a.emplace_back(bytes_hex(*s));
            }
            o[name] = std::move(a);
        } else {
            auto s = string_of(it);
            if (!s) return fail(fmt::format("its {} is not a string", name));
            if (f == Field::kTo) {
                if (!s->empty() && s->size() != 20) return fail("its recipient is not 20 bytes");
                o[name] = s->empty() ? json::value(nullptr) : json::value(bytes_hex(*s));
            } else if (f == Field::kInput) {
                o[name] = bytes_hex(*s);
            } else {
                o[name] = quantity(*s);
                if (f == Field::kMaxFee) max_fee = u256_of(it);
                if (f == Field::kMaxPriorityFee) tip = u256_of(it);
            }
        }
    }
    // EIP-1559 and later: gasPrice is what the transaction paid per gas in its block.
    if (max_fee && tip) {
        U256 price = *max_fee;
        if (place.base_fee) price = std::min(*max_fee, *place.base_fee + *tip);
        o["gasPrice"] = quantity(price);
    }
    if (legacy_chain_id) o["chainId"] = quantity(*legacy_chain_id);
    const auto v = string_of((*items)[n]).value_or(ByteView{});
    o["v"] = quantity(v);
    if (type != 0) o["yParity"] = quantity(v);
    o["r"] = quantity(string_of((*items)[n + 1]).value_or(ByteView{}));
    o["s"] = quantity(string_of((*items)[n + 2]).value_or(ByteView{}));
    return o;
}

Result<Bytes> raw_block(ByteView header_rlp, ByteView body) {
    ByteView in = body;
    auto parts = rlp::decode_list(in);
    if (!parts || !in.empty()) return BodyError::kBadBody;
    Bytes out;
    out.reserve(rlp::length_of_list(header_rlp.size() + parts->size()));
    rlp::encode_header(out, {true, header_rlp.size() + parts->size()});
    out.insert(out.end(), header_rlp.begin(), header_rlp.end());
    out.insert(out.end(), parts->begin(), parts->end());
    return out;
}

Outcome<json::object> block_json(const BlockHeader& header, ByteView header_rlp, const Hash32& hash, ByteView body,
                                 bool full) {
    auto view = parse_body(body);
    if (!view) return make_error(fmt::format("block {}: {}", header.number, view.error().message()));
    json::object o = header_json(header, hash);
    ByteView in = body;
    const auto payload = rlp::decode_list(in);  // parse_body has read it
    o["size"] = quantity(uint64_t{rlp::length_of_list(header_rlp.size() + (payload ? payload->size() : 0))});
    json::array transactions;
    for (size_t i = 0; i < view->transactions.size(); ++i) {
        const ByteView tx = view->transactions[i];
        if (full) {
            auto t = transaction_json(tx, {hash, header.number, i, header.base_fee_per_gas});
            if (!t) return t.error();
            transactions.emplace_back(std::move(*t));
        } else {
            auto h = transaction_hash(tx);
            if (!h) return make_error(fmt::format("transaction {} of block {}: not a transaction", i, header.number));
            transactions.emplace_back(bytes_hex(*h));
        }
    }
    o["transactions"] = std::move(transactions);
    json::array uncles;
    for (ByteView u : list_items(view->uncles).value_or(std::vector<ByteView>{}))
        uncles.emplace_back(bytes_hex(keccak256(u)));
    o["uncles"] = std::move(uncles);
    if (view->withdrawals) {
        json::array withdrawals;
        for (ByteView w : *view->withdrawals) {
            auto f = list_items(w);
            if (!f || f->size() != 4) return make_error(fmt::format("block {}: malformed withdrawal", header.number));
            std::array<std::optional<ByteView>, 4> s;
            for (size_t i = 0; i < 4; ++i) s[i] = string_of((*f)[i]);
            if (std::any_of(s.begin(), s.end(), [](const auto& v) { return !v.has_value(); }) || s[2]->size() != 20) {
                return make_error(fmt::format("block {}: malformed withdrawal", header.number));
            }
            withdrawals.emplace_back(json::object{{"index", quantity(*s[0])},
                                                  {"validatorIndex", quantity(*s[1])},
                                                  {"address", bytes_hex(*s[2])},
                                                  {"amount", quantity(*s[3])}});
        }
        o["withdrawals"] = std::move(withdrawals);
    }
    return o;
}

}  // namespace headerd::rpc
