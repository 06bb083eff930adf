#pragma once

// The background scrubber of `serve` (docs/operations.md, "Bit rot"): walks the stored chain from
// the head down to the genesis, again and again, at a bounded pace, rehashing every header against
// its child's parent hash (ChainDb::scrub); after each such pass it checks every body and receipt
// list the node serves from DATADIR/history against its header (EraStore::scrub). Damaged blocks are marked, so serving
// refuses ranges holding them; with `repair` set (serve --follow), they are fetched again and written back after each
// step that found any. Progress and the damaged ranges are exported as headerd_scrub_*.
//
// Thread-safety: start() and stop() from one thread; the scrubber runs on its own thread, reading
// the database as any reader does (the repair writes go through ChainDb's locks).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "db/chain_db.hpp"
#include "db/era_store.hpp"

namespace headerd::sync {

// headerd_scrub_*: checked headers, passes, where the walk is, damaged blocks and their ranges.
class ScrubMetrics {
  public:
    explicit ScrubMetrics(prometheus::Registry& registry);
    void on_step(uint64_t checked, uint64_t position);
    void on_pass(double seconds);
    // The damaged blocks as they stand (ascending): the count, and up to kRanges runs as
    // headerd_scrub_damaged_range{first,last} = 1.
    void set_damaged(const std::vector<uint64_t>& blocks);
    void on_repaired(uint64_t n);
    void set_damaged_files(size_t n);
    // The history pass (bodies and receipt lists of DATADIR/history, checked against the headers).
    void on_history_step(uint64_t checked);
    void set_history_damaged(size_t n);
    static constexpr size_t kRanges = 16;

  private:
    prometheus::Counter* checked_;
    prometheus::Counter* passes_;
    prometheus::Counter* repaired_;
    prometheus::Gauge* position_;
    prometheus::Gauge* last_pass_;
    prometheus::Gauge* damaged_;
    prometheus::Gauge* damaged_files_;
    prometheus::Counter* history_checked_;
    prometheus::Gauge* history_damaged_;
    prometheus::Family<prometheus::Gauge>* ranges_;
    std::vector<prometheus::Gauge*> range_children_;
    std::vector<uint64_t> exported_;  // the blocks range_children_ describe
};

struct ScrubberOptions {
    double rate{20'000};  // headers checked per second (the pace; docs/operations.md)
    // LevelDB's table files, read at the start of each pass, go at rate x this many bytes per
    // second: about the bytes of the headers the walk reads in that time.
    double file_bytes_per_header{600};
    uint64_t batch{1'000};  // headers per ChainDb::scrub step
    // Rest between passes (a pass ends at the genesis; the next starts at the head).
    std::chrono::milliseconds pause{std::chrono::seconds(1)};
    ScrubMetrics* metrics{nullptr};
    // Called on the scrubber's thread after a step that left damaged blocks; returns how many it
    // repaired. Unset: damage is only marked (and logged).
    std::function<uint64_t()> repair;
    // Least time between two repair attempts (peers that cannot help are not asked in a loop).
    std::chrono::milliseconds repair_retry{std::chrono::seconds(10)};
    // The history the node serves, checked after each header pass (a body and receipt list per
    // block, against the header's roots) at history_rate blocks per second; nullptr: none held.
    db::EraStore* history{nullptr};
    double history_rate{500};
};

class Scrubber {
  public:
    Scrubber(db::ChainDb& db, ScrubberOptions options);
    ~Scrubber();  // stops
    Scrubber(const Scrubber&) = delete;
    Scrubber& operator=(const Scrubber&) = delete;

    void start();
    void stop();
    uint64_t passes() const noexcept { return passes_.load(); }
    uint64_t checked() const noexcept { return checked_.load(); }
    uint64_t history_checked() const noexcept { return history_checked_.load(); }

  private:
    void run();
    // One pass over every held epoch; false once stopped.
    bool history_pass(std::vector<uint64_t>& last_damaged);
    // Sleeps until `until` or stop(); false once stopped.
    bool sleep_until(std::chrono::steady_clock::time_point until);

    db::ChainDb& db_;
    ScrubberOptions options_;
    std::thread thread_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stopping_{false};
    std::atomic<uint64_t> passes_{0};
    std::atomic<uint64_t> checked_{0};
    std::atomic<uint64_t> history_checked_{0};
};

}  // namespace headerd::sync
