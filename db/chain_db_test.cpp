#include "db/chain_db.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "ancient/file_system.hpp"
#include "core/block_header.hpp"
#include "core/chain_config.hpp"
#include "db/import.hpp"
#include "db/test_fixture.hpp"
#include "tests/reference_chain.hpp"

namespace headerd::db {
namespace {

namespace fs = std::filesystem;
using testing::mainnet;

constexpr size_t kHeaders = 300;

class ChainDbTest : public testing::DatadirTest {
  protected:
    ChainDbTest() : DatadirTest("db", 4096) {}  // a handful of headers per data file: rollover everywhere

    // Mainnet headers from..from+n-1.
    std::span<const NewHeader> headers(size_t from, size_t n) { return {mainnet().data() + from, n}; }
};

TEST_F(ChainDbTest, EmptyDatabaseHasNoHeadAndReturnsEmptyRanges) {
    EXPECT_FALSE(db_->head());
    EXPECT_EQ(db_->config(), nullptr);
    ItemBuffer out;
    out.push(as_bytes("stale"));
    ASSERT_TRUE(db_->header_range(0, 10, Order::kAscending, out));
    EXPECT_TRUE(out.empty());
}

TEST_F(ChainDbTest, OpeningAMissingDatadirWithoutCreateNamesIt) {
    auto r = ChainDb::open((dir_ / "nope").string());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find((dir_ / "nope").string()), std::string::npos);
}

TEST_F(ChainDbTest, AppendRejectsHeadersThatDoNotExtendTheHead) {
    ASSERT_TRUE(db_->append(headers(0, 10)));
    // Skips block 10.
    auto gap = db_->append(headers(11, 5));
    ASSERT_FALSE(gap);
    EXPECT_NE(gap.error().message.find("block 11: expected block 10"), std::string::npos) << gap.error().message;
    // Right number, wrong parent.
    NewHeader forged = mainnet()[10];
    forged.rlp = mainnet()[12].rlp;
    auto link = db_->append(std::span<const NewHeader>(&forged, 1));
    ASSERT_FALSE(link);
    EXPECT_NE(link.error().message.find("parent hash"), std::string::npos) << link.error().message;
    // Nothing of the rejected batches was written.
    EXPECT_EQ(db_->head()->number, 9u);
    auto h = db_->canonical_hash(10);
    ASSERT_TRUE(h);
    EXPECT_FALSE(*h);
}

TEST_F(ChainDbTest, RangesAcrossFreezerFilesAndTheBoundarySurviveReopen) {
    ASSERT_TRUE(db_->append(headers(0, kHeaders)));
    FreezeOptions opts;
    opts.keep = 50;
    opts.batch = 64;
    auto frozen = db_->freeze(opts);
    ASSERT_TRUE(frozen) << frozen.error().message;
    EXPECT_EQ(*frozen, kHeaders - 50);
    open(false);
    EXPECT_EQ(db_->ancient_items(), kHeaders - 50);
    EXPECT_EQ(db_->head()->total_difficulty, mainnet()[kHeaders - 1].total_difficulty);
    ItemBuffer out;
    for (uint64_t from = 0; from < kHeaders; from += 7) {
        for (Order order : {Order::kAscending, Order::kDescending}) {
            ASSERT_TRUE(db_->header_range(from, 40, order, out));
            const uint64_t n =
                order == Order::kAscending ? std::min<uint64_t>(40, kHeaders - from) : std::min<uint64_t>(40, from + 1);
            ASSERT_EQ(out.size(), n) << from;
            for (size_t i = 0; i < n; ++i) {
                const uint64_t number = order == Order::kAscending ? from + i : from - i;
                ASSERT_TRUE(std::ranges::equal(out.item(i), mainnet()[number].rlp)) << number;
            }
        }
    }
}

TEST_F(ChainDbTest, MemoryUseCountsTheMemtableAndABlockCacheKeptToItsCapacity) {
    db_.reset();
    ChainDbOptions opts;
    opts.leveldb_cache_bytes = 64u << 10;  // four 16 KB blocks
    auto r = ChainDb::open(dir_.string(), opts);
    ASSERT_TRUE(r) << r.error().message;
    db_ = std::move(*r);
    EXPECT_EQ(db_->memory_use().block_cache_capacity, 64u << 10);
    EXPECT_EQ(db_->memory_use().block_cache_bytes, 0u);
    const uint64_t empty_memtable = db_->memory_use().memtable_bytes;
    ASSERT_TRUE(db_->append(headers(0, kHeaders)));
    EXPECT_GT(db_->memory_use().memtable_bytes, empty_memtable + kHeaders * 500) << "the headers are in the memtable";
    // Freezing compacts the frozen range: the memtable is written to a table file. Reads of the
    // kept headers then come from table blocks, which the cache keeps up to its capacity.
    FreezeOptions freeze;
    freeze.keep = 200;
    ASSERT_TRUE(db_->freeze(freeze));
    EXPECT_LT(db_->memory_use().memtable_bytes, kHeaders * 100);
    ItemBuffer out;
    for (uint64_t from = kHeaders - 200; from < kHeaders; from += 10) {
        ASSERT_TRUE(db_->header_range(from, 10, Order::kAscending, out));
        ASSERT_EQ(out.size(), 10u);
    }
    const ChainDb::MemoryUse m = db_->memory_use();
    EXPECT_GT(m.block_cache_bytes, 0u);
    // LevelDB splits the cache into 16 shards, and each may go past its share by the block it
    // inserted last (it evicts only before inserting): at most one 16 KB block (and its handle) each.
    EXPECT_LE(m.block_cache_bytes, m.block_cache_capacity + 16 * (17u << 10));
}

// Records every store read header_range reports.
struct RecordingObserver final : ReadObserver {
    struct Read {
        Store store;
        uint64_t headers;
    };
    std::vector<Read> reads;
    void on_read(Store store, uint64_t headers, std::chrono::steady_clock::duration elapsed) noexcept override {
        EXPECT_GE(elapsed.count(), 0);
        reads.push_back({store, headers});
    }
};

TEST_F(ChainDbTest, ReadObserverSeesEachStoreReadOfARangeWithItsHeaderCount) {
    ASSERT_TRUE(db_->append(headers(0, kHeaders)));
    FreezeOptions opts;
    opts.keep = 100;
    ASSERT_TRUE(db_->freeze(opts));
    ASSERT_EQ(db_->ancient_items(), 200u);
    RecordingObserver observer;
    db_->set_read_observer(&observer);
    ItemBuffer out;
    // 190..209 ascending: 10 frozen headers, then 10 from LevelDB.
    ASSERT_TRUE(db_->header_range(190, 20, Order::kAscending, out));
    ASSERT_EQ(observer.reads.size(), 2u);
    EXPECT_EQ(observer.reads[0].store, Store::kAncient);
    EXPECT_EQ(observer.reads[0].headers, 10u);
    EXPECT_EQ(observer.reads[1].store, Store::kLevelDb);
    EXPECT_EQ(observer.reads[1].headers, 10u);
    // 204 down to 185: LevelDB first (5), then the freezer (15).
    observer.reads.clear();
    ASSERT_TRUE(db_->header_range(204, 20, Order::kDescending, out));
    ASSERT_EQ(observer.reads.size(), 2u);
    EXPECT_EQ(observer.reads[0].store, Store::kLevelDb);
    EXPECT_EQ(observer.reads[0].headers, 5u);
    EXPECT_EQ(observer.reads[1].store, Store::kAncient);
    EXPECT_EQ(observer.reads[1].headers, 15u);
    // Off again: nothing reported.
    db_->set_read_observer(nullptr);
    observer.reads.clear();
    ASSERT_TRUE(db_->header_range(0, 300, Order::kAscending, out));
    EXPECT_TRUE(observer.reads.empty());
}

TEST_F(ChainDbTest, KeepZeroFreezesTheHeadToo) {
    ASSERT_TRUE(db_->append(headers(0, 100)));
    FreezeOptions opts;
    opts.keep = 0;
    ASSERT_TRUE(db_->freeze(opts));
    EXPECT_EQ(db_->ancient_items(), 100u);
    EXPECT_EQ(db_->stats().kv_headers, 0u);
    open(false);
    EXPECT_EQ(db_->head()->number, 99u);
    // The chain keeps growing on top of a fully frozen store.
    ASSERT_TRUE(db_->append(headers(100, 10)));
    ItemBuffer out;
    ASSERT_TRUE(db_->header_range(95, 10, Order::kAscending, out));
    ASSERT_EQ(out.size(), 10u);
    EXPECT_TRUE(std::ranges::equal(out.item(9), mainnet()[104].rlp));
}

TEST_F(ChainDbTest, DuplicatesLeftByAnInterruptedFreezeAreRemovedByTheNextOne) {
    ASSERT_TRUE(db_->append(headers(0, kHeaders)));
    FreezeOptions stop;
    stop.keep = 100;
    stop.on_step = [](FreezeStep step, uint64_t) { return step != FreezeStep::kSynced; };
    ASSERT_TRUE(db_->freeze(stop));
    open(false);
    EXPECT_EQ(db_->ancient_items(), kHeaders - 100);
    // The LevelDB copies are still there: kv_headers counts only what the freezer lacks.
    EXPECT_EQ(db_->stats().kv_headers, 100u);
    FreezeOptions opts;
    opts.keep = 50;
    ASSERT_TRUE(db_->freeze(opts));
    EXPECT_EQ(db_->stats().kv_headers, 50u);
    open(false);
    ItemBuffer out;
    ASSERT_TRUE(db_->header_range(0, kHeaders, Order::kAscending, out));
    ASSERT_EQ(out.size(), kHeaders);
}

// A crash (every later filesystem mutation fails) at each mutation of a freeze, followed by a power
// cut that loses, keeps or zeroes what was not synced: the database reopens on the real filesystem,
// holds every header, and a second freeze completes. LevelDB's own writes are synced batches.
// canonical_hashes: a run across the freezer and LevelDB in two reads, cut at the head, nothing
// below an anchored chain's first block; the same hashes as canonical_hash gives one by one.
TEST_F(ChainDbTest, CanonicalHashesReadRunsAcrossBothStoresAndStopAtTheHead) {
    ASSERT_TRUE(db_->append(headers(0, 3000)));
    FreezeOptions freeze;
    freeze.keep = 1000;
    ASSERT_EQ(db_->freeze(freeze).value(), 2000u);
    std::vector<Hash32> got;
    ASSERT_TRUE(db_->canonical_hashes(1900, 200, got));  // 100 frozen, 100 in LevelDB
    ASSERT_EQ(got.size(), 200u);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], mainnet()[1900 + i].hash) << i;
    got.clear();
    ASSERT_TRUE(db_->canonical_hashes(2990, 50, got));
    EXPECT_EQ(got.size(), 10u);  // the head is block 2999
    got.clear();
    ASSERT_TRUE(db_->canonical_hashes(3000, 5, got));
    EXPECT_TRUE(got.empty());
}

