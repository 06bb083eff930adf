#pragma once

// The chain freezer as headerd keeps it: go-ethereum's "headers" table (snappy per item) and
// "hashes" table (raw 32-byte hashes), item n of each being block n, plus headerd's own checksum
// file beside them ("headers.xxh3": 4 bytes per header, so that a read never returns a header whose
// bytes rotted on disk). Format: docs/ancient_format.md.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ancient/file_system.hpp"
#include "ancient/table.hpp"
#include "core/bytes.hpp"
#include "core/item_buffer.hpp"
#include "core/result.hpp"

namespace headerd::ancient {

inline constexpr const char* kHeadersTable = "headers";
inline constexpr const char* kHashesTable = "hashes";
inline constexpr const char* kChecksumFile = "headers.xxh3";
inline constexpr size_t kChecksumSize = 4;

// The checksum of one header as the checksum file keeps it: the low 32 bits of XXH3-64 of the
// decompressed header RLP.
uint32_t header_checksum(ByteView rlp) noexcept;

// Thread-safety and durability as for Table (table.hpp): writers need exclusive access; the const
// readers taking a ReadScratch may run concurrently with each other. Nothing appended is durable
// until sync() returns; a caller that deletes the same data elsewhere (db/ freezing headers out of
// LevelDB) must do so only after sync() succeeds.
class Freezer {
  public:
    struct Options {
        uint64_t max_file_size{kDefaultMaxFileSize};
        bool read_only{false};
    };

    // `dir` is the freezer directory itself (DATADIR/chaindata/ancient/chain). Opens or creates both
    // tables; a writable open repairs them and truncates the longer table to the shorter one, a
    // read-only open reads the shorter length. Tables whose tails disagree (one hides more items than
    // the other holds) are refused by every open, before either table is repaired: nothing written.
    static Outcome<std::unique_ptr<Freezer>> open(FileSystem& fs, std::string dir, Options opts);

    uint64_t items() const noexcept;  // next block number
    uint64_t tail() const noexcept;   // first retrievable block number

    // Appends blocks first_number .. first_number+n-1. On failure neither table grows.
    // REQUIRES: first_number == items(), header_rlps.size() == hashes.size().
    Outcome<void> append(uint64_t first_number, std::span<const ByteView> header_rlps, std::span<const Hash32> hashes);
    // Headers table, then hashes table; each in the order Table::sync documents.
    Outcome<void> sync();
    // Drops blocks [items, items()) from both tables. Durable when it returns.
    Outcome<void> truncate_head(uint64_t items);

    // Header RLP of blocks [start, start+count), as Table::read_range, each checked against its
    // checksum: a header that fails (or that does not decompress) ends the read with a kCorrupt error
    // naming its block, and `out` then holds only the headers before it.
    Outcome<void> read_headers(uint64_t start, uint64_t count, uint64_t max_bytes, ItemBuffer& out);
    Outcome<void> read_headers(uint64_t start, uint64_t count, uint64_t max_bytes, ItemBuffer& out,
                               ReadScratch& scratch) const;
    Outcome<Hash32> read_hash(uint64_t number);
    Outcome<Hash32> read_hash(uint64_t number, ReadScratch& scratch) const;
    // The hashes of blocks [start, start+count) appended to `out`, in one read of the hashes table.
    // REQUIRES: start+count <= items().
    Outcome<void> read_hashes(uint64_t start, uint64_t count, std::vector<Hash32>& out, ReadScratch& scratch) const;

    // Writes a repaired header over block `number`'s, in place (Table::rewrite_item), and its
    // checksum. REQUIRES: rlp is the block's true header (the caller checked its hash links).
    Outcome<void> rewrite_header(uint64_t number, ByteView rlp);
    // Blocks [0, checked_items()) have a checksum; reads of later blocks are not checked (a read-only
    // open of a freezer written without the checksum file; a writable open computes what is missing).
    uint64_t checked_items() const noexcept { return sums_items_; }

    uint64_t bytes_on_disk() const;  // both tables and the checksums, for inspect
    const Table& headers() const noexcept { return *headers_; }
    const Table& hashes() const noexcept { return *hashes_; }
    // What opening repaired, one line each (the tables' repairs, then the freezer's own).
    std::vector<std::string> repairs() const;

  private:
    Freezer(std::unique_ptr<Table> headers, std::unique_ptr<Table> hashes);
    // The checksum file brought to the headers table's length: a partial entry or entries past the
    // table are cut, missing ones computed from the stored headers. Planned (every header read and
    // its checksum computed) before open() writes anything, then applied.
    struct ChecksumPlan {
        bool read_only{false};
        bool existed{false};
        uint64_t size{0};  // of the file as found
        uint64_t have{0};  // whole checksums kept
        Bytes missing;     // those of blocks [have, items())
    };
    Outcome<ChecksumPlan> plan_checksums(FileSystem& fs, const std::string& dir, bool read_only);
    Outcome<void> apply_checksums(FileSystem& fs, const std::string& dir, const ChecksumPlan& plan);
    Outcome<void> write_checksums(uint64_t first_number, std::span<const ByteView> header_rlps);
    // Checks items [before, out.size()) of `out`, blocks start.., against their checksums.
    Outcome<void> check(uint64_t start, size_t before, ItemBuffer& out, ReadScratch& scratch) const;

    std::unique_ptr<Table> headers_;
    std::unique_ptr<Table> hashes_;
    std::vector<std::string> repairs_;
    std::unique_ptr<File> sums_;  // null: no checksum file (read-only open of a freezer without one)
    uint64_t sums_items_{0};
    Bytes sums_write_;
    std::vector<ByteView> hash_views_;  // reused by append
    ReadScratch scratch_;
};

}  // namespace headerd::ancient
