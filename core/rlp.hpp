#pragma once

// Recursive Length Prefix, strict (canonical) decoding and append-only encoding.
//
// Encoders append to a caller-owned Bytes so a caller can reserve once (the length() functions
// give exact sizes); the pointer writers below are the one implementation of headers and
// integers, also for callers that build a prefix in place without allocating. Decoders consume
// from the front of a ByteView and never copy: returned views point into the input. Every
// non-canonical form is rejected with its own error code, as go-ethereum does, because peers and
// disk must agree on exactly one encoding per value.

#include <cstddef>
#include <cstdint>
#include <span>
#include <system_error>
#include <type_traits>
#include <vector>

#include "core/bytes.hpp"
#include "core/result.hpp"
#include "core/uint256.hpp"

namespace headerd::rlp {

enum class DecodeError {
    kInputTooShort = 1,       // header or payload runs past the end of the input
    kTrailingBytes,           // bytes left after the one item that was expected
    kLeadingZeroInLength,     // long-form length with a leading zero byte
    kNonCanonicalSize,        // long form used for a length below 56
    kNonCanonicalSingleByte,  // a single byte < 0x80 wrapped as a one-byte string
    kLeadingZeroInInteger,    // integer payload with a leading zero byte
    kIntegerOverflow,         // integer wider than the target type
    kLengthOverflow,          // declared length does not fit in size_t
    kUnexpectedList,          // a string was expected
    kUnexpectedString,        // a list was expected
    kUnexpectedLength,        // fixed-size string (hash, nonce, ...) of the wrong size
    kTooDeep,                 // nesting deeper than kMaxDepth
};

const std::error_category& decode_category() noexcept;
std::error_code make_error_code(DecodeError e) noexcept;

// Deepest nesting validate() accepts; headers and eth messages need fewer than 8 levels.
inline constexpr size_t kMaxDepth = 64;

struct Header {
    bool list{false};
    size_t payload_length{0};
};

// ---- sizes -------------------------------------------------------------------------------------

// Bytes of the header that prefixes a payload of this length (1, or 1 + length-of-length).
size_t header_length(size_t payload_length) noexcept;
size_t length(ByteView s) noexcept;
size_t length(uint64_t v) noexcept;
size_t length(const U256& v) noexcept;
inline size_t length_of_list(size_t payload_length) noexcept { return header_length(payload_length) + payload_length; }

// ---- encoding ----------------------------------------------------------------------------------

// Most bytes a header or a uint64 takes: one prefix byte and up to 8 big-endian bytes.
inline constexpr size_t kMaxHeaderLength = 9;

// Allocation-free writers: write at `p`, which must have room for header_length(h.payload_length)
// or length(v) bytes (never more than kMaxHeaderLength), and return the end of what was written.
// encode_header and encode(uint64_t) are built on them, so every RLP header and integer headerd
// writes comes from this one place.
uint8_t* write_header(uint8_t* p, Header h) noexcept;
inline uint8_t* write_list_header(uint8_t* p, size_t payload_length) noexcept {
    return write_header(p, {true, payload_length});
}
uint8_t* write_uint(uint8_t* p, uint64_t v) noexcept;

void encode_header(Bytes& out, Header h);
void encode(Bytes& out, ByteView s);
void encode(Bytes& out, uint64_t v);
void encode(Bytes& out, const U256& v);
inline void encode(Bytes& out, const Hash32& h) { encode(out, ByteView{h}); }
// Appends one list of `items`, each already encoded.
void encode_list(Bytes& out, std::span<const ByteView> items);

// ---- decoding ----------------------------------------------------------------------------------

// Reads a header, checks it is canonical and that the payload fits in what follows it.
// On success `in` starts at the payload.
Result<Header> decode_header(ByteView& in) noexcept;
// A string item; returns its payload.
Result<ByteView> decode_string(ByteView& in) noexcept;
// A list item; returns its payload (the encoded items inside).
Result<ByteView> decode_list(ByteView& in) noexcept;
Result<uint64_t> decode_uint64(ByteView& in) noexcept;
Result<U256> decode_u256(ByteView& in) noexcept;
// A string of exactly 32 bytes.
Result<Hash32> decode_hash(ByteView& in) noexcept;
// The next whole item (header and payload) as encoded, without looking inside it.
Result<ByteView> next_item(ByteView& in) noexcept;
// The items of `list`, which must be exactly one list: each whole item (header and payload), in
// order, not looked inside.
Result<std::vector<ByteView>> list_items(ByteView list);
// Checks that `in` is exactly one item, canonical at every level, nested at most kMaxDepth.
Result<void> validate(ByteView in) noexcept;

}  // namespace headerd::rlp

template <>
struct std::is_error_code_enum<headerd::rlp::DecodeError> : std::true_type {};