TEST_F(ChainDbTest, AnAnchoredChainHoldsNothingBelowItsFirstBlockStaysInLevelDbAndSurvivesReopen) {
    ASSERT_TRUE(db_->set_config(mainnet_config()));
    const Anchor anchor{1000, mainnet()[999].hash, mainnet()[999].total_difficulty};
    // The first header must link to the anchor's parent hash: anchored one block too high, it does not.
    auto misfit = db_->append(headers(1000, 10), Anchor{1001, mainnet()[999].hash, 0});
    ASSERT_FALSE(misfit);
    EXPECT_NE(misfit.error().message.find("block 1000: expected block 1001"), std::string::npos)
        << misfit.error().message;
    EXPECT_FALSE(db_->head());
    EXPECT_FALSE(db_->anchor());

    ASSERT_TRUE(db_->append(headers(1000, 500), anchor));
    auto again = db_->append(headers(1500, 1), anchor);
    ASSERT_FALSE(again);
    EXPECT_NE(again.error().message.find("holds one already (head 1499)"), std::string::npos) << again.error().message;
    ASSERT_TRUE(db_->append(headers(1500, 100)));  // later headers extend it as any chain

    // Freezing leaves an anchored chain where it is.
    FreezeOptions freeze;
    freeze.keep = 0;
    ASSERT_EQ(db_->freeze(freeze).value(), 0u);
    for (int pass = 0; pass < 2; ++pass) {
        SCOPED_TRACE(pass == 0 ? "open" : "reopened");
        EXPECT_EQ(db_->anchor(), anchor);
        EXPECT_EQ(db_->first_block(), 1000u);
        EXPECT_EQ(db_->ancient_items(), 0u);
        EXPECT_EQ(db_->head()->number, 1599u);
        ItemBuffer out;
        ASSERT_TRUE(db_->header_range(999, 5, Order::kAscending, out));
        EXPECT_TRUE(out.empty());  // a range ends at the first block not held
        ASSERT_TRUE(db_->header_range(1000, 5, Order::kAscending, out));
        ASSERT_EQ(out.size(), 5u);
        EXPECT_EQ(Bytes(out.item(0).begin(), out.item(0).end()),
                  Bytes(mainnet()[1000].rlp.begin(), mainnet()[1000].rlp.end()));
        out.clear();
        ASSERT_TRUE(db_->header_range(1002, 10, Order::kDescending, out));
        ASSERT_EQ(out.size(), 3u);  // 1002, 1001, 1000
        EXPECT_EQ(Bytes(out.item(2).begin(), out.item(2).end()),
                  Bytes(mainnet()[1000].rlp.begin(), mainnet()[1000].rlp.end()));
        EXPECT_FALSE(db_->canonical_hash(999).value());
        std::vector<Hash32> run;
        ASSERT_TRUE(db_->canonical_hashes(999, 3, run));
        EXPECT_TRUE(run.empty());
        ASSERT_TRUE(db_->canonical_hashes(1598, 5, run));
        EXPECT_EQ(run, (std::vector<Hash32>{mainnet()[1598].hash, mainnet()[1599].hash}));
        EXPECT_EQ(db_->canonical_hash(1000).value(), mainnet()[1000].hash);
        auto verified = verify_chain(*db_);
        ASSERT_TRUE(verified) << verified.error().message;
        EXPECT_EQ(verified->headers, 600u);
        // The scrubber walks down to the anchor and stops there.
        auto step = db_->scrub(1599, 10'000, mainnet()[1599].hash);
        ASSERT_TRUE(step) << step.error().message;
        EXPECT_EQ(step->checked, 600u);
        EXPECT_TRUE(step->damaged.empty());
        EXPECT_EQ(step->next_expect, mainnet()[999].hash);
        EXPECT_EQ(db_->scrub(999, 10, mainnet()[999].hash)->checked, 0u);
        ASSERT_NO_FATAL_FAILURE(reopen());
    }
}

TEST(ChainDbCrash, PowerCutAtEveryFreezerMutationLeavesEveryHeader) {
    using Unsynced = ancient::FaultInjectingFileSystem::Unsynced;
    const testing::TempDatadir datadir("crash");
    const fs::path& dir = datadir.path();
    ancient::PosixFileSystem posix;
    constexpr size_t kN = 120;
    uint64_t total_mutations = 0;
    for (uint64_t crash_at = 1;; ++crash_at) {
        for (Unsynced fate : {Unsynced::kLost, Unsynced::kKept, Unsynced::kZeroed}) {
            fs::remove_all(dir);
            ancient::FaultInjectingFileSystem faulty(posix, /*forward_syncs=*/false);
            ChainDbOptions opts;
            opts.create_if_missing = true;
            opts.ancient_max_file_size = 2048;
            opts.fs = &faulty;
            {
                auto db = ChainDb::open(dir.string(), opts);
                ASSERT_TRUE(db) << db.error().message;
                ASSERT_TRUE((*db)->append({mainnet().data(), kN}));
                faulty.reset_counters();
                faulty.crash_at(crash_at);
                FreezeOptions fo;
                fo.keep = 20;
                fo.batch = 25;
                auto r = (*db)->freeze(fo);
                if (r && !faulty.crashed()) {
                    // The freeze finished before reaching this mutation: every case is covered.
                    total_mutations = faulty.mutations();
                    ASSERT_EQ(*r, kN - 20);
                    break;
                }
            }
            ASSERT_TRUE(faulty.drop_unsynced_data([fate](const std::string&) { return fate; }));
            ChainDbOptions reopen;
            reopen.ancient_max_file_size = 2048;
            auto db = ChainDb::open(dir.string(), reopen);
            ASSERT_TRUE(db) << "crash at mutation " << crash_at << ": " << db.error().message;
            ItemBuffer out;
            ASSERT_TRUE((*db)->header_range(0, kN, Order::kAscending, out));
            ASSERT_EQ(out.size(), kN) << "crash at mutation " << crash_at;
            for (size_t i = 0; i < kN; ++i) {
                ASSERT_TRUE(std::ranges::equal(out.item(i), mainnet()[i].rlp)) << "block " << i;
            }
            FreezeOptions fo;
            fo.keep = 20;
            auto r = (*db)->freeze(fo);
            ASSERT_TRUE(r) << r.error().message;
            EXPECT_EQ(*r, kN - 20);
        }
        if (total_mutations != 0) break;
        ASSERT_LT(crash_at, 10'000u) << "freeze never finished";
    }
    EXPECT_GT(total_mutations, 10u);
}

TEST(ReverseItems, ReversesOrderFromTheGivenItemAndKeepsBytes) {
    ItemBuffer b;
    for (const char* s : {"a", "bcd", "ef", "ghij"}) b.push(as_bytes(s));
    reverse_items(b, 1);
    ASSERT_EQ(b.size(), 4u);
    EXPECT_EQ(as_chars(b.item(0)), "a");
    EXPECT_EQ(as_chars(b.item(1)), "ghij");
    EXPECT_EQ(as_chars(b.item(2)), "ef");
    EXPECT_EQ(as_chars(b.item(3)), "bcd");
    reverse_items(b, 0);
    EXPECT_EQ(as_chars(b.item(0)), "bcd");
    EXPECT_EQ(as_chars(b.item(3)), "a");
    EXPECT_EQ(as_chars(ByteView{b.bytes}), "bcdefghija");
}

TEST(ReverseItems, MatchesANaiveReversalOnRealHeaders) {
    // The mainnet headers of varying sizes, every split point: the same bytes as building the
    // reversed buffer item by item.
    const auto& chain = headerd::testing::reference_chain().headers;
    for (size_t first : {size_t{0}, size_t{1}, size_t{7}, size_t{199}}) {
        ItemBuffer b;
        for (size_t i = 0; i < 200; ++i) b.push(chain[1000 + i * 13]);
        ItemBuffer want;
        for (size_t i = 0; i < first; ++i) want.push(b.item(i));
        for (size_t i = b.size(); i-- > first;) want.push(b.item(i));
        reverse_items(b, first);
        EXPECT_EQ(b.bytes, want.bytes) << first;
        EXPECT_EQ(b.ends, want.ends) << first;
    }
}

}  // namespace
}  // namespace headerd::db
