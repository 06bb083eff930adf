#include "metrics/process_collector.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <system_error>

#include <fmt/format.h>
#include <prometheus/gauge.h>
#include <spdlog/spdlog.h>

namespace headerd::metrics {
namespace {

bool parse_u64(std::string_view s, uint64_t& out) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc{} && end == s.data() + s.size() && !s.empty();
}

std::string_view trim_left(std::string_view s) {
    const auto start = s.find_first_not_of(" \t");
    return start == std::string_view::npos ? std::string_view{} : s.substr(start);
}

// First whitespace-separated token of `s`.
std::string_view first_token(std::string_view s) {
    s = trim_left(s);
    return s.substr(0, s.find_first_of(" \t\n"));
}

// Calls f(line) for each line of `text` until f returns true; returns whether one did.
template <class F>
bool find_line(std::string_view text, F f) {
    while (!text.empty()) {
        const auto eol = text.find('\n');
        if (f(text.substr(0, eol))) return true;
        if (eol == std::string_view::npos) break;
        text.remove_prefix(eol + 1);
    }
    return false;
}

// procfs files report size 0, so they are read until EOF rather than by their stat size.
Outcome<std::string> read_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return make_error(fmt::format("cannot open {}: {}", path, std::generic_category().message(errno)));
    std::string out;
    std::array<char, 4096> buf;
    for (;;) {
        const ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int err = errno;
            ::close(fd);
            return make_error(fmt::format("cannot read {}: {}", path, std::generic_category().message(err)));
        }
        if (n == 0) break;
        out.append(buf.data(), static_cast<size_t>(n));
    }
    ::close(fd);
    // Error is an aggregate, so a std::string could construct either side: say which.
    return Outcome<std::string>(boost::system::in_place_value, std::move(out));
}

// Entries of /proc/self/fd, minus the descriptor used to list the directory itself, which the
// Go and Python clients count by accident (their figure is always one too high).
Outcome<uint64_t> count_open_fds(const std::string& path) {
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) {
        return make_error(fmt::format("cannot open {}: {}", path, std::generic_category().message(errno)));
    }
    const std::string own = std::to_string(::dirfd(dir));
    uint64_t count = 0;
    while (const dirent* entry = ::readdir(dir)) {
        const std::string_view name = entry->d_name;
        if (name == "." || name == ".." || name == own) continue;
        ++count;
    }
    ::closedir(dir);
    return count;
}

template <class T>
Outcome<T> read_and_parse(const std::string& path, Outcome<T> (*parse)(std::string_view)) {
    auto text = read_file(path);
    if (!text) return text.error();
    auto value = parse(*text);
    if (!value) return make_error(fmt::format("{}: {}", path, value.error().message));
    return value;
}

prometheus::MetricFamily single(const char* name, const char* help, prometheus::MetricType type, double value) {
    prometheus::ClientMetric metric;
    if (type == prometheus::MetricType::Counter) {
        metric.counter.value = value;
    } else {
        metric.gauge.value = value;
    }
    return prometheus::MetricFamily{name, help, type, {std::move(metric)}};
}

void log_unavailable(const Error& e) {
    spdlog::debug("Process metric unavailable               err=\"{}\"", e.message);
}

}  // namespace

Outcome<ProcStat> parse_proc_stat(std::string_view line) {
    const auto close = line.rfind(')');
    if (close == std::string_view::npos) return make_error("stat line has no ')' closing the command name");
    // Fields 3.. (state, ppid, ...) follow comm; field k is fields[k - 3].
    std::array<std::string_view, 22> fields;
    std::string_view rest = line.substr(close + 1);
    size_t n = 0;
    while (n < fields.size()) {
        rest = trim_left(rest);
        if (rest.empty() || rest.front() == '\n') break;
        const auto end = rest.find_first_of(" \t\n");
        fields[n++] = rest.substr(0, end);
        rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end);
    }
    if (n < fields.size()) {
        return make_error(
            fmt::format("stat line has {} fields after the command name, expected at least {}", n, fields.size()));
    }
    ProcStat st;
    const struct {
        int field;
        uint64_t* out;
    } wanted[] = {{14, &st.utime_ticks},
                  {15, &st.stime_ticks},
                  {22, &st.start_ticks},
                  {23, &st.vsize_bytes},
                  {24, &st.rss_pages}};
    for (const auto& w : wanted) {
        const std::string_view text = fields[static_cast<size_t>(w.field - 3)];
        if (!parse_u64(text, *w.out)) {
            return make_error(fmt::format("stat field {} is \"{}\", not an unsigned number", w.field, text));
        }
    }
    return st;
}

