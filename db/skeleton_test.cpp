// The skeleton of a sync in ChainDb (db/skeleton.cpp), on real mainnet headers 0..8191 in real
// temporary datadirs.

#include <gtest/gtest.h>
#include <leveldb/db.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/block_header.hpp"
#include "core/chain_config.hpp"
#include "db/chain_db.hpp"
#include "db/import.hpp"
#include "db/schema.hpp"
#include "db/test_fixture.hpp"
#include "tests/reference_chain.hpp"
#include "tests/side_chain.hpp"

namespace headerd::db {
namespace {

namespace fs = std::filesystem;

const headerd::testing::ReferenceChain& chain() { return headerd::testing::reference_chain(); }
const Hash32& hash_of(uint64_t n) { return chain().hashes.at(n); }

// The published total difficulty of every block (tests/data/mainnet-headers-0-8191.td.txt).
const std::vector<U256>& tds() {
    static const std::vector<U256> t = [] {
        std::vector<U256> out;
        std::ifstream in(headerd::testing::kDataDir + "/mainnet-headers-0-8191.td.txt");
        for (std::string line; std::getline(in, line);) {
            if (line.empty() || line[0] == '#') continue;
            std::istringstream fields(line);
            uint64_t number = 0;
            std::string hash;
            std::string td;
            fields >> number >> hash >> td;
            out.emplace_back(td);
        }
        return out;
    }();
    return t;
}

uint64_t timestamp_of(ByteView rlp) { return decode_block_header(rlp)->timestamp; }

SkeletonHeader real(uint64_t n) { return SkeletonHeader{chain().headers.at(n), hash_of(n), n}; }

// Real headers top, top - 1, ..., bottom.
std::vector<SkeletonHeader> real_down(uint64_t top, uint64_t bottom) {
    std::vector<SkeletonHeader> out;
    for (uint64_t n = top;; --n) {
        out.push_back(real(n));
        if (n == bottom) break;
    }
    return out;
}

using headerd::testing::SideChain;

// Bytes of the reference file from block `from` through block `to`.
ByteView file_bytes(uint64_t from, uint64_t to) {
    const auto begin = static_cast<size_t>(chain().headers.at(from).data() - chain().rlp.data());
    const auto end =
        static_cast<size_t>(chain().headers.at(to).data() + chain().headers.at(to).size() - chain().rlp.data());
    return ByteView{chain().rlp}.subspan(begin, end - begin);
}

bool same(ByteView a, ByteView b) { return std::ranges::equal(a, b); }

class SkeletonTest : public testing::DatadirTest {
  protected:
    SkeletonTest() : DatadirTest("skeleton", 1 << 20) {}

    void SetUp() override {
        DatadirTest::SetUp();
        ASSERT_TRUE(db_);
        auto r = db_->set_config(mainnet_config());
        ASSERT_TRUE(r) << r.error().message;
    }

    // Starts a skeleton at block `top` of `headers` (real ones unless given) and extends it down to
    // `bottom` in batches of `batch`.
    void build(uint64_t top, uint64_t bottom, uint64_t batch, const SideChain* side = nullptr) {
        auto at = [&](uint64_t n) { return side ? side->header(n) : real(n); };
        auto r = db_->skeleton_begin(at(top));
        ASSERT_TRUE(r) << r.error().message;
        for (uint64_t hi = top; hi > bottom;) {
            const uint64_t first = hi - 1;
            const uint64_t last = first + 1 - std::min(batch, first - bottom + 1);
            std::vector<SkeletonHeader> headers = side ? side->down(first, last) : real_down(first, last);
            auto e = db_->skeleton_extend(headers);
            ASSERT_TRUE(e) << e.error().message;
            ASSERT_EQ(db_->skeleton().value().tail, last);
            hi = last;
        }
    }

    // Imports the reference chain 0..last with db::import_file (a truncated copy of the file).
    void import_through(uint64_t last) {
        const fs::path path = dir_ / "import.rlp";
        {
            const ByteView bytes = file_bytes(0, last);
            std::ofstream out(path, std::ios::binary);
            out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        }
        auto r = import_file(*db_, mainnet_config(), path.string());
        ASSERT_TRUE(r) << r.error().message;
        ASSERT_EQ(r->imported, last + 1);
        ASSERT_EQ(db_->head().value().number, last);
    }

