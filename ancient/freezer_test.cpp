#include "ancient/freezer.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ancient/test_util.hpp"
#include "core/keccak.hpp"

namespace headerd::ancient {
namespace {

using testing::flip_byte;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::item_span;
using testing::mainnet_hashes;
using testing::mainnet_headers;
using testing::posix;
using testing::TempDir;
using ::testing::UnorderedElementsAre;
using testing::views;

std::unique_ptr<Freezer> open_freezer(FileSystem& fs, const std::string& dir, Freezer::Options opts = {}) {
    auto f = Freezer::open(fs, dir, opts);
    EXPECT_TRUE(f) << (f ? "" : f.error().message);
    return f ? std::move(*f) : nullptr;
}

void append_blocks(Freezer& f, size_t begin, size_t end) {
    const auto headers = views(mainnet_headers(), begin, end);
    const std::span<const Hash32> hashes(mainnet_hashes().data() + begin, end - begin);
    auto r = f.append(begin, headers, hashes);
    ASSERT_TRUE(r) << r.error().message;
}

// The freezer holds exactly blocks [0, n) of mainnet.
void expect_blocks(Freezer& f, uint64_t n) {
    ASSERT_EQ(f.items(), n);
    ASSERT_EQ(f.headers().items(), n);
    ASSERT_EQ(f.hashes().items(), n);
    if (n == 0) return;
    ItemBuffer out;
    auto r = f.read_headers(0, n, kNoByteLimit, out);
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_EQ(out.size(), n);
    for (uint64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(std::ranges::equal(out.item(i), mainnet_headers()[i])) << i;
        auto h = f.read_hash(i);
        ASSERT_TRUE(h) << h.error().message;
        ASSERT_EQ(*h, mainnet_hashes()[i]) << i;
    }
}

// Mainnet blocks [0, n) in a freezer at `dir`, its checksum file deleted (as geth writes a freezer).
void write_without_checksums(const TempDir& dir, size_t n) {
    {
        auto f = open_freezer(posix, dir.path());
        ASSERT_NE(f, nullptr);
        append_blocks(*f, 0, n);
        ASSERT_TRUE(f->sync());
    }
    ASSERT_TRUE(std::filesystem::remove(dir / kChecksumFile));
}

uint64_t dir_bytes(const std::string& dir) {
    uint64_t total = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) total += e.file_size();
    return total;
}

TEST(Freezer, TestDataHashesAreKeccakOfTheHeaders) {
    for (size_t i : {0u, 1u, 2u, 4095u, 8191u}) EXPECT_EQ(keccak256(mainnet_headers()[i]), mainnet_hashes()[i]);
}

TEST(Freezer, AppendSyncReopenReadBack) {
    TempDir dir;
    {
        auto f = open_freezer(posix, dir.path());
        EXPECT_EQ(f->items(), 0u);
        for (size_t i = 0; i < 8192; i += 2048) append_blocks(*f, i, i + 2048);
        ASSERT_TRUE(f->sync());
        expect_blocks(*f, 8192);
        EXPECT_EQ(f->bytes_on_disk(), dir_bytes(dir.path()));
    }
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.push_back(e.path().filename());
    EXPECT_THAT(names, UnorderedElementsAre("headers.cidx", "headers.0000.cdat", "headers.meta", "hashes.ridx",
                                            "hashes.0000.rdat", "hashes.meta", "headers.xxh3"));
    EXPECT_EQ(std::filesystem::file_size(dir / "headers.xxh3"), 8192u * 4);
    EXPECT_EQ(std::filesystem::file_size(dir / "hashes.0000.rdat"), 8192u * 32);

    auto f = open_freezer(posix, dir.path(), {kDefaultMaxFileSize, true});
    EXPECT_THAT(f->repairs(), IsEmpty());
    EXPECT_EQ(f->tail(), 0u);
    expect_blocks(*f, 8192);
    ReadScratch scratch;
    ItemBuffer out;
    ASSERT_TRUE(f->read_headers(1000, 5, kNoByteLimit, out, scratch));
    EXPECT_TRUE(std::ranges::equal(out.item(4), mainnet_headers()[1004]));
    EXPECT_EQ(f->read_hash(8191, scratch).value(), mainnet_hashes()[8191]);
    auto past = f->read_hash(8192);
    ASSERT_FALSE(past);
    EXPECT_THAT(past.error().message, HasSubstr("ancient table hashes"));
    EXPECT_THAT(past.error().message, HasSubstr("[8192, 8193)"));
}

TEST(Freezer, AppendPreconditions) {
    TempDir dir;
    auto f = open_freezer(posix, dir.path());
    append_blocks(*f, 0, 10);
    const auto headers = views(mainnet_headers(), 11, 13);
    const std::span<const Hash32> hashes(mainnet_hashes().data() + 11, 2);
    auto gap = f->append(11, headers, hashes);
    ASSERT_FALSE(gap);
    EXPECT_THAT(gap.error().message, HasSubstr("append of block 11 but the next is 10"));
    auto uneven = f->append(10, headers, hashes.first(1));
    ASSERT_FALSE(uneven);
    EXPECT_THAT(uneven.error().message, HasSubstr("2 headers with 1 hashes"));
    EXPECT_TRUE(f->append(10, {}, {}));
    expect_blocks(*f, 10);
}

TEST(Freezer, RollsOverBothTables) {
    TempDir dir;
    {
        auto f = open_freezer(posix, dir.path(), {5000, false});
        append_blocks(*f, 0, 500);
        ASSERT_TRUE(f->sync());
    }
    EXPECT_TRUE(std::filesystem::exists(dir / "headers.0010.cdat"));
    EXPECT_TRUE(std::filesystem::exists(dir / "hashes.0003.rdat"));  // 156 hashes of 32 bytes per file
    EXPECT_EQ(std::filesystem::file_size(dir / "hashes.0000.rdat"), 156u * 32);
    auto f = open_freezer(posix, dir.path(), {5000, false});
    EXPECT_THAT(f->repairs(), IsEmpty());
    expect_blocks(*f, 500);
    EXPECT_EQ(f->bytes_on_disk(), dir_bytes(dir.path()));
}

TEST(Freezer, TruncateHead) {
    TempDir dir;
    auto f = open_freezer(posix, dir.path(), {5000, false});
    append_blocks(*f, 0, 300);
    ASSERT_TRUE(f->truncate_head(120));
    expect_blocks(*f, 120);
    append_blocks(*f, 120, 200);
    ASSERT_TRUE(f->sync());
    f.reset();
    f = open_freezer(posix, dir.path(), {5000, false});
    expect_blocks(*f, 200);
}

// The tables are synced one after the other, so a crash can leave either one longer.
TEST(Freezer, RepairTruncatesTablesToTheShorter) {
    for (const char* shorter : {kHeadersTable, kHashesTable}) {
        SCOPED_TRACE(shorter);
        TempDir dir;
        {
            auto f = open_freezer(posix, dir.path(), {5000, false});
            append_blocks(*f, 0, 100);
            ASSERT_TRUE(f->sync());
        }
        {
            const bool headers = std::string(shorter) == kHeadersTable;
            auto t = Table::open(posix, dir.path(), shorter, {headers, 5000, false});
            ASSERT_TRUE(t);
            ASSERT_TRUE((*t)->truncate_head(61));
        }
        const auto damaged = testing::snapshot_dir(dir.path());
        {
            // Read-only: the shorter length (what a process killed between the tables' syncs leaves
            // is readable), and nothing changed on disk.
            auto ro = Freezer::open(posix, dir.path(), {5000, true});
            ASSERT_TRUE(ro) << ro.error().message;
            EXPECT_EQ((*ro)->items(), 61u);
        }
        EXPECT_EQ(testing::snapshot_dir(dir.path()), damaged);

        auto f = open_freezer(posix, dir.path(), {5000, false});
        ASSERT_EQ(f->repairs().size(), 2u);
        EXPECT_THAT(f->repairs()[0], HasSubstr("from 100 to 61"));
        EXPECT_THAT(f->repairs()[1], HasSubstr("headers.xxh3 cut from 400 to 244 bytes"));
        expect_blocks(*f, 61);
        append_blocks(*f, 61, 100);
        ASSERT_TRUE(f->sync());
        f.reset();
        f = open_freezer(posix, dir.path(), {5000, false});
        EXPECT_THAT(f->repairs(), IsEmpty());
        expect_blocks(*f, 100);
    }
}

// One table's index claims far more deleted items than the other table holds (fuzzing found it:
// fuzz/corpus/freezer/freezer_tails_apart): no open may report a tail past its items.
TEST(Freezer, TablesWhoseTailsDisagreeAreRefused) {
    TempDir dir;
    {
        auto f = open_freezer(posix, dir.path());
        append_blocks(*f, 0, 10);
        ASSERT_TRUE(f->sync());
    }
    Bytes index = testing::read_file(dir / "hashes.ridx");
    store_be32(index.data() + 2, 4'278'190'008u);  // entry 0: items deleted from the front
    testing::write_file(dir / "hashes.ridx", index);
    const auto before = testing::snapshot_dir(dir.path());
    for (bool read_only : {true, false, true}) {
        auto f = Freezer::open(posix, dir.path(), {kDefaultMaxFileSize, read_only});
        ASSERT_FALSE(f) << (read_only ? "read-only" : "writable") << ": tail " << (*f)->tail() << ", items "
                        << (*f)->items();
        EXPECT_THAT(f.error().message, HasSubstr("hashes starts at item 4278190008")) << f.error().message;
        // Not even the hashes table's meta changes (a writable open of that table alone raises its
        // tail to what its index says was deleted).
        EXPECT_EQ(testing::snapshot_dir(dir.path()), before) << "the open changed the files";
    }
}

// The names of the files that differ between two snapshot_dir() results (changed, added or removed).
std::vector<std::string> changed_files(const std::map<std::string, Bytes>& before,
                                       const std::map<std::string, Bytes>& after) {
    std::vector<std::string> names;
    for (const auto& [name, bytes] : before) {
        auto it = after.find(name);
        if (it == after.end() || it->second != bytes) names.push_back(name);
    }
    for (const auto& [name, bytes] : after) {
        if (!before.contains(name)) names.push_back(name);
    }
    return names;
}

// Tables whose tails disagree are refused before either table is repaired: whatever their own
// repairs would write (a meta rewritten, an index cut, a stray data file deleted), a refused
// writable open leaves every file byte for byte as it was, and so does every later open.
TEST(Freezer, RefusedWritableOpenChangesNoFile) {
    constexpr uint64_t kFileSize = 64 << 10;  // 2,048 hashes a file: hashes.0000..0003.rdat
    // headers.meta with a virtual tail of 6000 (blocks below hidden, as geth's tail deletion leaves
    // them), as version 2 with the index's flush offset or as a legacy version 1 [1, 6000].
    auto hide_headers_below_6000 = [](const TempDir& dir, bool legacy) {
        const uint64_t index_size = std::filesystem::file_size(dir / "headers.cidx");
        const Bytes meta = legacy ? Bytes{0xc4, 0x01, 0x82, 0x17, 0x70} : encode_meta({kMetaVersion, 6000, index_size});
        ASSERT_EQ(decode_meta(meta)->virtual_tail, 6000u);
        testing::write_file(dir / "headers.meta", meta);
    };
    struct Case {
        const char* what;
        std::function<void(const TempDir&)> damage;
    };
    const std::vector<Case> cases = {
        {"headers hides blocks below 6000 in a version 1 meta (rewritten as version 2 on open); hashes holds "
         "blocks 0..4095, cleanly",
         [&](const TempDir& dir) {
             hide_headers_below_6000(dir, true);
             Bytes index = testing::read_file(dir / "hashes.ridx");
             index.resize(4097 * kIndexEntrySize);
             testing::write_file(dir / "hashes.ridx", index);
             testing::write_file(dir / "hashes.meta", encode_meta({kMetaVersion, 0, index.size()}));
             std::filesystem::remove(dir / "hashes.0002.rdat");
             std::filesystem::remove(dir / "hashes.0003.rdat");
         }},
        {"headers hides blocks below 6000; hashes.0002.rdat cut inside block 4096 (the hashes index is cut back "
         "to 4096 items, that file emptied, hashes.0003.rdat deleted and the meta rewritten on open)",
         [&](const TempDir& dir) {
             hide_headers_below_6000(dir, false);
             std::filesystem::resize_file(dir / "hashes.0002.rdat", 16);
         }},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.what);
        TempDir dir;
        {
            auto f = open_freezer(posix, dir.path(), {kFileSize, false});
            for (size_t i = 0; i < 8192; i += 2048) append_blocks(*f, i, i + 2048);
            ASSERT_TRUE(f->sync());
        }
        c.damage(dir);
        const auto before = testing::snapshot_dir(dir.path());
        ASSERT_GT(before.size(), 10u);  // both tables' files and the checksums
        // Writable twice (a first refusal must not prepare a second open to pass), then read-only,
        // which refuses too (on the tails, or on the damage it does not repair).
        for (bool read_only : {false, false, true}) {
            auto f = Freezer::open(posix, dir.path(), {kFileSize, read_only});
            ASSERT_FALSE(f) << (read_only ? "read-only" : "writable") << ": tail " << (*f)->tail() << ", items "
                            << (*f)->items();
            if (!read_only) {
                EXPECT_THAT(f.error().message, HasSubstr("the tables disagree: headers starts at item 6000 and "
                                                         "holds 8192, hashes starts at item 0 and holds 4096"));
            }
            EXPECT_THAT(changed_files(before, testing::snapshot_dir(dir.path())), IsEmpty())
                << (read_only ? "read-only" : "writable") << ": the refused open changed these files";
        }
    }
}

TEST(Freezer, FailedHashesAppendTakesTheHeadersBackOut) {
    TempDir dir;
    FaultInjectingFileSystem fs(posix);
    auto f = open_freezer(fs, dir.path());
    append_blocks(*f, 0, 50);
    // Writes of one append: headers data, headers index, hashes data, hashes index.
    fs.fail_write(fs.writes() + 3);
    const auto headers = views(mainnet_headers(), 50, 60);
    const std::span<const Hash32> hashes(mainnet_hashes().data() + 50, 10);
    auto r = f->append(50, headers, hashes);
    ASSERT_FALSE(r);
    EXPECT_THAT(r.error().message, HasSubstr("hashes.0000.rdat"));
    expect_blocks(*f, 50);
    append_blocks(*f, 50, 60);
    ASSERT_TRUE(f->sync());
    f.reset();
    f = open_freezer(posix, dir.path());
    expect_blocks(*f, 60);
}

// Bit rot: whichever stored byte of block 100 flips, a read never returns block 100. It fails with a
// kCorrupt error naming block 100 and hands back only the (checked) headers before it.
TEST(FreezerBitRot, AFlippedByteAnywhereInAnItemIsNeverReturned) {
    TempDir dir;
    auto f = open_freezer(posix, dir.path());
    append_blocks(*f, 0, 200);
    ASSERT_TRUE(f->sync());
    const auto [begin, end] = item_span(dir.path(), 100);
    ASSERT_GT(end - begin, 100u);
    const std::string data = dir / "headers.0000.cdat";
    size_t by_checksum = 0;
    for (uint64_t at = begin; at < end; ++at) {
        flip_byte(data, at);
        ItemBuffer out;
        auto r = f->read_headers(95, 10, kNoByteLimit, out);
        ASSERT_FALSE(r) << "flipped byte at " << at << " was returned";
        EXPECT_EQ(r.error().kind, ErrorKind::kCorrupt);
        ASSERT_EQ(r.error().block, std::optional<uint64_t>(100)) << r.error().message;
        if (r.error().message.find("checksum") != std::string::npos) ++by_checksum;
        ASSERT_EQ(out.size(), 5u);
        for (size_t i = 0; i < 5; ++i) ASSERT_TRUE(std::ranges::equal(out.item(i), mainnet_headers()[95 + i]));
        flip_byte(data, at);
    }
    // Most flips still decompress (a changed literal byte): only the checksum catches them.
    EXPECT_GT(by_checksum, (end - begin) / 2);
    expect_blocks(*f, 200);
}

TEST(FreezerBitRot, RewriteHeaderRepairsInPlace) {
    TempDir dir;
    auto f = open_freezer(posix, dir.path());
    append_blocks(*f, 0, 200);
    ASSERT_TRUE(f->sync());
    const auto [begin, end] = item_span(dir.path(), 150);
    flip_byte(dir / "headers.0000.cdat", (begin + end) / 2);
    ItemBuffer out;
    ASSERT_FALSE(f->read_headers(150, 1, kNoByteLimit, out));
    auto r = f->rewrite_header(150, mainnet_headers()[150]);
    ASSERT_TRUE(r) << r.error().message;
    expect_blocks(*f, 200);
    // A header of another length cannot go in place: refused, nothing written.
    auto other = f->rewrite_header(150, mainnet_headers()[0]);
    ASSERT_FALSE(other);
    EXPECT_THAT(other.error().message, HasSubstr("cannot be rewritten in place"));
    f.reset();
    f = open_freezer(posix, dir.path());
    EXPECT_THAT(f->repairs(), IsEmpty());
    expect_blocks(*f, 200);
}

// A freezer without the checksum file (geth's, or one headerd wrote before it kept checksums): a
// writable open computes them, a read-only one reads unchecked and says so.
TEST(FreezerBitRot, MissingOrShortChecksumFileIsRebuilt) {
    TempDir dir;
    ASSERT_NO_FATAL_FAILURE(write_without_checksums(dir, 300));
    {
        auto ro = open_freezer(posix, dir.path(), {kDefaultMaxFileSize, true});
        ASSERT_EQ(ro->repairs().size(), 1u);
        EXPECT_THAT(ro->repairs()[0], HasSubstr("reads are not checked"));
        EXPECT_EQ(ro->checked_items(), 0u);
        expect_blocks(*ro, 300);
        EXPECT_FALSE(std::filesystem::exists(dir / "headers.xxh3"));
    }
    {
        auto f = open_freezer(posix, dir.path());
        ASSERT_EQ(f->repairs().size(), 1u);
        EXPECT_THAT(f->repairs()[0], HasSubstr("computed the checksums of blocks [0, 300)"));
        EXPECT_EQ(f->checked_items(), 300u);
    }
    std::filesystem::resize_file(dir / "headers.xxh3", 4 * 120 + 3);  // a torn write
    auto f = open_freezer(posix, dir.path());
    ASSERT_EQ(f->repairs().size(), 2u);
    EXPECT_THAT(f->repairs()[0], HasSubstr("cut from 483 to 480 bytes"));
    EXPECT_THAT(f->repairs()[1], HasSubstr("[120, 300)"));
    expect_blocks(*f, 300);
    const auto [begin, end] = item_span(dir.path(), 250);
    flip_byte(dir / "headers.0000.cdat", end - 1);
    ItemBuffer out;
    auto r = f->read_headers(250, 1, kNoByteLimit, out);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().block, std::optional<uint64_t>(250));
}

