#include "disc/text_codec.hpp"

#include <openssl/evp.h>

namespace headerd::disc {
namespace {

constexpr std::string_view kBase32Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

int base32_value(char c) noexcept {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= '2' && c <= '7') return c - '2' + 26;
    return -1;
}

}  // namespace

std::string base64url_encode(ByteView data) {
    std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
    const int n =
        EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data.data(), static_cast<int>(data.size()));
    out.resize(static_cast<size_t>(n));
    while (!out.empty() && out.back() == '=') out.pop_back();
    for (char& c : out) {
        if (c == '+') c = '-';
        if (c == '/') c = '_';
    }
    return out;
}

std::optional<Bytes> base64url_decode(std::string_view text) {
    if (text.size() % 4 == 1) return std::nullopt;  // no length of bytes encodes to 4k + 1 characters
    std::string b64(text);
    for (char& c : b64) {
        const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (c == '-') {
            c = '+';
        } else if (c == '_') {
            c = '/';
        } else if (!plain) {
            return std::nullopt;  // '+', '/', '=', spaces: not the URL-safe alphabet without padding
        }
    }
    const size_t padding = (4 - b64.size() % 4) % 4;
    b64.append(padding, '=');
    Bytes out(b64.size() / 4 * 3);
    const int n =
        EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(b64.data()), static_cast<int>(b64.size()));
    if (n < 0 || static_cast<size_t>(n) < padding) return std::nullopt;
    out.resize(static_cast<size_t>(n) - padding);
    // The unused low bits of the last character must be zero: one byte string, one text form.
    if (base64url_encode(out) != text) return std::nullopt;
    return out;
}

std::string base32_encode(ByteView data) {
    std::string out;
    out.reserve((data.size() * 8 + 4) / 5);
    uint32_t buffer = 0;
    int bits = 0;
    for (uint8_t b : data) {
        buffer = (buffer << 8) | b;
        bits += 8;
        while (bits >= 5) {
            bits -= 5;
            out.push_back(kBase32Alphabet[(buffer >> bits) & 31]);
        }
    }
    if (bits > 0) out.push_back(kBase32Alphabet[(buffer << (5 - bits)) & 31]);
    return out;
}

std::optional<Bytes> base32_decode(std::string_view text, bool canonical) {
    // 8 characters carry 5 bytes; a tail of 1, 3 or 6 characters is no whole number of bytes.
    const size_t tail = text.size() % 8;
    if (tail == 1 || tail == 3 || tail == 6) return std::nullopt;
    Bytes out;
    out.reserve(text.size() * 5 / 8);
    uint32_t buffer = 0;
    int bits = 0;
    for (char c : text) {
        const int v = base32_value(c);
        if (v < 0) return std::nullopt;
        buffer = (buffer << 5) | static_cast<uint32_t>(v);
        bits += 5;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<uint8_t>(buffer >> bits));
        }
    }
    if (canonical && (buffer & ((1u << bits) - 1)) != 0) return std::nullopt;  // unused low bits set
    return out;
}

}  // namespace headerd::disc
