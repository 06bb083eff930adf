#pragma once

// LevelDB key schema, shared with go-ethereum where the data overlap (docs/db_schema.md).
// All key builders write into a fixed-size array: no allocation on the read path.

#include <array>
#include <cstdint>
#include <string_view>

#include "core/bytes.hpp"

namespace headerd::db::schema {

inline constexpr uint8_t kHeaderPrefix = 'h';        // "h" + be64(num) + hash -> header RLP
inline constexpr uint8_t kCanonicalSuffix = 'n';     // "h" + be64(num) + "n"  -> canonical hash
inline constexpr uint8_t kHeaderNumberPrefix = 'H';  // "H" + hash -> be64(num)
inline constexpr std::string_view kLastHeaderKey = "LastHeader";
inline constexpr uint8_t kSkeletonHeaderPrefix = 'S';  // "S" + be64(num) -> header RLP (geth's skeleton)

// headerd's own metadata; the prefix keeps it apart from every geth key.
inline constexpr std::string_view kConfigKey = "headerd-chain-config";     // ChainConfig RLP
inline constexpr std::string_view kHeadTdKey = "headerd-head-td";          // RLP integer
inline constexpr std::string_view kVersionKey = "headerd-schema-version";  // RLP integer
// The skeleton's bounds, RLP [head, head_hash, tail, tail_parent] (db::Skeleton).
inline constexpr std::string_view kSkeletonKey = "headerd-skeleton";
// Where a chain that does not start at the genesis starts, RLP [number, parent_hash, parent_td]
// (db::Anchor); absent for a chain from the genesis.
inline constexpr std::string_view kAnchorKey = "headerd-anchor";
inline constexpr uint64_t kSchemaVersion = 1;

using HeaderKey = std::array<uint8_t, 1 + 8 + 32>;
using CanonicalKey = std::array<uint8_t, 1 + 8 + 1>;
using NumberKey = std::array<uint8_t, 1 + 32>;
using SkeletonKey = std::array<uint8_t, 1 + 8>;

inline HeaderKey header_key(uint64_t number, const Hash32& hash) noexcept {
    HeaderKey k;
    k[0] = kHeaderPrefix;
    store_be64(k.data() + 1, number);
    std::copy(hash.begin(), hash.end(), k.begin() + 9);
    return k;
}

inline CanonicalKey canonical_key(uint64_t number) noexcept {
    CanonicalKey k;
    k[0] = kHeaderPrefix;
    store_be64(k.data() + 1, number);
    k[9] = kCanonicalSuffix;
    return k;
}

inline NumberKey number_key(const Hash32& hash) noexcept {
    NumberKey k;
    k[0] = kHeaderNumberPrefix;
    std::copy(hash.begin(), hash.end(), k.begin() + 1);
    return k;
}

inline SkeletonKey skeleton_key(uint64_t number) noexcept {
    SkeletonKey k;
    k[0] = kSkeletonHeaderPrefix;
    store_be64(k.data() + 1, number);
    return k;
}

}  // namespace headerd::db::schema
