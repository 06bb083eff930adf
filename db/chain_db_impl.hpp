#pragma once

// ChainDb's state, shared by the files that implement it (chain_db.cpp: the canonical chain and the
// freezer; skeleton.cpp: the skeleton of a sync). Not part of the public interface.

#include <array>
#include <memory>
#include <optional>
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
    std::unique_ptr<const leveldb::FilterPolicy> filter;
    std::unique_ptr<leveldb::DB> ldb;
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
    // Guarded by mu; the writer (one) also reads it without the lock.
    std::optional<Skeleton> skeleton;

    Outcome<std::optional<std::string>> get(leveldb::Slice key) const {
        std::string value;
        leveldb::Status s = ldb->Get(leveldb::ReadOptions(), key, &value);
        if (s.IsNotFound()) return std::optional<std::string>{};
        if (!s.ok()) return make_error(fmt::format("LevelDB read in {}: {}", chaindata, s.ToString()));
        return std::optional<std::string>{std::move(value)};
    }

    Outcome<std::optional<Hash32>> kv_canonical_hash(uint64_t number) const {
        std::string& v = read_scratch();
        leveldb::Status s = ldb->Get(leveldb::ReadOptions(), slice(schema::canonical_key(number)), &v);
        if (s.IsNotFound()) return std::optional<Hash32>{};
        if (!s.ok()) return make_error(fmt::format("LevelDB read of canonical hash {}: {}", number, s.ToString()));
        if (v.size() != 32) {
            return make_error(
                fmt::format("LevelDB canonical hash of block {} has {} bytes, expected 32", number, v.size()));
        }
        Hash32 h;
        std::copy(v.begin(), v.end(), h.begin());
        return std::optional<Hash32>{h};
    }

    Outcome<void> load_head();
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
