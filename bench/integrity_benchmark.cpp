// What the integrity checks made when headers are read cost, against the same reads without them
// and against rehashing every header (keccak-256). Figures and command: docs/performance.md,
// "Integrity checks at read time".
//
// Fixture (built once per process in HEADERD_BENCH_DIR, default BUILD_DIR/bench-integrity, removed
// and rebuilt at start): the real mainnet headers 0..8191 of tests/data, written twice:
//   - into a freezer (ancient::Freezer, with its headers.xxh3 checksum file), and
//   - into a datadir through db::import_file (all of them in LevelDB: nothing frozen), after which
//     LevelDB is compacted (CompactRange) so every header lies in a table file: a read of the
//     memtable checks no block checksum, so it would hide what is measured.
// Every benchmark reads 192-header ranges (the most a GetBlockHeaders reply holds) from 1024
// deterministic origins in [0, 8192 - 192], cycled; ascending, no byte cap.
//
//   freezer/unchecked          Table::read_range of the headers table: what the freezer did before it
//                              kept checksums.
//   freezer/checked            Freezer::read_headers: the same read, then every header checked against
//                              its 4-byte XXH3 checksum (as served).
//   freezer/unchecked+keccak   freezer/unchecked, then keccak256 of every header: the check that
//                              rehashes what it serves.
//   leveldb/chaindb/cache:C    ChainDb::header_range as shipped (verify_checksums on), with a LevelDB
//                              block cache of C bytes (ChainDbOptions::leveldb_cache_bytes).
//   leveldb/<verify|noverify>/cache:C
//                              LevelDB read directly (leveldb::DB, the options ChainDb opens with) over
//                              the same table files: one iterator pass over the "h" keys of the range,
//                              the header values copied out as ChainDb's scan does, with
//                              ReadOptions::verify_checksums on or off. Only this pair differs in the
//                              check alone; ChainDb's scan also sorts canonical from side headers and
//                              checks parent links.
//   leveldb/noverify+keccak/cache:C
//                              leveldb/noverify, then keccak256 of every header.
// C is 32 MiB (ChainDb's default: all 4.4 MB of tables stay cached after the warm-up pass, and a
// cached block is never re-checked) and 64 KiB ("small": LevelDB's cache has 16 shards, and a 4 KiB
// shard keeps no 16 KiB block, so every block read comes from the file, that is from the OS page
// cache, and has its CRC32C computed when verify_checksums is on).
//
// Counter: headers = headers per iteration (192). The summary
// prints, from the same run (medians with --benchmark_repetitions), the CPU ns per header of each
// benchmark and its ratio to its unchecked baseline (freezer/unchecked; leveldb/noverify with the
// same cache).

#include <benchmark/benchmark.h>
#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/filter_policy.h>
#include <leveldb/options.h>

#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ancient/file_system.hpp"
#include "ancient/freezer.hpp"
#include "ancient/table.hpp"
#include "bench/bench_util.hpp"
#include "core/chain_config.hpp"
#include "core/item_buffer.hpp"
#include "core/keccak.hpp"
#include "core/rlp.hpp"
#include "core/synthetic.hpp"
#include "db/chain_db.hpp"
#include "db/import.hpp"
#include "db/schema.hpp"

