// ChainDb's thread-safety promise (chain_db.hpp) under real load: reader threads read header
// ranges, single headers by number and by hash, the head and the store stats, across the
// LevelDB/freezer boundary, while one writer thread appends headers and freezes them. Every read
// is checked byte for byte against the published mainnet headers (tests/data); "absent" is
// accepted only above the head as it stood while the read ran. scripts/sanitize.sh runs this under
// ThreadSanitizer.
//
// Interleaving is forced, not hoped for: after each append, after each freeze and at steps inside
// freezes (the batch is in the freezer but not yet switched over, its LevelDB copies deleted), the
// writer waits until every reader has completed a whole iteration that started after that point
// (the harness of db/test_fixture.hpp: ReaderThread, WriterStops).

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/block_header.hpp"
#include "db/chain_db.hpp"
#include "db/test_fixture.hpp"

namespace headerd::db {
namespace {

using testing::kAbove;
using testing::kChain;
using testing::kFreezeBatch;
using testing::kMaxCount;
using testing::kMinIterations;
using testing::kReaders;
using testing::mainnet;

constexpr uint64_t kInitial = 1024;     // blocks [0, 1024) are in LevelDB before the threads start
constexpr uint64_t kAppendBatch = 512;  // the writer takes the head to 8191 in 14 appends
// Keep values per writer step. The boundary is head + 1 - keep, never lowered, and the head grows
// by kAppendBatch a step, so it moves at every step.
constexpr std::array<uint64_t, 8> kKeeps{900, 500, 1000, 200, 600, 60, 300, 100};

// Counts the headers each store served, from every reading thread at once.
struct CountingObserver final : ReadObserver {
    std::array<std::atomic<uint64_t>, kStoreCount> headers{};
    void on_read(Store store, uint64_t n, std::chrono::steady_clock::duration) noexcept override {
        headers[static_cast<size_t>(store)].fetch_add(n, std::memory_order_relaxed);
    }
};

struct ReaderCounts {
    uint64_t ranges{0};         // header_range calls checked
    uint64_t range_headers{0};  // headers those calls returned, each compared byte for byte
    uint64_t straddling{0};     // ranges that certainly took headers from both stores
    uint64_t capped{0};         // ranges cut short by max_bytes
    uint64_t by_number{0};      // canonical_hash found and equal
    uint64_t by_hash{0};        // header_by_hash / number_by_hash found and equal
    uint64_t absent{0};         // lookups and ranges that found nothing, checked to be above the head
    uint64_t unknown_hash{0};   // a hash that is in no chain, not found
    uint64_t heads{0};          // head() checked against the reference
    uint64_t stats{0};
    std::set<uint64_t> boundaries;  // ancient_items values seen
};

class ChainReader final : public testing::ReaderThread {
  public:
    ChainReader(const ChainDb& db, size_t index) : ReaderThread(db, 0x5eed0000 + index) {}

    const ReaderCounts& counts() const { return counts_; }

  private:
    struct Snapshot {
        uint64_t head{0};
        uint64_t ancient{0};
    };

    // head() and ancient_items(), checked: the head is a real block with its hash, total difficulty
    // and timestamp, neither value ever goes back, and the freezer never runs past the head.
    bool snapshot(Snapshot& s) {
        const std::optional<Head> h = db_.head();
        const uint64_t a = db_.ancient_items();
        if (!h) return fail("head() is empty on a database that has a chain");
        if (h->number >= kChain) return fail(fmt::format("head {} is past the reference chain", h->number));
        const NewHeader& ref = mainnet()[h->number];
        if (h->hash != ref.hash || h->total_difficulty != ref.total_difficulty || h->timestamp != ref.timestamp) {
            return fail(fmt::format("head {} differs from the reference block", h->number));
        }
        if (h->number < last_.head || a < last_.ancient) {
            return fail(fmt::format("went back: head {} -> {}, ancient_items {} -> {}", last_.head, h->number,
                                    last_.ancient, a));
        }
        // The head is read first: the freezer may have grown since, but never past the newest head.
        const std::optional<Head> h2 = db_.head();
        if (a > h2->number + 1) return fail(fmt::format("ancient_items {} beyond head {}", a, h2->number));
        s = Snapshot{h->number, a};
        last_ = s;
        ++counts_.heads;
        counts_.boundaries.insert(a);
        return true;
    }