    // The block numbers of the keys for which `match` holds, read from LevelDB itself (the database
    // closed meanwhile): what the API cannot show, such as entries above the head.
    template <class Match>
    std::vector<uint64_t> raw_numbers(uint8_t prefix, Match match) {
        db_.reset();
        std::vector<uint64_t> out;
        leveldb::DB* raw = nullptr;
        leveldb::Status st = leveldb::DB::Open(leveldb::Options(), (dir_ / "chaindata").string(), &raw);
        EXPECT_TRUE(st.ok()) << st.ToString();
        if (st.ok()) {
            std::unique_ptr<leveldb::DB> ldb(raw);
            std::unique_ptr<leveldb::Iterator> it(ldb->NewIterator(leveldb::ReadOptions()));
            const char p = static_cast<char>(prefix);
            for (it->Seek(leveldb::Slice(&p, 1)); it->Valid() && it->key()[0] == p; it->Next()) {
                const ByteView key(reinterpret_cast<const uint8_t*>(it->key().data()), it->key().size());
                if (key.size() >= 9 && match(key)) out.push_back(load_be64(key.data() + 1));
            }
        }
        open(false);
        return out;
    }
    // Blocks stored under skeleton keys.
    std::vector<uint64_t> skeleton_keys() {
        return raw_numbers(schema::kSkeletonHeaderPrefix,
                           [](ByteView key) { return key.size() == schema::SkeletonKey{}.size(); });
    }
    // Blocks with a canonical-hash entry.
    std::vector<uint64_t> canonical_keys() {
        return raw_numbers(schema::kHeaderPrefix, [](ByteView key) {
            return key.size() == schema::CanonicalKey{}.size() && key.back() == schema::kCanonicalSuffix;
        });
    }