namespace headerd::bench {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kRange = 192;          // headers per read, as one full GetBlockHeaders reply
constexpr uint64_t kChainHeaders = 8192;  // tests/data/mainnet-headers-0-8191.rlp
constexpr size_t kOrigins = 1024;
constexpr uint64_t kOriginSeed = 0x5eed;
constexpr size_t kBigCache = 32u << 20;  // ChainDbOptions::leveldb_cache_bytes default
constexpr size_t kSmallCache = 64u << 10;
const std::string kRlpFile = std::string(HEADERD_BENCH_DATA_DIR) + "/mainnet-headers-0-8191.rlp";

struct Fixture {
    std::string dir;
    std::unique_ptr<ancient::Freezer> freezer;
    ancient::ReadScratch scratch;
    std::vector<uint64_t> origins;
    // At most one handle on the datadir's LevelDB is open at a time (LevelDB locks it).
    std::unique_ptr<db::ChainDb> chain;
    std::unique_ptr<leveldb::DB> ldb;
    std::unique_ptr<leveldb::Cache> cache;
    std::unique_ptr<const leveldb::FilterPolicy> filter;
    std::string open_as;  // "chaindb:<cache>" or "direct:<cache>", or empty
    ItemBuffer out;
};
Fixture* fx = nullptr;

std::string chaindata() { return fx->dir + "/datadir/chaindata"; }

// ChainDb's LevelDB options (db/chain_db.cpp), with a block cache of `cache_bytes`.
leveldb::Options leveldb_options(size_t cache_bytes) {
    leveldb::Options o;
    fx->cache.reset(leveldb::NewLRUCache(cache_bytes));
    fx->filter.reset(leveldb::NewBloomFilterPolicy(10));
    o.block_cache = fx->cache.get();
    o.filter_policy = fx->filter.get();
    o.write_buffer_size = 32u << 20;
    o.block_size = 16u << 10;
    o.paranoid_checks = true;
    return o;
}

void close_handles() {
    fx->chain.reset();
    fx->ldb.reset();
    fx->cache.reset();
    fx->filter.reset();
    fx->open_as.clear();
}

Outcome<void> open_direct(size_t cache_bytes) {
    close_handles();
    leveldb::DB* raw = nullptr;
    const leveldb::Status s = leveldb::DB::Open(leveldb_options(cache_bytes), chaindata(), &raw);
    if (!s.ok()) return make_error("cannot open LevelDB at " + chaindata() + ": " + s.ToString());
    fx->ldb.reset(raw);
    return {};
}

Outcome<void> open_chaindb(size_t cache_bytes) {
    close_handles();
    db::ChainDbOptions o;
    o.read_only = true;
    o.leveldb_cache_bytes = cache_bytes;
    auto chain = db::ChainDb::open(fx->dir + "/datadir", o);
    if (!chain) return chain.error();
    fx->chain = std::move(*chain);
    return {};
}

// One pass over the "h" keys of [lo, lo + kRange), keeping the header values (not the canonical
// hashes), as ChainDb's scan does; the chain has no side headers.
Outcome<void> scan_direct(const leveldb::ReadOptions& ro, uint64_t lo, ItemBuffer& out) {
    out.clear();
    const uint64_t hi = lo + kRange - 1;
    std::unique_ptr<leveldb::Iterator> it(fx->ldb->NewIterator(ro));
    const auto start = db::schema::canonical_key(lo);
    it->Seek(leveldb::Slice(reinterpret_cast<const char*>(start.data()), 9));
    for (; it->Valid(); it->Next()) {
        const leveldb::Slice key = it->key();
        if (key.size() < 9 || static_cast<uint8_t>(key[0]) != db::schema::kHeaderPrefix) break;
        const auto* k = reinterpret_cast<const uint8_t*>(key.data());
        uint64_t num = 0;
        for (int i = 1; i <= 8; ++i) num = (num << 8) | k[i];
        if (num > hi) break;
        if (key.size() == db::schema::HeaderKey{}.size()) {
            out.push(ByteView(reinterpret_cast<const uint8_t*>(it->value().data()), it->value().size()));
        }
    }
    if (!it->status().ok()) return make_error("LevelDB scan: " + it->status().ToString());
    if (out.size() != kRange) return make_error("LevelDB scan: " + std::to_string(out.size()) + " headers");
    return {};
}

// Reads every range once (fills the block cache where it can hold the data).
template <class Read>
Outcome<void> warm(Read&& read) {
    for (uint64_t lo = 0; lo + kRange <= kChainHeaders; lo += kRange) {
        if (auto r = read(lo); !r) return r.error();
    }
    return {};
}

uint64_t hash_all(const ItemBuffer& out) {
    uint64_t x = 0;
    for (size_t i = 0; i < out.size(); ++i) x ^= keccak256(out.item(i))[0];
    return x;
}

// The measured loop over the origins: `read(origin)` fills fx->out with kRange headers.
template <class Read>
void measure(benchmark::State& state, Read&& read) {
    size_t next = 0;
    const auto totals = run_loop(state, [&]() -> Outcome<uint64_t> {
        const uint64_t origin = fx->origins[next];
        next = next + 1 == fx->origins.size() ? 0 : next + 1;
        if (auto r = read(origin); !r) return r.error();
        return fx->out.size();
    });
    if (!totals) return;
    state.counters["headers"] = per_iteration(totals->items);
}

constexpr uint64_t kNoCap = std::numeric_limits<uint64_t>::max();

Outcome<void> read_unchecked(uint64_t origin) {
    fx->out.clear();
    return fx->freezer->headers().read_range(origin, kRange, kNoCap, fx->out, fx->scratch);
}

Outcome<void> read_checked(uint64_t origin) {
    fx->out.clear();
    return fx->freezer->read_headers(origin, kRange, kNoCap, fx->out, fx->scratch);
}

void bm_freezer(benchmark::State& state, int mode) {
    close_handles();  // nothing of LevelDB in memory during the freezer runs
    if (mode == 1) {
        measure(state, read_checked);
        return;
    }
    measure(state, [mode](uint64_t origin) -> Outcome<void> {
        if (auto r = read_unchecked(origin); !r) return r;
        if (mode == 2) benchmark::DoNotOptimize(hash_all(fx->out));
        return {};
    });
}

// Opens the store as `as` with `open` (unless it is open so already), warms it with `read`, then
// measures `read`.
template <typename Open, typename Read>
void open_warm_measure(benchmark::State& state, const std::string& as, Open open, Read read) {
    if (fx->open_as != as) {
        if (auto r = open(); !r) {
            state.SkipWithError(r.error().message.c_str());
            return;
        }
        if (auto r = warm(read); !r) {
            state.SkipWithError(r.error().message.c_str());
            return;
        }
        fx->open_as = as;
    }
    measure(state, read);
}

void bm_chaindb(benchmark::State& state, size_t cache_bytes) {
    auto read = [](uint64_t origin) -> Outcome<void> {
        return fx->chain->header_range(origin, kRange, db::Order::kAscending, fx->out);
    };
    open_warm_measure(
        state, "chaindb:" + std::to_string(cache_bytes), [cache_bytes] { return open_chaindb(cache_bytes); }, read);
}

// mode 0: verify_checksums on; 1: off; 2: off, then keccak of every header.
void bm_direct(benchmark::State& state, size_t cache_bytes, int mode) {
    leveldb::ReadOptions ro;
    ro.verify_checksums = mode == 0;
    auto read = [&ro, mode](uint64_t origin) -> Outcome<void> {
        if (auto r = scan_direct(ro, origin, fx->out); !r) return r;
        if (mode == 2) benchmark::DoNotOptimize(hash_all(fx->out));
        return {};
    };
    open_warm_measure(
        state, "direct:" + std::to_string(cache_bytes), [cache_bytes] { return open_direct(cache_bytes); }, read);
}

std::string cache_name(size_t bytes) { return bytes == kBigCache ? "32MiB" : "64KiB"; }

void register_all() {
    benchmark::RegisterBenchmark("freezer/unchecked", bm_freezer, 0);
    benchmark::RegisterBenchmark("freezer/checked", bm_freezer, 1);
    benchmark::RegisterBenchmark("freezer/unchecked+keccak", bm_freezer, 2);
    for (const size_t cache : {kBigCache, kSmallCache}) {
        const std::string c = "/cache:" + cache_name(cache);
        // Grouped by handle, so each handle is opened (and warmed) once per run.
        benchmark::RegisterBenchmark(("leveldb/chaindb" + c).c_str(), bm_chaindb, cache);
        benchmark::RegisterBenchmark(("leveldb/verify" + c).c_str(), bm_direct, cache, 0);
        benchmark::RegisterBenchmark(("leveldb/noverify" + c).c_str(), bm_direct, cache, 1);
        benchmark::RegisterBenchmark(("leveldb/noverify+keccak" + c).c_str(), bm_direct, cache, 2);
    }
}

Outcome<void> build_fixture(const std::string& dir) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(dir, ec);
    if (ec) return make_error("cannot create " + dir + ": " + ec.message());
    fx->dir = dir;

