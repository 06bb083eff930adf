#include "rpc/json_rpc.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <exception>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <boost/asio/ip/address.hpp>
#include <boost/json.hpp>

#include "core/block_body.hpp"
#include "core/hex.hpp"
#include "core/item_buffer.hpp"
#include "core/rlp.hpp"
#include "core/trie_root.hpp"
#include "rpc/block_json.hpp"

namespace headerd::rpc {

namespace json = boost::json;

namespace {

// A call that fails: its error object. Thrown by the methods, caught by the dispatcher.
struct RpcFailure {
    int code;
    std::string message;
};

[[noreturn]] void invalid_params(std::string message) { throw RpcFailure{kInvalidParams, std::move(message)}; }

// A block found: its canonical number, hash, header RLP and decoded header.
struct Block {
    uint64_t number{0};
    Hash32 hash{};
    Bytes rlp;
    BlockHeader header;
    bool canonical{true};
};

// A hex quantity as JSON-RPC sends it: "0x", no leading zero digits, at most 64 bits.
uint64_t parse_quantity(std::string_view s, size_t arg) {
    if (s.size() < 3 || s.substr(0, 2) != "0x" || s.size() > 18) {
        invalid_params(fmt::format("invalid argument {}: expected a hex quantity such as 0x1b4", arg));
    }
    if (s.size() > 3 && s[2] == '0')
        invalid_params(fmt::format("invalid argument {}: hex number with leading zero digits", arg));
    uint64_t v = 0;
    for (char c : s.substr(2)) {
        const int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                      : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                      : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                                  : -1;
        if (d < 0) invalid_params(fmt::format("invalid argument {}: invalid hex digit", arg));
        v = v * 16 + static_cast<uint64_t>(d);
    }
    return v;
}

Hash32 parse_hash(const json::value& v, size_t arg) {
    const auto* s = v.if_string();
    std::optional<Hash32> h;
    if (s != nullptr && s->size() == 66 && s->starts_with("0x")) h = hash_from_hex(std::string_view(*s));
    if (!h) invalid_params(fmt::format("invalid argument {}: expected a 32-byte hash as 0x-prefixed hex", arg));
    return *h;
}

bool parse_bool(const json::array& params, size_t arg) {
    if (params.size() <= arg) invalid_params(fmt::format("missing value for required argument {}", arg));
    if (!params[arg].is_bool()) invalid_params(fmt::format("invalid argument {}: expected true or false", arg));
    return params[arg].get_bool();
}

const json::value& required(const json::array& params, size_t arg) {
    if (params.size() <= arg) invalid_params(fmt::format("missing value for required argument {}", arg));
    return params[arg];
}

void at_most(const json::array& params, size_t n) {
    if (params.size() > n) invalid_params(fmt::format("too many arguments, want at most {}", n));
}

json::value hex_data(ByteView b) { return json::value(to_hex0x(b)); }

class Call {
  public:
    Call(const HeaderSource& headers, const HistorySource* history, uint64_t first_block,
         const std::string& client_version)
        : headers_(headers), history_(history), first_block_(first_block), client_version_(client_version) {}