    // One header_range call, checked: the headers are exactly reference blocks from, from +- 1, ...;
    // their number is what the head allowed at some moment of the call, less only where max_bytes cut it.
    bool check_range(uint64_t from, uint64_t count, Order order, size_t max_bytes) {
        Snapshot before;
        if (!snapshot(before)) return false;
        auto r = db_.header_range(from, count, order, out_, max_bytes);
        Snapshot after;
        if (!snapshot(after)) return false;
        const std::string what = fmt::format("header_range({}, {}, {}, max_bytes {})", from, count,
                                             order == Order::kAscending ? "asc" : "desc", max_bytes);
        if (!r) return fail(what + ": " + r.error().message);
        auto full = [&](uint64_t head) -> uint64_t {
            if (from > head) return 0;
            return order == Order::kAscending ? std::min(count, head + 1 - from) : std::min(count, from + 1);
        };
        const uint64_t least = full(before.head);
        const uint64_t most = full(after.head);
        const uint64_t n = out_.size();
        if (n > most) return fail(fmt::format("{}: {} headers, at most {} exist", what, n, most));
        size_t bytes = 0;
        for (uint64_t i = 0; i < n; ++i) {
            const uint64_t number = order == Order::kAscending ? from + i : from - i;
            if (!std::ranges::equal(out_.item(i), mainnet()[number].rlp)) {
                return fail(fmt::format("{}: item {} is not block {}", what, i, number));
            }
            bytes += out_.item(i).size();
        }
        const bool capped = max_bytes != std::numeric_limits<size_t>::max();
        if (!capped && n < least) return fail(fmt::format("{}: {} headers, expected at least {}", what, n, least));
        if (capped) {
            if (least > 0 && n == 0) return fail(what + ": no header, at least one is always returned");
            if (n > 1 && bytes > max_bytes) return fail(fmt::format("{}: {} bytes", what, bytes));
            if (n < least) {
                // The head did not stop it, so max_bytes did: the next header would not have fitted.
                const uint64_t next = order == Order::kAscending ? from + n : from - n;
                if (bytes + mainnet()[next].rlp.size() <= max_bytes) {
                    return fail(fmt::format("{}: stopped at {} headers ({} bytes) with room for block {}", what, n,
                                            bytes, next));
                }
                ++counts_.capped;
            }
        }
        if (n == 0) {
            ++counts_.absent;
        } else {
            const uint64_t lo = order == Order::kAscending ? from : from - (n - 1);
            const uint64_t hi = order == Order::kAscending ? from + (n - 1) : from;
            // The boundary during the call was in [before.ancient, after.ancient].
            if (lo < before.ancient && hi >= after.ancient) ++counts_.straddling;
        }
        ++counts_.ranges;
        counts_.range_headers += n;
        return true;
    }

    bool check_number(uint64_t number) {
        Snapshot before;
        if (!snapshot(before)) return false;
        auto r = db_.canonical_hash(number);
        if (!r) return fail(fmt::format("canonical_hash({}): {}", number, r.error().message));
        if (!*r) {
            if (number <= before.head)
                return fail(fmt::format("canonical_hash({}) absent, head {}", number, before.head));
            ++counts_.absent;
            return true;
        }
        if (number >= kChain || **r != mainnet()[number].hash) {
            return fail(fmt::format("canonical_hash({}) is not the reference hash", number));
        }
        ++counts_.by_number;
        return true;
    }

    // By hash there is no head check in the lookup: a header appended but not yet the head may be
    // found, and must then be right.
    bool check_hash(uint64_t number) {
        Snapshot before;
        if (!snapshot(before)) return false;
        const NewHeader& ref = mainnet()[number];
        auto found = db_.header_by_hash(ref.hash, bytes_);
        if (!found) return fail(fmt::format("header_by_hash(block {}): {}", number, found.error().message));
        auto num = db_.number_by_hash(ref.hash);
        if (!num) return fail(fmt::format("number_by_hash(block {}): {}", number, num.error().message));
        if (!*found || !*num) {
            if (number <= before.head) {
                return fail(fmt::format("block {} not found by hash (header {}, number {}), head {}", number, *found,
                                        num->has_value(), before.head));
            }
            ++counts_.absent;
            return true;
        }
        if (!std::ranges::equal(bytes_, ref.rlp)) return fail(fmt::format("header_by_hash(block {}) differs", number));
        if (**num != number) return fail(fmt::format("number_by_hash(block {}) = {}", number, **num));
        ++counts_.by_hash;
        return true;
    }

    bool check_unknown_hash(uint64_t number) {
        Hash32 h = mainnet()[number].hash;
        h[31] ^= 0x5a;
        auto found = db_.header_by_hash(h, bytes_);
        if (!found) return fail(found.error().message);
        if (*found || !bytes_.empty()) return fail(fmt::format("a made-up hash near block {} was found", number));
        ++counts_.unknown_hash;
        return true;
    }

