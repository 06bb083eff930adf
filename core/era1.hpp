#pragma once

// Reader of .era1 archives (e2store files holding 8192 pre-merge blocks each), as written by go-ethereum's
// `geth export-history` and served by the era1 mirrors: headers and total difficulties for import, bodies and receipts
// for serving history (docs/history.md). Byte layout and checks: docs/era1_format.md.
//
// core/ does no I/O: the caller maps or reads the file and hands its bytes over as a ByteView. Everything here is
// noexcept and returns a Result; a malformed archive yields an Era1Error, never a crash or an out-of-bounds read.

#include <cstddef>
#include <cstdint>
#include <span>
#include <system_error>
#include <type_traits>
#include <vector>

#include "core/bytes.hpp"
#include "core/result.hpp"
#include "core/uint256.hpp"

namespace headerd::era1 {

enum class Era1Error {
    kTruncatedRecord = 1,     // a record header or its data runs past the end of the file (or of its region)
    kBadRecordHeader,         // the two reserved bytes of a record header are not zero
    kBadVersion,              // the file does not start with an empty Version record
    kMissingIndex,            // the records end cleanly but the last one is not a BlockIndex (file cut short)
    kBadIndex,                // BlockIndex inconsistent: length vs count, count 0 or above 8192, numbers overflow
    kBadIndexOffset,          // an index offset is outside the block area or not at its block's tuple
    kUnexpectedRecord,        // a block tuple is not CompressedHeader, CompressedBody, CompressedReceipts, TD
    kBadTotalDifficulty,      // a TotalDifficulty record is not 32 bytes, or TD decreases from one block to the next
    kBadAccumulatorRecord,    // no 32-byte Accumulator record directly before the BlockIndex
    kOutOfRange,              // block position >= count()
    kBadHeaderRlp,            // a decompressed header is not exactly one RLP list with a number field
    kHeaderNumberMismatch,    // a header's number field differs from start_number() + position
    kCountMismatch,           // hashes and total difficulties (or archive entries) differ in number
    kTooManyRecords,          // more than 8192 header records for one accumulator
    kAccumulatorMismatch,     // the recomputed accumulator root differs from the Accumulator record
    kSnappyBadStreamId,       // snappy framed stream without (or with a malformed) stream identifier chunk
    kSnappyBadChunk,          // snappy chunk header or body truncated, or a data chunk shorter than its checksum
    kSnappyUnskippableChunk,  // snappy chunk of a reserved unskippable type (0x02-0x7f)
    kSnappyTooLarge,          // snappy chunk that holds more than 65536 uncompressed bytes
    kSnappyCorrupt,           // snappy block payload that does not decompress
    kSnappyBadCrc,            // masked CRC32C of a chunk's uncompressed data does not match
    kBadBodyRlp,              // a decompressed body is not exactly one RLP list
    kBadReceiptsRlp,          // a decompressed receipt list is not exactly one RLP list
};

const std::error_category& era1_category() noexcept;
std::error_code make_error_code(Era1Error e) noexcept;

// e2store record types used by era1.
inline constexpr uint16_t kTypeVersion = 0x3265;
inline constexpr uint16_t kTypeCompressedHeader = 0x03;
inline constexpr uint16_t kTypeCompressedBody = 0x04;
inline constexpr uint16_t kTypeCompressedReceipts = 0x05;
inline constexpr uint16_t kTypeTotalDifficulty = 0x06;
inline constexpr uint16_t kTypeAccumulator = 0x07;
inline constexpr uint16_t kTypeBlockIndex = 0x3266;

inline constexpr size_t kRecordHeaderSize = 8;
// Blocks per archive, fixed by the accumulator's SSZ list limit.
inline constexpr size_t kMaxBlocks = 8192;

struct Entry {
    uint64_t number{0};
    ByteView compressed_header;  // data of the CompressedHeader record: a snappy framed stream
    U256 total_difficulty;
    ByteView compressed_body;      // CompressedBody: snappy framed rlp([transactions, uncles])
    ByteView compressed_receipts;  // CompressedReceipts: snappy framed rlp([receipt, ...]), the consensus form
};

// A validated view of one archive. Immutable after parse(), so const members may be called from several threads at
// once (each with its own `out` buffer).
// REQUIRES: the bytes given to parse() outlive the Archive (entries point into them).
class Archive {
  public:
    // Checks the Version record, locates the BlockIndex from the end of the file, validates it (count, offsets inside
    // the block area, each offset at its block's tuple) and the record types of every tuple, and collects each block's
    // compressed header and total difficulty. Nothing is decompressed.
    static Result<Archive> parse(ByteView file) noexcept;

