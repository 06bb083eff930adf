// Bit rot in both stores (db/scrub.cpp): a flipped byte is never returned by header_range, a scrub
// finds it, and repair_header writes the true header back. Real mainnet headers 0..8191: blocks
// [0, 6144) in the freezer, [6144, 8191] in LevelDB.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "ancient/test_util.hpp"
#include "core/block_header.hpp"
#include "core/chain_config.hpp"
#include "db/chain_db.hpp"
#include "db/import.hpp"
#include "tests/reference_chain.hpp"

namespace headerd::db {
namespace {

namespace fs = std::filesystem;
using headerd::testing::reference_chain;

constexpr uint64_t kHead = 8191;
constexpr uint64_t kAncient = 6144;

void flip_byte(const fs::path& path, uint64_t offset) { ancient::testing::flip_byte(path.string(), offset, 0x20); }

class ScrubTest : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("headerd-scrub-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        open(true);
        auto r = import_file(*db_, mainnet_config(), headerd::testing::kDataDir + "/mainnet-headers-0-8191.rlp");
        ASSERT_TRUE(r) << r.error().message;
        FreezeOptions fo;
        fo.keep = kHead + 1 - kAncient;
        auto f = db_->freeze(fo);
        ASSERT_TRUE(f) << f.error().message;
        ASSERT_EQ(*f, kAncient);
        open(false);  // LevelDB writes its log out as a table file on reopen
    }
    void TearDown() override {
        db_.reset();
        fs::remove_all(dir_);
    }
    void open(bool create) {
        db_.reset();
        ChainDbOptions opts;
        opts.create_if_missing = create;
        auto r = ChainDb::open(dir_.string(), opts);
        ASSERT_TRUE(r) << r.error().message;
        db_ = std::move(*r);
    }
    fs::path freezer_dir() const { return dir_ / "chaindata" / "ancient" / "chain"; }

    // Where block n lies in the freezer's first data file.
    std::pair<uint64_t, uint64_t> freezer_span(uint64_t n) const {
        return ancient::testing::item_span(freezer_dir().string(), n);
    }

    // Every block outside `damaged` reads back byte for byte, alone and in ranges that avoid them.
    void expect_sound_except(const std::vector<uint64_t>& damaged) {
        ItemBuffer out;
        uint64_t from = 0;
        auto check_run = [&](uint64_t lo, uint64_t hi) {  // [lo, hi)
            for (uint64_t at = lo; at < hi; at += 1024) {
                const uint64_t n = std::min<uint64_t>(1024, hi - at);
                auto r = db_->header_range(at, n, Order::kAscending, out);
                ASSERT_TRUE(r) << r.error().message;
                ASSERT_EQ(out.size(), n);
                for (uint64_t i = 0; i < n; ++i) {
                    ASSERT_TRUE(std::ranges::equal(out.item(i), reference_chain().headers[at + i])) << at + i;
                }
            }
        };
        for (uint64_t d : damaged) {
            check_run(from, d);
            from = d + 1;
        }
        check_run(from, kHead + 1);
    }

    // A scrub of the whole chain from the head, in steps of 1000.
    std::vector<uint64_t> scrub_all() {
        std::vector<uint64_t> found;
        std::optional<Hash32> expect = db_->head()->hash;
        uint64_t top = kHead;
        for (;;) {
            auto step = db_->scrub(top, 1000, expect);
            EXPECT_TRUE(step) << step.error().message;
            if (!step) return found;
            found.insert(found.end(), step->damaged.begin(), step->damaged.end());
            if (step->checked > top) break;
            top -= step->checked;
            expect = step->next_expect;
        }
        std::ranges::sort(found);
        return found;
    }

    // Flips a byte of block `block`'s header in the LevelDB table file that holds it (closed and
    // reopened around it when `reopen`, so that nothing is cached).
    void flip_leveldb(uint64_t block, bool reopen);
    // The LevelDB damage is refused, found, and repaired offline.
    void check_leveldb_damage_repaired();

    fs::path dir_;
    std::unique_ptr<ChainDb> db_;
};

TEST_F(ScrubTest, SoundChainScrubsCleanAndClearsAStaleMark) {
    db_->mark_damaged(1234);
    ItemBuffer out;
    auto refused = db_->header_range(1200, 100, Order::kAscending, out);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().kind, ErrorKind::kCorrupt);
    EXPECT_TRUE(scrub_all().empty());
    EXPECT_TRUE(db_->damaged_blocks().empty());
    expect_sound_except({});
}

// The chain changed above the walk (a reorg by serve --follow): the link it carries down no longer
// matches, but a header that hashes to its own canonical hash is sound, not damaged.
TEST_F(ScrubTest, AHeaderMatchingItsCanonicalHashIsSoundWhenTheLinkAboveChanged) {
    Hash32 stale{};
    stale[0] = 0x42;
    for (uint64_t top : {uint64_t{7000}, uint64_t{5000}}) {
        auto step = db_->scrub(top, 100, stale);
        ASSERT_TRUE(step) << step.error().message;
        EXPECT_EQ(step->checked, 100u);
        EXPECT_TRUE(step->damaged.empty()) << top;
    }
    EXPECT_TRUE(db_->damaged_blocks().empty());
}

