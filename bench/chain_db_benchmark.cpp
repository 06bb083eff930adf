// The header serving read path, contiguous against naive, on a generated chain split between the
// freezer and LevelDB. Figures and commands: docs/performance.md; full run: scripts/bench.sh.
//
// Fixture: a synthetic chain of HEADERD_BENCH_HEADERS headers (default 1,000,000; core/synthetic.hpp,
// seed 1) appended in batches of 10,000 as `headerd generate` does, then frozen with keep
// HEADERD_BENCH_KEEP (default min(90,000, headers/4)): blocks [0, headers-keep) in the freezer, the
// rest in LevelDB. The datadir (HEADERD_BENCH_DIR, default BUILD_DIR/bench-chain-<headers>) is kept
// between runs and regenerated when it does not hold exactly that chain. Before any benchmark runs the
// whole chain is read once (page cache warm) and checked: numbers, parent links, head hash.
//
// Each benchmark reads 192 headers per iteration (an eth GetBlockHeaders reply) into a reused buffer,
// at deterministic pseudo-random origins (the same ones for both paths):
//   header_range/<placement>  ChainDb::header_range, the path the server uses;
//   naive/<placement>         per header canonical_hash -> header_by_hash -> decode -> keccak check
//                             -> encode, what geth did before serving stored RLP directly.
// Placements: ancient (freezer only), leveldb (LevelDB only), boundary (origin = ancient_items - 96).
//
// Counters per iteration (one 192-header read): allocs_per_call = calls of global operator new made
// by this thread inside the timed loop; reads_per_call = File::read_at calls on the freezer's files
// (each one pread(2)), counted by ancient::FaultInjectingFileSystem. LevelDB reads through its own
// Env and is not in reads_per_call. HEADERD_BENCH_ITERATIONS fixes the iteration count (for strace).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ancient/file_system.hpp"
#include "bench/allocation_counter.hpp"
#include "bench/bench_chain.hpp"
#include "bench/bench_util.hpp"
#include "core/block_header.hpp"
#include "core/item_buffer.hpp"
#include "core/synthetic.hpp"
#include "db/chain_db.hpp"

namespace headerd::bench {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kRange = 192;          // headers per request (an eth GetBlockHeaders reply)
constexpr uint64_t kOriginSeed = 0x5eed;  // of the origins
constexpr size_t kOrigins = 1024;         // distinct origins per placement, cycled

enum class Placement { kAncient, kLevelDb, kBoundary };
constexpr std::array kPlacements{Placement::kAncient, Placement::kLevelDb, Placement::kBoundary};

const char* placement_name(Placement p) {
    switch (p) {
        case Placement::kAncient:
            return "ancient";
        case Placement::kLevelDb:
            return "leveldb";
        case Placement::kBoundary:
            return "boundary";
    }
    return "?";
}

struct Settings {
    ChainSettings chain;
    std::optional<uint64_t> iterations;
};

// ---- the naive path ------------------------------------------------------------------------------

// Reads [from, from+count) one header at a time by hash, decodes each one, checks its hash and
// re-encodes it into `out`, as a server that stores headers but cannot splice their RLP would.
// `rlp` is the caller's scratch for one stored header.
Outcome<void> naive_range(const db::ChainDb& chain, uint64_t from, uint64_t count, Bytes& rlp, ItemBuffer& out) {
    out.clear();
    for (uint64_t n = from; n < from + count; ++n) {
        auto hash = chain.canonical_hash(n);
        if (!hash) return hash.error();
        if (!*hash) return make_error("naive: no canonical hash for block " + std::to_string(n));
        auto found = chain.header_by_hash(**hash, rlp);
        if (!found) return found.error();
        if (!*found) return make_error("naive: no header for block " + std::to_string(n));
        auto header = decode_block_header(rlp);
        if (!header) return make_error("naive: block " + std::to_string(n) + ": " + header.error().message());
        if (header_hash(rlp) != **hash) return make_error("naive: block " + std::to_string(n) + ": hash mismatch");
        encode(out.bytes, *header);
        out.ends.push_back(out.bytes.size());
    }
    return {};
}

// ---- fixture -------------------------------------------------------------------------------------

class Fixture {
  public:
    static Outcome<std::unique_ptr<Fixture>> create(const Settings& s) {
        if (auto r = prepare_chain(s.chain); !r) return r.error();
        auto f = std::unique_ptr<Fixture>(new Fixture());
        db::ChainDbOptions opts;
        opts.read_only = true;  // no freezer writes, so the counting wrapper never snapshots files
        opts.fs = &f->fs_;
        auto opened = db::ChainDb::open(s.chain.dir, opts);
        if (!opened) return opened.error();
        f->chain_ = std::move(*opened);
        if (auto r = check_chain_sides(*f->chain_, kRange); !r) return r.error();
        f->ancient_items_ = f->chain_->ancient_items();
        f->head_ = f->chain_->head()->number;
        if (auto r = f->check_and_warm(); !r) return r.error();
        f->make_origins();
        if (auto r = f->cross_check(); !r) return r.error();
        return f;
    }