    uint64_t start_number() const noexcept { return start_; }
    uint64_t count() const noexcept { return entries_.size(); }
    // As stored in the Accumulator record; verify_accumulator() checks it against the content.
    const Hash32& accumulator_root() const noexcept { return root_; }
    std::span<const Entry> entries() const noexcept { return entries_; }

    // Decompresses the header of block start_number() + i into `out` (cleared first, capacity reused) and returns a
    // view of its RLP, checked to be one list whose number field is start_number() + i. On error `out` holds
    // unspecified bytes.
    Result<ByteView> header(size_t i, Bytes& out) const noexcept;

    // Decompress the body (rlp([transactions, uncles])) or the receipt list of block start_number() + i into `out`
    // (cleared first) and return a view of it, checked to be exactly one RLP list; its content is checked against the
    // header by core/block_body.hpp.
    Result<ByteView> body(size_t i, Bytes& out) const noexcept;
    Result<ByteView> receipts(size_t i, Bytes& out) const noexcept;

    // REQUIRES: i < count().
    const U256& total_difficulty(size_t i) const noexcept { return entries_[i].total_difficulty; }

  private:
    Archive() = default;

    uint64_t start_{0};
    Hash32 root_{};
    std::vector<Entry> entries_;
};

namespace detail {
// Where an archive's parts lie, from its Version record and the BlockIndex at its end.
struct Layout {
    size_t blocks_begin{0};
    size_t index_pos{0};
    ByteView index;  // the BlockIndex record's data
    size_t accumulator_pos{0};
    uint64_t start{0};
    uint64_t count{0};
    Hash32 root{};
};
}  // namespace detail

// An archive's block index alone, for a reader that holds many archives and reads a few blocks of
// each (db::EraStore): open() checks the Version record, the BlockIndex at the end of the file and
// the Accumulator record before it, touching only those pages, not the 8192 tuples parse() walks.
// Each block's tuple is located through the index, and its record types and bounds checked, when
// it is read. Immutable after open(); const members may be called from several threads at once.
// REQUIRES: the bytes given to open() outlive the view.
class IndexView {
  public:
    static Result<IndexView> open(ByteView file) noexcept;
    uint64_t start_number() const noexcept { return layout_.start; }
    uint64_t count() const noexcept { return layout_.count; }
    const Hash32& accumulator_root() const noexcept { return layout_.root; }
    // As Archive::body and Archive::receipts.
    Result<ByteView> body(size_t i, Bytes& out) const noexcept;
    Result<ByteView> receipts(size_t i, Bytes& out) const noexcept;

  private:
    IndexView() = default;
    Result<ByteView> item(size_t i, size_t record, Bytes& out, Era1Error bad) const noexcept;

    ByteView file_;
    detail::Layout layout_;
};

// SSZ hash_tree_root of List[HeaderRecord{block_hash: Bytes32, total_difficulty: uint256}, 8192] over the given
// records: the epoch accumulator root stored in era1 files (and in the portal network's history accumulator).
Result<Hash32> accumulator_root(std::span<const Hash32> hashes, std::span<const U256> tds) noexcept;

// Decompresses and hashes (keccak256) every header of the archive, then compares the recomputed accumulator root with
// the Accumulator record. Stops at the first error (CRC, RLP, number, mismatch).
Result<void> verify_accumulator(const Archive& archive) noexcept;
// Same check for a caller that already hashed the headers (an importer hashes them anyway): hashes[i] is the hash of
// header i.
Result<void> verify_accumulator(const Archive& archive, std::span<const Hash32> hashes) noexcept;

// Decodes a snappy *framed* stream (the format of github.com/google/snappy framing_format.txt) into `out`, cleared
// first. An empty input is an empty stream. Every data chunk's masked CRC32C is checked. On error `out` holds
// unspecified bytes.
Result<void> decode_snappy_frames(ByteView framed, Bytes& out) noexcept;

// CRC-32C (Castagnoli), and the masked form snappy framing stores, exposed for tests and writers.
uint32_t crc32c(ByteView data) noexcept;
uint32_t masked_crc32c(ByteView data) noexcept;

}  // namespace headerd::era1

template <>
struct std::is_error_code_enum<headerd::era1::Era1Error> : std::true_type {};
