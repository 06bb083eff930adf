// The background scrubber (sync/scrubber.cpp) on the real mainnet headers 0..8191, blocks [0, 6144)
// frozen: its passes cover the chain at its pace, its metrics follow them, a flipped byte in the
// freezer is found, exported as a range and handed to the repair callback (no more often than its
// retry), a repair that writes the true header back clears it, a chain that grows and freezes
// under the walk while readers read is never taken for damage, and held history is checked too. scripts/sanitize.sh
// runs these under ThreadSanitizer too.

#include "sync/scrubber.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "ancient/test_util.hpp"
#include "core/block_header.hpp"
#include "core/chain_config.hpp"
#include "core/era1.hpp"
#include "db/chain_db.hpp"
#include "db/era_store.hpp"
#include "db/import.hpp"
#include "tests/reference_chain.hpp"

namespace headerd::sync {
namespace {

namespace fs = std::filesystem;
using headerd::testing::reference_chain;
using namespace std::chrono_literals;

constexpr uint64_t kHead = 8191;
constexpr uint64_t kAncient = 6144;

class ScrubberTest : public ::testing::Test {
  protected:
    void SetUp() override {
        db::ChainDbOptions opts;
        opts.create_if_missing = true;
        auto r = db::ChainDb::open(dir_.path(), opts);
        ASSERT_TRUE(r) << r.error().message;
        db_ = std::move(*r);
        auto imported =
            db::import_file(*db_, mainnet_config(), headerd::testing::kDataDir + "/mainnet-headers-0-8191.rlp");
        ASSERT_TRUE(imported) << imported.error().message;
        db::FreezeOptions fo;
        fo.keep = kHead + 1 - kAncient;
        ASSERT_TRUE(db_->freeze(fo));
    }

    std::string scrape() const {
        std::ostringstream out;
        prometheus::TextSerializer().Serialize(out, registry_.Collect());
        return out.str();
    }
    // The value of an unlabelled sample, or -1.
    double sample(const std::string& name) const {
        const std::string text = scrape();
        const size_t at = text.find("\n" + name + " ");
        return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 2));
    }
    // Polls `done` every 5 ms for at most `limit`.
    template <typename F>
    static bool eventually(F done, std::chrono::milliseconds limit = 20s) {
        const auto end = std::chrono::steady_clock::now() + limit;
        while (!done()) {
            if (std::chrono::steady_clock::now() > end) return false;
            std::this_thread::sleep_for(5ms);
        }
        return true;
    }

    ancient::testing::TempDir dir_;
    std::unique_ptr<db::ChainDb> db_;
    prometheus::Registry registry_;
};

TEST_F(ScrubberTest, PassesCoverTheChainAtTheirPaceAndTheMetricsFollow) {
    ScrubMetrics metrics(registry_);
    ScrubberOptions o;
    o.rate = 100'000;  // 8192 headers: at least 82 ms a pass
    o.pause = 10ms;
    o.metrics = &metrics;
    Scrubber s(*db_, o);
    s.start();
    ASSERT_TRUE(eventually([&] { return s.passes() >= 3; }));
    s.stop();
    const uint64_t passes = s.passes();
    EXPECT_GE(s.checked(), passes * (kHead + 1));
    EXPECT_LT(s.checked(), (passes + 1) * (kHead + 1));
    EXPECT_EQ(sample("headerd_scrub_passes_total"), static_cast<double>(passes));
    EXPECT_EQ(sample("headerd_scrub_checked_total"), static_cast<double>(s.checked()));
    // Never faster than the rate (a pass's headers at 100,000 a second).
    EXPECT_GE(sample("headerd_scrub_last_pass_seconds"), (kHead + 1) / o.rate);
    EXPECT_LE(sample("headerd_scrub_position"), static_cast<double>(kHead));
    EXPECT_EQ(sample("headerd_scrub_damaged_blocks"), 0);
    EXPECT_EQ(sample("headerd_scrub_damaged_leveldb_tables"), 0);
    EXPECT_EQ(scrape().find("headerd_scrub_damaged_range{"), std::string::npos);
    // Stopped: no more steps.
    const uint64_t checked = s.checked();
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(s.checked(), checked);
}