    const db::ChainDb& chain() const { return *chain_; }
    uint64_t freezer_reads() const { return fs_.reads(); }
    uint64_t ancient_items() const { return ancient_items_; }
    uint64_t head() const { return head_; }
    const std::vector<uint64_t>& origins(Placement p) const { return origins_[static_cast<size_t>(p)]; }

  private:
    Fixture() : fs_(ancient::PosixFileSystem::instance()) {}

    // Reads the whole chain once through header_range (page cache warm for both stores) and checks
    // numbers, parent links and the head hash, so a stale or damaged datadir cannot be measured.
    Outcome<void> check_and_warm() {
        const auto start = std::chrono::steady_clock::now();
        ItemBuffer out;
        Hash32 parent{};
        for (uint64_t from = 0; from <= head_; from += kRange) {
            if (auto r = chain_->header_range(from, kRange, db::Order::kAscending, out); !r) return r;
            const uint64_t want = std::min(kRange, head_ + 1 - from);
            if (out.size() != want) {
                return make_error("bench: header_range(" + std::to_string(from) + ") returned " +
                                  std::to_string(out.size()) + " headers, want " + std::to_string(want));
            }
            for (size_t i = 0; i < out.size(); ++i) {
                auto peek = peek_header(out.item(i));
                if (!peek || peek->number != from + i || (from + i > 0 && peek->parent_hash != parent)) {
                    return make_error("bench: stored block " + std::to_string(from + i) + " is not the chain's");
                }
                parent = header_hash(out.item(i));
            }
        }
        if (parent != chain_->head()->hash) return make_error("bench: head hash does not match the stored chain");
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::fprintf(stderr, "bench: read and checked %llu headers (ancient %llu) in %.1f s\n",
                     static_cast<unsigned long long>(head_ + 1), static_cast<unsigned long long>(ancient_items_),
                     seconds);
        return {};
    }

    void make_origins() {
        synthetic::Rng rng(kOriginSeed);
        for (Placement p : kPlacements) {
            std::vector<uint64_t>& o = origins_[static_cast<size_t>(p)];
            o.resize(kOrigins);
            for (uint64_t& origin : o) {
                switch (p) {
                    case Placement::kAncient:  // [0, A - 192]
                        origin = rng.below(ancient_items_ - kRange + 1);
                        break;
                    case Placement::kLevelDb:  // [A, head + 1 - 192]
                        origin = ancient_items_ + rng.below(head_ + 1 - ancient_items_ - kRange + 1);
                        break;
                    case Placement::kBoundary:
                        origin = ancient_items_ - kRange / 2;
                        break;
                }
            }
        }
    }

    // Both paths must return the same bytes for the first origins of each placement.
    Outcome<void> cross_check() const {
        ItemBuffer contiguous;
        ItemBuffer naive;
        Bytes rlp;
        for (Placement p : kPlacements) {
            for (size_t i = 0; i < 8; ++i) {
                const uint64_t from = origins(p)[i];
                if (auto r = chain_->header_range(from, kRange, db::Order::kAscending, contiguous); !r) return r;
                if (auto r = naive_range(*chain_, from, kRange, rlp, naive); !r) return r;
                if (contiguous.bytes != naive.bytes || contiguous.ends != naive.ends) {
                    return make_error(std::string("bench: header_range and the naive path differ at ") +
                                      placement_name(p) + " origin " + std::to_string(from));
                }
            }
        }
        return {};
    }

