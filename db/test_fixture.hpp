#pragma once

// What the db/ tests share: the mainnet headers 0..8191 as ChainDb::append takes them, a temporary
// datadir with a ChainDb open on it (DatadirTest), and the harness of the concurrency tests (reader
// threads beside one writer that stops for them: ReaderThread, WriterStops).

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/block_header.hpp"
#include "db/chain_db.hpp"
#include "tests/reference_chain.hpp"

namespace headerd::db::testing {

namespace fs = std::filesystem;

inline constexpr uint64_t kChain = 8192;  // mainnet blocks 0..8191 (tests/data)

// The mainnet headers 0..8191 with what append() needs: hashes from the published list, total
// difficulty and timestamp from the decoded headers.
inline const std::vector<NewHeader>& mainnet() {
    static const std::vector<NewHeader> headers = [] {
        const auto& ref = headerd::testing::reference_chain();
        std::vector<NewHeader> out;
        U256 td = 0;
        for (size_t i = 0; i < ref.headers.size(); ++i) {
            const BlockHeader h = *decode_block_header(ref.headers[i]);
            td += h.difficulty;
            out.push_back(NewHeader{ref.headers[i], ref.hashes[i], h.number, td, h.timestamp});
        }
        return out;
    }();
    return headers;
}

// A datadir path of its own under the system's temporary directory: "headerd-LABEL-PID", and
// "-TEST" after it when a test is running. Whatever an earlier run left there is removed on
// creation, and everything in it on destruction.
class TempDatadir {
  public:
    explicit TempDatadir(const std::string& label) {
        std::string name = "headerd-" + label + "-" + std::to_string(::getpid());
        if (const auto* test = ::testing::UnitTest::GetInstance()->current_test_info()) {
            name += "-" + std::string(test->name());
        }
        path_ = fs::temp_directory_path() / name;
        fs::remove_all(path_);
    }
    ~TempDatadir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    TempDatadir(const TempDatadir&) = delete;
    TempDatadir& operator=(const TempDatadir&) = delete;

    const fs::path& path() const { return path_; }

  private:
    fs::path path_;
};

// A test with a fresh datadir (TempDatadir) and a ChainDb open on it, created in SetUp; the
// database is closed and the datadir removed in TearDown. Freezer data files are kept small
// (ancient_max_file_size) so that tests cross file boundaries.
class DatadirTest : public ::testing::Test {
  protected:
    DatadirTest(std::string label, uint64_t ancient_max_file_size)
        : label_(std::move(label)), ancient_max_file_size_(ancient_max_file_size) {}

    void SetUp() override {
        datadir_.emplace(label_);
        dir_ = datadir_->path();
        open(true);
    }
    void TearDown() override {
        db_.reset();
        datadir_.reset();
    }
    // (Re)opens the database; a failure fails the test and leaves db_ empty (callers that go on use
    // ASSERT_NO_FATAL_FAILURE).
    void open(bool create) {
        db_.reset();
        ChainDbOptions opts;
        opts.create_if_missing = create;
        opts.ancient_max_file_size = ancient_max_file_size_;
        auto r = ChainDb::open(dir_.string(), opts);
        ASSERT_TRUE(r) << r.error().message;
        db_ = std::move(*r);
    }
    void reopen() { open(false); }

    fs::path dir_;
    std::unique_ptr<ChainDb> db_;

  private:
    std::string label_;
    uint64_t ancient_max_file_size_;
    std::optional<TempDatadir> datadir_;
};

// ---- concurrency tests: readers beside one writer ------------------------------------------------
//
// The writer stops at chosen points (after an append, inside a freeze, ...) and waits until every
// reader has completed a whole iteration that started after that point; readers do at most
// kPerEpoch iterations between two such stops (epochs), which bounds the work. The harness signals
// with relaxed atomics only, so it adds no happens-before edge between writer and readers for
// ThreadSanitizer: every ordering TSan sees comes from ChainDb itself.

inline constexpr size_t kReaders = 4;
inline constexpr uint64_t kPerEpoch = 2;        // reader iterations per writer stop, at most
inline constexpr uint64_t kMinIterations = 40;  // per reader, in total; the last ones after the writer is done
inline constexpr uint64_t kMaxCount = 192;      // the serving limit of one GetBlockHeaders reply
inline constexpr uint64_t kAbove = 300;         // how far above the head or the chain random reads reach
// Odd, so that freeze batches and freezer files rarely line up and a freeze moves the boundary
// several times.
inline constexpr uint64_t kFreezeBatch = 151;

// One reader: iterate() does one round of checked reads until the first wrong one.
class ReaderThread {
  public:
    ReaderThread(const ChainDb& db, uint64_t seed) : db_(db), rng_(seed) {}
    virtual ~ReaderThread() = default;
    ReaderThread(const ReaderThread&) = delete;
    ReaderThread& operator=(const ReaderThread&) = delete;