TEST_F(ScrubberTest, StopEndsAPassAtOnce) {
    ScrubberOptions o;
    o.rate = 100;  // a pass would take 82 s
    Scrubber s(*db_, o);
    s.start();
    ASSERT_TRUE(eventually([&] { return s.checked() > 0; }));
    const auto t0 = std::chrono::steady_clock::now();
    s.stop();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
    EXPECT_EQ(s.passes(), 0u);
}

TEST_F(ScrubberTest, RateZeroNeverStarts) {
    ScrubberOptions o;
    o.rate = 0;
    Scrubber s(*db_, o);
    s.start();
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(s.checked(), 0u);
}

// With history held, each pass also checks every body and receipt list of the epoch, at its own
// pace; a record that no longer decompresses is found, logged once, exported, and not served.
TEST_F(ScrubberTest, EachPassChecksTheHistoryAndADamagedRecordIsExportedAndNotServed) {
    // A copy of the epoch (the store hard-links what it imports: damage must not reach tests/data).
    const fs::path copy = fs::path(dir_.path()) / "epoch0.era1";
    fs::copy_file(headerd::testing::kDataDir + "/mainnet-00000-5ec1ffb8.era1", copy);
    auto store = db::EraStore::open((fs::path(dir_.path()) / "history").string());
    ASSERT_TRUE(store) << store.error().message;
    ASSERT_TRUE(db::import_history(*db_, **store, copy.string()));
    Bytes file = headerd::testing::read_file(copy.string());
    auto archive = era1::Archive::parse(file);
    const ByteView body = archive->entries()[5000].compressed_body;
    const auto at = static_cast<size_t>(body.data() - file.data()) + body.size() / 2;
    std::fstream(copy, std::ios::in | std::ios::out | std::ios::binary)
        .seekp(static_cast<std::streamoff>(at))
        .put(static_cast<char>(file[at] ^ 0x40));

    ScrubMetrics metrics(registry_);
    ScrubberOptions o;
    o.rate = 1'000'000;
    o.history_rate = 200'000;  // 8192 blocks: at least 41 ms a pass
    o.pause = 10ms;
    o.metrics = &metrics;
    o.history = store->get();
    Scrubber s(*db_, o);
    s.start();
    ASSERT_TRUE(eventually([&] { return s.passes() >= 2; }));
    s.stop();
    EXPECT_GE(s.history_checked(), s.passes() * 8192);
    EXPECT_EQ(sample("headerd_scrub_history_checked_total"), static_cast<double>(s.history_checked()));
    EXPECT_EQ(sample("headerd_scrub_history_damaged_blocks"), 1);
    EXPECT_EQ((*store)->damaged_blocks(), std::vector<uint64_t>{5000});
    Bytes out;
    EXPECT_FALSE((*store)->append_body(5000, out));
    EXPECT_TRUE(out.empty());
}

TEST_F(ScrubberTest, DamageIsExportedAndRepairedNoMoreOftenThanItsRetry) {
    const std::string freezer = (fs::path(dir_.path()) / "chaindata" / "ancient" / "chain").string();
    for (uint64_t n : {3000, 3001, 4000}) {
        const auto [begin, end] = ancient::testing::item_span(freezer, n);
        ancient::testing::flip_byte(freezer + "/headers.0000.cdat", (begin + end) / 2);
    }
    ScrubMetrics metrics(registry_);
    std::atomic<int> repairs{0};
    std::atomic<bool> heal{false};
    ScrubberOptions o;
    o.rate = 1'000'000;
    o.pause = 5ms;
    o.metrics = &metrics;
    o.repair_retry = 300ms;
    o.repair = [&]() -> uint64_t {
        ++repairs;
        if (!heal) return 0;  // the peers could not help
        uint64_t n = 0;
        for (uint64_t b : db_->damaged_blocks()) {
            if (db_->repair_header(b, reference_chain().headers[b])) ++n;
        }
        return n;
    };
    Scrubber s(*db_, o);
    s.start();
    ASSERT_TRUE(eventually([&] { return sample("headerd_scrub_damaged_blocks") == 3; }));
    const std::string text = scrape();
    EXPECT_NE(text.find("headerd_scrub_damaged_range{first=\"3000\",last=\"3001\"} 1"), std::string::npos) << text;
    EXPECT_NE(text.find("headerd_scrub_damaged_range{first=\"4000\",last=\"4000\"} 1"), std::string::npos) << text;
    ItemBuffer out;
    EXPECT_FALSE(db_->header_range(2990, 20, db::Order::kAscending, out)) << "a damaged range was served";

    // Passes go on every 10 ms or so; the repair is asked once per 300 ms.
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(700ms);
    const int asked = repairs.load();
    const auto elapsed = std::chrono::steady_clock::now() - t0;
    EXPECT_GE(asked, 1);
    EXPECT_LE(asked, static_cast<int>(elapsed / 300ms) + 2) << "asked " << asked << " times";

    heal = true;
    ASSERT_TRUE(eventually([&] { return sample("headerd_scrub_damaged_blocks") == 0; }));
    EXPECT_EQ(sample("headerd_scrub_repaired_total"), 3);
    EXPECT_EQ(scrape().find("headerd_scrub_damaged_range{"), std::string::npos);
    s.stop();
    ASSERT_TRUE(db_->header_range(2990, 20, db::Order::kAscending, out));
    ASSERT_EQ(out.size(), 20u);
    for (size_t i = 0; i < 20; ++i) EXPECT_TRUE(std::ranges::equal(out.item(i), reference_chain().headers[2990 + i]));
}