// The checksums a writable open computes are computed before it repairs anything: a header that
// does not decompress refuses the open, and the repair the open had planned besides (bytes past the
// last indexed item) is not made either, so the files stay as they were for whoever looks into it.
TEST(FreezerBitRot, HeaderThatDoesNotDecompressRefusesTheChecksumRebuildAndChangesNoFile) {
    TempDir dir;
    ASSERT_NO_FATAL_FAILURE(write_without_checksums(dir, 300));
    const auto [begin, end] = item_span(dir.path(), 250);
    {
        Bytes data = testing::read_file(dir / "headers.0000.cdat");
        std::fill_n(data.begin() + static_cast<std::ptrdiff_t>(begin), 5, 0xff);  // no valid snappy length
        data.insert(data.end(), 100, 0x5a);                                       // an append the index never took
        testing::write_file(dir / "headers.0000.cdat", data);
    }
    const auto before = testing::snapshot_dir(dir.path());
    for (int attempt = 0; attempt < 2; ++attempt) {
        auto f = Freezer::open(posix, dir.path(), {});
        ASSERT_FALSE(f) << "opened with " << (*f)->items() << " items";
        EXPECT_EQ(f.error().kind, ErrorKind::kCorrupt) << f.error().message;
        EXPECT_EQ(f.error().block, std::optional<uint64_t>(250)) << f.error().message;
        EXPECT_THAT(changed_files(before, testing::snapshot_dir(dir.path())), IsEmpty())
            << "the refused open changed these files";
    }
    // A read-only open computes nothing: it serves the blocks before the damage, unchecked.
    auto ro = open_freezer(posix, dir.path(), {kDefaultMaxFileSize, true});
    EXPECT_EQ(ro->checked_items(), 0u);
    ItemBuffer out;
    ASSERT_TRUE(ro->read_headers(0, 250, kNoByteLimit, out));
    EXPECT_TRUE(std::ranges::equal(out.item(249), mainnet_headers()[249]));
    EXPECT_EQ(ro->read_headers(250, 1, kNoByteLimit, out).error().block, std::optional<uint64_t>(250));
}