    // The headers, split from the RLP file.
    FILE* f = std::fopen(kRlpFile.c_str(), "rb");
    if (f == nullptr) return make_error("cannot open " + kRlpFile);
    Bytes rlp;
    uint8_t buf[65536];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) rlp.insert(rlp.end(), buf, buf + n);
    std::fclose(f);
    std::vector<ByteView> headers;
    std::vector<Hash32> hashes;
    ByteView rest{rlp};
    while (!rest.empty()) {
        auto item = rlp::next_item(rest);
        if (!item) return make_error(kRlpFile + ": " + item.error().message());
        headers.push_back(*item);
        hashes.push_back(keccak256(*item));
    }
    if (headers.size() != kChainHeaders) return make_error(kRlpFile + ": unexpected header count");

    // The freezer.
    auto freezer = ancient::Freezer::open(ancient::PosixFileSystem::instance(), dir + "/freezer", {});
    if (!freezer) return freezer.error();
    if (auto r = (*freezer)->append(0, headers, hashes); !r) return r;
    if (auto r = (*freezer)->sync(); !r) return r;
    fx->freezer = std::move(*freezer);

    // The datadir: everything in LevelDB, then compacted into table files.
    {
        db::ChainDbOptions o;
        o.create_if_missing = true;
        auto chain = db::ChainDb::open(dir + "/datadir", o);
        if (!chain) return chain.error();
        auto summary = db::import_file(**chain, mainnet_config(), kRlpFile);
        if (!summary) return summary.error();
    }
    if (auto r = open_direct(kBigCache); !r) return r;
    fx->ldb->CompactRange(nullptr, nullptr);
    close_handles();

    synthetic::Rng rng(kOriginSeed);
    for (size_t i = 0; i < kOrigins; ++i) fx->origins.push_back(rng.below(kChainHeaders - kRange + 1));
    return {};
}

