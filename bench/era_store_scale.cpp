// The history store at mainnet's scale: memory, open files and read times of an EraStore holding
// N era1 files (default 1,900, about mainnet's pre-merge count). Not a Google Benchmark program:
// one run, figures on stdout. docs/performance.md, "History"; scripts/bench_history.sh runs it.
//
//   era_store_scale SOURCE.era1 DIR [N [MAX_OPEN]]
//
// DIR/history gets N files generated from SOURCE (a real epoch): each a copy whose block index
// says it starts at epoch e's first block, named as the store names epoch e. Their bodies are the
// source's, which is all the measurement needs (the store reads records by position; nothing here
// checks them against headers). Then, in this process:
//   open      EraStore::open over the N files: time, and memory after it;
//   random    100,000 bodies of random blocks over every epoch: each mostly in an epoch not open,
//             so a file is mapped and its index read (the LRU keeps MAX_OPEN, 64 by default): the
//             worst access pattern;
//   runs      1,000 runs of 128 consecutive bodies from random epochs (a syncing client's pattern);
// after each: VmRSS and RssAnon (anonymous memory: what the store really holds; file pages are
// the page cache's), open descriptors (/proc/self/fd), mappings (/proc/self/maps) and open files.

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "core/era1.hpp"
#include "core/hex.hpp"
#include "db/era_store.hpp"
#include "tests/reference_chain.hpp"

namespace {

namespace fs = std::filesystem;
using namespace headerd;
using Clock = std::chrono::steady_clock;

// A field of /proc/self/status in kB.
long status_kb(const char* field) {
    std::ifstream in("/proc/self/status");
    std::string line;
    const size_t n = std::strlen(field);
    while (std::getline(in, line)) {
        if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':') return std::stol(line.substr(n + 1));
    }
    return -1;
}

long count_entries(const char* dir) {
    long n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
    return n;
}

long count_lines(const char* file) {
    std::ifstream in(file);
    std::string line;
    long n = 0;
    while (std::getline(in, line)) ++n;
    return n;
}

void report(const char* phase, double seconds, uint64_t reads, const db::EraStore& store) {
    std::printf("%-8s %9.3f s %11.2f us/read  VmRSS %7ld kB  RssAnon %7ld kB  fds %4ld  maps %5ld  open files %3zu\n",
                phase, seconds, reads > 0 ? seconds * 1e6 / static_cast<double>(reads) : 0.0, status_kb("VmRSS"),
                status_kb("RssAnon"), count_entries("/proc/self/fd"), count_lines("/proc/self/maps"),
                store.open_files());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3 || argc > 5) {
        std::fprintf(stderr, "usage: %s SOURCE.era1 DIR [N (1900) [MAX_OPEN (the store's default)]]\n", argv[0]);
        return 2;
    }
    const std::string source = argv[1];
    const fs::path dir = fs::path(argv[2]) / "history";
    const uint64_t n = argc >= 4 ? std::stoull(argv[3]) : 1900;
    db::EraStoreOptions options;
    if (argc == 5) options.max_open_files = std::stoull(argv[4]);

    Bytes file = headerd::testing::read_file(source);
    auto archive = era1::Archive::parse(file);
    if (!archive) {
        std::fprintf(stderr, "%s: %s\n", source.c_str(), archive.error().message().c_str());
        return 1;
    }
    const uint64_t count = archive->count();
    // The block index: its starting number is the 8 bytes after its record header.
    const size_t start_at = file.size() - era1::kRecordHeaderSize - (16 + 8 * count) + era1::kRecordHeaderSize;
    fs::create_directories(dir);
    const auto gen_start = Clock::now();
    uint64_t written = 0;
    for (uint64_t e = 0; e < n; ++e) {
        const fs::path path = dir / db::era1_file_name("scale", e, archive->accumulator_root());
        if (fs::exists(path)) continue;
        const uint64_t first = e * db::kEpochBlocks;
        for (int b = 0; b < 8; ++b) file[start_at + b] = static_cast<uint8_t>(first >> (8 * b));
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
        ++written;
    }
    std::printf("generated %llu of %llu files (%zu bytes each, %llu blocks) in %.1f s under %s\n",
                static_cast<unsigned long long>(written), static_cast<unsigned long long>(n), file.size(),
                static_cast<unsigned long long>(count), std::chrono::duration<double>(Clock::now() - gen_start).count(),
                dir.string().c_str());
    file.clear();
    file.shrink_to_fit();

    std::printf("%-8s %11s %19s  %s\n", "phase", "time", "per read", "memory and files after the phase");
    auto t0 = Clock::now();
    auto store = db::EraStore::open(dir.string(), options);
    if (!store) {
        std::fprintf(stderr, "%s\n", store.error().message.c_str());
        return 1;
    }
    report("open", std::chrono::duration<double>(Clock::now() - t0).count(), 0, **store);

    std::mt19937_64 rng(0x5eed);
    Bytes out;
    auto read = [&](uint64_t number) -> bool {
        out.clear();
        auto r = (*store)->append_body(number, out);
        if (!r || !*r) {
            std::fprintf(stderr, "block %llu: %s\n", static_cast<unsigned long long>(number),
                         r ? "not held" : r.error().message.c_str());
            return false;
        }
        return true;
    };
    constexpr uint64_t kRandom = 100'000;
    t0 = Clock::now();
    for (uint64_t i = 0; i < kRandom; ++i) {
        const uint64_t e = rng() % n;
        if (!read(e * db::kEpochBlocks + rng() % count)) return 1;
    }
    report("random", std::chrono::duration<double>(Clock::now() - t0).count(), kRandom, **store);

    constexpr uint64_t kRuns = 1000, kRun = 128;
    t0 = Clock::now();
    for (uint64_t i = 0; i < kRuns; ++i) {
        const uint64_t first = (rng() % n) * db::kEpochBlocks + rng() % (count - kRun);
        for (uint64_t b = first; b < first + kRun; ++b) {
            if (!read(b)) return 1;
        }
    }
    report("runs", std::chrono::duration<double>(Clock::now() - t0).count(), kRuns * kRun, **store);
    return 0;
}