    // Runs until the writer is done and at least kMinIterations are done, or the first wrong read.
    void run(const std::atomic<uint64_t>& epoch, const std::atomic<bool>& writer_done) {
        uint64_t current = std::numeric_limits<uint64_t>::max();
        uint64_t in_epoch = 0;
        for (;;) {
            const bool last = writer_done.load(std::memory_order_relaxed);
            const uint64_t e = epoch.load(std::memory_order_relaxed);
            if (last && iterations_ >= kMinIterations) break;
            if (e != current) {
                current = e;
                in_epoch = 0;
                enter_epoch(e);
            }
            if (!last && in_epoch >= kPerEpoch) {
                std::this_thread::yield();
                continue;
            }
            if (!iterate()) break;
            ++iterations_;
            ++in_epoch;
            done_epoch.store(e, std::memory_order_relaxed);
        }
        done_epoch.store(std::numeric_limits<uint64_t>::max(), std::memory_order_relaxed);
    }

    uint64_t iterations() const { return iterations_; }  // completed, in all
    const std::string& failure() const { return failure_; }

    // The epoch at the start of the last completed iteration; max once this reader has stopped.
    std::atomic<uint64_t> done_epoch{0};

  protected:
    // One round of reads, each checked; false (after fail()) at the first wrong one.
    virtual bool iterate() = 0;
    // Called before the first iteration that starts in epoch e.
    virtual void enter_epoch(uint64_t /*e*/) {}

    bool fail(std::string what) {
        failure_ = std::move(what);
        return false;
    }
    uint64_t uniform(uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_); }
    Order any_order() { return uniform(0, 1) == 0 ? Order::kAscending : Order::kDescending; }

    const ChainDb& db_;

  private:
    std::mt19937_64 rng_;
    uint64_t iterations_{0};
    std::string failure_;
};

// The writer's side: epochs, the stops, and the threads.
class WriterStops {
  public:
    explicit WriterStops(std::vector<ReaderThread*> readers) : readers_(std::move(readers)) {}

    // Starts a new epoch, in which every reader may do kPerEpoch more iterations; returns it.
    uint64_t release() { return epoch_.fetch_add(1, std::memory_order_relaxed) + 1; }
    // Waits until every reader has completed an iteration that started in epoch e or later.
    void wait(uint64_t e) const {
        for (const ReaderThread* r : readers_) {
            while (r->done_epoch.load(std::memory_order_relaxed) < e) std::this_thread::yield();
        }
    }
    // Makes every reader complete one whole iteration that starts after this call.
    void let_readers_in() { wait(release()); }

    // Runs every reader on a thread of its own and `write` on another until both are done; returns
    // the seconds that took.
    double run(const std::function<void()>& write) {
        const auto start = std::chrono::steady_clock::now();
        std::vector<std::thread> threads;
        for (ReaderThread* r : readers_) threads.emplace_back([this, r] { r->run(epoch_, writer_done_); });
        std::thread writer([&] {
            write();
            writer_done_.store(true, std::memory_order_relaxed);
        });
        writer.join();
        for (auto& t : threads) t.join();
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }

  private:
    std::vector<ReaderThread*> readers_;
    std::atomic<uint64_t> epoch_{0};
    std::atomic<bool> writer_done_{false};
};

// kReaders readers of type R, each made from the database and its index (its seed), and the
// writer's side over them.
template <class R>
struct Readers {
    explicit Readers(const ChainDb& db) : readers(make(db)), harness(pointers(readers)) {}

    std::vector<std::unique_ptr<R>> readers;
    WriterStops harness;

  private:
    static std::vector<std::unique_ptr<R>> make(const ChainDb& db) {
        std::vector<std::unique_ptr<R>> out;
        for (size_t i = 0; i < kReaders; ++i) out.push_back(std::make_unique<R>(db, i));
        return out;
    }
    static std::vector<ReaderThread*> pointers(const std::vector<std::unique_ptr<R>>& rs) {
        std::vector<ReaderThread*> out;
        for (const auto& r : rs) out.push_back(r.get());
        return out;
    }
};

}  // namespace headerd::db::testing
