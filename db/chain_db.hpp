#pragma once

// ChainDb: the one read/write facade over LevelDB (recent headers) and the ancient freezer (old
// headers). Blocks [0, ancient_items) live in the freezer, [ancient_items, head] in LevelDB.
// On-disk formats: docs/db_schema.md and docs/ancient_format.md.
//
// Thread-safety: every const member may be called from any number of threads at once; append()
// and freeze() are serialised against each other by the caller (one writer) and against readers
// internally, so a reader never sees a range with a hole in it.

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/bytes.hpp"
#include "core/chain_config.hpp"
#include "core/header_source.hpp"
#include "core/item_buffer.hpp"
#include "core/result.hpp"
#include "core/uint256.hpp"

namespace headerd::ancient {
class FileSystem;
}

namespace headerd::db {

// The reading side's types are the server's (core/header_source.hpp), here under their db names.
using headerd::Head;
using headerd::kStoreCount;
using headerd::Order;
using headerd::ReadObserver;
using headerd::Store;

struct ChainDbOptions {
    bool read_only{false};
    bool create_if_missing{false};
    // Largest ancient data file; tests shrink it to exercise rollover.
    uint64_t ancient_max_file_size{2'000'000'000};
    // Filesystem used for the ancient store; nullptr = the real one. LevelDB uses its own Env.
    ancient::FileSystem* fs{nullptr};
    size_t leveldb_cache_bytes{32u << 20};
};

// A header that extends the chain, already checked by the caller (see db/import.hpp).
struct NewHeader {
    ByteView rlp;
    Hash32 hash{};
    uint64_t number{0};
    U256 total_difficulty{0};
    uint64_t timestamp{0};
};

// The start of a chain that does not begin at the genesis: a history node that holds later epochs
// only (docs/history.md, "Later epochs without the earlier ones"). `number` is the lowest block
// held; its header must link to `parent_hash`, and the chain's total difficulty counts on from
// `parent_td`. Both come from outside the chain (the importer takes them from an epoch whose
// accumulator root the operator vouches for); nothing below `number` is held or served.
struct Anchor {
    uint64_t number{0};
    Hash32 parent_hash{};
    U256 parent_td{0};
    bool operator==(const Anchor&) const = default;
};

// The skeleton of a sync (docs/sync.md): headers verified downwards from a trusted head, by hash
// links only, that do not join the canonical chain yet. Blocks [tail, head] are stored, none of
// them canonical or served; the next header down must hash to tail_parent.
struct Skeleton {
    uint64_t head{0};
    Hash32 head_hash{};
    uint64_t tail{0};
    Hash32 tail_parent{};
    bool operator==(const Skeleton&) const = default;
};

// One verified skeleton header: its RLP, its hash (keccak of the RLP) and number.
struct SkeletonHeader {
    ByteView rlp;
    Hash32 hash{};
    uint64_t number{0};
};

// Where a skeleton meets the canonical chain.
struct SkeletonLink {
    // Whether the skeleton's tail links: it is block 0 with the network's genesis hash, or the
    // canonical header below it is its parent.
    bool linked{false};
    // Canonical headers above the link point that linking replaces (a reorg of the unfrozen tip).
    uint64_t replaced{0};
};

struct LinkOptions {
    uint64_t batch{10'000};  // headers moved per synced LevelDB batch
    std::function<void(uint64_t done, uint64_t total)> on_progress;
};

struct StoreStats {
    uint64_t ancient_items{0};
    uint64_t kv_headers{0};
    uint64_t ancient_bytes{0};
    uint64_t leveldb_bytes{0};
};

// Steps of one freeze batch, reported to FreezeOptions::on_step; tests use it to stop ("crash")
// between steps and check that reopening finds a consistent database.
enum class FreezeStep { kAppended, kSynced, kDeleted };

struct FreezeOptions {
    uint64_t keep{90'000};
    uint64_t batch{30'000};
    // Called after each step of each batch; returning false stops freezing at that point as if the
    // process had died (the database is left as it is on disk).
    std::function<bool(FreezeStep step, uint64_t ancient_items)> on_step;
    std::function<void(uint64_t done, uint64_t total)> on_progress;
};

class ChainDb final : public HeaderSource {
  public:
    // Opens DATADIR/chaindata (LevelDB) and DATADIR/chaindata/ancient/chain (freezer), repairs the
    // freezer, and checks the two stores join without a gap.
    static Outcome<std::unique_ptr<ChainDb>> open(const std::string& datadir, const ChainDbOptions& options = {});
    ~ChainDb();
    ChainDb(const ChainDb&) = delete;
    ChainDb& operator=(const ChainDb&) = delete;

    const std::string& datadir() const noexcept;
    // nullptr while the database holds no chain config (a fresh datadir).
    const ChainConfig* config() const noexcept override;
    // Stores the chain config of a fresh database. On a database that has one already, succeeds only
    // if it is the same network (name, network id, genesis), else the error names both.
    Outcome<void> set_config(const ChainConfig& config);
    std::optional<Head> head() const override;
    uint64_t ancient_items() const noexcept override;
    // Raised by a reorg (skeleton_link replacing canonical headers) and by repair_header.
    uint64_t generation() const noexcept override;
    // Observer of header_range's store reads; nullptr (the default) turns observing off, and with it
    // the clock reads. Set before readers start. REQUIRES: observer outlives this.
    void set_read_observer(ReadObserver* observer) noexcept;

    // Appends headers that extend the head (the first one is the genesis on an empty database) in one
    // atomic, synced LevelDB batch. REQUIRES: numbers consecutive from head+1, hashes and total
    // difficulties correct (the importer checks them; this checks numbers and the parent link only).
    // `anchor`, given only to an empty database, starts the chain at anchor->number instead of the
    // genesis, stored in the same batch; such a chain stays in LevelDB (freeze() leaves it) and
    // is never extended downwards.
    Outcome<void> append(std::span<const NewHeader> headers, const std::optional<Anchor>& anchor = std::nullopt);
    // The anchor of a chain that does not start at the genesis; nullopt for one that does.
    std::optional<Anchor> anchor() const;
    // The lowest block held: 0, or the anchor's number.
    uint64_t first_block() const;

    // HeaderSource's reads (core/header_source.hpp). The range reads make no hash->number lookups
    // and decode nothing beyond the parent hash; their errors name the block number and store.
    Outcome<void> append_header_range(uint64_t from, uint64_t count, Order order, ItemBuffer& out,
                                      size_t max_bytes = std::numeric_limits<size_t>::max()) const override;

    Outcome<std::optional<uint64_t>> number_by_hash(const Hash32& hash) const override;
    Outcome<std::optional<Hash32>> canonical_hash(uint64_t number) const override;
    // Freezer runs in one read of its hashes table; LevelDB's one by one.
    Outcome<void> canonical_hashes(uint64_t from, uint64_t count, std::vector<Hash32>& out) const override;
    Outcome<bool> header_by_hash(const Hash32& hash, Bytes& out) const override;

    // Moves headers older than head - keep into the freezer, batch by batch: append, fsync, then
    // delete from LevelDB (the "H"+hash entries stay). Returns the new ancient_items. An anchored
    // chain is left in LevelDB (the freezer's items are numbered from the genesis): returns 0.
    Outcome<uint64_t> freeze(const FreezeOptions& options);

    StoreStats stats() const;

    // What LevelDB holds in memory: blocks in its block cache (at most leveldb_cache_bytes; blocks
    // of table files compactions have deleted stay until newer blocks push them out, so a node
    // that compacts fills it to its capacity in time) and its memtables. Thread-safe.
    struct MemoryUse {
        uint64_t block_cache_bytes{0};
        uint64_t block_cache_capacity{0};
        uint64_t memtable_bytes{0};
    };
    MemoryUse memory_use() const;

    // --- The skeleton of a sync (db/skeleton.cpp; docs/sync.md) ---
    std::optional<Skeleton> skeleton() const;
    // Starts a skeleton at a trusted head header, replacing any skeleton there was (its headers are
    // deleted). One synced batch. REQUIRES: head.hash is the keccak of head.rlp.
    Outcome<void> skeleton_begin(const SkeletonHeader& head);
    // Stores headers below the tail: descending numbers from tail - 1, the first hashing to
    // tail_parent, each the parent of the one before (checked here). One LevelDB batch, fsynced when
    // `durable`; otherwise it survives the process being killed (it is in the OS's page cache) but
    // not a power cut, which loses a suffix of such writes, never a part of one: the skeleton
    // stays consistent and a rerun fetches the lost headers again.
    Outcome<void> skeleton_extend(std::span<const SkeletonHeader> headers, bool durable = true);
    // Whether the tail links to the canonical chain (or is the genesis), and what linking would
    // replace. Reads several values under separate locks: call it from the writer's thread. Fails for a tail that links
    // below the freezer's head (the freezer is never rewritten) and for a genesis that is not the network's.
    Outcome<SkeletonLink> skeleton_link_point() const;
    // Moves a linked skeleton into the canonical chain, lowest first, in synced batches; each batch
    // also moves the tail up, so an interrupted move resumes where it stopped. Replaced canonical
    // headers stay stored as side-chain headers. Readers see the old head or a longer prefix of the
    // new chain, never a mix. Returns the new head.
    Outcome<Head> skeleton_link(const LinkOptions& options = {});
    // Deletes the skeleton and its headers.
    Outcome<void> skeleton_drop();

    // --- Damage: stored headers that rotted (db/scrub.cpp; docs/operations.md, "Bit rot") ---
    // A read that meets a damaged header (a freezer checksum or a LevelDB block checksum that fails,
    // bytes that do not decode or link) fails with a kCorrupt error and marks the block damaged.
    // header_range then refuses every range that holds a damaged block without reading it, until
    // repair_header (or a scrub that finds the block sound) clears the mark.
    std::vector<uint64_t> damaged_blocks() const;  // ascending
    void mark_damaged(uint64_t block) const;
    // Checks blocks top, top-1, ... down to top-count+1 (or 0) against the chain's hash links: each
    // header must hash to `expect` (for the head: the stored head hash) and its parent hash is what
    // the block below must hash to. A header that cannot be read or does not match is marked
    // damaged and the walk goes on from the stored canonical hash of the block below; one that
    // matches loses any mark it had. Reads here ignore the marks.
    struct ScrubStep {
        uint64_t checked{0};
        std::vector<uint64_t> damaged;      // found in this step, descending
        std::optional<Hash32> next_expect;  // what block top-checked must hash to, when known
    };
    Outcome<ScrubStep> scrub(uint64_t top, uint64_t count, std::optional<Hash32> expect);
    // Reads every live LevelDB table file straight from disk (not through the block cache, which
    // may hold a good copy of a block that rotted on disk since) with block checksums checked. In a
    // damaged table, the recent blocks whose keys it lacks are marked damaged. Returns the damaged
    // files' names (empty: all sound). `after_file`, when set, is called with the size of each file
    // read but the last (the caller paces the reads with it); returning false stops the scrub there.
    Outcome<std::vector<std::string>> scrub_leveldb_files(const std::function<bool(uint64_t bytes)>& after_file = {});
    // What a repaired header of block `number` must hash to: the parent hash in block number+1's
    // stored header (the head hash for the head), checked itself against the block above when that
    // one is damaged too; nullopt if nothing above can vouch for it.
    Outcome<std::optional<Hash32>> expected_hash(uint64_t number) const;
    // Writes the true header of a damaged block back: it must hash to expected_hash(number) and its
    // parent hash must be the hash of block number-1 (when that block is sound). The freezer's copy
    // is rewritten in place, LevelDB's in one synced batch; then the mark is cleared. An error says
    // which check failed and writes nothing.
    Outcome<void> repair_header(uint64_t number, ByteView rlp);
    // LevelDB cannot rewrite a table whose block checksum fails (its compactions stop on it), so a
    // damaged LevelDB table is salvaged offline: LevelDB's RepairDB rewrites every table, keeping
    // each readable block and dropping the damaged ones (their keys are lost, and come back from a
    // peer through repair_header). REQUIRES: no process has the datadir open. Returns what it did.
    static Outcome<std::string> salvage_leveldb(const std::string& datadir);

  private:
    struct Impl;
    explicit ChainDb(std::unique_ptr<Impl> impl);
    // header_range's reads, with or without the damaged-block gate.
    Outcome<void> read_range(uint64_t from, uint64_t count, Order order, ItemBuffer& out, size_t max_bytes,
                             bool gate) const;
    std::unique_ptr<Impl> impl_;
};

// Reverses the order of items [first, out.size()) in place; a warm thread allocates nothing (the
// copy goes through per-thread scratch).
void reverse_items(ItemBuffer& out, size_t first);

}  // namespace headerd::db
