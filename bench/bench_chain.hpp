#pragma once

// The generated benchmark chain shared by the benchmark programs: the same datadir, marker file and
// environment as bench/chain_db_benchmark.cpp, so whichever program runs first builds it and the
// others reuse it. HEADERD_BENCH_HEADERS headers (default 1,000,000) of `headerd generate`'s chain
// (core/synthetic.hpp, seed 1, appended in batches of 10,000 by db::generate_chain), frozen with keep
// HEADERD_BENCH_KEEP (default min(90,000, headers/4)): blocks [0, headers - keep) in the freezer,
// the rest in LevelDB. HEADERD_BENCH_DIR (default BUILD_DIR/bench-chain-<headers>) holds it.
//
// HEADERD_BENCH_DATADIR instead names an existing datadir (for instance real mainnet headers imported
// with `headerd import` and split with `headerd freeze --keep N`) that is used as it is: nothing is
// generated, frozen or deleted, and the HEADERD_BENCH_HEADERS/KEEP/DIR variables are ignored.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "bench/bench_util.hpp"
#include "core/result.hpp"
#include "core/synthetic.hpp"
#include "db/chain_db.hpp"
#include "db/import.hpp"

namespace headerd::bench {

inline constexpr uint64_t kChainSeed = 1;                               // `headerd generate` default
inline constexpr const char* kChainMarkerFile = "headerd-bench-chain";  // a benchmark program made the datadir

struct ChainSettings {
    uint64_t headers{0};  // generated chain only (0 for an existing datadir)
    uint64_t keep{0};     // generated chain only
    std::string dir;
    bool existing{false};  // HEADERD_BENCH_DATADIR: use the datadir as it is
};

// From the environment; `default_parent` is the directory that holds bench-chain-<headers> by
// default. nullopt (after a message on stderr) for an unreadable or too small setting; `min_side`
// is the fewest headers each store must hold.
inline std::optional<ChainSettings> read_chain_settings(const std::string& default_parent, uint64_t min_side) {
    ChainSettings s;
    s.dir = env_string("HEADERD_BENCH_DATADIR", "");
    if (!s.dir.empty()) {
        s.existing = true;
        return s;  // check_chain_sides() checks the split once the datadir is open
    }
    const auto headers = env_u64("HEADERD_BENCH_HEADERS", 1'000'000);
    if (!headers) {
        std::fprintf(stderr, "bench: HEADERD_BENCH_HEADERS is not a number\n");
        return std::nullopt;
    }
    s.headers = *headers;
    const auto keep = env_u64("HEADERD_BENCH_KEEP", std::min<uint64_t>(90'000, s.headers / 4));
    if (!keep) {
        std::fprintf(stderr, "bench: HEADERD_BENCH_KEEP is not a number\n");
        return std::nullopt;
    }
    s.keep = *keep;
    if (s.keep < min_side || s.headers < s.keep + min_side) {
        std::fprintf(stderr, "bench: need HEADERD_BENCH_KEEP >= %llu and HEADERD_BENCH_HEADERS >= keep + %llu\n",
                     static_cast<unsigned long long>(min_side), static_cast<unsigned long long>(min_side));
        return std::nullopt;
    }
    s.dir = env_string("HEADERD_BENCH_DIR", default_parent + "/bench-chain-" + std::to_string(s.headers));
    return s;
}

namespace detail {

inline Outcome<void> freeze_chain(const std::string& dir, uint64_t keep) {
    auto opened = db::ChainDb::open(dir, {});
    if (!opened) return opened.error();
    const auto start = std::chrono::steady_clock::now();
    db::FreezeOptions opts;
    opts.keep = keep;
    auto frozen = (*opened)->freeze(opts);
    if (!frozen) return frozen.error();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "bench: froze blocks [0, %llu) in %.1f s\n", static_cast<unsigned long long>(*frozen),
                 seconds);
    return {};
}

}  // namespace detail

// Makes `s.dir` hold exactly the benchmark chain, reusing what an earlier run left when it can.
// Deletes only a chaindata/ a benchmark program created (marker file), never someone else's data.
// An existing datadir (HEADERD_BENCH_DATADIR) is only checked for a chaindata/ directory.
inline Outcome<void> prepare_chain(const ChainSettings& s) {
    namespace fs = std::filesystem;
    const fs::path dir(s.dir);
    const fs::path chaindata = dir / "chaindata";
    const fs::path marker = dir / kChainMarkerFile;
    const uint64_t want_ancient = s.headers - s.keep;
    std::error_code ec;
    if (s.existing) {
        if (!fs::is_directory(chaindata, ec)) return make_error("bench: " + s.dir + " holds no chaindata/");
        return {};
    }
    if (fs::exists(chaindata, ec)) {
        std::string why;
        {
            auto opened = db::ChainDb::open(s.dir, {});
            if (!opened) {
                why = opened.error().message;
            } else {
                const db::ChainDb& chain = **opened;
                const synthetic::Generator gen(s.headers, kChainSeed);
                const auto head = chain.head();
                if (chain.config() == nullptr || *chain.config() != gen.config()) {
                    why = "another chain config";
                } else if (!head || head->number != s.headers - 1) {
                    why = "head " + (head ? std::to_string(head->number) : std::string("none")) + ", want " +
                          std::to_string(s.headers - 1);
                } else if (chain.ancient_items() > want_ancient) {
                    why = "ancient items " + std::to_string(chain.ancient_items()) + ", want " +
                          std::to_string(want_ancient);
                }
            }
        }
        if (why.empty()) return detail::freeze_chain(s.dir, s.keep);  // no-op when already frozen that far
        if (!fs::exists(marker, ec)) {
            return make_error("bench: " + chaindata.string() + " is not a benchmark chain a benchmark made (" + why +
                              "); point HEADERD_BENCH_DIR elsewhere");
        }
        std::fprintf(stderr, "bench: regenerating %s (%s)\n", s.dir.c_str(), why.c_str());
        fs::remove_all(chaindata, ec);
        if (ec) return make_error("bench: cannot remove " + chaindata.string() + ": " + ec.message());
    }
    fs::create_directories(dir, ec);
    if (ec) return make_error("bench: cannot create " + dir.string() + ": " + ec.message());
    std::ofstream(marker) << "headers=" << s.headers << " keep=" << s.keep << " seed=" << kChainSeed << "\n";
    std::fprintf(stderr, "bench: generating %llu headers into %s (once; kept for later runs)\n",
                 static_cast<unsigned long long>(s.headers), s.dir.c_str());
    {
        db::ChainDbOptions opts;
        opts.create_if_missing = true;
        auto opened = db::ChainDb::open(s.dir, opts);
        if (!opened) return opened.error();
        const auto start = std::chrono::steady_clock::now();
        if (auto r = db::generate_chain(**opened, s.headers, kChainSeed); !r) return r;
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::fprintf(stderr, "bench: generated and appended %llu headers in %.1f s\n",
                     static_cast<unsigned long long>(s.headers), seconds);
    }
    return detail::freeze_chain(s.dir, s.keep);
}

// Both stores of an opened benchmark chain hold at least `min_side` headers (a full range in each
// placement); checked for existing datadirs, guaranteed by read_chain_settings for generated ones.
inline Outcome<void> check_chain_sides(const db::ChainDb& chain, uint64_t min_side) {
    const auto head = chain.head();
    const uint64_t total = head ? head->number + 1 : 0;
    const uint64_t ancient = chain.ancient_items();
    if (ancient < min_side || total < ancient + min_side) {
        return make_error("bench: " + chain.datadir() + " holds " + std::to_string(ancient) + " frozen and " +
                          std::to_string(total - ancient) + " LevelDB headers; each store needs at least " +
                          std::to_string(min_side) + " (headerd freeze --keep N)");
    }
    return {};
}

}  // namespace headerd::bench
