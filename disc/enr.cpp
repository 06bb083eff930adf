#include "disc/enr.hpp"

#include <cstring>

#include "core/keccak.hpp"
#include "core/rlp.hpp"
#include "disc/text_codec.hpp"

namespace headerd::disc {
namespace {

class EnrCategory final : public std::error_category {
  public:
    const char* name() const noexcept override { return "enr"; }
    std::string message(int c) const override {
        switch (static_cast<EnrError>(c)) {
            case EnrError::kTooBig:
                return "record larger than 300 bytes";
            case EnrError::kMalformed:
                return "not an RLP list [signature, seq, key, value, ...]";
            case EnrError::kNotSorted:
                return "keys not sorted";
            case EnrError::kDuplicateKey:
                return "duplicate key";
            case EnrError::kUnknownScheme:
                return "identity scheme is not v4";
            case EnrError::kBadKey:
                return "secp256k1 entry missing or not a compressed public key";
            case EnrError::kBadSignature:
                return "signature does not verify";
            case EnrError::kBadText:
                return "not enr: followed by URL-safe base64 without padding";
        }
        return "unknown ENR error";
    }
};

Bytes rlp_string(ByteView s) {
    Bytes out;
    rlp::encode(out, s);
    return out;
}

Bytes rlp_uint(uint64_t v) {
    Bytes out;
    rlp::encode(out, v);
    return out;
}

ByteView bytes_of(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

// The string an item holds; nullopt for a list or malformed RLP.
std::optional<ByteView> string_item(ByteView item) noexcept {
    auto s = rlp::decode_string(item);
    if (!s || !item.empty()) return std::nullopt;
    return *s;
}

// A port: a big-endian integer of at most 2 bytes. Leading zeros are accepted: @chainsafe/enr
// writes every port as 2 bytes (port 1 as 00 01), which a strict RLP integer reader would refuse.
std::optional<uint16_t> port_item(ByteView item) noexcept {
    auto s = string_item(item);
    if (!s || s->size() > 2) return std::nullopt;
    uint16_t port = 0;
    for (uint8_t b : *s) port = static_cast<uint16_t>((port << 8) | b);
    return port;
}

std::optional<ForkId> fork_id_item(ByteView item) noexcept {
    auto outer = rlp::decode_list(item);
    if (!outer || !item.empty()) return std::nullopt;
    auto inner = rlp::decode_list(*outer);  // the first element; later ones are ignored
    if (!inner) return std::nullopt;
    auto hash = rlp::decode_string(*inner);
    if (!hash || hash->size() != 4) return std::nullopt;
    auto next = rlp::decode_uint64(*inner);
    if (!next) return std::nullopt;  // extra elements after it are ignored, as geth's rlp:"tail"
    ForkId id;
    std::memcpy(id.hash.data(), hash->data(), 4);
    id.next = *next;
    return id;
}

// rlp([seq, k1, v1, ...]) from the pairs.
Bytes content_of(uint64_t seq, const std::map<std::string, Bytes, std::less<>>& pairs) {
    Bytes body;
    rlp::encode(body, seq);
    for (const auto& [key, value] : pairs) {
        rlp::encode(body, bytes_of(key));
        body.insert(body.end(), value.begin(), value.end());
    }
    Bytes out;
    rlp::encode_header(out, rlp::Header{true, body.size()});
    out.insert(out.end(), body.begin(), body.end());
    return out;
}

}  // namespace

const std::error_category& enr_category() noexcept {
    static const EnrCategory category;
    return category;
}

std::error_code make_error_code(EnrError e) noexcept { return {static_cast<int>(e), enr_category()}; }

Result<Enr> Enr::decode(ByteView rlp) noexcept {
    if (rlp.size() > kEnrMaxSize) return make_error_code(EnrError::kTooBig);
    ByteView in = rlp;
    auto list = rlp::decode_list(in);
    if (!list || !in.empty()) return make_error_code(EnrError::kMalformed);
    ByteView items = *list;
    auto signature = rlp::decode_string(items);
    if (!signature) return make_error_code(EnrError::kMalformed);
    const ByteView content_body = items;  // seq, k1, v1, ...: what the signature covers
    auto seq = rlp::decode_uint64(items);
    if (!seq) return make_error_code(EnrError::kMalformed);
    Enr enr;
    enr.seq_ = *seq;
    std::string previous;
    while (!items.empty()) {
        auto key = rlp::decode_string(items);
        if (!key || items.empty()) return make_error_code(EnrError::kMalformed);
        auto value = rlp::next_item(items);
        if (!value) return make_error_code(EnrError::kMalformed);
        std::string k(reinterpret_cast<const char*>(key->data()), key->size());
        if (!enr.pairs_.empty() && k == previous) return make_error_code(EnrError::kDuplicateKey);
        if (!enr.pairs_.empty() && k < previous) return make_error_code(EnrError::kNotSorted);
        previous = k;
        enr.pairs_.emplace(std::move(k), Bytes(value->begin(), value->end()));
    }
    const auto id = enr.value("id");
    const auto scheme = id ? string_item(*id) : std::nullopt;
    if (!scheme || std::string_view(reinterpret_cast<const char*>(scheme->data()), scheme->size()) != "v4") {
        return make_error_code(EnrError::kUnknownScheme);
    }
    const auto key_item = enr.value("secp256k1");
    const auto key_bytes = key_item ? string_item(*key_item) : std::nullopt;
    if (!key_bytes) return make_error_code(EnrError::kBadKey);
    auto key = rlpx::PublicKey::from_compressed(*key_bytes);
    if (!key) return make_error_code(EnrError::kBadKey);
    Bytes content;
    rlp::encode_header(content, rlp::Header{true, content_body.size()});
    content.insert(content.end(), content_body.begin(), content_body.end());
    if (!rlpx::verify(*signature, keccak256(content), *key)) return make_error_code(EnrError::kBadSignature);
    enr.key_ = *key;
    enr.encoded_.assign(rlp.begin(), rlp.end());
    return enr;
}

Result<Enr> Enr::from_text(std::string_view text) noexcept {
    constexpr std::string_view kPrefix = "enr:";
    if (!text.starts_with(kPrefix)) return make_error_code(EnrError::kBadText);
    text.remove_prefix(kPrefix.size());
    if (text.size() > 4 * ((kEnrMaxSize + 2) / 3)) return make_error_code(EnrError::kTooBig);
    auto bytes = base64url_decode(text);
    if (!bytes) return make_error_code(EnrError::kBadText);
    return decode(*bytes);
}

std::string Enr::text() const { return "enr:" + base64url_encode(encoded_); }

std::optional<ByteView> Enr::value(std::string_view key) const noexcept {
    auto it = pairs_.find(key);
    if (it == pairs_.end()) return std::nullopt;
    return ByteView{it->second};
}

template <size_t N>
std::optional<std::array<uint8_t, N>> Enr::fixed(std::string_view key) const noexcept {
    auto v = value(key);
    auto s = v ? string_item(*v) : std::nullopt;
    if (!s || s->size() != N) return std::nullopt;
    std::array<uint8_t, N> out;
    std::memcpy(out.data(), s->data(), N);
    return out;
}

std::optional<std::array<uint8_t, 4>> Enr::ip() const noexcept { return fixed<4>("ip"); }

std::optional<std::array<uint8_t, 16>> Enr::ip6() const noexcept { return fixed<16>("ip6"); }

std::optional<uint16_t> Enr::tcp() const noexcept {
    auto v = value("tcp");
    return v ? port_item(*v) : std::nullopt;
}

std::optional<uint16_t> Enr::udp() const noexcept {
    auto v = value("udp");
    return v ? port_item(*v) : std::nullopt;
}

std::optional<uint16_t> Enr::tcp6() const noexcept {
    auto v = value("tcp6");
    return v ? port_item(*v) : tcp();
}

std::optional<uint16_t> Enr::udp6() const noexcept {
    auto v = value("udp6");
    return v ? port_item(*v) : udp();
}

std::optional<ForkId> Enr::eth() const noexcept {
    auto v = value("eth");
    return v ? fork_id_item(*v) : std::nullopt;
}

EnrBuilder& EnrBuilder::set(std::string key, Bytes rlp_item) {
    pairs_[std::move(key)] = std::move(rlp_item);
    return *this;
}

EnrBuilder& EnrBuilder::ip(const std::array<uint8_t, 4>& address) { return set("ip", rlp_string(address)); }
EnrBuilder& EnrBuilder::ip6(const std::array<uint8_t, 16>& address) { return set("ip6", rlp_string(address)); }
EnrBuilder& EnrBuilder::tcp(uint16_t port) { return set("tcp", rlp_uint(port)); }
EnrBuilder& EnrBuilder::udp(uint16_t port) { return set("udp", rlp_uint(port)); }
EnrBuilder& EnrBuilder::tcp6(uint16_t port) { return set("tcp6", rlp_uint(port)); }
EnrBuilder& EnrBuilder::udp6(uint16_t port) { return set("udp6", rlp_uint(port)); }

EnrBuilder& EnrBuilder::eth(const ForkId& id) {
    Bytes inner;
    rlp::encode(inner, ByteView{id.hash});
    rlp::encode(inner, id.next);
    Bytes one;
    rlp::encode_header(one, rlp::Header{true, inner.size()});
    one.insert(one.end(), inner.begin(), inner.end());
    Bytes outer;
    rlp::encode_header(outer, rlp::Header{true, one.size()});
    outer.insert(outer.end(), one.begin(), one.end());
    return set("eth", std::move(outer));
}

Result<Enr> EnrBuilder::sign(const rlpx::PrivateKey& key) const {
    auto pairs = pairs_;
    pairs["id"] = rlp_string(bytes_of("v4"));
    pairs["secp256k1"] = rlp_string(key.public_key().compressed());
    const Bytes content = content_of(seq_, pairs);
    auto signature = rlpx::sign_recoverable(key, keccak256(content));
    if (!signature) return signature.error();
    // record = [signature, seq, k, v, ...]: the content's items behind the 64-byte signature.
    ByteView rest = content;
    auto body = rlp::decode_list(rest);
    if (!body) return make_error_code(EnrError::kMalformed);
    Bytes items;
    rlp::encode(items, ByteView{signature->data(), rlpx::kPlainSignatureSize});
    items.insert(items.end(), body->begin(), body->end());
    Bytes record;
    rlp::encode_header(record, rlp::Header{true, items.size()});
    record.insert(record.end(), items.begin(), items.end());
    if (record.size() > kEnrMaxSize) return make_error_code(EnrError::kTooBig);
    return Enr::decode(record);
}

}  // namespace headerd::disc