    bool check_stats() {
        Snapshot before;
        if (!snapshot(before)) return false;
        const StoreStats st = db_.stats();
        Snapshot after;
        if (!snapshot(after)) return false;
        if (st.ancient_items < before.ancient || st.ancient_items > after.ancient) {
            return fail(fmt::format("stats().ancient_items {} outside [{}, {}]", st.ancient_items, before.ancient,
                                    after.ancient));
        }
        if (st.kv_headers > after.head + 1) return fail(fmt::format("stats().kv_headers {}", st.kv_headers));
        // 8192 headers take a few MB in each store; anything near 2^64 is an error value summed in.
        if (st.leveldb_bytes > (uint64_t{1} << 32) || st.ancient_bytes > (uint64_t{1} << 32)) {
            return fail(fmt::format("stats() sizes {} (LevelDB) {} (ancient)", st.leveldb_bytes, st.ancient_bytes));
        }
        ++counts_.stats;
        return true;
    }

    size_t any_cap() {
        // One range in four is byte-capped, anywhere from less than a header to a whole reply.
        return uniform(0, 3) == 0 ? static_cast<size_t>(uniform(1, 120'000)) : std::numeric_limits<size_t>::max();
    }

    bool iterate() override {
        Snapshot s;
        if (!snapshot(s)) return false;
        // Around the boundary as it is now (it may move during the calls).
        const uint64_t near = s.ancient > 100 ? s.ancient - 100 + uniform(0, 200) : uniform(0, 200);
        if (!check_range(near, uniform(1, kMaxCount), any_order(), any_cap())) return false;
        // Anywhere, including above the head.
        if (!check_range(uniform(0, s.head + kAbove), uniform(1, 64), any_order(), any_cap())) return false;
        // From the head down, and the last few blocks up to and past it.
        if (!check_range(s.head, uniform(1, 32), Order::kDescending, std::numeric_limits<size_t>::max())) {
            return false;
        }
        if (!check_range(s.head - std::min<uint64_t>(s.head, uniform(0, 8)), uniform(1, 16), Order::kAscending,
                         std::numeric_limits<size_t>::max())) {
            return false;
        }
        // Single headers: by number at the boundary and anywhere, by hash near it and anywhere.
        const uint64_t at_boundary = std::min(kChain - 1, s.ancient - std::min<uint64_t>(s.ancient, 2) + uniform(0, 3));
        if (!check_number(at_boundary)) return false;
        if (!check_number(uniform(0, s.head + kAbove))) return false;
        if (!check_hash(std::min(kChain - 1, near))) return false;
        if (!check_hash(uniform(0, std::min(kChain - 1, s.head + kAbove)))) return false;
        if (!check_unknown_hash(uniform(0, s.head))) return false;
        if (iterations() % 8 == 0 && !check_stats()) return false;
        return true;
    }

    ItemBuffer out_;
    Bytes bytes_;
    Snapshot last_;
    ReaderCounts counts_;
};

// Freezer data files of 64 KiB (~60 of headers): rollovers happen while readers read.
class ChainDbConcurrency : public testing::DatadirTest {
  protected:
    ChainDbConcurrency() : DatadirTest("db-concurrency", 64 << 10) {}
};

TEST_F(ChainDbConcurrency, ReadersSeeExactHeadersWhileTheWriterAppendsAndFreezes) {
    const auto& ref = mainnet();
    ASSERT_EQ(ref.size(), kChain);
    for (uint64_t n : {uint64_t{0}, uint64_t{1}, kChain - 1}) {
        ASSERT_EQ(header_hash(ref[n].rlp), ref[n].hash) << "tests/data hashes do not match the headers at " << n;
    }

    ASSERT_TRUE(db_->append({ref.data(), kInitial}));
    CountingObserver observer;
    db_->set_read_observer(&observer);

    testing::Readers<ChainReader> pool(*db_);
    const auto& readers = pool.readers;
    testing::WriterStops& harness = pool.harness;
    // Makes every reader complete one whole iteration that starts after this call.
    uint64_t waits = 0;
    auto let_readers_in = [&] {
        harness.let_readers_in();
        ++waits;
    };

    std::string writer_failure;
    std::vector<uint64_t> boundaries{0};
    auto write = [&] {
        uint64_t freeze_batches = 0;
        for (uint64_t next = kInitial, step = 0; next < kChain; next += kAppendBatch, ++step) {
            const uint64_t n = std::min(kAppendBatch, kChain - next);
            if (auto r = db_->append({ref.data() + next, n}); !r) {
                writer_failure = fmt::format("append {}..{}: {}", next, next + n - 1, r.error().message);
                return;
            }
            let_readers_in();
            FreezeOptions fo;
            fo.keep = kKeeps[step % kKeeps.size()];
            fo.batch = kFreezeBatch;
            // Inside the freeze, every other batch: after the batch went into the freezer (still
            // served from LevelDB) and after its LevelDB copies were deleted (served from the freezer).
            fo.on_step = [&](FreezeStep s, uint64_t) {
                if (s == FreezeStep::kAppended) ++freeze_batches;
                if (s != FreezeStep::kSynced && freeze_batches % 2 == 0) let_readers_in();
                return true;
            };
            const uint64_t head = next + n - 1;
            const uint64_t expect = std::max(boundaries.back(), head + 1 > fo.keep ? head + 1 - fo.keep : 0);
            auto frozen = db_->freeze(fo);
            if (!frozen || *frozen != expect) {
                writer_failure = frozen ? fmt::format("freeze keep {} at head {}: {} frozen, expected {}", fo.keep,
                                                      head, *frozen, expect)
                                        : "freeze: " + frozen.error().message;
                return;
            }
            if (expect != boundaries.back()) boundaries.push_back(expect);
            let_readers_in();
        }
        // Finally everything, the head included: reads then come from the freezer alone.
        FreezeOptions all;
        all.keep = 0;
        all.batch = kFreezeBatch;
        auto frozen = db_->freeze(all);
        if (!frozen || *frozen != kChain) {
            writer_failure = frozen ? fmt::format("freeze keep 0: {} frozen", *frozen) : frozen.error().message;
            return;
        }
        boundaries.push_back(kChain);
        let_readers_in();
    };

    const double seconds = harness.run(write);

    ASSERT_EQ(writer_failure, "");
    ReaderCounts total;
    uint64_t iterations = 0;
    for (size_t i = 0; i < kReaders; ++i) {
        const ChainReader& r = *readers[i];
        EXPECT_EQ(r.failure(), "") << "reader " << i;
        const ReaderCounts& c = r.counts();
        // Every reader read at every boundary the writer set (it waited for each of them).
        EXPECT_TRUE(std::ranges::includes(c.boundaries, boundaries)) << "reader " << i;
        EXPECT_GE(r.iterations(), std::max(kMinIterations, waits)) << "reader " << i;
        iterations += r.iterations();
        total.ranges += c.ranges;
        total.range_headers += c.range_headers;
        total.straddling += c.straddling;
        total.capped += c.capped;
        total.by_number += c.by_number;
        total.by_hash += c.by_hash;
        total.absent += c.absent;
        total.unknown_hash += c.unknown_hash;
        total.heads += c.heads;
        total.stats += c.stats;
    }
    // The writer moved the boundary many times and stopped for the readers at every step.
    EXPECT_GE(boundaries.size(), 14u);
    EXPECT_GE(waits, 60u);
    // Enough of every kind of read that the test cannot pass by reading nothing (about half of what
    // a run does when every reader does one iteration per writer stop, the least it can do).
    EXPECT_GE(iterations, kReaders * std::max(kMinIterations, waits));
    EXPECT_GE(total.ranges, 4 * iterations);
    EXPECT_GE(total.range_headers, 40'000u);
    EXPECT_GE(total.straddling, 60u);
    EXPECT_GE(total.capped, 25u);
    EXPECT_GE(total.by_number, 300u);
    EXPECT_GE(total.by_hash, 300u);
    EXPECT_GE(total.absent, 30u);
    EXPECT_GE(total.unknown_hash, iterations);
    EXPECT_GE(total.heads, total.ranges);
    EXPECT_GE(total.stats, iterations / 8);
    EXPECT_GT(observer.headers[static_cast<size_t>(Store::kAncient)].load(), 0u);
    EXPECT_GT(observer.headers[static_cast<size_t>(Store::kLevelDb)].load(), 0u);
    std::printf(
        "%.1f s: %zu boundaries, %llu writer waits; %llu reader iterations: %llu ranges (%llu headers, %llu across "
        "the boundary, %llu byte-capped), %llu by number, %llu by hash, %llu absent above the head, %llu stats\n",
        seconds, boundaries.size(), static_cast<unsigned long long>(waits), static_cast<unsigned long long>(iterations),
        static_cast<unsigned long long>(total.ranges), static_cast<unsigned long long>(total.range_headers),
        static_cast<unsigned long long>(total.straddling), static_cast<unsigned long long>(total.capped),
        static_cast<unsigned long long>(total.by_number), static_cast<unsigned long long>(total.by_hash),
        static_cast<unsigned long long>(total.absent), static_cast<unsigned long long>(total.stats));

    // After the threads: the whole chain, from the freezer alone, and again after reopening.
    db_->set_read_observer(nullptr);
    for (int pass = 0; pass < 2; ++pass) {
        ASSERT_EQ(db_->head()->number, kChain - 1);
        ASSERT_EQ(db_->ancient_items(), kChain);
        ItemBuffer out;
        ASSERT_TRUE(db_->header_range(0, kChain, Order::kAscending, out));
        ASSERT_EQ(out.size(), kChain);
        for (uint64_t n = 0; n < kChain; ++n) ASSERT_TRUE(std::ranges::equal(out.item(n), ref[n].rlp)) << n;
        ASSERT_NO_FATAL_FAILURE(reopen());
    }
}

}  // namespace
}  // namespace headerd::db