    // Whether the canonical chain is the reference chain 0..head: head, total difficulty, and every
    // header byte-identical to the file.
    ::testing::AssertionResult canonical_is_reference(uint64_t head) {
        const std::optional<Head> h = db_->head();
        if (!h) return ::testing::AssertionFailure() << "no head";
        if (h->number != head || h->hash != hash_of(head)) {
            return ::testing::AssertionFailure() << "head is block " << h->number;
        }
        if (h->total_difficulty != tds().at(head)) {
            return ::testing::AssertionFailure()
                   << "head total difficulty " << h->total_difficulty << ", expected " << tds().at(head);
        }
        if (h->timestamp != timestamp_of(chain().headers.at(head))) {
            return ::testing::AssertionFailure() << "head timestamp " << h->timestamp;
        }
        ItemBuffer out;
        if (auto r = db_->header_range(0, head + 10, Order::kAscending, out); !r) {
            return ::testing::AssertionFailure() << r.error().message;
        }
        if (out.size() != head + 1) return ::testing::AssertionFailure() << out.size() << " headers stored";
        if (!same(out.bytes, file_bytes(0, head))) return ::testing::AssertionFailure() << "bytes differ from the file";
        for (uint64_t n : {uint64_t{0}, head / 2, head}) {
            auto c = db_->canonical_hash(n);
            if (!c || !*c || **c != hash_of(n)) return ::testing::AssertionFailure() << "canonical hash " << n;
            auto num = db_->number_by_hash(hash_of(n));
            if (!num || *num != n) return ::testing::AssertionFailure() << "number of hash " << n;
        }
        return ::testing::AssertionSuccess();
    }
};

struct Progress {
    uint64_t done;
    uint64_t total;
    bool operator==(const Progress&) const = default;
};

// ---- a skeleton from the head to the genesis --------------------------------------------------------

TEST_F(SkeletonTest, BuiltDownToTheGenesisLinksIntoAnEmptyDatabaseInBatches) {
    ASSERT_TRUE(db_->skeleton_begin(real(8191)));
    EXPECT_EQ(db_->skeleton(), (Skeleton{8191, hash_of(8191), 8191, hash_of(8190)}));
    auto point = db_->skeleton_link_point();
    ASSERT_TRUE(point) << point.error().message;
    EXPECT_FALSE(point->linked);
    for (uint64_t top = 8190;;) {
        const uint64_t bottom = top >= 999 ? top - 999 : 0;
        auto r = db_->skeleton_extend(real_down(top, bottom));
        ASSERT_TRUE(r) << r.error().message;
        const Skeleton s = db_->skeleton().value();
        EXPECT_EQ(s.head, 8191u);
        EXPECT_EQ(s.head_hash, hash_of(8191));
        EXPECT_EQ(s.tail, bottom);
        EXPECT_EQ(s.tail_parent, bottom == 0 ? Hash32{} : hash_of(bottom - 1));
        if (bottom == 0) break;
        point = db_->skeleton_link_point();
        ASSERT_TRUE(point) << point.error().message;
        EXPECT_FALSE(point->linked) << bottom;
        top = bottom - 1;
    }
    // Stored, but nothing of it is canonical or served yet.
    EXPECT_FALSE(db_->head());
    auto canonical = db_->canonical_hash(100);
    ASSERT_TRUE(canonical);
    EXPECT_FALSE(*canonical);
    Bytes rlp;
    auto found = db_->header_by_hash(hash_of(8191), rlp);
    ASSERT_TRUE(found);
    EXPECT_FALSE(*found);
    ItemBuffer out;
    ASSERT_TRUE(db_->header_range(0, 10, Order::kAscending, out));
    EXPECT_TRUE(out.empty());

    point = db_->skeleton_link_point();
    ASSERT_TRUE(point) << point.error().message;
    EXPECT_TRUE(point->linked);
    EXPECT_EQ(point->replaced, 0u);

    std::vector<Progress> progress;
    LinkOptions opts;
    opts.batch = 1000;
    opts.on_progress = [&](uint64_t done, uint64_t total) { progress.push_back({done, total}); };
    auto head = db_->skeleton_link(opts);
    ASSERT_TRUE(head) << head.error().message;
    EXPECT_EQ(head->number, 8191u);
    EXPECT_EQ(head->hash, hash_of(8191));
    EXPECT_EQ(head->total_difficulty, tds()[8191]);
    EXPECT_EQ(head->timestamp, timestamp_of(chain().headers[8191]));
    std::vector<Progress> want;
    for (uint64_t done = 1000; done < 8192; done += 1000) want.push_back({done, 8192});
    want.push_back({8192, 8192});
    EXPECT_EQ(progress, want);
    EXPECT_FALSE(db_->skeleton());
    EXPECT_TRUE(canonical_is_reference(8191));
    auto verified = verify_chain(*db_);
    ASSERT_TRUE(verified) << verified.error().message;
    EXPECT_EQ(verified->headers, 8192u);
    EXPECT_TRUE(skeleton_keys().empty());

    reopen();
    EXPECT_FALSE(db_->skeleton());
    EXPECT_TRUE(canonical_is_reference(8191));
}

TEST_F(SkeletonTest, BeginRefusesAHeaderOfAnotherNumber) {
    auto r = db_->skeleton_begin(SkeletonHeader{chain().headers[100], hash_of(100), 101});
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("101"), std::string::npos) << r.error().message;
    EXPECT_FALSE(db_->skeleton());
}

// ---- extend: what it refuses ----------------------------------------------------------------------

TEST_F(SkeletonTest, ExtendRefusesHeadersThatDoNotContinueTheTailAndStoresNothing) {
    build(8191, 8100, 50);
    const Skeleton before = db_->skeleton().value();
    ASSERT_EQ(before, (Skeleton{8191, hash_of(8191), 8100, hash_of(8099)}));
    const SideChain side(8000, 8191);

    struct Case {
        const char* what;
        std::vector<SkeletonHeader> headers;
        const char* message;
    };
    const std::vector<Case> cases = {
        // Block 8099 of a side chain: the right number, another hash than the tail's parent.
        {"wrong first hash", {side.header(8099)}, "expected block 8099"},
        {"wrong first number", {real(8098)}, "expected block 8099"},
        {"a gap after the first", {real(8099), real(8097)}, "expected block 8098"},
        // 8098 of the side chain is not the parent the real 8099 names.
        {"broken link", {real(8099), side.header(8098)}, "expected block 8098"},
        {"already in the skeleton", {real(8101)}, "expected block 8099"},
        {"RLP of another block", {SkeletonHeader{chain().headers[8098], hash_of(8099), 8099}}, "not a header"},
    };
    for (const Case& c : cases) {
        auto r = db_->skeleton_extend(c.headers);
        ASSERT_FALSE(r) << c.what;
        EXPECT_NE(r.error().message.find(c.message), std::string::npos) << c.what << ": " << r.error().message;
        EXPECT_EQ(db_->skeleton(), before) << c.what;
    }
    // Nothing of the refused batches reached the store (the good 8099 of the gap and broken-link
    // batches included), also after reopening.
    std::vector<uint64_t> want;
    for (uint64_t n = 8100; n <= 8191; ++n) want.push_back(n);
    EXPECT_EQ(skeleton_keys(), want);
    EXPECT_EQ(db_->skeleton(), before);
    // An empty batch changes nothing either.
    ASSERT_TRUE(db_->skeleton_extend({}));
    EXPECT_EQ(db_->skeleton(), before);

    // The right headers are still taken, and the chain links as the reference one.
    auto r = db_->skeleton_extend(real_down(8099, 0));
    ASSERT_TRUE(r) << r.error().message;
    // Nothing goes below the genesis.
    auto below = db_->skeleton_extend(std::vector<SkeletonHeader>{real(0)});
    EXPECT_FALSE(below);
    LinkOptions opts;
    opts.batch = 1000;
    auto head = db_->skeleton_link(opts);
    ASSERT_TRUE(head) << head.error().message;
    EXPECT_TRUE(canonical_is_reference(8191));
}

TEST_F(SkeletonTest, ExtendRefusesAHeaderThatDoesNotHashToItsClaimedHash) {
    // skeleton_extend's contract: "the first hashing to tail_parent, each the parent of the one
    // before (checked here)". A header whose RLP is another block 8099 (a side chain's), passed with
    // the real 8099's hash, does not hash to tail_parent.
    build(8191, 8100, 100);
    const Skeleton before = db_->skeleton().value();
    const SideChain side(8000, 8191);
    const SkeletonHeader forged{side.rlp(8099), hash_of(8099), 8099};
    auto r = db_->skeleton_extend(std::vector<SkeletonHeader>{forged});
    EXPECT_FALSE(r);
    EXPECT_EQ(db_->skeleton(), before);
}

// ---- resume ---------------------------------------------------------------------------------------

TEST_F(SkeletonTest, BoundsSurviveReopenAndExtendingGoesOnFromThem) {
    build(8191, 7000, 400);
    const Skeleton first{8191, hash_of(8191), 7000, hash_of(6999)};
    EXPECT_EQ(db_->skeleton(), first);
    reopen();
    EXPECT_EQ(db_->skeleton(), first);
    auto point = db_->skeleton_link_point();
    ASSERT_TRUE(point) << point.error().message;
    EXPECT_FALSE(point->linked);

    ASSERT_TRUE(db_->skeleton_extend(real_down(6999, 3000)));
    reopen();
    EXPECT_EQ(db_->skeleton(), (Skeleton{8191, hash_of(8191), 3000, hash_of(2999)}));
    // A batch that does not continue the stored tail is still refused after the reopen.
    EXPECT_FALSE(db_->skeleton_extend(real_down(3000, 2990)));
    ASSERT_TRUE(db_->skeleton_extend(real_down(2999, 0)));
    reopen();
    EXPECT_EQ(db_->skeleton(), (Skeleton{8191, hash_of(8191), 0, Hash32{}}));
    point = db_->skeleton_link_point();
    ASSERT_TRUE(point) << point.error().message;
    EXPECT_TRUE(point->linked);
    auto head = db_->skeleton_link();
    ASSERT_TRUE(head) << head.error().message;
    EXPECT_TRUE(canonical_is_reference(8191));
}

TEST_F(SkeletonTest, LinkStoppedAfterABatchResumesWhereItStopped) {
    build(8191, 0, 2000);
    // A process that dies after the third synced batch: on_progress cannot stop the move, so it
    // throws out of it, after which nothing more is written.
    LinkOptions opts;
    opts.batch = 1000;
    opts.on_progress = [](uint64_t done, uint64_t) {
        if (done == 3000) throw std::runtime_error("power cut");
    };
    EXPECT_THROW((void)db_->skeleton_link(opts), std::runtime_error);
    const Skeleton rest{8191, hash_of(8191), 3000, hash_of(2999)};
    EXPECT_EQ(db_->skeleton(), rest);
    EXPECT_TRUE(canonical_is_reference(2999));
    auto canonical = db_->canonical_hash(3000);
    ASSERT_TRUE(canonical);
    EXPECT_FALSE(*canonical);

    reopen();
    EXPECT_EQ(db_->skeleton(), rest);
    EXPECT_TRUE(canonical_is_reference(2999));
    auto point = db_->skeleton_link_point();
    ASSERT_TRUE(point) << point.error().message;
    EXPECT_TRUE(point->linked);
    EXPECT_EQ(point->replaced, 0u);
    std::vector<Progress> progress;
    opts.on_progress = [&](uint64_t done, uint64_t total) { progress.push_back({done, total}); };
    auto head = db_->skeleton_link(opts);
    ASSERT_TRUE(head) << head.error().message;
    ASSERT_FALSE(progress.empty());
    EXPECT_EQ(progress.back(), (Progress{5192, 5192}));
    EXPECT_FALSE(db_->skeleton());
    EXPECT_TRUE(canonical_is_reference(8191));
    EXPECT_TRUE(skeleton_keys().empty());
    auto verified = verify_chain(*db_);
    EXPECT_TRUE(verified) << verified.error().message;
}

// ---- linking on top of a stored chain ---------------------------------------------------------------

TEST_F(SkeletonTest, SecondSkeletonLinksOnTopOfTheChainTheFirstOneBuilt) {
    build(4095, 0, 1000);
    LinkOptions opts;
    opts.batch = 1000;
    ASSERT_TRUE(db_->skeleton_link(opts));
    ASSERT_TRUE(canonical_is_reference(4095));

    ASSERT_TRUE(db_->skeleton_begin(real(8191)));
    ASSERT_TRUE(db_->skeleton_extend(real_down(8190, 4097)));
    auto point = db_->skeleton_link_point();
    ASSERT_TRUE(point) << point.error().message;
    EXPECT_FALSE(point->linked);  // 4096 is not stored yet
    ASSERT_TRUE(db_->skeleton_extend(real_down(4096, 4096)));
    point = db_->skeleton_link_point();
    ASSERT_TRUE(point) << point.error().message;
    EXPECT_TRUE(point->linked);
    EXPECT_EQ(point->replaced, 0u);
    const uint64_t generation = db_->generation();
    auto head = db_->skeleton_link(opts);
    ASSERT_TRUE(head) << head.error().message;
    EXPECT_TRUE(canonical_is_reference(8191));
    EXPECT_EQ(db_->generation(), generation);  // the chain grew: nothing read before changed
    reopen();
    EXPECT_TRUE(canonical_is_reference(8191));
    EXPECT_TRUE(verify_chain(*db_));
}

TEST_F(SkeletonTest, SkeletonOnTopOfAnImportedChainLinksAtItsHead) {
    import_through(4095);
    ASSERT_TRUE(db_->skeleton_begin(real(8191)));
    for (uint64_t top = 8190;;) {
        const uint64_t bottom = std::max<uint64_t>(4096, top >= 1499 ? top - 1499 : 0);
        ASSERT_TRUE(db_->skeleton_extend(real_down(top, bottom)));
        auto point = db_->skeleton_link_point();
        ASSERT_TRUE(point) << point.error().message;
        EXPECT_EQ(point->linked, bottom == 4096) << bottom;
        if (bottom == 4096) {
            EXPECT_EQ(point->replaced, 0u);
            break;
        }
        top = bottom - 1;
    }
    LinkOptions opts;
    opts.batch = 1000;
    auto head = db_->skeleton_link(opts);
    ASSERT_TRUE(head) << head.error().message;
    EXPECT_EQ(head->total_difficulty, tds()[8191]);
    EXPECT_TRUE(canonical_is_reference(8191));
    EXPECT_TRUE(verify_chain(*db_));
}

TEST_F(SkeletonTest, SkeletonDownToTheGenesisReplacesAWholeUnfrozenChain) {
    import_through(4095);
    build(8191, 0, 3000);
    auto point = db_->skeleton_link_point();
    ASSERT_TRUE(point) << point.error().message;
    EXPECT_TRUE(point->linked);
    EXPECT_EQ(point->replaced, 4096u);
    LinkOptions opts;
    opts.batch = 1000;
    auto head = db_->skeleton_link(opts);
    ASSERT_TRUE(head) << head.error().message;
    EXPECT_TRUE(canonical_is_reference(8191));
    EXPECT_TRUE(verify_chain(*db_));
}

TEST_F(SkeletonTest, LinkRefusesWhatDoesNotLink) {
    auto none = db_->skeleton_link();
    EXPECT_FALSE(none);
    EXPECT_FALSE(db_->skeleton_link_point());
    import_through(4095);
    build(8191, 5000, 1000);
    auto r = db_->skeleton_link();
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("does not link"), std::string::npos) << r.error().message;
    EXPECT_EQ(db_->skeleton(), (Skeleton{8191, hash_of(8191), 5000, hash_of(4999)}));
    EXPECT_EQ(db_->head().value().number, 4095u);
}