TEST_F(ScrubTest, FreezerFlipIsNeverServedThenFoundAndRepaired) {
    const auto [begin, end] = freezer_span(3000);
    flip_byte(freezer_dir() / "headers.0000.cdat", (begin + end) / 2);
    ItemBuffer out;
    for (Order order : {Order::kAscending, Order::kDescending}) {
        auto r = db_->header_range(order == Order::kAscending ? 2990 : 3010, 21, order, out);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().kind, ErrorKind::kCorrupt);
    }
    EXPECT_EQ(db_->damaged_blocks(), std::vector<uint64_t>{3000});
    EXPECT_EQ(scrub_all(), std::vector<uint64_t>{3000});
    expect_sound_except({3000});

    // A wrong header is refused (it does not hash to what block 3001 names); the true one is taken.
    const uint64_t generation = db_->generation();
    auto wrong = db_->repair_header(3000, reference_chain().headers[3001]);
    ASSERT_FALSE(wrong);
    EXPECT_NE(wrong.error().message.find("block 3001 names"), std::string::npos) << wrong.error().message;
    EXPECT_EQ(db_->generation(), generation);  // nothing written
    auto r = db_->repair_header(3000, reference_chain().headers[3000]);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_TRUE(db_->damaged_blocks().empty());
    EXPECT_GT(db_->generation(), generation);  // a stored header changed
    expect_sound_except({});
    open(false);
    EXPECT_TRUE(scrub_all().empty());
    expect_sound_except({});
}

TEST_F(ScrubTest, LevelDbFlipIsNeverServedThenFoundAndRepaired) {
    flip_leveldb(7000, true);
    check_leveldb_damage_repaired();
}

// The block cache holds a good copy of the block that rots on disk: reads go on returning the good
// copy, and the scrub of the table files (not through the cache) finds the damage.
TEST_F(ScrubTest, LevelDbRotBehindTheBlockCacheIsFoundByTheFileScrub) {
    expect_sound_except({});  // every block in the cache
    flip_leveldb(7000, false);
    expect_sound_except({});
    auto files = db_->scrub_leveldb_files();
    ASSERT_TRUE(files) << files.error().message;
    ASSERT_EQ(files->size(), 1u);
    EXPECT_NE((*files)[0].find("Corruption"), std::string::npos) << (*files)[0];
    const std::vector<uint64_t> marked = db_->damaged_blocks();
    ASSERT_FALSE(marked.empty());
    EXPECT_LE(marked.front(), 7000u);
    EXPECT_GE(marked.back(), 7000u);
    ItemBuffer out;
    EXPECT_FALSE(db_->header_range(7000, 1, Order::kAscending, out));
    // A chain walk reads them fine from the cache, but does not clear the file scrub's marks.
    EXPECT_TRUE(scrub_all().empty());
    EXPECT_EQ(db_->damaged_blocks(), marked);
    check_leveldb_damage_repaired();
}

void ScrubTest::flip_leveldb(uint64_t block, bool reopen) {
    if (reopen) db_.reset();
    fs::path table;
    uint64_t largest = 0;
    for (const auto& e : fs::directory_iterator(dir_ / "chaindata")) {
        if (e.path().extension() == ".ldb" && e.file_size() > largest) {
            largest = e.file_size();
            table = e.path();
        }
    }
    ASSERT_GT(largest, 100'000u) << "no LevelDB table holds the recent headers";
    // Block 7000's state root is 32 random bytes: snappy leaves them as they are, so they can be
    // found in the table file and one of them flipped.
    const Hash32 state_root = decode_block_header(reference_chain().headers[block])->state_root;
    std::string bytes;
    {
        std::ifstream in(table, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    const size_t at = bytes.find(std::string(reinterpret_cast<const char*>(state_root.data()), state_root.size()));
    ASSERT_NE(at, std::string::npos) << "block 7000's state root is not in " << table;
    flip_byte(table, at + 5);
    if (reopen) open(false);
}

void ScrubTest::check_leveldb_damage_repaired() {
    ItemBuffer out;
    auto r = db_->header_range(kAncient, kHead + 1 - kAncient, Order::kAscending, out);
    ASSERT_FALSE(r) << "a flipped byte was served";
    EXPECT_EQ(r.error().kind, ErrorKind::kCorrupt);
    scrub_all();
    const std::vector<uint64_t> damaged = db_->damaged_blocks();
    ASSERT_FALSE(damaged.empty());
    for (uint64_t d : damaged) {
        EXPECT_GE(d, kAncient);
        ASSERT_FALSE(db_->header_range(d, 1, Order::kAscending, out)) << d;
    }
    expect_sound_except(damaged);

    // Online, the header can be written but the damaged table block still fails reads beside it.
    auto online = db_->repair_header(damaged.back(), reference_chain().headers[damaged.back()]);
    ASSERT_FALSE(online);
    EXPECT_NE(online.error().message.find("run headerd repair"), std::string::npos) << online.error().message;

    // Offline: salvage the tables (the damaged block's keys are dropped), then the scrub finds the
    // headers it lost, and each repaired header vouches for the one below it, top down.
    db_.reset();
    auto salvaged = ChainDb::salvage_leveldb(dir_.string());
    ASSERT_TRUE(salvaged) << salvaged.error().message;
    open(false);
    const std::vector<uint64_t> lost = scrub_all();
    ASSERT_FALSE(lost.empty());
    for (uint64_t d : lost) EXPECT_GE(d, kAncient);
    for (auto it = lost.rbegin(); it != lost.rend(); ++it) {
        auto fixed = db_->repair_header(*it, reference_chain().headers[*it]);
        ASSERT_TRUE(fixed) << fixed.error().message;
    }
    EXPECT_TRUE(db_->damaged_blocks().empty());
    expect_sound_except({});
    open(false);
    expect_sound_except({});
    EXPECT_TRUE(scrub_all().empty());
}

}  // namespace
}  // namespace headerd::db
