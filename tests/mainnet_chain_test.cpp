// Integration: real mainnet headers (era1 epoch 0) through import, ChainDb reads, freezing,
// interrupted freezing and the ancient/LevelDB join check.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/hex.hpp"
#include "core/rlp.hpp"
#include "db/chain_db.hpp"
#include "db/import.hpp"
#include "tests/reference_chain.hpp"

namespace headerd {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kCount = 8192;

const std::string& kData = testing::kDataDir;
const std::string kEra1 = kData + "/mainnet-00000-5ec1ffb8.era1";

const testing::ReferenceChain& ref() { return testing::reference_chain(); }

class MainnetChain : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_EQ(ref().headers.size(), kCount);
        ASSERT_EQ(ref().hashes.size(), kCount);
        dir_ = fs::temp_directory_path() / ("headerd-it-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        db::ChainDbOptions opts;
        opts.create_if_missing = true;
        auto chain = db::ChainDb::open(dir_.string(), opts);
        ASSERT_TRUE(chain) << chain.error().message;
        auto r = db::import_file(**chain, mainnet_config(), kEra1);
        ASSERT_TRUE(r) << r.error().message;
        ASSERT_EQ(r->imported, kCount);
        db_ = std::move(*chain);
    }
    void TearDown() override {
        db_.reset();
        fs::remove_all(dir_);
    }

    void reopen(const db::ChainDbOptions& opts = {}) {
        db_.reset();
        auto chain = db::ChainDb::open(dir_.string(), opts);
        ASSERT_TRUE(chain) << chain.error().message;
        db_ = std::move(*chain);
    }

    // Every header, every hash, every range shape, against the reference.
    void expect_whole_chain() {
        ASSERT_TRUE(db_->head());
        EXPECT_EQ(db_->head()->number, kCount - 1);
        EXPECT_EQ(db_->head()->hash, ref().hashes.back());
        ItemBuffer out;
        for (uint64_t from = 0; from < kCount; from += 1024) {
            ASSERT_TRUE(db_->header_range(from, 1024, db::Order::kAscending, out));
            ASSERT_EQ(out.size(), 1024u);
            for (size_t i = 0; i < out.size(); ++i) {
                ASSERT_TRUE(std::ranges::equal(out.item(i), ref().headers[from + i])) << "block " << from + i;
            }
        }
        for (uint64_t n = 0; n < kCount; ++n) {
            auto h = db_->canonical_hash(n);
            ASSERT_TRUE(h && *h) << "block " << n;
            ASSERT_EQ(**h, ref().hashes[n]) << "block " << n;
        }
        auto v = db::verify_chain(*db_);
        ASSERT_TRUE(v) << v.error().message;
        EXPECT_EQ(v->headers, kCount);
    }

    fs::path dir_;
    std::unique_ptr<db::ChainDb> db_;
};

TEST_F(MainnetChain, EveryHeaderAndHashMatchesThePublishedList) {
    expect_whole_chain();
    for (uint64_t n : {0ull, 1ull, 4096ull, 8191ull}) {
        auto num = db_->number_by_hash(ref().hashes[n]);
        ASSERT_TRUE(num && *num);
        EXPECT_EQ(**num, n);
        Bytes rlp;
        auto found = db_->header_by_hash(ref().hashes[n], rlp);
        ASSERT_TRUE(found && *found);
        EXPECT_TRUE(std::ranges::equal(rlp, ref().headers[n]));
    }
    Bytes rlp;
    Hash32 unknown{};
    unknown[0] = 1;
    auto found = db_->header_by_hash(unknown, rlp);
    ASSERT_TRUE(found);
    EXPECT_FALSE(*found);
}

TEST_F(MainnetChain, FreezeKeepsEveryByteAndMovesTheRightCount) {
    db::FreezeOptions opts;
    opts.keep = 1000;
    opts.batch = 3000;  // several batches
    auto r = db_->freeze(opts);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(*r, 7192u);
    EXPECT_EQ(db_->ancient_items(), 7192u);
    EXPECT_EQ(db_->stats().kv_headers, 1000u);
    expect_whole_chain();
    reopen();
    EXPECT_EQ(db_->ancient_items(), 7192u);
    expect_whole_chain();
    // hash -> number still answers for frozen headers ("H"+hash stays in LevelDB).
    Bytes rlp;
    auto found = db_->header_by_hash(ref().hashes[10], rlp);
    ASSERT_TRUE(found && *found);
    EXPECT_TRUE(std::ranges::equal(rlp, ref().headers[10]));
}