// ---- reorgs ---------------------------------------------------------------------------------------

TEST_F(SkeletonTest, ReorgOfTheUnfrozenTipMakesTheNewChainCanonicalAndKeepsTheOldHeaders) {
    import_through(8191);
    const SideChain side(8000, 8191);
    ASSERT_NE(side.hash(8000), hash_of(8000));
    ASSERT_EQ(peek_header(side.rlp(8001))->parent_hash, side.hash(8000));
    build(8191, 8001, 64, &side);
    // 8001' names 8000' as parent, which is not canonical: no link yet.
    auto point = db_->skeleton_link_point();
    ASSERT_TRUE(point) << point.error().message;
    EXPECT_FALSE(point->linked);
    ASSERT_TRUE(db_->skeleton_extend(side.down(8000, 8000)));
    point = db_->skeleton_link_point();
    ASSERT_TRUE(point) << point.error().message;
    EXPECT_TRUE(point->linked);
    EXPECT_EQ(point->replaced, 192u);

    LinkOptions opts;
    opts.batch = 50;
    const uint64_t generation = db_->generation();
    auto head = db_->skeleton_link(opts);
    ASSERT_TRUE(head) << head.error().message;
    // Canonical headers changed: whatever a reader kept of them is not to be used again.
    EXPECT_GT(db_->generation(), generation);
    auto check = [&] {
        const std::optional<Head> h = db_->head();
        ASSERT_TRUE(h);
        EXPECT_EQ(h->number, 8191u);
        EXPECT_EQ(h->hash, side.hash(8191));
        EXPECT_EQ(h->total_difficulty, tds()[8191]);  // the same difficulties
        EXPECT_FALSE(db_->skeleton());
        for (uint64_t n = 7990; n <= 8191; ++n) {
            auto c = db_->canonical_hash(n);
            ASSERT_TRUE(c && *c) << n;
            EXPECT_EQ(**c, n < 8000 ? hash_of(n) : side.hash(n)) << n;
        }
        ItemBuffer out;
        ASSERT_TRUE(db_->header_range(7990, 1000, Order::kAscending, out));
        ASSERT_EQ(out.size(), 202u);
        for (uint64_t n = 7990; n <= 8191; ++n) {
            EXPECT_TRUE(same(out.item(n - 7990), n < 8000 ? chain().headers[n] : side.rlp(n))) << n;
        }
        ASSERT_TRUE(db_->header_range(0, 8000, Order::kAscending, out));
        EXPECT_TRUE(same(out.bytes, file_bytes(0, 7999)));
        // The replaced headers stay stored as side-chain headers.
        Bytes rlp;
        for (uint64_t n : {8000u, 8100u, 8191u}) {
            auto found = db_->header_by_hash(hash_of(n), rlp);
            ASSERT_TRUE(found && *found) << n;
            EXPECT_TRUE(same(rlp, chain().headers[n])) << n;
            auto number = db_->number_by_hash(side.hash(n));
            ASSERT_TRUE(number && *number) << n;
            EXPECT_EQ(**number, n);
        }
    };
    check();
    auto verified = verify_chain(*db_);
    EXPECT_TRUE(verified) << verified.error().message;
    reopen();
    check();
}

