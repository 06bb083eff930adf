#pragma once

// ChainDb's state, shared by the files that implement it (chain_db.cpp: the canonical chain and the
// freezer; skeleton.cpp: the skeleton of a sync). Not part of the public interface.

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/filter_policy.h>
#include <leveldb/write_batch.h>

#include "ancient/file_system.hpp"
#include "ancient/freezer.hpp"
#include "db/chain_db.hpp"
#include "db/schema.hpp"

namespace headerd::db::detail {

inline leveldb::Slice slice(ByteView b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }
template <size_t N>
inline leveldb::Slice slice(const std::array<uint8_t, N>& a) {
    return {reinterpret_cast<const char*>(a.data()), N};
}
inline leveldb::Slice slice(std::string_view s) { return {s.data(), s.size()}; }
inline ByteView view(const std::string& s) { return as_bytes(s); }

// Value scratch for LevelDB reads: one per thread, so a warm reader reuses its capacity.
inline std::string& read_scratch() {
    thread_local std::string s;
    return s;
}

}  // namespace headerd::db::detail

namespace headerd::db {

using detail::read_scratch;
using detail::slice;
using detail::view;

struct ChainDb::Impl {
    std::string datadir;
    std::string chaindata;
    std::unique_ptr<ancient::FileSystem> owned_fs;
    ancient::FileSystem* fs{nullptr};
    std::unique_ptr<leveldb::Cache> cache;
    size_t cache_capacity{0};  // ChainDbOptions::leveldb_cache_bytes
    std::unique_ptr<const leveldb::FilterPolicy> filter;
    std::unique_ptr<leveldb::DB> ldb;
    // Every LevelDB write goes through write(). After one fails (a full disk), LevelDB's log may end
    // in a partial record; a later write would land behind it, be lost, and keep the database from
    // opening again (paranoid checks). So once a write fails every later one fails too, naming the
    // first error, until the database is reopened.
    std::mutex write_mu;
    std::optional<std::string> write_failed;
    leveldb::Status write(const leveldb::WriteOptions& wo, leveldb::WriteBatch* batch) {
        {
            std::lock_guard lock(write_mu);
            if (write_failed)
                return leveldb::Status::IOError("an earlier write failed (restart to reopen)", *write_failed);
        }
        leveldb::Status s = ldb->Write(wo, batch);
        if (!s.ok()) {
            std::lock_guard lock(write_mu);
            if (!write_failed) write_failed = s.ToString();
        }
        return s;
    }
    std::unique_ptr<ancient::Freezer> freezer;
    std::optional<ChainConfig> config;

    // Guards head, ancient_items and kv_low against a reader seeing a half-moved range.
    mutable std::shared_mutex mu;
    // Freezer readers share it (each with its own per-thread scratch); appends and syncs take it alone.
    mutable std::shared_mutex freezer_mu;
    std::optional<Head> head;
    uint64_t ancient_items{0};
    // Lowest block number whose header is still in LevelDB (may be below ancient_items after an
    // interrupted freeze: such duplicates are harmless and removed by the next freeze).
    uint64_t kv_low{0};
    ReadObserver* observer{nullptr};
    // Set once, by the first append of an anchored chain (or at open); guarded by mu.
    std::optional<Anchor> anchor;
    uint64_t first_block() const { return anchor ? anchor->number : 0; }
    // Guarded by mu; the writer (one) also reads it without the lock.
    std::optional<Skeleton> skeleton;

