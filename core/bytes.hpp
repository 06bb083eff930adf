#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace headerd {

using Bytes = std::vector<uint8_t>;
using ByteView = std::span<const uint8_t>;
using Hash32 = std::array<uint8_t, 32>;

inline ByteView as_bytes(std::string_view s) noexcept { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

inline std::string_view as_chars(ByteView b) noexcept { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

inline void append(Bytes& out, ByteView b) { out.insert(out.end(), b.begin(), b.end()); }

// Big-endian fixed-width integers, used by the LevelDB key schema and the freezer index.
inline void store_be64(uint8_t* p, uint64_t v) noexcept {
    for (int i = 7; i >= 0; --i) {
        p[i] = static_cast<uint8_t>(v);
        v >>= 8;
    }
}
inline uint64_t load_be64(const uint8_t* p) noexcept {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
    return v;
}
inline void store_be32(uint8_t* p, uint32_t v) noexcept {
    p[0] = static_cast<uint8_t>(v >> 24);
    p[1] = static_cast<uint8_t>(v >> 16);
    p[2] = static_cast<uint8_t>(v >> 8);
    p[3] = static_cast<uint8_t>(v);
}
inline uint32_t load_be32(const uint8_t* p) noexcept {
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
inline void store_be16(uint8_t* p, uint16_t v) noexcept {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}
inline uint16_t load_be16(const uint8_t* p) noexcept { return static_cast<uint16_t>((p[0] << 8) | p[1]); }

}  // namespace headerd
