#pragma once

// One freezer table in go-ethereum's format: an index file of 6-byte entries, numbered data files
// that items never straddle, and a small RLP meta file. See docs/ancient_format.md for every byte.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ancient/file_system.hpp"
#include "core/bytes.hpp"
#include "core/item_buffer.hpp"
#include "core/result.hpp"

namespace headerd::ancient {

// ---- format ------------------------------------------------------------------------------------

inline constexpr size_t kIndexEntrySize = 6;
inline constexpr uint64_t kMetaVersion = 2;        // what geth writes today: [version, tail, flush offset]
inline constexpr uint64_t kLegacyMetaVersion = 1;  // [version, tail]; read, then rewritten as version 2
inline constexpr uint64_t kDefaultMaxFileSize = 2'000'000'000;
inline constexpr uint32_t kMaxFileNumber = 0xffff;  // the index stores file numbers in 16 bits
inline constexpr uint64_t kNoByteLimit = UINT64_MAX;

// (file number, end offset of the item within that file). Entry 0 of an index is special: (first
// data file, number of items deleted from the front of the table).
struct IndexEntry {
    uint32_t file{0};  // 16 bits on disk
    uint32_t offset{0};

    static IndexEntry decode(const uint8_t* p) noexcept { return {load_be16(p), load_be32(p + 2)}; }
    // REQUIRES: file <= kMaxFileNumber.
    void encode(uint8_t* p) const noexcept {
        store_be16(p, static_cast<uint16_t>(file));
        store_be32(p + 2, offset);
    }
    bool operator==(const IndexEntry&) const = default;
};

struct TableMeta {
    uint64_t version{kMetaVersion};
    uint64_t virtual_tail{0};  // items hidden from the front (>= the items deleted per index entry 0)
    uint64_t flush_offset{0};  // index bytes known to be durable together with their data; 0 in version 1
};

// RLP list [version, virtual tail, flush offset], version forced to kMetaVersion as geth does.
Bytes encode_meta(const TableMeta& meta);
// Accepts version 2 (three integers) and version 1 (two). Bytes after the list are ignored: geth
// rewrites the meta in place without truncating, so a shorter new encoding leaves old bytes behind.
Outcome<TableMeta> decode_meta(ByteView in);

std::string index_file_name(std::string_view table, bool compressed);                // "headers.cidx"
std::string data_file_name(std::string_view table, uint32_t file, bool compressed);  // "headers.0000.cdat"
std::string meta_file_name(std::string_view table);                                  // "headers.meta"

// ---- table -------------------------------------------------------------------------------------

struct TableOptions {
    bool compressed{true};                        // snappy block format per item (.cidx/.cdat) or raw (.ridx/.rdat)
    uint64_t max_file_size{kDefaultMaxFileSize};  // 1 .. 2^32-1; an item larger than this gets a file alone
    bool read_only{false};
};

// Buffers one reader reuses across calls, so that a warm read allocates nothing.
struct ReadScratch {
    // Where one item lies: data file number and its byte range in that file.
    struct Span {
        uint32_t file{0};
        uint32_t begin{0};
        uint32_t end{0};
    };
    Bytes index;
    Bytes data;
    std::vector<Span> spans;  // of the items of one read_range call
    Bytes sums;               // the checksums of one Freezer::read_headers call
    ItemBuffer items;         // for single-item helpers such as Freezer::read_hash
};

// One freezer table.
//
// Thread-safety: not thread-safe. The const read_range (with a caller-owned ReadScratch) may be
// called from many threads at once, provided no thread runs a non-const member at the same time
// (callers guard writers with an exclusive lock and readers with a shared one).
//
// Durability: append() writes data, then index entries, straight to the files but does not fsync.
// sync() makes everything appended so far durable: data files, then the directory (new files), then
// the index, then the meta's flush offset. On open, index entries past the flush offset are
// discarded, so an item is either wholly present after a crash or not at all; appends that were
// never synced are lost at the next open even after a clean exit, unless the Table was destroyed
// (the destructor syncs). After a failed sync or an append whose rollback failed, the table refuses
// further writes ("needs reopen"); reopening repairs it.
class Table {
  public:
    // Opens or creates DIR/NAME.*, repairing what a crash or damage left (see repairs()). A read-only
    // open changes nothing on disk and reports damage as an error instead. A writable open decides
    // every repair before it writes anything, so one that fails on damage it cannot repair (a
    // missing data file before the head) leaves every file as it was.
    static Outcome<std::unique_ptr<Table>> open(FileSystem& fs, std::string dir, std::string name, TableOptions opts);
    // open() up to its first write: a writable table's repairs are decided (items(), tail() and
    // repairs() already describe the repaired table) but made only by apply_repairs(). Until then
    // nothing is written, not even by the destructor, and writes are refused. For opening tables
    // that must agree with each other, all of them checked before any is touched (Freezer::open).
    static Outcome<std::unique_ptr<Table>> open_unrepaired(FileSystem& fs, std::string dir, std::string name,
                                                           TableOptions opts);
    // Makes the repairs open_unrepaired() decided, durable as open() makes them (creating the
    // directory and files of a new table). Nothing to do for a read-only or already repaired table.
    // On failure the table needs a reopen.
    Outcome<void> apply_repairs();
    // Syncs (best effort, errors ignored) unless read-only or failed.
    ~Table();
    Table(const Table&) = delete;
    Table& operator=(const Table&) = delete;

