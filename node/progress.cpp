#include "node/progress.hpp"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "node/logging.hpp"

namespace headerd::node {
namespace {

std::string format_duration(double seconds) {
    if (seconds < 0 || seconds > 1e7) return "?";
    const auto s = static_cast<uint64_t>(seconds + 0.5);
    if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
    if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
    return fmt::format("{}s", s);
}

}  // namespace

Progress::Progress(std::string what)
    : what_(std::move(what)),
      // JSON logs must stay one object per line, so the \r progress line is for text logs only.
      tty_(::isatty(STDERR_FILENO) == 1 && !json_logging()),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

void Progress::update(uint64_t done, uint64_t total) {
    const auto now = std::chrono::steady_clock::now();
    const auto since = now - last_;
    if (tty_ ? (since < std::chrono::milliseconds(200) && done < total) : since < std::chrono::seconds(10)) return;
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
    const double eta = rate > 0 ? static_cast<double>(total - done) / rate : -1;
    const double pct = total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0;
    if (tty_) {
        std::fprintf(stderr, "\r%s %llu/%llu (%.1f%%) %.0f/s ETA %s   ", what_.c_str(),
                     static_cast<unsigned long long>(done), static_cast<unsigned long long>(total), pct, rate,
                     format_duration(eta).c_str());
        std::fflush(stderr);
        printed_ = true;
    } else {
        spdlog::info("{:<40} done={} total={} pct={:.1f} rate={:.0f}/s eta={}", what_, done, total, pct, rate,
                     format_duration(eta));
    }
}

void Progress::finish(uint64_t done) {
    if (printed_) std::fputc('\n', stderr);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    spdlog::info("{:<40} count={} elapsed={:.2f}s rate={:.0f}/s", what_ + " done", done, elapsed,
                 elapsed > 0 ? static_cast<double>(done) / elapsed : 0.0);
}

}  // namespace headerd::node
