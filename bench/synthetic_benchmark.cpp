// Synthetic chain generation speed (`headerd generate` without the database): headers per second
// on one thread, keccak included, and heap allocations per warm header (goal: 0). A keccak-only
// run over the same header bytes is the baseline measured in the same process.

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "core/bytes.hpp"
#include "core/item_buffer.hpp"
#include "core/keccak.hpp"
#include "core/synthetic.hpp"

// Counting global allocator for this benchmark binary only (aligned and nothrow forms keep their
// defaults, which the code measured here does not use). Not inlined: GCC 12 otherwise pairs the
// inlined malloc and free with new and delete and warns (-Wmismatched-new-delete).
namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

[[gnu::noinline]] void* operator new(std::size_t size) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace headerd {
namespace {

constexpr int64_t kHeadersPerIteration = 100'000;

void report(benchmark::State& state, uint64_t bytes, uint64_t allocations) {
    const auto headers = static_cast<double>(state.iterations()) * static_cast<double>(state.range(0));
    state.SetItemsProcessed(state.iterations() * state.range(0));
    state.SetBytesProcessed(static_cast<int64_t>(bytes));
    state.counters["allocs_per_header"] = static_cast<double>(allocations) / headers;
}

// One header at a time into a scratch buffer cleared per header (as cmd_generate uses it).
void BM_Generate(benchmark::State& state) {
    const auto count = static_cast<uint64_t>(state.range(0));
    Bytes out;
    out.reserve(1024);
    uint64_t seed = 1;
    uint64_t bytes = 0;
    uint64_t allocations = 0;
    for (auto _ : state) {
        synthetic::Generator g{count, seed++};  // construction allocates (config, genesis): not counted
        const uint64_t before = g_allocations.load(std::memory_order_relaxed);
        while (!g.done()) {
            out.clear();
            auto produced = g.next(out);
            benchmark::DoNotOptimize(produced);
            bytes += out.size();
        }
        allocations += g_allocations.load(std::memory_order_relaxed) - before;
    }
    report(state, bytes, allocations);
}
BENCHMARK(BM_Generate)->Arg(kHeadersPerIteration)->Unit(benchmark::kMillisecond);

// Batches of 10,000 headers appended back to back into one buffer (how `generate` and export write),
// the buffer cleared per batch and reused across iterations.
void BM_GenerateBatched(benchmark::State& state) {
    constexpr uint64_t kBatch = 10'000;
    const auto count = static_cast<uint64_t>(state.range(0));
    Bytes out;
    uint64_t seed = 1;
    uint64_t bytes = 0;
    uint64_t allocations = 0;
    for (auto _ : state) {
        synthetic::Generator g{count, seed++};
        const uint64_t before = g_allocations.load(std::memory_order_relaxed);
        while (!g.done()) {
            out.clear();
            for (uint64_t i = 0; i < kBatch && !g.done(); ++i) {
                auto produced = g.next(out);
                benchmark::DoNotOptimize(produced);
            }
            bytes += out.size();
        }
        allocations += g_allocations.load(std::memory_order_relaxed) - before;
    }
    report(state, bytes, allocations);
}
BENCHMARK(BM_GenerateBatched)->Arg(kHeadersPerIteration)->Unit(benchmark::kMillisecond);

// Baseline: keccak256 alone over 4096 generated headers of all layouts, cycled.
void BM_KeccakOnly(benchmark::State& state) {
    constexpr uint64_t kSample = 4096;
    ItemBuffer headers;
    synthetic::Generator g{kSample, 1};
    while (!g.done()) {
        g.next(headers.bytes);
        headers.ends.push_back(headers.bytes.size());
    }
    uint64_t bytes = 0;
    for (auto _ : state) {
        for (int64_t i = 0; i < state.range(0); ++i) {
            const ByteView rlp = headers.item(static_cast<size_t>(i) % kSample);
            auto hash = keccak256(rlp);
            benchmark::DoNotOptimize(hash);
            bytes += rlp.size();
        }
    }
    report(state, bytes, 0);
}
BENCHMARK(BM_KeccakOnly)->Arg(kHeadersPerIteration)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace headerd