// As serve --follow runs it: the scrubber walks while the chain grows from 4096 to 8192 headers in
// steps of 128, each followed by a freeze that keeps the newest 256 (headers move from LevelDB to
// the freezer under the walk), and two readers read ranges across the freezer boundary.
TEST(ScrubberConcurrency, AGrowingFreezingChainUnderTheWalkIsNeverDamage) {
    ancient::testing::TempDir dir;
    db::ChainDbOptions opts;
    opts.create_if_missing = true;
    auto opened = db::ChainDb::open(dir.path(), opts);
    ASSERT_TRUE(opened) << opened.error().message;
    db::ChainDb& db = **opened;
    ASSERT_TRUE(db.set_config(mainnet_config()));
    const auto& ref = reference_chain();
    std::vector<db::NewHeader> headers;
    U256 td = 0;
    for (uint64_t n = 0; n <= kHead; ++n) {
        const BlockHeader h = *decode_block_header(ref.headers[n]);
        td += h.difficulty;
        headers.push_back({ref.headers[n], ref.hashes[n], n, td, h.timestamp});
    }
    ASSERT_TRUE(db.append(std::span(headers).first(4096)));

    ScrubberOptions o;
    o.rate = 1'000'000;
    o.batch = 100;
    o.pause = 1ms;
    Scrubber s(db, o);
    s.start();
    std::atomic<bool> done{false};
    std::atomic<uint64_t> wrong{0};
    std::vector<std::thread> readers;
    for (int r = 0; r < 2; ++r) {
        readers.emplace_back([&, r] {
            ItemBuffer out;
            uint64_t i = 0;
            while (!done.load(std::memory_order_relaxed)) {
                const uint64_t head = db.head()->number;
                const uint64_t from = (i++ * 97 + static_cast<uint64_t>(r) * 31) % (head + 1);
                auto got = db.header_range(from, 64, db::Order::kAscending, out);
                if (!got) {
                    ++wrong;
                    continue;
                }
                for (size_t k = 0; k < out.size(); ++k) {
                    if (!std::ranges::equal(out.item(k), ref.headers[from + k])) ++wrong;
                }
            }
        });
    }
    db::FreezeOptions freeze;
    freeze.keep = 256;
    for (uint64_t from = 4096; from <= kHead; from += 128) {
        ASSERT_TRUE(db.append(std::span(headers).subspan(from, 128)));
        ASSERT_TRUE(db.freeze(freeze));
        std::this_thread::sleep_for(2ms);
    }
    // A few passes over the whole, frozen chain as well.
    const uint64_t passes = s.passes();
    const auto end = std::chrono::steady_clock::now() + 20s;
    while (s.passes() < passes + 3 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(5ms);
    done = true;
    for (auto& t : readers) t.join();
    s.stop();
    EXPECT_GE(s.passes(), passes + 3);
    EXPECT_EQ(wrong.load(), 0u);
    EXPECT_EQ(db.damaged_blocks().size(), 0u);
    EXPECT_EQ(db.ancient_items(), kHead + 1 - 256);
}

}  // namespace
}  // namespace headerd::sync