TEST_F(SkeletonTest, ReorgToAShorterChainDropsTheCanonicalEntriesAboveTheNewHead) {
    import_through(8191);
    const SideChain side(8000, 8100);
    build(8100, 8000, 40, &side);
    auto point = db_->skeleton_link_point();
    ASSERT_TRUE(point) << point.error().message;
    EXPECT_TRUE(point->linked);
    EXPECT_EQ(point->replaced, 192u);
    LinkOptions opts;
    opts.batch = 30;
    auto head = db_->skeleton_link(opts);
    ASSERT_TRUE(head) << head.error().message;
    auto check = [&] {
        const std::optional<Head> h = db_->head();
        ASSERT_TRUE(h);
        EXPECT_EQ(h->number, 8100u);
        EXPECT_EQ(h->hash, side.hash(8100));
        EXPECT_EQ(h->total_difficulty, tds()[8100]);
        for (uint64_t n = 8101; n <= 8191; ++n) {
            auto c = db_->canonical_hash(n);
            ASSERT_TRUE(c);
            EXPECT_FALSE(*c) << n;
        }
        ItemBuffer out;
        ASSERT_TRUE(db_->header_range(8000, 500, Order::kAscending, out));
        ASSERT_EQ(out.size(), 101u);
        for (uint64_t n = 8000; n <= 8100; ++n) EXPECT_TRUE(same(out.item(n - 8000), side.rlp(n))) << n;
        Bytes rlp;
        auto found = db_->header_by_hash(hash_of(8191), rlp);
        ASSERT_TRUE(found && *found);
        EXPECT_TRUE(same(rlp, chain().headers[8191]));
    };
    check();
    // No canonical entry of the old chain is left above the new head (invisible to readers while the
    // head is lower, but wrong the moment the chain grows past them).
    const std::vector<uint64_t> canonical = canonical_keys();
    ASSERT_FALSE(canonical.empty());
    EXPECT_EQ(canonical.back(), 8100u);
    EXPECT_EQ(canonical.size(), 8101u);
    reopen();
    check();
}

