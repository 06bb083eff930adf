#include "core/rlp.hpp"

#include <array>
#include <string>

namespace headerd::rlp {
namespace {

class DecodeCategory final : public std::error_category {
  public:
    const char* name() const noexcept override { return "rlp"; }
    std::string message(int ev) const override {
        switch (static_cast<DecodeError>(ev)) {
            case DecodeError::kInputTooShort:
                return "input too short";
            case DecodeError::kTrailingBytes:
                return "trailing bytes after item";
            case DecodeError::kLeadingZeroInLength:
                return "leading zero in length";
            case DecodeError::kNonCanonicalSize:
                return "non-canonical size (long form for length < 56)";
            case DecodeError::kNonCanonicalSingleByte:
                return "non-canonical single byte (< 0x80 wrapped as string)";
            case DecodeError::kLeadingZeroInInteger:
                return "leading zero in integer";
            case DecodeError::kIntegerOverflow:
                return "integer overflow";
            case DecodeError::kLengthOverflow:
                return "length overflow";
            case DecodeError::kUnexpectedList:
                return "unexpected list (expected string)";
            case DecodeError::kUnexpectedString:
                return "unexpected string (expected list)";
            case DecodeError::kUnexpectedLength:
                return "unexpected string length";
            case DecodeError::kTooDeep:
                return "nesting too deep";
        }
        return "unknown rlp error";
    }
};

size_t be_length(uint64_t v) noexcept {
    size_t n = 0;
    while (v != 0) {
        ++n;
        v >>= 8;
    }
    return n;
}

uint8_t* put_be(uint8_t* p, uint64_t v, size_t n) noexcept {
    for (size_t i = n; i > 0; --i) *p++ = static_cast<uint8_t>(v >> (8 * (i - 1)));
    return p;
}

// Minimal big-endian bytes of v into buf (32 bytes); returns the used suffix.
ByteView u256_bytes(const U256& v, std::array<uint8_t, 32>& buf) noexcept {
    buf.fill(0);
    U256 x = v;
    size_t i = buf.size();
    while (x != 0 && i > 0) {
        buf[--i] = static_cast<uint8_t>(x & 0xff);
        x >>= 8;
    }
    return ByteView{buf}.subspan(i);
}

Result<uint64_t> be_to_uint64(ByteView b) noexcept {
    if (b.size() > 8) return DecodeError::kIntegerOverflow;
    if (!b.empty() && b[0] == 0) return DecodeError::kLeadingZeroInInteger;
    uint64_t v = 0;
    for (uint8_t c : b) v = (v << 8) | c;
    return v;
}

}  // namespace

const std::error_category& decode_category() noexcept {
    static const DecodeCategory category;
    return category;
}

std::error_code make_error_code(DecodeError e) noexcept { return {static_cast<int>(e), decode_category()}; }

size_t header_length(size_t payload_length) noexcept { return payload_length < 56 ? 1 : 1 + be_length(payload_length); }

size_t length(ByteView s) noexcept {
    if (s.size() == 1 && s[0] < 0x80) return 1;
    return header_length(s.size()) + s.size();
}

size_t length(uint64_t v) noexcept { return v < 0x80 ? 1 : 1 + be_length(v); }

size_t length(const U256& v) noexcept {
    std::array<uint8_t, 32> buf;
    return length(u256_bytes(v, buf));
}

uint8_t* write_header(uint8_t* p, Header h) noexcept {
    const uint8_t short_base = h.list ? 0xc0 : 0x80;
    const uint8_t long_base = h.list ? 0xf7 : 0xb7;
    if (h.payload_length < 56) {
        *p++ = static_cast<uint8_t>(short_base + h.payload_length);
        return p;
    }
    const size_t n = be_length(h.payload_length);
    *p++ = static_cast<uint8_t>(long_base + n);
    return put_be(p, h.payload_length, n);
}

uint8_t* write_uint(uint8_t* p, uint64_t v) noexcept {
    if (v == 0) {
        *p++ = 0x80;
    } else if (v < 0x80) {
        *p++ = static_cast<uint8_t>(v);
    } else {
        const size_t n = be_length(v);
        *p++ = static_cast<uint8_t>(0x80 + n);
        p = put_be(p, v, n);
    }
    return p;
}

void encode_header(Bytes& out, Header h) {
    std::array<uint8_t, kMaxHeaderLength> buf;
    out.insert(out.end(), buf.data(), write_header(buf.data(), h));
}

void encode(Bytes& out, ByteView s) {
    if (s.size() == 1 && s[0] < 0x80) {
        out.push_back(s[0]);
        return;
    }
    encode_header(out, {false, s.size()});
    append(out, s);
}

void encode(Bytes& out, uint64_t v) {
    std::array<uint8_t, kMaxHeaderLength> buf;
    out.insert(out.end(), buf.data(), write_uint(buf.data(), v));
}

void encode(Bytes& out, const U256& v) {
    std::array<uint8_t, 32> buf;
    encode(out, u256_bytes(v, buf));
}

Result<Header> decode_header(ByteView& in) noexcept {
    if (in.empty()) return DecodeError::kInputTooShort;
    const uint8_t b = in[0];
    Header h;
    size_t consumed = 1;
    if (b < 0x80) {
        // The byte is its own payload: leave it in place.
        h.payload_length = 1;
        consumed = 0;
    } else if (b < 0xb8) {
        h.payload_length = b - 0x80u;
        if (h.payload_length == 1) {
            if (in.size() < 2) return DecodeError::kInputTooShort;
            if (in[1] < 0x80) return DecodeError::kNonCanonicalSingleByte;
        }
    } else if (b < 0xc0 || (b >= 0xf8)) {
        h.list = b >= 0xf8;
        const size_t n = b - (h.list ? 0xf7u : 0xb7u);
        if (in.size() < 1 + n) return DecodeError::kInputTooShort;
        if (in[1] == 0) return DecodeError::kLeadingZeroInLength;
        if (n > sizeof(size_t)) return DecodeError::kLengthOverflow;
        uint64_t len = 0;
        for (size_t i = 0; i < n; ++i) len = (len << 8) | in[1 + i];
        if (len < 56) return DecodeError::kNonCanonicalSize;
        h.payload_length = len;
        consumed = 1 + n;
    } else {
        h.list = true;
        h.payload_length = b - 0xc0u;
    }
    in = in.subspan(consumed);
    if (h.payload_length > in.size()) return DecodeError::kInputTooShort;
    return h;
}

Result<ByteView> decode_string(ByteView& in) noexcept {
    auto h = decode_header(in);
    if (!h) return h.error();
    if (h->list) return DecodeError::kUnexpectedList;
    ByteView payload = in.first(h->payload_length);
    in = in.subspan(h->payload_length);
    return payload;
}

Result<ByteView> decode_list(ByteView& in) noexcept {
    auto h = decode_header(in);
    if (!h) return h.error();
    if (!h->list) return DecodeError::kUnexpectedString;
    ByteView payload = in.first(h->payload_length);
    in = in.subspan(h->payload_length);
    return payload;
}

Result<uint64_t> decode_uint64(ByteView& in) noexcept {
    auto s = decode_string(in);
    if (!s) return s.error();
    return be_to_uint64(*s);
}

Result<U256> decode_u256(ByteView& in) noexcept {
    auto s = decode_string(in);
    if (!s) return s.error();
    if (s->size() > 32) return {boost::system::in_place_error, DecodeError::kIntegerOverflow};
    if (!s->empty() && (*s)[0] == 0) return {boost::system::in_place_error, DecodeError::kLeadingZeroInInteger};
    U256 v = 0;
    for (uint8_t c : *s) v = (v << 8) | c;
    return v;
}

Result<Hash32> decode_hash(ByteView& in) noexcept {
    auto s = decode_string(in);
    if (!s) return s.error();
    if (s->size() != 32) return DecodeError::kUnexpectedLength;
    Hash32 h;
    std::copy(s->begin(), s->end(), h.begin());
    return h;
}

Result<ByteView> next_item(ByteView& in) noexcept {
    const ByteView start = in;
    auto h = decode_header(in);
    if (!h) return h.error();
    in = in.subspan(h->payload_length);
    return start.first(start.size() - in.size());
}

Result<std::vector<ByteView>> list_items(ByteView list) {
    ByteView in = list;
    auto payload = decode_list(in);
    if (!payload) return payload.error();
    if (!in.empty()) return DecodeError::kTrailingBytes;
    std::vector<ByteView> out;
    for (ByteView rest = *payload; !rest.empty();) {
        auto item = next_item(rest);
        if (!item) return item.error();
        out.push_back(*item);
    }
    return out;
}

void encode_list(Bytes& out, std::span<const ByteView> items) {
    size_t size = 0;
    for (ByteView i : items) size += i.size();
    encode_header(out, {true, size});
    for (ByteView i : items) headerd::append(out, i);
}

namespace {

Result<void> validate_items(ByteView payload, size_t depth) noexcept {
    if (depth > kMaxDepth) return DecodeError::kTooDeep;
    while (!payload.empty()) {
        auto h = decode_header(payload);
        if (!h) return h.error();
        if (h->list) {
            auto r = validate_items(payload.first(h->payload_length), depth + 1);
            if (!r) return r;
        }
        payload = payload.subspan(h->payload_length);
    }
    return {};
}

}  // namespace

Result<void> validate(ByteView in) noexcept {
    auto item = next_item(in);
    if (!item) return item.error();
    if (!in.empty()) return DecodeError::kTrailingBytes;
    return validate_items(*item, 0);
}

}  // namespace headerd::rlp
