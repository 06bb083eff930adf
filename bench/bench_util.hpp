#pragma once

// Small helpers shared by the benchmark programs in bench/: settings from the environment and a
// console reporter that remembers each run, so a program can print ratios between benchmarks that
// ran in the same process (the rules of docs/performance.md).

#include <benchmark/benchmark.h>

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// Prints like the default console reporter and keeps, per benchmark name, the last iteration run's
// counters (rates are already divided by time here), and whether any benchmark failed.
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
            Result& r = results_[run.run_name.function_name];
            if (run.run_type == Run::RT_Aggregate || !r.from_median) {
                r.counters.clear();
                for (const auto& [name, counter] : run.counters) r.counters[name] = counter.value;
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

}  // namespace headerd::bench