    // Blocks found damaged (ChainDb::mark_damaged); any_damaged lets readers skip the lock while
    // there are none, which is always but for a disk that rots.
    mutable std::mutex damaged_mu;
    mutable std::set<uint64_t> damaged;
    mutable std::atomic<bool> any_damaged{false};
    // Set while the last LevelDB file scrub found a damaged table: then a scrub walk that reads a
    // marked LevelDB block fine (from the block cache) does not clear its mark.
    std::atomic<bool> leveldb_files_damaged{false};
    // HeaderSource::generation(): raised after a reorg of the canonical chain and after a repair.
    std::atomic<uint64_t> generation{0};
    // Whether [lo, hi] holds a damaged block.
    bool range_damaged(uint64_t lo, uint64_t hi) const {
        if (!any_damaged.load(std::memory_order_acquire)) return false;
        std::lock_guard lock(damaged_mu);
        auto it = damaged.lower_bound(lo);
        return it != damaged.end() && *it <= hi;
    }
    void mark(uint64_t block) const {
        std::lock_guard lock(damaged_mu);
        damaged.insert(block);
        any_damaged.store(true, std::memory_order_release);
    }
    void unmark(uint64_t block) const {
        std::lock_guard lock(damaged_mu);
        damaged.erase(block);
        any_damaged.store(!damaged.empty(), std::memory_order_release);
    }
    // LevelDB reads check block checksums (the cost is measured in docs/performance.md, "Integrity checks at read
    // time"): a flipped byte in a table file fails the read instead of reaching a peer.
    static leveldb::ReadOptions read_options() {
        leveldb::ReadOptions o;
        o.verify_checksums = true;
        return o;
    }
    // The error for a failed LevelDB read: kCorrupt (naming `block`) when LevelDB says so.
    Error leveldb_error(const leveldb::Status& s, std::string what, std::optional<uint64_t> block) const {
        std::string message = fmt::format("LevelDB {} in {}: {}", what, chaindata, s.ToString());
        if (s.IsCorruption()) return Error{std::move(message), ErrorKind::kCorrupt, block};
        return make_error(std::move(message));
    }

    Outcome<std::optional<std::string>> get(leveldb::Slice key) const {
        std::string value;
        leveldb::Status s = ldb->Get(read_options(), key, &value);
        if (s.IsNotFound()) return std::optional<std::string>{};
        if (!s.ok()) return leveldb_error(s, "read", std::nullopt);
        return std::optional<std::string>{std::move(value)};
    }

    Outcome<std::optional<Hash32>> kv_canonical_hash(uint64_t number) const {
        std::string& v = read_scratch();
        leveldb::Status s = ldb->Get(read_options(), slice(schema::canonical_key(number)), &v);
        if (s.IsNotFound()) return std::optional<Hash32>{};
        if (!s.ok()) return leveldb_error(s, fmt::format("read of canonical hash {}", number), number);
        if (v.size() != 32) {
            return make_error(
                fmt::format("LevelDB canonical hash of block {} has {} bytes, expected 32", number, v.size()));
        }
        Hash32 h;
        std::copy(v.begin(), v.end(), h.begin());
        return std::optional<Hash32>{h};
    }

    Outcome<void> load_head();
    Outcome<void> load_anchor();
    Outcome<void> load_skeleton();
    // Writes `batch` (fsynced when durable), then makes `next` the skeleton readers see.
    Outcome<void> write_skeleton(leveldb::WriteBatch& batch, const std::optional<Skeleton>& next, bool durable = true);
    Outcome<void> check_stores_join();
    // Appends the canonical headers [lo, hi] stored in LevelDB, ascending.
    Outcome<void> scan_kv(uint64_t lo, uint64_t hi, ItemBuffer& out) const;

    // Where scan_kv is: the height it is reading, the headers found there so far, and the hash the
    // height must link to.
    struct KvScan {
        KvScan(uint64_t first, size_t begin, std::vector<Hash32>& scratch)
            : n(first), group_begin(begin), candidates(scratch) {}
        uint64_t n{0};                    // the height being read
        size_t group_begin{0};            // its headers are the items of `out` from this one on
        std::vector<Hash32>& candidates;  // their hashes, in key order
        std::optional<Hash32> canonical;  // its canonical hash, once read
        Hash32 parent{};                  // the canonical hash of height n - 1, if have_parent
        bool have_parent{false};
    };
    // Ends height scan.n. On return (success): out holds only its canonical header from
    // scan.group_begin on, that header says it is block n and links to the previous height, and its
    // hash is scan.parent for the next height. Fails if n has no canonical hash, no header with that
    // hash, or a header that is corrupt or does not link.
    Outcome<void> finish_height(KvScan& scan, ItemBuffer& out) const;
};

}  // namespace headerd::db