TEST_F(SkeletonTest, ForkBelowTheFreezerHeadIsRefused) {
    import_through(8191);
    FreezeOptions freeze;
    freeze.keep = 100;
    auto frozen = db_->freeze(freeze);
    ASSERT_TRUE(frozen) << frozen.error().message;
    ASSERT_EQ(*frozen, 8092u);
    const SideChain side(8000, 8191);
    build(8191, 8000, 100, &side);
    auto point = db_->skeleton_link_point();
    ASSERT_FALSE(point);
    EXPECT_NE(point.error().message.find("freezer"), std::string::npos) << point.error().message;
    auto r = db_->skeleton_link();
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("freezer"), std::string::npos) << r.error().message;
    // Nothing changed.
    EXPECT_EQ(db_->skeleton(), (Skeleton{8191, side.hash(8191), 8000, hash_of(7999)}));
    EXPECT_TRUE(canonical_is_reference(8191));
}

TEST_F(SkeletonTest, ForkRightAboveTheFreezerHeadLinks) {
    import_through(8191);
    FreezeOptions freeze;
    freeze.keep = 100;
    ASSERT_TRUE(db_->freeze(freeze));
    ASSERT_EQ(db_->ancient_items(), 8092u);
    // Forks from block 8091, the freezer's last: only unfrozen blocks are replaced.
    const SideChain side(8092, 8191);
    build(8191, 8092, 30, &side);
    auto point = db_->skeleton_link_point();
    ASSERT_TRUE(point) << point.error().message;
    EXPECT_TRUE(point->linked);
    EXPECT_EQ(point->replaced, 100u);
    LinkOptions opts;
    opts.batch = 25;
    auto head = db_->skeleton_link(opts);
    ASSERT_TRUE(head) << head.error().message;
    EXPECT_EQ(head->hash, side.hash(8191));
    EXPECT_EQ(head->total_difficulty, tds()[8191]);
    ItemBuffer out;
    ASSERT_TRUE(db_->header_range(8080, 200, Order::kAscending, out));
    ASSERT_EQ(out.size(), 112u);
    for (uint64_t n = 8080; n <= 8191; ++n) {
        EXPECT_TRUE(same(out.item(n - 8080), n < 8092 ? chain().headers[n] : side.rlp(n))) << n;
    }
    EXPECT_EQ(db_->ancient_items(), 8092u);
}