    json::value run(std::string_view method, const json::array& p) const {
        if (method == "eth_chainId" || method == "net_version") {
            at_most(p, 0);
            const uint64_t id = headers_.config() != nullptr ? headers_.config()->network_id : 0;
            return method == "net_version" ? json::value(std::to_string(id)) : json::value(quantity(id));
        }
        if (method == "web3_clientVersion") {
            at_most(p, 0);
            return json::value(client_version_);
        }
        if (method == "eth_blockNumber") {
            at_most(p, 0);
            const auto head = headers_.head();
            return json::value(quantity(head ? head->number : 0));
        }
        if (method == "eth_getBlockByNumber" || method == "eth_getBlockByHash") {
            at_most(p, 2);
            const bool by_hash = method == "eth_getBlockByHash";
            auto block = by_hash ? by_hash_of(parse_hash(required(p, 0), 0)) : by_number(required(p, 0), 0);
            const bool full = parse_bool(p, 1);
            if (!block) return nullptr;
            const Bytes body = body_of(*block);
            auto o = block_json(block->header, block->rlp, block->hash, body, full);
            if (!o) throw RpcFailure{kServerError, o.error().message};
            return std::move(*o);
        }
        if (method == "eth_getHeaderByNumber" || method == "eth_getHeaderByHash") {
            at_most(p, 1);
            auto block = method == "eth_getHeaderByHash" ? by_hash_of(parse_hash(required(p, 0), 0))
                                                         : by_number(required(p, 0), 0);
            if (!block) return nullptr;
            return header_json(block->header, block->hash);
        }
        if (method == "debug_getRawHeader" || method == "debug_getRawBlock" || method == "debug_getRawReceipts") {
            at_most(p, 1);
            auto block = by_number_or_hash(required(p, 0));
            if (!block) throw RpcFailure{kServerError, "header not found"};
            if (method == "debug_getRawHeader") return hex_data(block->rlp);
            if (method == "debug_getRawBlock") {
                auto raw = raw_block(block->rlp, body_of(*block));
                if (!raw) throw RpcFailure{kServerError, raw.error().message()};
                return hex_data(*raw);
            }
            const Bytes receipts = receipts_of(*block);
            auto list = parse_receipts(receipts);
            if (!list)
                throw RpcFailure{kServerError, fmt::format("block {}: {}", block->number, list.error().message())};
            json::array out;
            for (ByteView r : *list) {
                auto value = trie_value(r);  // typed: type || payload, as geth's MarshalBinary
                if (!value) throw RpcFailure{kServerError, fmt::format("block {}: malformed receipt", block->number)};
                out.emplace_back(to_hex0x(*value));
            }
            return out;
        }
        throw RpcFailure{kMethodNotFound, fmt::format("the method {} does not exist/is not available", method)};
    }

  private:
    // The canonical block `number`, or nullopt when it is not held.
    std::optional<Block> canonical(uint64_t number) const {
        auto hash = headers_.canonical_hash(number);
        if (!hash) throw RpcFailure{kServerError, hash.error().message};
        if (!*hash) return std::nullopt;
        return by_hash_of(**hash, true);
    }

    // The block with this hash; `canonical` when the caller has just read it as canonical (one
    // lookup fewer).
    std::optional<Block> by_hash_of(const Hash32& hash, bool canonical = false) const {
        Block b;
        auto found = headers_.header_by_hash(hash, b.rlp);
        if (!found) throw RpcFailure{kServerError, found.error().message};
        if (!*found) return std::nullopt;
        auto header = decode_block_header(b.rlp);
        if (!header)
            throw RpcFailure{kServerError,
                             fmt::format("stored header {}: {}", to_hex0x(hash), header.error().message())};
        b.header = std::move(*header);
        b.number = b.header.number;
        b.hash = hash;
        if (!canonical) {
            auto canonical_hash = headers_.canonical_hash(b.number);
            canonical = canonical_hash && *canonical_hash && **canonical_hash == hash;
        }
        b.canonical = canonical;
        return b;
    }

    // A block number or tag: latest (and pending, as a node without a pool has none), earliest
    // (the first block held), or a hex number. safe and finalized are not known to a header node.
    std::optional<Block> by_number(const json::value& v, size_t arg) const {
        const auto* s = v.if_string();
        if (s == nullptr) invalid_params(fmt::format("invalid argument {}: expected a block number or tag", arg));
        const std::string_view tag = *s;
        if (tag == "latest" || tag == "pending") {
            const auto head = headers_.head();
            if (!head) return std::nullopt;
            return canonical(head->number);
        }
        if (tag == "earliest") return canonical(first_block_);
        if (tag == "safe" || tag == "finalized") throw RpcFailure{kServerError, fmt::format("{} block not found", tag)};
        return canonical(parse_quantity(tag, arg));
    }

