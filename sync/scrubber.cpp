#include "sync/scrubber.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace headerd::sync {

ScrubMetrics::ScrubMetrics(prometheus::Registry& registry) {
    checked_ = &prometheus::BuildCounter()
                    .Name("headerd_scrub_checked_total")
                    .Help("Stored headers rehashed against their child's parent hash by the scrubber")
                    .Register(registry)
                    .Add({});
    passes_ = &prometheus::BuildCounter()
                   .Name("headerd_scrub_passes_total")
                   .Help("Scrubber passes finished (head down to the genesis)")
                   .Register(registry)
                   .Add({});
    repaired_ = &prometheus::BuildCounter()
                     .Name("headerd_scrub_repaired_total")
                     .Help("Damaged headers fetched again from followed peers and written back")
                     .Register(registry)
                     .Add({});
    position_ = &prometheus::BuildGauge()
                     .Name("headerd_scrub_position")
                     .Help("Block number the scrubber checks next (it walks down from the head)")
                     .Register(registry)
                     .Add({});
    last_pass_ = &prometheus::BuildGauge()
                      .Name("headerd_scrub_last_pass_seconds")
                      .Help("Wall time of the last finished scrubber pass")
                      .Register(registry)
                      .Add({});
    damaged_ = &prometheus::BuildGauge()
                    .Name("headerd_scrub_damaged_blocks")
                    .Help("Stored headers found damaged and not repaired yet (never served)")
                    .Register(registry)
                    .Add({});
    damaged_files_ = &prometheus::BuildGauge()
                          .Name("headerd_scrub_damaged_leveldb_tables")
                          .Help(
                              "LevelDB table files whose block checksums failed in the last pass (headerd repair "
                              "salvages them)")
                          .Register(registry)
                          .Add({});
    history_checked_ = &prometheus::BuildCounter()
                            .Name("headerd_scrub_history_checked_total")
                            .Help("Served blocks whose body and receipt list the scrubber checked against the header")
                            .Register(registry)
                            .Add({});
    history_damaged_ = &prometheus::BuildGauge()
                            .Name("headerd_scrub_history_damaged_blocks")
                            .Help("Blocks whose body or receipt list failed the scrubber's check (never served)")
                            .Register(registry)
                            .Add({});
    ranges_ = &prometheus::BuildGauge()
                   .Name("headerd_scrub_damaged_range")
                   .Help("Runs of damaged blocks, first and last block number (at most 16 listed)")
                   .Register(registry);
}

void ScrubMetrics::on_step(uint64_t checked, uint64_t position) {
    checked_->Increment(static_cast<double>(checked));
    position_->Set(static_cast<double>(position));
}

void ScrubMetrics::on_pass(double seconds) {
    passes_->Increment();
    last_pass_->Set(seconds);
}

void ScrubMetrics::on_repaired(uint64_t n) { repaired_->Increment(static_cast<double>(n)); }

void ScrubMetrics::set_damaged_files(size_t n) { damaged_files_->Set(static_cast<double>(n)); }

void ScrubMetrics::on_history_step(uint64_t checked) { history_checked_->Increment(static_cast<double>(checked)); }

void ScrubMetrics::set_history_damaged(size_t n) { history_damaged_->Set(static_cast<double>(n)); }

void ScrubMetrics::set_damaged(const std::vector<uint64_t>& blocks) {
    // Children are replaced only when the set changed: a scrape never sees a range missing. The
    // count is set last, so a scrape that sees the new count sees its ranges too.
    if (blocks == exported_) {
        damaged_->Set(static_cast<double>(blocks.size()));
        return;
    }
    exported_ = blocks;
    for (prometheus::Gauge* g : range_children_) ranges_->Remove(g);
    range_children_.clear();
    for (size_t i = 0; i < blocks.size() && range_children_.size() < kRanges;) {
        size_t j = i;
        while (j + 1 < blocks.size() && blocks[j + 1] == blocks[j] + 1) ++j;
        prometheus::Gauge& g =
            ranges_->Add({{"first", std::to_string(blocks[i])}, {"last", std::to_string(blocks[j])}});
        g.Set(1);
        range_children_.push_back(&g);
        i = j + 1;
    }
    damaged_->Set(static_cast<double>(blocks.size()));
}

Scrubber::Scrubber(db::ChainDb& db, ScrubberOptions options) : db_(db), options_(std::move(options)) {}

Scrubber::~Scrubber() { stop(); }

void Scrubber::start() {
    if (options_.rate <= 0 || thread_.joinable()) return;
    thread_ = std::thread([this] { run(); });
}

void Scrubber::stop() {
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

bool Scrubber::sleep_until(std::chrono::steady_clock::time_point until) {
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, until, [this] { return stopping_; });
    return !stopping_;
}