Outcome<uint64_t> parse_max_open_files(std::string_view limits) {
    static constexpr std::string_view kLabel = "Max open files";
    std::string_view soft;
    const bool found = find_line(limits, [&](std::string_view line) {
        if (!line.starts_with(kLabel)) return false;
        soft = first_token(line.substr(kLabel.size()));
        return true;
    });
    if (!found) return make_error("limits has no \"Max open files\" line");
    uint64_t value = 0;
    if (!parse_u64(soft, value)) return make_error(fmt::format("soft limit of open files is \"{}\"", soft));
    return value;
}

Outcome<uint64_t> parse_boot_time(std::string_view proc_stat) {
    static constexpr std::string_view kLabel = "btime ";
    std::string_view text;
    const bool found = find_line(proc_stat, [&](std::string_view line) {
        if (!line.starts_with(kLabel)) return false;
        text = first_token(line.substr(kLabel.size()));
        return true;
    });
    if (!found) return make_error("stat has no btime line");
    uint64_t value = 0;
    if (!parse_u64(text, value)) return make_error(fmt::format("btime is \"{}\"", text));
    return value;
}

ProcessCollector::ProcessCollector(std::string proc_root) : proc_root_(std::move(proc_root)) {}

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
    using prometheus::MetricType;
    std::vector<prometheus::MetricFamily> out;
    out.reserve(6);
    const auto ticks_per_second = static_cast<double>(::sysconf(_SC_CLK_TCK));
    const auto page_size = static_cast<double>(::sysconf(_SC_PAGESIZE));

    const auto stat = read_and_parse(proc_root_ + "/self/stat", parse_proc_stat);
    if (stat) {
        out.push_back(single("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                             MetricType::Counter,
                             static_cast<double>(stat->utime_ticks + stat->stime_ticks) / ticks_per_second));
    } else {
        log_unavailable(stat.error());
    }
    if (const auto fds = count_open_fds(proc_root_ + "/self/fd")) {
        out.push_back(single("process_open_fds", "Number of open file descriptors.", MetricType::Gauge,
                             static_cast<double>(*fds)));
    } else {
        log_unavailable(fds.error());
    }
    if (const auto max = read_and_parse(proc_root_ + "/self/limits", parse_max_open_files)) {
        out.push_back(single("process_max_fds", "Maximum number of open file descriptors.", MetricType::Gauge,
                             static_cast<double>(*max)));
    } else {
        log_unavailable(max.error());
    }
    if (!stat) return out;
    out.push_back(single("process_virtual_memory_bytes", "Virtual memory size in bytes.", MetricType::Gauge,
                         static_cast<double>(stat->vsize_bytes)));
    out.push_back(single("process_resident_memory_bytes", "Resident memory size in bytes.", MetricType::Gauge,
                         static_cast<double>(stat->rss_pages) * page_size));
    if (const auto boot = read_and_parse(proc_root_ + "/stat", parse_boot_time)) {
        out.push_back(single("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
                             MetricType::Gauge,
                             static_cast<double>(*boot) + static_cast<double>(stat->start_ticks) / ticks_per_second));
    } else {
        log_unavailable(boot.error());
    }
    return out;
}

void register_build_info(prometheus::Registry& registry, const std::string& version, const std::string& commit) {
    prometheus::BuildGauge()
        .Name("headerd_build_info")
        .Help("A constant 1, labelled with the version and git commit of the running build.")
        .Register(registry)
        .Add({{"version", version}, {"commit", commit}})
        .Set(1);
}

}  // namespace headerd::metrics