TEST_F(SkeletonTest, SkeletonDownToTheGenesisOverAFrozenChainIsRefused) {
    import_through(8191);
    FreezeOptions freeze;
    freeze.keep = 100;
    ASSERT_TRUE(db_->freeze(freeze));
    build(8191, 0, 4000);
    auto point = db_->skeleton_link_point();
    ASSERT_FALSE(point);
    EXPECT_NE(point.error().message.find("freezer"), std::string::npos) << point.error().message;
    EXPECT_FALSE(db_->skeleton_link());
    EXPECT_TRUE(canonical_is_reference(8191));
}

TEST_F(SkeletonTest, SkeletonLeadingToAnotherGenesisIsRefused) {
    const SideChain other(0, 100);
    build(100, 0, 30, &other);
    auto point = db_->skeleton_link_point();
    ASSERT_FALSE(point);
    EXPECT_NE(point.error().message.find("genesis"), std::string::npos) << point.error().message;
    auto r = db_->skeleton_link();
    ASSERT_FALSE(r);
    EXPECT_FALSE(db_->head());
}

// ---- replacing and dropping ---------------------------------------------------------------------------

TEST_F(SkeletonTest, BeginWithAnotherHeadReplacesTheOldSkeleton) {
    build(8191, 8000, 100);
    std::vector<uint64_t> want;
    for (uint64_t n = 8000; n <= 8191; ++n) want.push_back(n);
    ASSERT_EQ(skeleton_keys(), want);
    ASSERT_TRUE(db_->skeleton_begin(real(5000)));
    EXPECT_EQ(db_->skeleton(), (Skeleton{5000, hash_of(5000), 5000, hash_of(4999)}));
    EXPECT_EQ(skeleton_keys(), std::vector<uint64_t>{5000});
    EXPECT_EQ(db_->skeleton(), (Skeleton{5000, hash_of(5000), 5000, hash_of(4999)}));
    ASSERT_TRUE(db_->skeleton_extend(real_down(4999, 0)));
    LinkOptions opts;
    opts.batch = 1000;
    ASSERT_TRUE(db_->skeleton_link(opts));
    EXPECT_TRUE(canonical_is_reference(5000));
    EXPECT_TRUE(skeleton_keys().empty());
}

TEST_F(SkeletonTest, DropDeletesTheSkeletonAndItsHeaders) {
    ASSERT_TRUE(db_->skeleton_drop());  // none: nothing to do
    build(8191, 8000, 100);
    ASSERT_TRUE(db_->skeleton_drop());
    EXPECT_FALSE(db_->skeleton());
    EXPECT_TRUE(skeleton_keys().empty());
    EXPECT_FALSE(db_->skeleton());  // reopened by skeleton_keys()
    EXPECT_FALSE(db_->skeleton_extend(real_down(7999, 7990)));
    // A new skeleton starts from scratch.
    build(300, 0, 100);
    ASSERT_TRUE(db_->skeleton_link());
    EXPECT_TRUE(canonical_is_reference(300));
}

}  // namespace
}  // namespace headerd::db