void Scrubber::run() {
    using Clock = std::chrono::steady_clock;
    std::vector<uint64_t> last_damaged = db_.damaged_blocks();  // ascending, as of the last step
    std::vector<uint64_t> last_history_damaged;
    Clock::time_point next_repair{};
    while (true) {
        const std::optional<db::Head> head = db_.head();
        if (!head) {
            if (!sleep_until(Clock::now() + options_.pause)) return;
            continue;
        }
        const auto pass_start = Clock::now();
        // LevelDB's tables straight from disk first: its block cache may hide a block that rotted.
        // Paced like the walk: on mainnet they hold about 1 GB (the hash index).
        uint64_t file_bytes = 0;
        bool stopped = false;
        auto files = db_.scrub_leveldb_files([&](uint64_t bytes) {
            file_bytes += bytes;
            const double seconds = static_cast<double>(file_bytes) / (options_.rate * options_.file_bytes_per_header);
            stopped = !sleep_until(pass_start +
                                   std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
            return !stopped;
        });
        if (stopped) return;
        const auto walk_start = Clock::now();
        if (!files) {
            spdlog::error("LevelDB table scrub failed               err=\"{}\"", files.error().message);
        } else {
            for (const std::string& f : *files) {
                spdlog::error(
                    "Damaged LevelDB table                    file=\"{}\" (its headers are not served; stop "
                    "the node and run headerd repair)",
                    f);
            }
            if (options_.metrics) options_.metrics->set_damaged_files(files->size());
        }
        uint64_t top = head->number;
        std::optional<Hash32> expect = head->hash;
        uint64_t pass_checked = 0;
        for (;;) {
            auto step = db_.scrub(top, options_.batch, expect);
            if (!step) {
                spdlog::error("Scrub failed                             block={} err=\"{}\"", top,
                              step.error().message);
                break;
            }
            pass_checked += step->checked;
            checked_ += step->checked;
            // Logged once when found, not again on every pass while it waits for its repair.
            for (uint64_t b : step->damaged) {
                if (std::ranges::binary_search(last_damaged, b)) continue;
                spdlog::error("Damaged header found                     block={} (not served until repaired)", b);
            }
            std::vector<uint64_t> damaged = db_.damaged_blocks();
            if (!damaged.empty() && options_.repair && Clock::now() >= next_repair) {
                next_repair = Clock::now() + options_.repair_retry;
                const uint64_t repaired = options_.repair();
                if (repaired > 0) {
                    if (options_.metrics) options_.metrics->on_repaired(repaired);
                    damaged = db_.damaged_blocks();
                }
            }
            if (options_.metrics) {
                const uint64_t next = step->checked > top ? 0 : top - step->checked;
                options_.metrics->on_step(step->checked, next);
                if (damaged.size() != last_damaged.size() || !damaged.empty()) options_.metrics->set_damaged(damaged);
            }
            last_damaged = std::move(damaged);
            if (step->checked == 0 || step->checked > top) break;
            top -= step->checked;
            expect = step->next_expect;
            // The pace: this pass's headers at `rate` per second.
            const auto due = walk_start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                              static_cast<double>(pass_checked) / options_.rate));
            if (!sleep_until(due)) return;
        }
        if (options_.history != nullptr && !history_pass(last_history_damaged)) return;
        passes_++;
        const double seconds = std::chrono::duration<double>(Clock::now() - pass_start).count();
        if (options_.metrics) options_.metrics->on_pass(seconds);
        spdlog::debug("Scrub pass done                          headers={} seconds={:.1f}", pass_checked, seconds);
        if (!sleep_until(Clock::now() + options_.pause)) return;
    }
}

bool Scrubber::history_pass(std::vector<uint64_t>& last_damaged) {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    uint64_t checked = 0;
    for (const auto& [epoch, file] : options_.history->epochs()) {
        const uint64_t first = epoch * db::kEpochBlocks;
        for (uint64_t from = first; from < first + file.count;) {
            const uint64_t n = std::min<uint64_t>(options_.batch, first + file.count - from);
            auto found = options_.history->scrub(db_, from, n);
            if (!found) {
                spdlog::error("History scrub failed                     block={} err=\"{}\"", from,
                              found.error().message);
                return sleep_until(Clock::now() + options_.pause);
            }
            for (uint64_t b : *found) {
                if (std::ranges::binary_search(last_damaged, b)) continue;
                spdlog::error(
                    "Damaged history found                    block={} err=\"{}\" (its body and receipts are "
                    "not served; stop the node, delete {} and import a sound copy: docs/history.md)",
                    b, options_.history->damage(b), file.path);
            }
            last_damaged = options_.history->damaged_blocks();
            checked += n;
            history_checked_ += n;
            from += n;
            if (options_.metrics) {
                options_.metrics->on_history_step(n);
                options_.metrics->set_history_damaged(last_damaged.size());
            }
            const auto due = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                         static_cast<double>(checked) / options_.history_rate));
            if (!sleep_until(due)) return false;
        }
    }
    return true;
}

}  // namespace headerd::sync
