#pragma once

// Fork identifier (EIP-2124): a CRC32 over the genesis hash and every passed fork, plus the next
// scheduled fork. Sent in the eth Status message and checked before a peer is accepted.

#include <array>
#include <cstdint>
#include <system_error>
#include <type_traits>

#include "core/bytes.hpp"
#include "core/chain_config.hpp"
#include "core/result.hpp"

namespace headerd {

struct ForkId {
    std::array<uint8_t, 4> hash{};  // big-endian CRC32
    uint64_t next{0};               // next fork block or time, 0 if none is scheduled
    bool operator==(const ForkId&) const = default;
};

// Block forks are compared with head_number, time forks with head_time. Fork lists are taken as
// geth gathers them: a fork at block 0, at or before the genesis time, or not above the previous
// one of its kind counts nothing.
ForkId compute_fork_id(const ChainConfig& c, uint64_t head_number, uint64_t head_time) noexcept;

enum class ForkIdError {
    kRemoteStale = 1,           // remote is on a past fork of ours and does not know the next one
    kLocalIncompatibleOrStale,  // remote is on another chain, or knows a fork we passed without
};

const std::error_category& forkid_category() noexcept;
std::error_code make_error_code(ForkIdError e) noexcept;

// EIP-2124 filter (geth newFilter), block forks against head number, time forks against head time.
Result<void> validate_fork_id(const ChainConfig& c, uint64_t head_number, uint64_t head_time,
                              const ForkId& remote) noexcept;

// [hash (4-byte string), next (integer)]
void encode(Bytes& out, const ForkId& id);
// Consumes one [hash4, next] list from the front of `in`; rlp::DecodeError on failure.
Result<ForkId> decode_fork_id(ByteView& in) noexcept;

}  // namespace headerd

template <>
struct std::is_error_code_enum<headerd::ForkIdError> : std::true_type {};
