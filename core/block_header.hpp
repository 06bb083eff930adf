#pragma once

// Ethereum block headers in all five layouts mainnet has used (15, 16, 17, 20 and 21 fields).
// Field order, types and the fork behind each layout: docs/header_layouts.md.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <system_error>
#include <type_traits>

#include "core/bytes.hpp"
#include "core/result.hpp"
#include "core/uint256.hpp"

namespace headerd {

using Address = std::array<uint8_t, 20>;
using Bloom = std::array<uint8_t, 256>;
using Nonce = std::array<uint8_t, 8>;

struct BlockHeader {
    Hash32 parent_hash{};
    Hash32 ommers_hash{};
    Address coinbase{};
    Hash32 state_root{};
    Hash32 transactions_root{};
    Hash32 receipts_root{};
    Bloom logs_bloom{};
    U256 difficulty{0};
    uint64_t number{0};
    uint64_t gas_limit{0};
    uint64_t gas_used{0};
    uint64_t timestamp{0};
    Bytes extra_data;
    Hash32 mix_hash{};
    Nonce nonce{};
    std::optional<U256> base_fee_per_gas;    // London (16 fields)
    std::optional<Hash32> withdrawals_root;  // Shanghai (17)
    std::optional<uint64_t> blob_gas_used;   // Cancun (20: + excess_blob_gas, parent_beacon_block_root)
    std::optional<uint64_t> excess_blob_gas;
    std::optional<Hash32> parent_beacon_block_root;
    std::optional<Hash32> requests_hash;  // Prague (21)

    // The layout this header encodes as: 15, 16, 17, 20 or 21, chosen by the latest optional field
    // that is set (any of the three Cancun fields selects 20). A decoded header always has exactly
    // the optional fields of its layout; for a hand-built one, unset optional fields below the
    // chosen layout encode as zero.
    size_t field_count() const noexcept;
};

// Why a header failed to decode. RLP-level problems inside the header are reported with the
// header codes below (not the rlp category), so callers test one category.
enum class HeaderError {
    kTruncated = 1,       // the header list or one of its fields runs past the end of the input
    kTrailingBytes,       // bytes after the header list
    kNotAList,            // the input is an RLP string, not a list
    kTooFewFields,        // fewer than 15 fields
    kInvalidFieldCount,   // 18 or 19 fields: no fork has that layout
    kTooManyFields,       // more than 21 fields
    kWrongFieldSize,      // a hash, address, bloom or nonce of the wrong length
    kLeadingZero,         // an integer field with a leading zero byte
    kIntegerOverflow,     // an integer wider than its field (8 bytes, or 32 for difficulty/base fee)
    kUnexpectedList,      // a list where a string field goes
    kNonCanonicalLength,  // an RLP length in non-canonical form (long form below 56, wrapped single byte, ...)
};

const std::error_category& header_category() noexcept;
std::error_code make_error_code(HeaderError e) noexcept;

// Exactly one header list, nothing after it; the optional fields must form one of the allowed
// layouts (15/16/17/20/21 fields), anything else is an error. Integers are strict as in rlp.
Result<BlockHeader> decode_block_header(ByteView rlp) noexcept;

// Exact size of encode(h), so callers can reserve once.
size_t encoded_length(const BlockHeader& h) noexcept;
// Appends the header's RLP; byte-exact with the input decode_block_header read.
void encode(Bytes& out, const BlockHeader& h);

// keccak256 of the header RLP: the block hash.
Hash32 header_hash(ByteView header_rlp) noexcept;

// Fast field reads out of stored RLP without a full decode (used on the serving path and by the
// LevelDB parent-hash walk): parent hash is the first field, number the 9th. Checks the list
// header, that nothing follows the list, and the two fields it reads (and the item headers of the
// seven between them); it does not check the field count or the other fields.
struct HeaderPeek {
    Hash32 parent_hash;
    uint64_t number;
};
Result<HeaderPeek> peek_header(ByteView header_rlp) noexcept;

}  // namespace headerd

template <>
struct std::is_error_code_enum<headerd::HeaderError> : std::true_type {};
