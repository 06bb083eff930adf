#pragma once

// Small helpers shared by the benchmark programs in bench/: settings from the environment, a
// console reporter that remembers each run, so a program can print ratios between benchmarks that
// ran in the same process (the rules of docs/performance.md), the measured loop with its
// allocation count, and the common main().

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/allocation_counter.hpp"
#include "core/result.hpp"

namespace headerd::bench {

// The value of environment variable `name` as an unsigned integer (digits, optional ' or _
// separators: 1'000'000, 1_000_000); `fallback` when unset or empty. An unreadable value is an error
// (nullopt) rather than a silent default, so a typo cannot turn a full run into a tiny one.
inline std::optional<uint64_t> env_u64(const char* name, uint64_t fallback) {
    const char* raw = std::getenv(name);
    if (raw == nullptr || *raw == '\0') return fallback;
    std::string digits;
    for (const char* p = raw; *p != '\0'; ++p) {
        if (*p != '\'' && *p != '_') digits.push_back(*p);
    }
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
    return v;
}

inline std::string env_string(const char* name, std::string fallback) {
    const char* raw = std::getenv(name);
    return raw == nullptr || *raw == '\0' ? fallback : std::string(raw);
}

// Prints like the default console reporter and keeps, per benchmark, the last iteration run's
// counters (rates are already divided by time here) and its real and CPU seconds per iteration
// (counters "real_seconds" and "cpu_seconds"), and whether any benchmark failed. A benchmark is
// named by its function name, plus "/threads:N" when it was registered with Threads().
class RecordingReporter : public benchmark::ConsoleReporter {
  public:
    using ConsoleReporter::ConsoleReporter;

    void ReportRuns(const std::vector<Run>& reports) override {
        for (const Run& run : reports) {
            if (run.error_occurred) {
                failed_ = true;
                continue;
            }
            // With --benchmark_repetitions the median is the figure to compare; otherwise the one run.
            if (run.run_type == Run::RT_Aggregate && run.aggregate_name != "median") continue;
            std::string name = run.run_name.function_name;
            if (!run.run_name.threads.empty()) name += "/" + run.run_name.threads;
            Result& r = results_[name];
            if (run.run_type == Run::RT_Aggregate || !r.from_median) {
                r.counters.clear();
                for (const auto& [counter_name, counter] : run.counters) r.counters[counter_name] = counter.value;
                const double unit = benchmark::GetTimeUnitMultiplier(run.time_unit);
                r.counters["real_seconds"] = run.GetAdjustedRealTime() / unit;
                r.counters["cpu_seconds"] = run.GetAdjustedCPUTime() / unit;
                r.from_median = run.run_type == Run::RT_Aggregate;
            }
        }
        ConsoleReporter::ReportRuns(reports);
    }

    bool failed() const noexcept { return failed_; }
    bool any() const noexcept { return !results_.empty(); }

    // Counter `counter` of benchmark `name` (e.g. "items_per_second"); nullopt if it did not run.
    std::optional<double> get(const std::string& name, const std::string& counter) const {
        const auto it = results_.find(name);
        if (it == results_.end()) return std::nullopt;
        const auto c = it->second.counters.find(counter);
        if (c == it->second.counters.end()) return std::nullopt;
        return c->second;
    }

  private:
    struct Result {
        std::map<std::string, double> counters;
        bool from_median{false};
    };
    std::map<std::string, Result> results_;
    bool failed_{false};
};

// One cell of a summary table: `v` printed with `fmt`, or "-" when it is absent.
inline std::string cell(std::optional<double> v, const char* fmt) {
    char buf[32];
    if (v) {
        std::snprintf(buf, sizeof buf, fmt, *v);
    } else {
        std::snprintf(buf, sizeof buf, "-");
    }
    return std::string(buf);
}

struct LoopTotals {
    uint64_t items{0};        // what the iterations returned, summed
    uint64_t allocations{0};  // see run_loop
};

// The measured loop: calls `one()` once per iteration; it returns the items it processed
// (Outcome<uint64_t>), or an error, which ends the loop and marks the run failed (nullopt).
//
// Allocations (global operator new and OpenSSL) are counted for the benchmark's threads inside
// their loops only. With Threads(N) the count is the total of all N loops, returned to thread 0
// (0 to the others), so that a counter summed over threads and divided by all iterations is exact:
// thread 0 reads the global count before the loop's start barrier, when no thread counts yet, and
// after its end barrier, when every thread's loop is done. So nothing outside `one()` in any
// thread's loop may allocate, and `one()` may not pause the count.
template <class One>
std::optional<LoopTotals> run_loop(benchmark::State& state, One&& one) {
    LoopTotals t;
    std::optional<Error> error;
    const uint64_t before = allocation_count();
    count_allocations(true);
    for (auto _ : state) {
        auto r = one();
        if (!r) [[unlikely]] {
            error = r.error();
            break;
        }
        t.items += *r;
    }
    count_allocations(false);
    t.allocations = state.thread_index() == 0 ? allocation_count() - before : 0;
    if (error) {
        state.SkipWithError(error->message.c_str());
        return std::nullopt;
    }
    return t;
}

// A counter divided by the iterations of all threads.
inline benchmark::Counter per_iteration(uint64_t v) {
    return benchmark::Counter(static_cast<double>(v), benchmark::Counter::kAvgIterations);
}

// The main() of the benchmark programs. `setup(list_only)` registers the benchmarks and, unless
// only a listing was asked for (--benchmark_list_tests: then nothing is measured and no fixture
// should be built), builds the fixture; it returns 0 or the exit code to stop with. `summary(reporter)`
// prints the program's ratios after a measuring run. Exit code 1 when a benchmark failed.
template <class Setup, class Summary>
int benchmark_main(int argc, char** argv, Setup&& setup, Summary&& summary) {
    // Initialize() removes the flags it knows from argv, so look for the listing flags first.
    bool list_only = false;
    for (int i = 1; i < argc; ++i) list_only = list_only || std::string_view(argv[i]).starts_with("--benchmark_list");
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    if (const int code = setup(list_only); code != 0) return code;
    RecordingReporter reporter(isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_ColorTabular
                                                     : benchmark::ConsoleReporter::OO_Tabular);
    benchmark::RunSpecifiedBenchmarks(&reporter);
    if (!list_only && reporter.any()) summary(reporter);
    benchmark::Shutdown();
    return reporter.failed() ? 1 : 0;
}

}  // namespace headerd::bench