int setup(bool list_only) {
    register_all();
    if (list_only) return 0;
    static Fixture fixture;
    fx = &fixture;
    const std::string dir =
        env_string("HEADERD_BENCH_DIR", std::string(HEADERD_BENCH_DEFAULT_DIR) + "/bench-integrity");
    if (auto r = build_fixture(dir); !r) {
        std::fprintf(stderr, "integrity_benchmark: %s\n", r.error().message.c_str());
        return 1;
    }
    return 0;
}

void summary(const RecordingReporter& reporter) {
    auto ns = [&](const std::string& name) -> std::optional<double> {
        const auto cpu = reporter.get(name, "cpu_seconds");
        const auto headers = reporter.get(name, "headers");
        if (!cpu || !headers || *headers <= 0) return std::nullopt;
        return *cpu * 1e9 / *headers;
    };
    auto row = [&](const std::string& name, const std::string& base) {
        const auto v = ns(name);
        const auto b = ns(base);
        std::optional<double> ratio;
        if (v && b && *b > 0) ratio = *v / *b;
        std::printf("| %-36s | %8s | %6s |\n", name.c_str(), cell(v, "%.1f").c_str(), cell(ratio, "%.2f").c_str());
    };
    std::printf("\nCPU ns per header (192-header ranges), ratio to the unchecked read of the same store and cache:\n");
    std::printf("| %-36s | %8s | %6s |\n", "benchmark", "ns/hdr", "ratio");
    std::printf("|%s|%s|%s|\n", std::string(38, '-').c_str(), std::string(10, '-').c_str(),
                std::string(8, '-').c_str());
    row("freezer/unchecked", "freezer/unchecked");
    row("freezer/checked", "freezer/unchecked");
    row("freezer/unchecked+keccak", "freezer/unchecked");
    for (const size_t cache : {kBigCache, kSmallCache}) {
        const std::string c = "/cache:" + cache_name(cache);
        const std::string base = "leveldb/noverify" + c;
        row("leveldb/noverify" + c, base);
        row("leveldb/verify" + c, base);
        row("leveldb/chaindb" + c, base);
        row("leveldb/noverify+keccak" + c, base);
    }
    close_handles();
    fx->freezer.reset();
    std::error_code ec;
    fs::remove_all(fx->dir, ec);
}

}  // namespace
}  // namespace headerd::bench

int main(int argc, char** argv) {
    return headerd::bench::benchmark_main(argc, argv, headerd::bench::setup, headerd::bench::summary);
}