TEST(Freezer, CrashAtEveryStepOfAppendAndSyncKeepsTablesInStep) {
    auto scenario = [](Freezer& f) -> uint64_t {
        uint64_t durable = 0;
        const auto headers = views(mainnet_headers(), 40, 120);
        const std::span<const Hash32> hashes(mainnet_hashes().data() + 40, 80);
        if (f.append(40, headers, hashes) && f.sync()) durable = 120;
        return durable;
    };
    auto setup = [](const TempDir& dir) {
        FaultInjectingFileSystem quick(posix, false);  // nothing crashes here: skip the real fsyncs
        auto f = open_freezer(quick, dir.path(), {4000, false});
        append_blocks(*f, 0, 40);
        ASSERT_TRUE(f->sync());
    };
    uint64_t mutations = 0;
    {
        TempDir dir;
        setup(dir);
        FaultInjectingFileSystem fs(posix, false);
        auto f = open_freezer(fs, dir.path(), {4000, false});
        fs.reset_counters();
        ASSERT_EQ(scenario(*f), 120u);
        mutations = fs.mutations();
    }
    ASSERT_GE(mutations, 20u);
    for (uint64_t k = 1; k <= mutations + 1; ++k) {
        for (const testing::PowerCutCase& cut : testing::kPowerCuts) {
            SCOPED_TRACE("crash at mutation " + std::to_string(k) + ", " + cut.name);
            TempDir dir;
            setup(dir);
            FaultInjectingFileSystem fs(posix, false);
            uint64_t durable = 40;
            {
                auto f = open_freezer(fs, dir.path(), {4000, false});
                fs.crash_at(fs.mutations() + k);
                durable = std::max(durable, scenario(*f));
            }
            ASSERT_TRUE(fs.drop_unsynced_data(cut.fate));
            FaultInjectingFileSystem quick(posix, false);
            auto f = open_freezer(quick, dir.path(), {4000, false});
            ASSERT_TRUE(f);
            EXPECT_GE(f->items(), durable);
            EXPECT_LE(f->items(), 120u);
            expect_blocks(*f, f->items());
        }
    }
}

}  // namespace
}  // namespace headerd::ancient