    const std::string& name() const noexcept { return name_; }
    uint64_t items() const noexcept { return items_; }  // next item number (head)
    uint64_t tail() const noexcept { return hidden_; }  // first retrievable item

    // Appends items[i] as item number items()+i. Buffered: not durable until sync(). On failure the
    // table is rolled back to its previous length (or marked as needing a reopen if that fails too).
    Outcome<void> append(std::span<const ByteView> items);
    Outcome<void> sync();
    // Drops items [items, items()); no-op if items >= items(). Deletes data files past the new head.
    // Durable when it returns. REQUIRES: items >= tail().
    Outcome<void> truncate_head(uint64_t items);

    // Overwrites item `item` with `bytes` (compressed as append does), in place and synced. For
    // repairing an item whose data rotted: it succeeds only if the new stored bytes are exactly as
    // long as the index says the item is, so nothing else moves; otherwise an error names the item.
    // REQUIRES: tail() <= item < items().
    Outcome<void> rewrite_item(uint64_t item, ByteView bytes);

    // Appends items [start, start+count) to out (decompressed), stopping before the item that would
    // take the bytes appended by this call over max_bytes, but always appending at least one item
    // when count > 0. One read of count+1 index entries, then one read per data file touched.
    // REQUIRES: start >= tail(), start+count <= items() (else an Error naming table and range).
    Outcome<void> read_range(uint64_t start, uint64_t count, uint64_t max_bytes, ItemBuffer& out);
    Outcome<void> read_range(uint64_t start, uint64_t count, uint64_t max_bytes, ItemBuffer& out,
                             ReadScratch& scratch) const;

    // Index + meta + data files, as they stand (including appended but unsynced bytes).
    uint64_t bytes_on_disk() const noexcept;
    // One line for each thing open() repaired (or, read-only, tolerated), for the caller to log.
    const std::vector<std::string>& repairs() const noexcept { return repairs_; }
    // Set after a failure that left the files out of step with this object; writes then fail.
    bool needs_reopen() const noexcept { return failed_.has_value(); }

  private:
    Table(FileSystem& fs, std::string dir, std::string name, TableOptions opts);

