#pragma once

// EraStore: block bodies and receipt lists served from era1 files themselves, as geth serves
// pruned history from its era store: a directory of whole epochs, each file opened (memory-mapped,
// its block index read) when a block of it is first asked for and kept in a bounded LRU; no record
// is copied into another store. Files come in only through `headerd import --history`, which
// checks every body and receipt list against the datadir's headers first (db/import.hpp).
// Layout, trust and costs: docs/history.md.

#include <atomic>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/era1.hpp"
#include "core/header_source.hpp"
#include "core/history_source.hpp"
#include "db/mapped_file.hpp"

namespace headerd::db {

// Blocks per era1 file (the accumulator's list limit); epoch e holds blocks [e * 8192, e * 8192 + count).
inline constexpr uint64_t kEpochBlocks = era1::kMaxBlocks;

// The name geth and the era1 mirrors give an epoch's file: <network>-<epoch, 5 digits>-<the first
// 4 bytes of its accumulator root, hex>.era1, e.g. mainnet-00000-5ec1ffb8.era1.
std::string era1_file_name(std::string_view network, uint64_t epoch, const Hash32& accumulator_root);

struct EraStoreOptions {
    size_t max_open_files{64};  // geth's era store keeps 64
};

class EraStore final : public HistorySource {
  public:
    // Lists DIR's era1 files (DIR is created when missing): each file's epoch from its name and its
    // block count from its last 8 bytes (the BlockIndex's count). Nothing else is read until a
    // block is asked for. Files whose names do not parse are refused with their name.
    static Outcome<std::unique_ptr<EraStore>> open(const std::string& dir, const EraStoreOptions& options = {});

    std::optional<BlockRange> range() const override;
    Outcome<bool> append_body(uint64_t number, Bytes& out) const override;
    Outcome<bool> append_receipts(uint64_t number, Bytes& out) const override;

    // Puts the file at `path` into the store under era1_file_name(network, epoch, root): a hard link
    // (no byte copied; `path` stays) or, across file systems, a copy written to a temporary name,
    // synced and renamed. An epoch already held is kept as it is. The caller has verified the file
    // (import_history).
    Outcome<void> add(const std::string& path, std::string_view network, uint64_t epoch, const Hash32& root,
                      uint64_t count);

    // The scrubber's check of the held blocks among [first, first + count): each body and receipt
    // list is read (its CRC checked) and checked against the canonical header of its number in
    // `headers` (transactions root, ommers hash, withdrawals root, receipts root), as the import
    // checked it. A block that fails is marked damaged, and its body and receipts are refused from
    // then on (as an unreadable record is: a reply ends before it) until a later scrub finds it
    // sound. Returns the damaged blocks found, ascending; an error only when a header cannot be read.
    Outcome<std::vector<uint64_t>> scrub(const HeaderSource& headers, uint64_t first, uint64_t count);
    // Blocks marked damaged, ascending, and what the scrub found wrong with one ("" if sound).
    std::vector<uint64_t> damaged_blocks() const;
    std::string damage(uint64_t number) const;

    struct EpochFile {
        std::string path;
        uint64_t count{0};  // blocks in the file
    };
    // Held epochs by number.
    const std::map<uint64_t, EpochFile>& epochs() const noexcept { return epochs_; }
    const std::string& dir() const noexcept { return dir_; }
    size_t open_files() const;

  private:
    // Only the block index is read when a file is opened: with 1,900 files and 64 open, a request
    // for an epoch not open costs a mapping and the index's pages, not a walk of 8192 tuples
    // (docs/performance.md, "History").
    struct Open {
        MappedFile file;
        era1::IndexView archive;
    };
    EraStore(std::string dir, const EraStoreOptions& options) : dir_(std::move(dir)), options_(options) {}

    // The opened archive holding `number`; nullptr (no error) when no held epoch has it.
    Outcome<std::shared_ptr<const Open>> archive_of(uint64_t number) const;
    Outcome<bool> read_into(uint64_t number, Bytes& out, bool receipts) const;

    std::string dir_;
    EraStoreOptions options_;
    std::map<uint64_t, EpochFile> epochs_;  // changed only by add(), before serving starts

    mutable std::mutex damaged_mu_;            // guards damaged_
    std::map<uint64_t, std::string> damaged_;  // each damaged block, and what the scrub found wrong
    std::atomic<bool> any_damaged_{false};     // readers skip the lock while nothing is damaged

    mutable std::mutex mu_;                                                    // guards the LRU below
    mutable std::list<std::pair<uint64_t, std::shared_ptr<const Open>>> lru_;  // most recent first
    mutable std::unordered_map<uint64_t, decltype(lru_)::iterator> by_epoch_;
};

}  // namespace headerd::db
