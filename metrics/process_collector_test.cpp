#include "metrics/process_collector.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace headerd::metrics {
namespace {

std::optional<double> value_of(const std::vector<prometheus::MetricFamily>& families, std::string_view name) {
    for (const auto& f : families) {
        if (f.name != name || f.metric.size() != 1) continue;
        return f.type == prometheus::MetricType::Counter ? f.metric[0].counter.value : f.metric[0].gauge.value;
    }
    return std::nullopt;
}

const prometheus::MetricFamily* family(const std::vector<prometheus::MetricFamily>& families, std::string_view name) {
    for (const auto& f : families) {
        if (f.name == name) return &f;
    }
    return nullptr;
}

// A comm that tries every trick: spaces, ") (" and a ')' right before the real closing one. Fields
// after it follow proc(5): utime 250, stime 75, starttime 98765, vsize 123456789, rss 4321.
constexpr std::string_view kCraftedStat =
    "4242 (evil) (comm) x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 1 0 98765 123456789 4321 "
    "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n";

constexpr std::string_view kLimits =
    "Limit                     Soft Limit           Hard Limit           Units     \n"
    "Max cpu time              unlimited            unlimited            seconds   \n"
    "Max file size             unlimited            unlimited            bytes     \n"
    "Max open files            1024                 524288               files     \n"
    "Max locked memory         8388608              8388608              bytes     \n";

constexpr std::string_view kProcStat =
    "cpu  2255 34 2290 22625563 6290 127 456 0 0 0\n"
    "cpu0 1132 34 1441 11311718 3675 127 438 0 0 0\n"
    "intr 114930548 113199788 3 0 5 263 0 4 [... lots more numbers]\n"
    "ctxt 1990473\n"
    "btime 1700000000\n"
    "processes 2915\n";

TEST(ParseProcStat, TakesFieldsAfterLastParenthesis) {
    const auto st = parse_proc_stat(kCraftedStat);
    ASSERT_TRUE(st.has_value()) << st.error().message;
    EXPECT_EQ(st->utime_ticks, 250u);
    EXPECT_EQ(st->stime_ticks, 75u);
    EXPECT_EQ(st->start_ticks, 98765u);
    EXPECT_EQ(st->vsize_bytes, 123456789u);
    EXPECT_EQ(st->rss_pages, 4321u);
}

TEST(ParseProcStat, EmptyAndPlainComm) {
    // Exactly the 24 fields needed, no newline.
    const auto st = parse_proc_stat("7 () R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 3 4 5");
    ASSERT_TRUE(st.has_value()) << st.error().message;
    EXPECT_EQ(st->utime_ticks, 1u);
    EXPECT_EQ(st->stime_ticks, 2u);
    EXPECT_EQ(st->start_ticks, 3u);
    EXPECT_EQ(st->vsize_bytes, 4u);
    EXPECT_EQ(st->rss_pages, 5u);
}

TEST(ParseProcStat, RejectsMalformedLines) {
    constexpr std::string_view kBad[] = {
        "",
        "1 (no closing parenthesis S 1 1 1 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 3 4 5",
        "1 (short) R 1 1 1 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 3 4",                   // field 24 missing
        "1 (x) R 1 1 1 0 -1 0 0 0 0 0 1x 2 0 0 20 0 1 0 3 4 5",                    // utime not a number
        "1 (x) R 1 1 1 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 3 4 -5",                    // negative rss
        "1 (x) R 1 1 1 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 3 4 99999999999999999999",  // overflow
        "1 (x) R 1 1 1 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 3 4\n5",                    // rss on the next line
    };
    for (const auto line : kBad) {
        EXPECT_FALSE(parse_proc_stat(line).has_value()) << line;
    }
}

TEST(ParseMaxOpenFiles, SoftLimit) {
    const auto max = parse_max_open_files(kLimits);
    ASSERT_TRUE(max.has_value()) << max.error().message;
    EXPECT_EQ(*max, 1024u);
    EXPECT_FALSE(parse_max_open_files("Max open files            unlimited            unlimited            files\n"));
    EXPECT_FALSE(parse_max_open_files("Limit   Soft Limit   Hard Limit   Units\n"));
    EXPECT_FALSE(parse_max_open_files(""));
}

TEST(ParseBootTime, BtimeLine) {
    const auto boot = parse_boot_time(kProcStat);
    ASSERT_TRUE(boot.has_value()) << boot.error().message;
    EXPECT_EQ(*boot, 1700000000u);
    EXPECT_FALSE(parse_boot_time("cpu 1 2 3\nprocesses 2\n"));
    EXPECT_FALSE(parse_boot_time("btime soon\n"));
    // Another line merely containing "btime" is not it.
    EXPECT_FALSE(parse_boot_time("xbtime 5\n"));
}

// A directory standing in for /proc, removed at the end.
class FakeProc {
  public:
    FakeProc() {
        std::string pattern = (std::filesystem::temp_directory_path() / "headerd-proc-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        root_ = pattern;
        std::filesystem::create_directories(root_ / "self" / "fd");
    }
    ~FakeProc() {
        std::error_code ec;
        std::filesystem::remove_all(root_, ec);
    }
    void write(const std::string& name, std::string_view text) const { std::ofstream(root_ / name) << text; }
    std::string root() const { return root_.string(); }

  private:
    std::filesystem::path root_;
};

TEST(ProcessCollector, ComputesFromProcFiles) {
    FakeProc proc;
    proc.write("self/stat", kCraftedStat);
    proc.write("self/limits", kLimits);
    proc.write("stat", kProcStat);
    for (const char* fd : {"self/fd/0", "self/fd/1", "self/fd/2"}) proc.write(fd, "");

    const auto families = ProcessCollector(proc.root()).Collect();
    const double tck = static_cast<double>(::sysconf(_SC_CLK_TCK));
    const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
    EXPECT_EQ(families.size(), 6u);
    EXPECT_DOUBLE_EQ(value_of(families, "process_cpu_seconds_total").value_or(-1), (250 + 75) / tck);
    EXPECT_DOUBLE_EQ(value_of(families, "process_resident_memory_bytes").value_or(-1), 4321 * page);
    EXPECT_DOUBLE_EQ(value_of(families, "process_virtual_memory_bytes").value_or(-1), 123456789.0);
    EXPECT_DOUBLE_EQ(value_of(families, "process_open_fds").value_or(-1), 3.0);
    EXPECT_DOUBLE_EQ(value_of(families, "process_max_fds").value_or(-1), 1024.0);
    EXPECT_DOUBLE_EQ(value_of(families, "process_start_time_seconds").value_or(-1), 1700000000 + 98765 / tck);

    const auto* cpu = family(families, "process_cpu_seconds_total");
    ASSERT_NE(cpu, nullptr);
    EXPECT_EQ(cpu->type, prometheus::MetricType::Counter);
    EXPECT_FALSE(cpu->help.empty());
    for (const auto& f : families) {
        if (&f == cpu) continue;
        EXPECT_EQ(f.type, prometheus::MetricType::Gauge) << f.name;
    }
}

TEST(ProcessCollector, DropsWhatCannotBeRead) {
    FakeProc proc;
    proc.write("self/stat", "garbage");
    proc.write("self/limits", kLimits);
    const auto families = ProcessCollector(proc.root()).Collect();
    // The stat line feeds cpu, memory and start time; open and max fds come from elsewhere.
    EXPECT_EQ(families.size(), 2u);
    EXPECT_DOUBLE_EQ(value_of(families, "process_open_fds").value_or(-1), 0.0);
    EXPECT_DOUBLE_EQ(value_of(families, "process_max_fds").value_or(-1), 1024.0);

    EXPECT_TRUE(ProcessCollector(proc.root() + "/missing").Collect().empty());
}

TEST(ProcessCollector, RealProcessValuesAreSane) {
    ProcessCollector collector;
    const auto families = collector.Collect();
    ASSERT_EQ(families.size(), 6u);
    const double rss = value_of(families, "process_resident_memory_bytes").value_or(-1);
    EXPECT_GT(rss, 0.0);
    EXPECT_GE(value_of(families, "process_virtual_memory_bytes").value_or(-1), rss);
    const double open = value_of(families, "process_open_fds").value_or(-1);
    EXPECT_GE(open, 3.0);  // at least stdin, stdout, stderr
    EXPECT_GE(value_of(families, "process_max_fds").value_or(-1), open);

    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    const double start = value_of(families, "process_start_time_seconds").value_or(-1);
    EXPECT_LE(start, now + 1);  // btime has whole seconds
    EXPECT_GT(start, now - 3600);
}

TEST(ProcessCollector, OpenFdsCountsANewFile) {
    ProcessCollector collector;
    const double before = value_of(collector.Collect(), "process_open_fds").value_or(-1);
    const int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    const double during = value_of(collector.Collect(), "process_open_fds").value_or(-1);
    ::close(fd);
    const double after = value_of(collector.Collect(), "process_open_fds").value_or(-1);
    EXPECT_EQ(during, before + 1);
    EXPECT_EQ(after, before);
}

TEST(ProcessCollector, CpuSecondsGrowWhenBurningCpu) {
    ProcessCollector collector;
    const double before = value_of(collector.Collect(), "process_cpu_seconds_total").value_or(-1);
    ASSERT_GE(before, 0.0);
    // The kernel counts in clock ticks (usually 10 ms): burn until one shows, for at most 10 s.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    double now = before;
    volatile uint64_t sink = 0;
    while (now <= before && std::chrono::steady_clock::now() < give_up) {
        for (uint64_t i = 0; i < 1'000'000; ++i) sink = sink + i * i;
        now = value_of(collector.Collect(), "process_cpu_seconds_total").value_or(-1);
    }
    EXPECT_GT(now, before);
}

TEST(BuildInfo, RegistersGaugeWithLabels) {
    prometheus::Registry registry;
    register_build_info(registry, "v0.1.0", "abc123");
    const auto families = registry.Collect();
    const auto* info = family(families, "headerd_build_info");
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->type, prometheus::MetricType::Gauge);
    ASSERT_EQ(info->metric.size(), 1u);
    EXPECT_EQ(info->metric[0].gauge.value, 1.0);
    const std::vector<prometheus::ClientMetric::Label> expected{{"commit", "abc123"}, {"version", "v0.1.0"}};
    EXPECT_EQ(info->metric[0].label, expected);
}

}  // namespace
}  // namespace headerd::metrics