    // A number, a tag, a hash, or EIP-1898's {"blockNumber": ...} / {"blockHash": ..., "requireCanonical": ...}.
    std::optional<Block> by_number_or_hash(const json::value& v) const {
        if (const auto* o = v.if_object()) {
            const auto* number = o->if_contains("blockNumber");
            const auto* hash = o->if_contains("blockHash");
            if ((number == nullptr) == (hash == nullptr)) {
                invalid_params("invalid argument 0: give one of blockNumber and blockHash");
            }
            if (number != nullptr) return by_number(*number, 0);
            auto block = by_hash_of(parse_hash(*hash, 0));
            const auto* require = o->if_contains("requireCanonical");
            if (block && require != nullptr && require->is_bool() && require->get_bool() && !block->canonical) {
                throw RpcFailure{kServerError, "hash is not currently canonical"};
            }
            return block;
        }
        if (const auto* s = v.if_string(); s != nullptr && s->size() == 66) return by_hash_of(parse_hash(v, 0));
        return by_number(v, 0);
    }

    // The block's body: from the history, or built from the header when its roots say the body is
    // empty; else the error geth gives for history it has pruned.
    Bytes body_of(const Block& b) const {
        Bytes out;
        if (history_ != nullptr && b.canonical) {
            auto held = history_->append_body(b.number, out);
            if (!held) throw RpcFailure{kServerError, held.error().message};
            if (*held) return out;
        }
        const auto& h = b.header;
        const bool empty = h.transactions_root == kEmptyTrieRoot && h.ommers_hash == kEmptyOmmersHash &&
                           (!h.withdrawals_root || *h.withdrawals_root == kEmptyTrieRoot);
        if (!empty) throw RpcFailure{kPrunedHistory, "pruned history unavailable"};
        out = h.withdrawals_root ? Bytes{0xc3, 0xc0, 0xc0, 0xc0} : Bytes{0xc2, 0xc0, 0xc0};
        return out;
    }

    Bytes receipts_of(const Block& b) const {
        Bytes out;
        if (history_ != nullptr && b.canonical) {
            auto held = history_->append_receipts(b.number, out);
            if (!held) throw RpcFailure{kServerError, held.error().message};
            if (*held) return out;
        }
        if (b.header.receipts_root != kEmptyTrieRoot) throw RpcFailure{kPrunedHistory, "pruned history unavailable"};
        return Bytes{0xc0};
    }