void expect_range(const db::ChainDb& db, uint64_t from, uint64_t count, db::Order order,
                  const std::vector<uint64_t>& numbers, size_t max_bytes = std::numeric_limits<size_t>::max()) {
    ItemBuffer out;
    auto r = db.header_range(from, count, order, out, max_bytes);
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_EQ(out.size(), numbers.size()) << "from " << from << " count " << count;
    for (size_t i = 0; i < numbers.size(); ++i) {
        EXPECT_TRUE(std::ranges::equal(out.item(i), ref().headers[numbers[i]])) << "item " << i;
    }
}

std::vector<uint64_t> seq(uint64_t from, uint64_t n, bool descending = false) {
    std::vector<uint64_t> v;
    for (uint64_t i = 0; i < n; ++i) v.push_back(descending ? from - i : from + i);
    return v;
}

TEST_F(MainnetChain, RangesAcrossTheBoundaryInBothOrders) {
    db::FreezeOptions opts;
    opts.keep = 1000;
    ASSERT_TRUE(db_->freeze(opts));
    const auto& d = *db_;
    expect_range(d, 7100, 192, db::Order::kAscending, seq(7100, 192));         // crosses 7192
    expect_range(d, 7300, 192, db::Order::kDescending, seq(7300, 192, true));  // crosses 7192
    expect_range(d, 0, 192, db::Order::kAscending, seq(0, 192));               // ancient only
    expect_range(d, 8000, 192, db::Order::kAscending, seq(8000, 192));         // LevelDB only
    expect_range(d, 8100, 192, db::Order::kAscending, seq(8100, 92));          // best effort past the head
    expect_range(d, 5, 10, db::Order::kDescending, seq(5, 6, true));           // stops at genesis
    expect_range(d, 8192, 10, db::Order::kAscending, {});                      // past the head
    expect_range(d, 100, 0, db::Order::kAscending, {});                        // amount 0
    expect_range(d, 8191, UINT64_MAX, db::Order::kAscending, {8191});          // no overflow
    expect_range(d, UINT64_MAX, UINT64_MAX, db::Order::kDescending, {});
    expect_range(d, 7191, 2, db::Order::kAscending, {7191, 7192});
    expect_range(d, 7192, 2, db::Order::kDescending, {7192, 7191});
    // Byte cap: at least one header, never more than the cap beyond the first.
    expect_range(d, 7100, 192, db::Order::kAscending, {7100}, 10);
    expect_range(d, 7300, 192, db::Order::kDescending, {7300}, 10);
    const size_t two = ref().headers[7190].size() + ref().headers[7191].size();
    expect_range(d, 7190, 192, db::Order::kAscending, {7190, 7191}, two);
    expect_range(d, 7193, 192, db::Order::kDescending, {7193, 7192},
                 ref().headers[7193].size() + ref().headers[7192].size());
}

// Stop freezing after each step of each batch, as if the process died there, then reopen: the
// database must open, hold every header, and a later freeze must finish the job.
TEST_F(MainnetChain, InterruptedFreezeAtEveryStepLeavesAConsistentDatabase) {
    const db::FreezeStep steps[] = {db::FreezeStep::kAppended, db::FreezeStep::kSynced, db::FreezeStep::kDeleted};
    uint64_t expected_ancient = 0;
    for (int batch = 0; batch < 3; ++batch) {
        for (db::FreezeStep stop_at : steps) {
            db::FreezeOptions opts;
            opts.keep = 1000;
            opts.batch = 700;
            int seen = 0;
            opts.on_step = [&](db::FreezeStep step, uint64_t) { return !(step == stop_at && seen++ == 0); };
            ASSERT_TRUE(db_->freeze(opts));
            reopen();
            EXPECT_GE(db_->ancient_items(), expected_ancient);
            expected_ancient = db_->ancient_items();
            expect_whole_chain();
        }
    }
    db::FreezeOptions opts;
    opts.keep = 1000;
    auto r = db_->freeze(opts);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(*r, 7192u);
    reopen();
    EXPECT_EQ(db_->stats().kv_headers, 1000u);
    expect_whole_chain();
}

TEST_F(MainnetChain, AGapBetweenTheStoresIsRefusedOnOpen) {
    db::FreezeOptions opts;
    opts.keep = 1000;
    ASSERT_TRUE(db_->freeze(opts));
    db_.reset();
    // Lose the freezer: LevelDB now starts at 7192 with nothing below it.
    fs::remove_all(dir_ / "chaindata" / "ancient");
    auto chain = db::ChainDb::open(dir_.string());
    ASSERT_FALSE(chain);
    EXPECT_NE(chain.error().message.find("[0, 0)"), std::string::npos) << chain.error().message;
    EXPECT_NE(chain.error().message.find("[7192, 8191]"), std::string::npos) << chain.error().message;
}

TEST_F(MainnetChain, AnotherNetworkIsRefused) {
    ChainConfig other = mainnet_config();
    other.name = "other";
    other.network_id = 5;
    auto r = db_->set_config(other);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("holds network mainnet"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace headerd