    ancient::FaultInjectingFileSystem fs_;  // outlives chain_
    std::unique_ptr<db::ChainDb> chain_;
    uint64_t ancient_items_{0};
    uint64_t head_{0};
    std::array<std::vector<uint64_t>, kPlacements.size()> origins_;
};

Fixture* g_fixture = nullptr;

// ---- benchmarks ----------------------------------------------------------------------------------

// Reads one kRange-header range per iteration with `read(from, out)`, at the placement's origins in
// turn, and reports headers, allocations and freezer reads per call. `warm` origins are read once
// before timing: the buffers (and the freezer's scratch) reach the capacity a long-lived connection
// would have.
template <class Read>
void measure_ranges(benchmark::State& state, Placement placement, size_t warm, Read&& read) {
    const Fixture& f = *g_fixture;
    const std::vector<uint64_t>& origins = f.origins(placement);
    ItemBuffer out;
    for (size_t i = 0; i < warm; ++i) {
        if (auto r = read(origins[i], out); !r) {
            state.SkipWithError(r.error().message.c_str());
            return;
        }
    }
    size_t i = 0;
    const uint64_t reads_before = f.freezer_reads();
    const auto totals = run_loop(state, [&]() -> Outcome<uint64_t> {
        const uint64_t from = origins[i++ % kOrigins];
        if (auto r = read(from, out); !r) [[unlikely]]
            return r.error();
        if (out.size() != kRange) [[unlikely]] {
            return make_error("range at " + std::to_string(from) + " returned " + std::to_string(out.size()) +
                              " headers");
        }
        benchmark::DoNotOptimize(out.bytes.data());
        return uint64_t{out.size()};
    });
    if (!totals) return;
    state.SetItemsProcessed(static_cast<int64_t>(totals->items));
    state.counters["allocs_per_call"] = per_iteration(totals->allocations);
    state.counters["reads_per_call"] = per_iteration(f.freezer_reads() - reads_before);
}

void bm_header_range(benchmark::State& state, Placement placement) {
    const db::ChainDb& chain = g_fixture->chain();
    measure_ranges(state, placement, kOrigins, [&](uint64_t from, ItemBuffer& out) {
        return chain.header_range(from, kRange, db::Order::kAscending, out);
    });
}

void bm_naive(benchmark::State& state, Placement placement) {
    const db::ChainDb& chain = g_fixture->chain();
    Bytes rlp;
    measure_ranges(state, placement, 8,
                   [&](uint64_t from, ItemBuffer& out) { return naive_range(chain, from, kRange, rlp, out); });
}

std::optional<Settings> read_settings() {
    // Each placement needs a full range on its side of the boundary.
    auto chain = read_chain_settings(HEADERD_BENCH_DEFAULT_DIR, kRange);
    if (!chain) return std::nullopt;
    Settings s{*chain, std::nullopt};
    const auto iterations = env_u64("HEADERD_BENCH_ITERATIONS", 0);
    if (!iterations) {
        std::fprintf(stderr, "bench: HEADERD_BENCH_ITERATIONS is not a number\n");
        return std::nullopt;
    }
    if (*iterations > 0) s.iterations = *iterations;
    return s;
}

void print_summary(const RecordingReporter& r) {
    std::printf("\nSummary: %llu-header ranges, headers/s per core (CPU time); ratio = header_range / naive\n",
                static_cast<unsigned long long>(kRange));
    std::printf("%-9s %16s %16s %8s %14s %14s %14s %14s\n", "placement", "header_range/s", "naive/s", "ratio",
                "allocs/call", "naive allocs", "reads/call", "naive reads");
    for (Placement p : kPlacements) {
        const std::string fast = std::string("header_range/") + placement_name(p);
        const std::string slow = std::string("naive/") + placement_name(p);
        const auto fast_rate = r.get(fast, "items_per_second");
        const auto slow_rate = r.get(slow, "items_per_second");
        if (!fast_rate && !slow_rate) continue;
        std::optional<double> ratio;
        if (fast_rate && slow_rate && *slow_rate > 0) ratio = *fast_rate / *slow_rate;
        std::printf(
            "%-9s %16s %16s %8s %14s %14s %14s %14s\n", placement_name(p), cell(fast_rate, "%.0f").c_str(),
            cell(slow_rate, "%.0f").c_str(), cell(ratio, "%.1fx").c_str(),
            cell(r.get(fast, "allocs_per_call"), "%.2f").c_str(), cell(r.get(slow, "allocs_per_call"), "%.2f").c_str(),
            cell(r.get(fast, "reads_per_call"), "%.2f").c_str(), cell(r.get(slow, "reads_per_call"), "%.2f").c_str());
    }
}

}  // namespace
}  // namespace headerd::bench

int main(int argc, char** argv) {
    using namespace headerd::bench;
    std::optional<Settings> settings;
    std::unique_ptr<Fixture> fixture;
    const auto setup = [&](bool list_only) -> int {
        settings = read_settings();
        if (!settings) return 2;
        for (Placement p : kPlacements) {
            const std::string suffix = placement_name(p);
            for (auto* b : {benchmark::RegisterBenchmark(("header_range/" + suffix).c_str(), bm_header_range, p),
                            benchmark::RegisterBenchmark(("naive/" + suffix).c_str(), bm_naive, p)}) {
                b->Unit(benchmark::kMicrosecond);
                if (settings->iterations) b->Iterations(static_cast<benchmark::IterationCount>(*settings->iterations));
            }
        }
        if (list_only) return 0;
        // The fixture is built before any timing starts: building it inside a benchmark would make its
        // first (sizing) run take minutes.
        auto created = Fixture::create(*settings);
        if (!created) {
            std::fprintf(stderr, "%s\n", created.error().message.c_str());
            return 1;
        }
        fixture = std::move(*created);
        g_fixture = fixture.get();
        std::fprintf(stderr, "bench: datadir %s, %llu headers, blocks [0, %llu) ancient\n", settings->chain.dir.c_str(),
                     static_cast<unsigned long long>(fixture->head() + 1),
                     static_cast<unsigned long long>(fixture->ancient_items()));
        return 0;
    };
    return benchmark_main(argc, argv, setup, print_summary);
}