    const HeaderSource& headers_;
    const HistorySource* history_;
    uint64_t first_block_;
    const std::string& client_version_;
};

json::object error_object(const json::value& id, int code, std::string_view message) {
    return json::object{{"jsonrpc", "2.0"}, {"id", id}, {"error", json::object{{"code", code}, {"message", message}}}};
}

// One call of a request: its response, or nullopt for a notification.
std::optional<json::object> answer_one(const Call& call, const json::value& request) {
    const auto* o = request.if_object();
    if (o == nullptr) return error_object(nullptr, kInvalidRequest, "invalid request");
    const auto* id = o->if_contains("id");
    const json::value id_value = id != nullptr ? *id : json::value(nullptr);
    const auto* version = o->if_contains("jsonrpc");
    const auto* method = o->if_contains("method");
    // A number too large for a double parses as infinity, which JSON cannot carry back: not an id.
    const bool id_ok = id == nullptr || id->is_null() || id->is_string() || id->is_int64() || id->is_uint64() ||
                       (id->is_double() && std::isfinite(id->get_double()));
    if (version == nullptr || !version->is_string() || version->get_string() != "2.0" || method == nullptr ||
        !method->is_string() || !id_ok) {
        return error_object(id_ok ? id_value : json::value(nullptr), kInvalidRequest, "invalid request");
    }
    static const json::array kNoParams;
    const json::array* params = &kNoParams;
    if (const auto* p = o->if_contains("params"); p != nullptr && !p->is_null()) {
        if (!p->is_array()) return error_object(id_value, kInvalidParams, "non-array args");
        params = &p->get_array();
    }
    json::object reply;
    try {
        json::value result = call.run(std::string_view(method->get_string()), *params);
        reply = json::object{{"jsonrpc", "2.0"}, {"id", id_value}, {"result", std::move(result)}};
    } catch (const RpcFailure& f) {
        reply = error_object(id_value, f.code, f.message);
    }
    if (id == nullptr) return std::nullopt;
    return reply;
}

}  // namespace

Handler::Handler(const HeaderSource& headers, const HistorySource* history, uint64_t first_block,
                 std::string client_version, RpcLimits limits)
    : headers_(headers),
      history_(history),
      first_block_(first_block),
      client_version_(std::move(client_version)),
      limits_(limits) {}

std::string Handler::answer(std::string_view body) const {
    boost::system::error_code ec;
    json::value request = json::parse(body, ec);
    if (ec) return json::serialize(error_object(nullptr, kParseError, "parse error"));
    const Call call(headers_, history_, first_block_, client_version_);
    const auto* batch = request.if_array();
    if (batch == nullptr) {
        auto reply = answer_one(call, request);
        return reply ? json::serialize(*reply) : std::string{};
    }
    if (batch->empty()) return json::serialize(error_object(nullptr, kInvalidRequest, "empty batch"));
    if (batch->size() > limits_.max_batch) {
        // geth's answer: one error, with the id of the first call, for the whole batch.
        json::value id = nullptr;
        for (const auto& r : *batch) {
            if (const auto* o = r.if_object(); o != nullptr && o->contains("id")) {
                const auto& first = o->at("id");
                if (!first.is_double() || std::isfinite(first.get_double())) id = first;
                break;
            }
        }
        return json::serialize(json::array{error_object(id, kInvalidRequest, "batch too large")});
    }
    std::string out = "[";
    size_t bytes = 0;
    bool first = true;
    for (const auto& r : *batch) {
        std::optional<json::object> reply;
        if (bytes > limits_.max_response_bytes) {
            const auto* o = r.if_object();
            const auto* id = o != nullptr ? o->if_contains("id") : nullptr;
            if (o != nullptr && id == nullptr) continue;
            reply = error_object(id != nullptr ? *id : json::value(nullptr), kResponseTooLarge, "response too large");
        } else {
            reply = answer_one(call, r);
        }
        if (!reply) continue;
        const std::string text = json::serialize(*reply);
        bytes += text.size();
        if (!first) out += ',';
        out += text;
        first = false;
    }
    if (first) return {};
    out += ']';
    return out;
}

namespace {

// geth's default --http.vhosts: localhost, and any IP address (a browser on a rebound name sends
// that name, which is refused).
bool host_allowed(std::string_view host) {
    if (host.empty()) return true;
    std::string_view name = host;
    if (name.front() == '[') {
        const size_t end = name.find(']');
        name = end == std::string_view::npos ? name : name.substr(1, end - 1);
    } else if (const size_t colon = name.rfind(':'); colon != std::string_view::npos) {
        name = name.substr(0, colon);
    }
    boost::system::error_code ec;
    boost::asio::ip::make_address(std::string(name), ec);
    if (!ec) return true;
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    return lower == "localhost";
}

bool is_json(std::string_view content_type) {
    const std::string_view media = content_type.substr(0, content_type.find(';'));
    std::string lower(media);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    while (!lower.empty() && lower.back() == ' ') lower.pop_back();
    return lower == "application/json" || lower == "application/json-rpc" || lower == "application/jsonrequest";
}

}  // namespace

metrics::HttpHandler Handler::http_handler() const {
    return [this](const metrics::HttpRequest& req) {
        constexpr const char* kText = "text/plain; charset=utf-8";
        if (!host_allowed(req.host)) return metrics::HttpResponse{403, kText, "invalid host specified\n", {}};
        if (req.target.substr(0, req.target.find('?')) != "/")
            return metrics::HttpResponse{404, kText, "not found\n", {}};
        if (req.method != "POST") {
            return metrics::HttpResponse{405, kText, "method not allowed: JSON-RPC is POST /\n", {{"Allow", "POST"}}};
        }
        if (!is_json(req.content_type)) {
            return metrics::HttpResponse{415, kText, "invalid content type, only application/json is supported\n", {}};
        }
        return metrics::HttpResponse{200, "application/json", answer(req.body), {}};
    };
}

}  // namespace headerd::rpc