    struct FileSpan;   // the index entries that point into one data file
    struct LoadState;  // what load()'s steps hand on to each other
    // Checks the table, reading only: the steps below, in order. A writable open decides its
    // repairs as it goes (each listed in repairs_, recorded in s for apply()), a read-only one fails
    // where a repair would be needed. On return the members describe the table as repaired.
    Outcome<void> plan(LoadState& s);
    // Makes the repairs plan() decided (writable opens only): creates the directory and the missing
    // index, meta and head data file, writes an empty index's entry 0, cuts the index and data files
    // back, removes the stray files, then make_repairs_durable().
    Outcome<void> apply(const LoadState& s);
    // On return: index_ and meta_ are open where the files exist; a missing one (writable only: a
    // read-only open fails) is left null with s.created set.
    Outcome<void> open_index_and_meta(LoadState& s);
    // On return: s.meta holds the decoded meta, or nullopt if it was missing, empty or undecodable;
    // s.rewrite_meta is set if it is not a version 2 meta (writable).
    Outcome<void> load_meta(LoadState& s);
    // On return: s.index_size is a whole number of entries and at least entry 0 (a partial entry
    // dropped, an empty index given entry 0); tail_file_ and deleted_ are read from entry 0;
    // s.index_on_disk is the index file's size as found.
    Outcome<void> trim_index_to_whole_entries(LoadState& s);
    // On return: no index entry lies past a version 2 meta's flush offset (unsynced appends are
    // dropped); s.rewrite_meta is set if the flush offset must change.
    Outcome<void> apply_flush_offset(LoadState& s);
    // On return: every entry obeys the index rules, and every data file holding items exists and is
    // at least as long as its last item says (the index cut back until both hold); s.spans and
    // s.files/s.file_sizes describe those files (null where a file holds no item).
    Outcome<void> cut_to_data_files(LoadState& s);
    // On return: head_file_ is set and open (a writable open leaves a missing one null for apply() to
    // create), every data file holding items, and the head, ends exactly where its last item ends in
    // sizes_ (s.truncated marks the files apply() must cut; a read-only open may leave an earlier file
    // longer), and files_, sizes_, head_bytes_, index_size_ and items_ describe the checked table.
    Outcome<void> settle_data_files(LoadState& s);
    // On return: deleted_ <= hidden_ <= items_ (s.rewrite_meta set if the meta's tail was moved).
    void settle_virtual_tail(LoadState& s);
    // On return: the repairs are durable, in the order sync() uses (truncated data files, directory,
    // index, then the meta with flush_offset_ = index_size_). Writable opens only.
    Outcome<void> make_repairs_durable(const LoadState& s);
    // Checks the order of index entries [1, size/6); sets valid_size to the bytes before the first bad
    // entry (and problem to why), and spans to the entries of each data file.
    Outcome<void> scan_index(uint64_t size, std::vector<FileSpan>& spans, uint64_t& valid_size, std::string& problem);
    Outcome<uint64_t> first_entry_past(const FileSpan& span, uint64_t file_size) const;
    Outcome<IndexEntry> read_entry(uint64_t position) const;
    // Lists the data files numbered outside tail_file_..head_file_ in s.stray (writable opens).
    Outcome<void> find_stray_files(LoadState& s);
    // Removes them, then fsyncs the directory if anything was created or removed.
    Outcome<void> remove_stray_files(const LoadState& s);
    Outcome<void> write_meta(uint64_t flush_offset);
    Outcome<void> roll_over();
    void rollback_append(uint32_t head_file, uint64_t head_bytes, uint64_t index_size);
    Error fail(Error e);  // marks the table as needing a reopen and passes the error on

    std::string path_of(const std::string& file_name) const { return dir_ + "/" + file_name; }
    std::string data_path(uint32_t file) const { return path_of(data_file_name(name_, file, opts_.compressed)); }
    Error error(std::string_view what) const;
    Error error_at(const std::string& path, uint64_t offset, std::string_view what) const;
    // An error_at of kind kCorrupt that names the damaged item.
    Error corrupt_at(const std::string& path, uint64_t offset, std::string_view what, uint64_t item) const;
    File* data_file(uint32_t file) const noexcept;

    FileSystem& fs_;
    std::string dir_;
    std::string name_;
    TableOptions opts_;

    std::unique_ptr<File> index_;
    std::unique_ptr<File> meta_;
    // files_[i] is data file tail_file_ + i (null if it holds no item and is not the head); sizes_ in step.
    std::vector<std::unique_ptr<File>> files_;
    std::vector<uint64_t> sizes_;

    uint32_t tail_file_{0};
    uint32_t head_file_{0};
    uint64_t head_bytes_{0};
    uint64_t deleted_{0};  // items removed from the front (index entry 0)
    uint64_t hidden_{0};   // virtual tail from the meta, >= deleted_
    uint64_t items_{0};
    uint64_t index_size_{0};
    uint64_t flush_offset_{0};
    uint64_t meta_size_{0};

    bool data_dirty_{false};
    uint32_t dirty_from_file_{0};  // first data file written since the last sync
    bool index_dirty_{false};
    bool dir_dirty_{false};
    std::optional<std::string> failed_;

    std::vector<std::string> repairs_;
    std::unique_ptr<LoadState> pending_;  // between open_unrepaired() and apply_repairs() (writable)
    ReadScratch scratch_;
    Bytes write_data_;
    Bytes write_index_;
    Bytes compressed_;
};

}  // namespace headerd::ancient
