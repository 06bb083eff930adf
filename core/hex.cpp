#include "core/hex.hpp"

#include <algorithm>

namespace headerd {
namespace {

int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

std::string to_hex(ByteView b) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out(b.size() * 2, '\0');
    for (size_t i = 0; i < b.size(); ++i) {
        out[2 * i] = kDigits[b[i] >> 4];
        out[2 * i + 1] = kDigits[b[i] & 0x0f];
    }
    return out;
}

std::string to_hex0x(ByteView b) { return "0x" + to_hex(b); }

std::optional<Bytes> from_hex(std::string_view s) {
    if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
    if (s.size() % 2 != 0) return std::nullopt;
    Bytes out(s.size() / 2);
    for (size_t i = 0; i < out.size(); ++i) {
        const int hi = hex_value(s[2 * i]);
        const int lo = hex_value(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out[i] = static_cast<uint8_t>((hi << 4) | lo);
    }
    return out;
}

std::optional<Hash32> hash_from_hex(std::string_view s) {
    auto b = from_hex(s);
    if (!b || b->size() != 32) return std::nullopt;
    Hash32 h;
    std::copy(b->begin(), b->end(), h.begin());
    return h;
}

}  // namespace headerd
