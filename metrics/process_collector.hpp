#pragma once

// The standard process metrics, named and computed as the official Prometheus client libraries do
// (Go's procfs collector), so stock dashboards and alerts work on headerd unchanged:
//   process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
//   process_open_fds, process_max_fds, process_start_time_seconds.
// Linux only: the values come from procfs, read afresh on every scrape. A source that cannot be
// read or parsed drops its metrics from that scrape rather than reporting a made-up 0.
//
// Thread-safety: Collect() keeps no state and may run concurrently; the parsers are pure.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include "core/result.hpp"

namespace headerd::metrics {

// The fields of /proc/<pid>/stat (proc(5)) that the process metrics need, in the kernel's units.
struct ProcStat {
    uint64_t utime_ticks{0};  // field 14, user CPU in clock ticks (sysconf(_SC_CLK_TCK))
    uint64_t stime_ticks{0};  // field 15, system CPU in clock ticks
    uint64_t start_ticks{0};  // field 22, start time in clock ticks after boot
    uint64_t vsize_bytes{0};  // field 23
    uint64_t rss_pages{0};    // field 24, resident set in pages (sysconf(_SC_PAGESIZE))
};

// Parses one /proc/<pid>/stat line. Field 2 (comm) is "(name)" where the name is chosen by the
// program and may hold spaces and parentheses, so the fields after it are counted from the *last*
// ')' of the line, which the kernel guarantees is comm's closing one.
Outcome<ProcStat> parse_proc_stat(std::string_view line);

// The soft "Max open files" limit from /proc/<pid>/limits. An "unlimited" limit is an error: it
// has no finite value to report.
Outcome<uint64_t> parse_max_open_files(std::string_view limits);

// The "btime" line of /proc/stat: boot time in unix seconds.
Outcome<uint64_t> parse_boot_time(std::string_view proc_stat);

class ProcessCollector : public prometheus::Collectable {
  public:
    // proc_root is where procfs is mounted; tests point it at a directory of crafted files.
    explicit ProcessCollector(std::string proc_root = "/proc");

    std::vector<prometheus::MetricFamily> Collect() const override;

  private:
    std::string proc_root_;
};

// Registers the gauge headerd_build_info{version,commit} = 1 on `registry`, the usual way to
// expose a build's identity so it can be joined onto other series.
void register_build_info(prometheus::Registry& registry, const std::string& version, const std::string& commit);

}  // namespace headerd::metrics
