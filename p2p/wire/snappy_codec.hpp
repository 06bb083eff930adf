#pragma once

// Snappy block format for devp2p message payloads (p2p version >= 5: every message after Hello,
// msg-id excluded). Output goes into a caller-owned buffer that only ever grows, so a per-connection
// buffer reaches zero allocations in steady state; the result is a view into it.

#include <cstddef>
#include <cstdint>
#include <system_error>
#include <type_traits>

#include "core/bytes.hpp"
#include "core/result.hpp"

namespace headerd::p2p {

// A declared uncompressed length above this is refused before anything is inflated: a 20-byte
// snappy header can otherwise ask for gigabytes (silkworm uses the same limit).
inline constexpr size_t kMaxUncompressedSize = size_t{16} << 20;
// geth refuses to read (and to send) a payload whose uncompressed size exceeds 2^24 - 1.
inline constexpr size_t kMaxSendSize = (size_t{1} << 24) - 1;

enum class SnappyError {
    kTooLarge = 1,  // declared uncompressed length above the limit
    kCorrupt,       // bad length header or bad compressed data
    kSendTooLarge,  // payload to compress above kMaxSendSize
};

const std::error_category& snappy_category() noexcept;
std::error_code make_error_code(SnappyError e) noexcept;

// The length the compressed block declares (its varint header); reads nothing else.
Result<size_t> snappy_uncompressed_length(ByteView compressed) noexcept;

// Compresses `in` into `buf` (resized up when too small, never down) and returns the compressed
// bytes, which start at buf.data(). kSendTooLarge above kMaxSendSize.
Result<ByteView> snappy_compress(ByteView in, Bytes& buf);

// Inflates `compressed` into `buf` (resized up when too small, never down) and returns the
// uncompressed bytes, which start at buf.data(). The declared length is checked against
// max_size before buf is touched.
Result<ByteView> snappy_decompress(ByteView compressed, Bytes& buf, size_t max_size = kMaxUncompressedSize) noexcept;

}  // namespace headerd::p2p

template <>
struct std::is_error_code_enum<headerd::p2p::SnappyError> : std::true_type {};
