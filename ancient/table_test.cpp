#include "ancient/table.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <snappy.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <new>
#include <thread>

#include "ancient/test_util.hpp"
#include "core/hex.hpp"

// Counts heap allocations so a test can show that a warm read allocates nothing.
namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

// GCC cannot see that these replace the global pair, and warns about malloc/free behind new/delete.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
[[gnu::noinline]] void* operator new(std::size_t n) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
    throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace headerd::ancient {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::mainnet_headers;
using ::testing::Not;
using testing::posix;
using testing::read_file;
using testing::TempDir;
using testing::views;

TableOptions snappy_opts(uint64_t max_file_size = kDefaultMaxFileSize) { return {true, max_file_size, false}; }
TableOptions raw_opts(uint64_t max_file_size = kDefaultMaxFileSize) { return {false, max_file_size, false}; }
TableOptions read_only(TableOptions o) {
    o.read_only = true;
    return o;
}

std::unique_ptr<Table> open_table(FileSystem& fs, const std::string& dir, TableOptions opts,
                                  const std::string& name = "headers") {
    auto t = Table::open(fs, dir, name, opts);
    EXPECT_TRUE(t) << (t ? "" : t.error().message);
    return t ? std::move(*t) : nullptr;
}

void append_range(Table& t, const std::vector<Bytes>& items, size_t begin, size_t end) {
    const auto v = views(items, begin, end);
    auto r = t.append(v);
    ASSERT_TRUE(r) << r.error().message;
}

// The table holds exactly want[0, n).
void expect_prefix(Table& t, const std::vector<Bytes>& want, uint64_t n) {
    ASSERT_EQ(t.items(), n);
    if (n == 0) return;
    ItemBuffer out;
    auto r = t.read_range(t.tail(), n - t.tail(), kNoByteLimit, out);
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_EQ(out.size(), n - t.tail());
    for (uint64_t i = t.tail(); i < n; ++i) {
        ASSERT_TRUE(std::ranges::equal(out.item(i - t.tail()), want[i])) << "item " << i;
    }
}

std::vector<IndexEntry> parse_index(const std::string& path) {
    const Bytes b = read_file(path);
    std::vector<IndexEntry> out;
    for (size_t i = 0; i + kIndexEntrySize <= b.size(); i += kIndexEntrySize) out.push_back(IndexEntry::decode(&b[i]));
    return out;
}

void write_meta_file(const std::string& path, TableMeta m) { testing::write_file(path, encode_meta(m)); }

Bytes snappy_compress(ByteView in) {
    std::string out;
    snappy::Compress(reinterpret_cast<const char*>(in.data()), in.size(), &out);
    return Bytes(out.begin(), out.end());
}

// A valid snappy block that C++ snappy would never produce (one literal, no copies): stands in for
// another encoder such as geth's.
Bytes snappy_literal(ByteView in) {
    Bytes out;
    for (uint64_t v = in.size();; v >>= 7) {
        if (v < 0x80) {
            out.push_back(static_cast<uint8_t>(v));
            break;
        }
        out.push_back(static_cast<uint8_t>(v | 0x80));
    }
    const size_t n = in.size() - 1;
    if (n < 60) {
        out.push_back(static_cast<uint8_t>(n << 2));
    } else if (n < 256) {
        out.push_back(60 << 2);
        out.push_back(static_cast<uint8_t>(n));
    } else {
        out.push_back(61 << 2);
        out.push_back(static_cast<uint8_t>(n));
        out.push_back(static_cast<uint8_t>(n >> 8));
    }
    append(out, in);
    return out;
}

// ---- layout and format -------------------------------------------------------------------------

TEST(TableFormat, FileNames) {
    EXPECT_EQ(index_file_name("headers", true), "headers.cidx");
    EXPECT_EQ(index_file_name("hashes", false), "hashes.ridx");
    EXPECT_EQ(data_file_name("headers", 0, true), "headers.0000.cdat");
    EXPECT_EQ(data_file_name("hashes", 42, false), "hashes.0042.rdat");
    EXPECT_EQ(data_file_name("headers", 65535, true), "headers.65535.cdat");
    EXPECT_EQ(meta_file_name("headers"), "headers.meta");
}

TEST(TableFormat, MetaEncoding) {
    EXPECT_EQ(to_hex(encode_meta({2, 0, 6})), "c3028006");
    EXPECT_EQ(to_hex(encode_meta({2, 0, 0x0c0006})), "c60280830c0006");
    EXPECT_EQ(to_hex(encode_meta({1, 7, 24})), "c3020718");  // always written as version 2

    auto v2 = decode_meta(from_hex("c60280830c0006").value());
    ASSERT_TRUE(v2);
    EXPECT_EQ(v2->version, 2u);
    EXPECT_EQ(v2->virtual_tail, 0u);
    EXPECT_EQ(v2->flush_offset, 0x0c0006u);
    // geth rewrites the meta in place: a shorter encoding leaves old bytes behind, which are ignored.
    auto trailing = decode_meta(from_hex("c3028006830c0006").value());
    ASSERT_TRUE(trailing);
    EXPECT_EQ(trailing->flush_offset, 6u);
    auto v1 = decode_meta(from_hex("c20105").value());
    ASSERT_TRUE(v1);
    EXPECT_EQ(v1->version, 1u);
    EXPECT_EQ(v1->virtual_tail, 5u);
    EXPECT_EQ(v1->flush_offset, 0u);

    EXPECT_FALSE(decode_meta(from_hex("").value()));
    EXPECT_FALSE(decode_meta(from_hex("0102").value()));        // not a list
    EXPECT_FALSE(decode_meta(from_hex("c3030000").value()));    // version 3
    EXPECT_FALSE(decode_meta(from_hex("c20280").value()));      // version 2 without flush offset
    EXPECT_FALSE(decode_meta(from_hex("c3018080").value()));    // version 1 with a third field
    EXPECT_FALSE(decode_meta(from_hex("c402820006").value()));  // leading zero
}

TEST(TableFormat, IndexEntry) {
    uint8_t buf[kIndexEntrySize];
    IndexEntry{0x0102, 0x03040506}.encode(buf);
    EXPECT_EQ(to_hex(ByteView(buf, sizeof buf)), "010203040506");
    EXPECT_EQ(IndexEntry::decode(buf), (IndexEntry{0x0102, 0x03040506}));
}

TEST(Table, CreatesGethLayout) {
    TempDir dir;
    {
        auto headers = open_table(posix, dir.path(), snappy_opts());
        auto hashes = open_table(posix, dir.path(), raw_opts(), "hashes");
        ASSERT_TRUE(headers && hashes);
        EXPECT_EQ(headers->items(), 0u);
        EXPECT_EQ(headers->tail(), 0u);
        EXPECT_THAT(headers->repairs(), IsEmpty());
    }
    // Exactly what geth leaves after creating a table: entry 0 = (file 0, 0 deleted), meta [2, 0, 6].
    EXPECT_EQ(to_hex(read_file(dir / "headers.cidx")), "000000000000");
    EXPECT_EQ(to_hex(read_file(dir / "headers.meta")), "c3028006");
    EXPECT_TRUE(read_file(dir / "headers.0000.cdat").empty());
    EXPECT_EQ(to_hex(read_file(dir / "hashes.ridx")), "000000000000");
    EXPECT_EQ(to_hex(read_file(dir / "hashes.meta")), "c3028006");
    EXPECT_TRUE(read_file(dir / "hashes.0000.rdat").empty());
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 6);
}

// The worked example of docs/ancient_format.md.
TEST(Table, FirstThreeMainnetHeadersByteForByte) {
    TempDir dir;
    const auto& h = mainnet_headers();
    {
        auto t = open_table(posix, dir.path(), snappy_opts());
        append_range(*t, h, 0, 3);
        ASSERT_TRUE(t->sync());
        EXPECT_EQ(t->bytes_on_disk(), 24u + 4u + 788u);
    }
    EXPECT_EQ(h[0].size(), 535u);
    EXPECT_EQ(h[1].size(), 532u);
    EXPECT_EQ(h[2].size(), 539u);
    EXPECT_EQ(to_hex(read_file(dir / "headers.cidx")),
              "000000000000"
              "0000000000c7"
              "0000000001ea"
              "000000000314");
    EXPECT_EQ(to_hex(read_file(dir / "headers.meta")), "c3028018");
    Bytes data;
    for (int i = 0; i < 3; ++i) append(data, snappy_compress(h[i]));
    EXPECT_EQ(data.size(), 788u);
    EXPECT_EQ(read_file(dir / "headers.0000.cdat"), data);
    EXPECT_EQ(to_hex(ByteView(data).first(6)), "970410f90214");
}

TEST(Table, AppendAndReadBackAllMainnetHeaders) {
    TempDir dir;
    const auto& h = mainnet_headers();
    ASSERT_EQ(h.size(), 8192u);
    {
        auto t = open_table(posix, dir.path(), snappy_opts());
        for (size_t i = 0; i < h.size(); i += 1000) append_range(*t, h, i, std::min(h.size(), i + 1000));
        expect_prefix(*t, h, h.size());
        ASSERT_TRUE(t->sync());
    }
    auto t = open_table(posix, dir.path(), snappy_opts());
    EXPECT_THAT(t->repairs(), IsEmpty());
    expect_prefix(*t, h, h.size());
    // Ranges starting anywhere, including at item 0 (whose start comes from entry 0's special case).
    for (uint64_t start : {0u, 1u, 777u, 4095u, 8000u}) {
        ItemBuffer out;
        ASSERT_TRUE(t->read_range(start, 192, kNoByteLimit, out));
        ASSERT_EQ(out.size(), 192u);
        for (uint64_t i = 0; i < 192; ++i) ASSERT_TRUE(std::ranges::equal(out.item(i), h[start + i]));
    }
}

TEST(Table, RawTableStoresItemsVerbatim) {
    TempDir dir;
    const auto& hashes = testing::mainnet_hashes();
    std::vector<Bytes> items;
    for (size_t i = 0; i < 100; ++i) items.emplace_back(hashes[i].begin(), hashes[i].end());
    {
        auto t = open_table(posix, dir.path(), raw_opts(), "hashes");
        append_range(*t, items, 0, 100);
        ASSERT_TRUE(t->sync());
    }
    Bytes data;
    for (const Bytes& b : items) append(data, b);
    EXPECT_EQ(read_file(dir / "hashes.0000.rdat"), data);
    const auto index = parse_index(dir / "hashes.ridx");
    ASSERT_EQ(index.size(), 101u);
    for (uint32_t i = 1; i <= 100; ++i) EXPECT_EQ(index[i], (IndexEntry{0, 32 * i}));
    auto t = open_table(posix, dir.path(), raw_opts(), "hashes");
    expect_prefix(*t, items, 100);
}

TEST(Table, ReadsItemsFromAnotherSnappyEncoder) {
    TempDir dir;
    const auto& h = mainnet_headers();
    // Hand-made table: literal-only snappy items, index and meta written byte by byte.
    Bytes index(kIndexEntrySize, 0);
    Bytes data;
    for (int i = 0; i < 5; ++i) {
        append(data, snappy_literal(h[i]));
        index.resize(index.size() + kIndexEntrySize);
        IndexEntry{0, static_cast<uint32_t>(data.size())}.encode(&index[index.size() - kIndexEntrySize]);
    }
    testing::write_file(dir / "headers.cidx", index);
    testing::write_file(dir / "headers.0000.cdat", data);
    write_meta_file(dir / "headers.meta", {2, 0, index.size()});
    auto t = open_table(posix, dir.path(), read_only(snappy_opts()));
    ASSERT_TRUE(t);
    expect_prefix(*t, h, 5);
}

TEST(Table, DeletedAndHiddenItemsFromTheTail) {
    // A table as geth leaves it after tail deletion: entry 0 = (file 1, 10 deleted), the meta hides two
    // more, and file 0 is a leftover.
    TempDir dir;
    const auto& h = mainnet_headers();
    Bytes index(kIndexEntrySize);
    IndexEntry{1, 10}.encode(index.data());
    Bytes data;
    for (int i = 10; i < 15; ++i) {
        append(data, snappy_compress(h[i]));
        index.resize(index.size() + kIndexEntrySize);
        IndexEntry{1, static_cast<uint32_t>(data.size())}.encode(&index[index.size() - kIndexEntrySize]);
    }
    testing::write_file(dir / "headers.cidx", index);
    testing::write_file(dir / "headers.0001.cdat", data);
    testing::write_file(dir / "headers.0000.cdat", as_bytes("leftover"));
    write_meta_file(dir / "headers.meta", {2, 12, index.size()});

    auto t = open_table(posix, dir.path(), snappy_opts());
    ASSERT_TRUE(t);
    EXPECT_EQ(t->tail(), 12u);
    EXPECT_EQ(t->items(), 15u);
    expect_prefix(*t, h, 15);
    ItemBuffer out;
    auto below = t->read_range(11, 2, kNoByteLimit, out);
    ASSERT_FALSE(below);
    EXPECT_THAT(below.error().message, HasSubstr("[11, 13)"));
    EXPECT_THAT(below.error().message, HasSubstr("[12, 15)"));
    EXPECT_FALSE(t->truncate_head(11));
    EXPECT_FALSE(std::filesystem::exists(dir / "headers.0000.cdat"));  // outside the table's files

    ASSERT_TRUE(t->truncate_head(13));
    append_range(*t, h, 13, 20);
    ASSERT_TRUE(t->sync());
    t.reset();
    t = open_table(posix, dir.path(), snappy_opts());
    EXPECT_THAT(t->repairs(), IsEmpty());
    EXPECT_EQ(t->tail(), 12u);
    expect_prefix(*t, h, 20);
    EXPECT_EQ(parse_index(dir / "headers.cidx")[0], (IndexEntry{1, 10}));
}

// ---- rollover ----------------------------------------------------------------------------------

TEST(Table, RolloverKeepsItemsWholeAndIndexPointsAtTheRightFile) {
    TempDir dir;
    const auto& h = mainnet_headers();
    constexpr uint64_t kMax = 4000;
    constexpr size_t kItems = 300;
    {
        auto t = open_table(posix, dir.path(), snappy_opts(kMax));
        append_range(*t, h, 0, 7);  // batches that end mid-file and batches that span files
        append_range(*t, h, 7, 150);
        for (size_t i = 150; i < kItems; ++i) append_range(*t, h, i, i + 1);
        ASSERT_TRUE(t->sync());
    }
    const auto index = parse_index(dir / "headers.cidx");
    ASSERT_EQ(index.size(), kItems + 1);
    std::map<uint32_t, Bytes> files;
    for (uint32_t f = 0; f <= index.back().file; ++f) {
        files[f] = read_file(dir / data_file_name("headers", f, true));
        EXPECT_LE(files[f].size(), kMax) << "file " << f;
        EXPECT_FALSE(files[f].empty()) << "file " << f;
    }
    EXPECT_GT(files.size(), 10u);
    EXPECT_FALSE(std::filesystem::exists(dir / data_file_name("headers", index.back().file + 1, true)));
    uint32_t begin = 0;
    for (size_t i = 1; i <= kItems; ++i) {
        const IndexEntry e = index[i];
        if (i > 1 && e.file != index[i - 1].file) {
            ASSERT_EQ(e.file, index[i - 1].file + 1);
            // The item did not fit in the previous file, which ends exactly at its last item.
            EXPECT_EQ(files[index[i - 1].file].size(), index[i - 1].offset);
            EXPECT_GT(index[i - 1].offset + snappy_compress(h[i - 1]).size(), kMax);
            begin = 0;
        }
        const Bytes stored(files[e.file].begin() + begin, files[e.file].begin() + e.offset);
        EXPECT_EQ(stored, snappy_compress(h[i - 1])) << "item " << i - 1;
        begin = e.offset;
    }
    auto t = open_table(posix, dir.path(), snappy_opts(kMax));
    EXPECT_THAT(t->repairs(), IsEmpty());
    expect_prefix(*t, h, kItems);
    // A range across several files.
    ItemBuffer out;
    ASSERT_TRUE(t->read_range(5, 40, kNoByteLimit, out));
    ASSERT_EQ(out.size(), 40u);
    for (size_t i = 0; i < 40; ++i) EXPECT_TRUE(std::ranges::equal(out.item(i), h[5 + i]));
}

TEST(Table, OversizedItemsGetAFileEachAndEmptyItemsNeverOpenOne) {
    TempDir dir;
    std::vector<Bytes> items = {Bytes(100, 1), Bytes(30, 2), Bytes(),     Bytes(50, 3),
                                Bytes(),       Bytes(10, 4), Bytes(64, 5)};
    {
        auto t = open_table(posix, dir.path(), raw_opts(64), "blobs");
        append_range(*t, items, 0, items.size());
        ASSERT_TRUE(t->sync());
    }
    const auto index = parse_index(dir / "blobs.ridx");
    const std::vector<IndexEntry> want = {{0, 0}, {0, 100}, {1, 30}, {1, 30}, {2, 50}, {2, 50}, {2, 60}, {3, 64}};
    EXPECT_EQ(index, want);
    auto t = open_table(posix, dir.path(), raw_opts(64), "blobs");
    EXPECT_THAT(t->repairs(), IsEmpty());
    expect_prefix(*t, items, items.size());
}

// ---- reading -----------------------------------------------------------------------------------

TEST(Table, ReadRangeByteCapKeepsAtLeastOneItem) {
    TempDir dir;
    const auto& h = mainnet_headers();
    for (bool compressed : {true, false}) {
        SCOPED_TRACE(compressed ? "snappy" : "raw");
        auto t = open_table(posix, dir / (compressed ? "c" : "r"), {compressed, 3000, false});
        append_range(*t, h, 0, 50);
        const uint64_t three = h[10].size() + h[11].size() + h[12].size();
        struct Case {
            uint64_t cap;
            size_t want;
        };
        for (const Case c : {Case{three, 3}, Case{three - 1, 2}, Case{three + h[13].size(), 4}, Case{1, 1}, Case{0, 1},
                             Case{kNoByteLimit, 20}}) {
            ItemBuffer out;
            out.push(as_bytes("already here"));
            ASSERT_TRUE(t->read_range(10, 20, c.cap, out));
            ASSERT_EQ(out.size(), 1 + c.want) << "cap " << c.cap;
            EXPECT_EQ(as_chars(out.item(0)), "already here");
            for (size_t i = 0; i < c.want; ++i) EXPECT_TRUE(std::ranges::equal(out.item(1 + i), h[10 + i]));
        }
    }
}

TEST(Table, ReadRangeOutOfBoundsNamesTableAndRange) {
    TempDir dir;
    const auto& h = mainnet_headers();
    auto t = open_table(posix, dir.path(), snappy_opts());
    append_range(*t, h, 0, 10);
    ItemBuffer out;
    auto past = t->read_range(5, 6, kNoByteLimit, out);
    ASSERT_FALSE(past);
    EXPECT_THAT(past.error().message, HasSubstr("ancient table headers"));
    EXPECT_THAT(past.error().message, HasSubstr("[5, 11)"));
    EXPECT_THAT(past.error().message, HasSubstr("[0, 10)"));
    EXPECT_FALSE(t->read_range(11, 0, kNoByteLimit, out));
    EXPECT_FALSE(t->read_range(UINT64_MAX, 2, kNoByteLimit, out));
    EXPECT_FALSE(t->read_range(1, UINT64_MAX, kNoByteLimit, out));
    EXPECT_TRUE(out.empty());
    EXPECT_TRUE(t->read_range(10, 0, kNoByteLimit, out));
    EXPECT_TRUE(out.empty());
}

TEST(Table, ReadRangeIsOneIndexReadPlusOneReadPerDataFile) {
    TempDir dir;
    const auto& h = mainnet_headers();
    FaultInjectingFileSystem fs(posix);
    auto t = open_table(fs, dir.path(), snappy_opts(20000));
    append_range(*t, h, 0, 200);
    const auto index = parse_index(dir / "headers.cidx");
    ItemBuffer out;

    fs.reset_counters();
    ASSERT_TRUE(t->read_range(0, 20, kNoByteLimit, out));  // within file 0
    ASSERT_EQ(index[20].file, 0u);
    EXPECT_EQ(fs.reads(), 2u);

    // A range across exactly one file boundary.
    size_t first_of_file1 = 1;
    while (index[first_of_file1 + 1].file == 0) ++first_of_file1;
    fs.reset_counters();
    ASSERT_TRUE(t->read_range(first_of_file1 - 3, 6, kNoByteLimit, out));
    EXPECT_EQ(fs.reads(), 3u);
    EXPECT_EQ(out.size(), 26u);
    EXPECT_TRUE(std::ranges::equal(out.item(25), h[first_of_file1 + 2]));
}

TEST(Table, WarmReadAllocatesNothing) {
    TempDir dir;
    const auto& h = mainnet_headers();
    auto t = open_table(posix, dir.path(), snappy_opts(50000));
    append_range(*t, h, 0, 1000);
    ItemBuffer out;
    ASSERT_TRUE(t->read_range(0, 1000, kNoByteLimit, out));  // warms the scratch and `out`
    for (uint64_t start : {100u, 250u, 400u}) {
        out.clear();
        const uint64_t before = g_allocations.load();
        auto r = t->read_range(start, 300, kNoByteLimit, out);
        const uint64_t allocations = g_allocations.load() - before;
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_EQ(allocations, 0u) << "start " << start;
        ASSERT_EQ(out.size(), 300u);
        EXPECT_TRUE(std::ranges::equal(out.item(299), h[start + 299]));
    }
}

TEST(Table, ConcurrentReadersWithTheirOwnScratch) {
    TempDir dir;
    const auto& h = mainnet_headers();
    auto t = open_table(posix, dir.path(), snappy_opts(100000));
    append_range(*t, h, 0, 2000);
    const Table& reader = *t;
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    for (int k = 0; k < 4; ++k) {
        threads.emplace_back([&, k] {
            ReadScratch scratch;
            ItemBuffer out;
            for (uint64_t start = static_cast<uint64_t>(k); start + 64 <= 2000; start += 97) {
                out.clear();
                if (!reader.read_range(start, 64, kNoByteLimit, out, scratch) || out.size() != 64) {
                    ++mismatches;
                    continue;
                }
                for (size_t i = 0; i < 64; ++i) {
                    if (!std::ranges::equal(out.item(i), h[start + i])) ++mismatches;
                }
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(mismatches.load(), 0);
}

// ---- truncation --------------------------------------------------------------------------------

TEST(Table, TruncateHeadAcrossFileBoundaryDeletesLaterFiles) {
    TempDir dir;
    const auto& h = mainnet_headers();
    auto t = open_table(posix, dir.path(), snappy_opts(3000));
    append_range(*t, h, 0, 100);
    ASSERT_TRUE(t->sync());
    const auto index = parse_index(dir / "headers.cidx");
    const uint32_t last_file = index.back().file;
    ASSERT_GE(last_file, 5u);

    ASSERT_TRUE(t->truncate_head(30));
    EXPECT_EQ(t->items(), 30u);
    const IndexEntry end = index[30];
    for (uint32_t f = end.file + 1; f <= last_file; ++f) {
        EXPECT_FALSE(std::filesystem::exists(dir / data_file_name("headers", f, true))) << f;
    }
    EXPECT_EQ(std::filesystem::file_size(dir / data_file_name("headers", end.file, true)), end.offset);
    EXPECT_EQ(std::filesystem::file_size(dir / "headers.cidx"), 31 * kIndexEntrySize);
    // Durable at once: the meta's flush offset already moved back.
    EXPECT_EQ(decode_meta(read_file(dir / "headers.meta")).value().flush_offset, 31 * kIndexEntrySize);
    expect_prefix(*t, h, 30);
    EXPECT_TRUE(t->truncate_head(31));  // no-op above the head
    EXPECT_EQ(t->items(), 30u);

    append_range(*t, h, 30, 100);
    ASSERT_TRUE(t->sync());
    EXPECT_EQ(parse_index(dir / "headers.cidx"), index);  // same bytes as the first time
    t.reset();
    t = open_table(posix, dir.path(), snappy_opts(3000));
    EXPECT_THAT(t->repairs(), IsEmpty());
    expect_prefix(*t, h, 100);

    ASSERT_TRUE(t->truncate_head(0));
    expect_prefix(*t, h, 0);
    EXPECT_EQ(to_hex(read_file(dir / "headers.cidx")), "000000000000");
    EXPECT_EQ(std::filesystem::file_size(dir / "headers.0000.cdat"), 0u);
    EXPECT_FALSE(std::filesystem::exists(dir / "headers.0001.cdat"));
}

TEST(Table, ReadOnlyRefusesWrites) {
    TempDir dir;
    const auto& h = mainnet_headers();
    {
        auto t = open_table(posix, dir.path(), snappy_opts());
        append_range(*t, h, 0, 10);
    }  // the destructor syncs
    const auto before = testing::snapshot_dir(dir.path());
    {
        auto t = open_table(posix, dir.path(), read_only(snappy_opts()));
        ASSERT_TRUE(t);
        expect_prefix(*t, h, 10);
        const auto v = views(h, 10, 11);
        EXPECT_FALSE(t->append(v));
        EXPECT_FALSE(t->truncate_head(5));
        EXPECT_TRUE(t->sync());
    }
    EXPECT_EQ(testing::snapshot_dir(dir.path()), before);
    TempDir empty;
    auto missing = Table::open(posix, empty.path(), "headers", read_only(snappy_opts()));
    ASSERT_FALSE(missing);
    EXPECT_THAT(missing.error().message, HasSubstr(empty / "headers.cidx"));
    EXPECT_THAT(testing::snapshot_dir(empty.path()), IsEmpty());
}

// A writable open_unrepaired of a table that does not exist yet creates nothing, not even its
// directory; apply_repairs() creates the table as open() does.
TEST(Table, OpenUnrepairedCreatesNothingUntilRepairsAreApplied) {
    TempDir base;
    const std::string dir = base / "chain";
    {
        auto t = Table::open_unrepaired(posix, dir, "headers", snappy_opts());
        ASSERT_TRUE(t) << t.error().message;
        EXPECT_EQ((*t)->items(), 0u);
        EXPECT_EQ((*t)->tail(), 0u);
        EXPECT_THAT((*t)->repairs(), IsEmpty());
    }
    EXPECT_FALSE(std::filesystem::exists(dir));
    auto t = Table::open_unrepaired(posix, dir, "headers", snappy_opts());
    ASSERT_TRUE(t) << t.error().message;
    ASSERT_TRUE((*t)->apply_repairs());
    ASSERT_TRUE((*t)->apply_repairs());  // nothing left to do
    EXPECT_FALSE((*t)->needs_reopen());
    EXPECT_EQ(read_file(base / "chain/headers.cidx"), Bytes(kIndexEntrySize, 0));
    EXPECT_TRUE(std::filesystem::exists(base / "chain/headers.0000.cdat"));
    append_range(**t, mainnet_headers(), 0, 3);
    ASSERT_TRUE((*t)->sync());
    t->reset();
    auto ro = open_table(posix, dir, read_only(snappy_opts()));
    expect_prefix(*ro, mainnet_headers(), 3);
}

TEST(Table, RejectsUnaddressableMaxFileSize) {
    TempDir dir;
    EXPECT_FALSE(Table::open(posix, dir.path(), "headers", snappy_opts(0)));
    auto big = Table::open(posix, dir.path(), "headers", snappy_opts(uint64_t{1} << 32));
    ASSERT_FALSE(big);
    EXPECT_THAT(big.error().message, HasSubstr("max_file_size"));
}

// ---- repair on open ----------------------------------------------------------------------------

// A synced table of 40 mainnet headers in data files of at most 4000 bytes, damaged by one case.
struct RepairCase {
    const char* name;
    // Damages the table in `dir` (index entries as written are given) and returns how many items
    // the repaired table must hold.
    std::function<uint64_t(const TempDir& dir, const std::vector<IndexEntry>& index)> damage;
    // What a read-only open must say, or nullptr if it opens (unchanged) with the undamaged items.
    const char* read_only_error;
};

constexpr uint64_t kRepairMax = 4000;
constexpr uint64_t kRepairItems = 40;

std::string data_path(const TempDir& dir, uint32_t file) { return dir / data_file_name("headers", file, true); }

void set_entry(const TempDir& dir, uint64_t position, IndexEntry e) {
    Bytes index = read_file(dir / "headers.cidx");
    e.encode(&index[position * kIndexEntrySize]);
    testing::write_file(dir / "headers.cidx", index);
}

uint64_t items_in_file(const std::vector<IndexEntry>& index, uint32_t file) {
    return static_cast<uint64_t>(
        std::count_if(index.begin() + 1, index.end(), [&](auto& e) { return e.file == file; }));
}

const RepairCase kRepairCases[] = {
    {"index length not a multiple of 6",
     [](const TempDir& dir, const auto&) {
         testing::append_file(dir / "headers.cidx", from_hex("000102").value());
         return kRepairItems;
     },
     "not a multiple of 6"},
    {"trailing zero entries inside the flush offset",
     [](const TempDir& dir, const auto&) {
         testing::append_file(dir / "headers.cidx", Bytes(2 * kIndexEntrySize, 0));
         write_meta_file(dir / "headers.meta", {2, 0, (kRepairItems + 3) * kIndexEntrySize});
         return kRepairItems;
     },
     "entry 41 jumps from data file"},
    {"offset going backwards",
     [](const TempDir& dir, const auto& index) {
         uint64_t p = 25;
         while (index[p].file != index[p - 1].file) ++p;
         set_entry(dir, p, {index[p].file, index[p - 1].offset - 1});
         return p - 1;
     },
     "goes backwards"},
    {"entry 1 naming a file after the first",
     [](const TempDir& dir, const auto&) {
         set_entry(dir, 1, {5, 100});
         return uint64_t{0};
     },
     "entry 1 points at data file 5"},
    {"head data file shorter than the index says",
     [](const TempDir& dir, const auto& index) {
         std::filesystem::resize_file(data_path(dir, index.back().file), index.back().offset - 1);
         return kRepairItems - 1;
     },
     "bytes but the index needs"},
    {"middle data file shorter than the index says",
     [](const TempDir& dir, const auto& index) {
         const uint64_t size = std::filesystem::file_size(data_path(dir, 1)) / 2;
         std::filesystem::resize_file(data_path(dir, 1), size);
         uint64_t keep = 0;
         for (size_t p = 1; p < index.size(); ++p) {
             if (index[p].file > 1 || (index[p].file == 1 && index[p].offset > size)) break;
             keep = p;
         }
         return keep;
     },
     "bytes but the index needs"},
    {"head data file longer than the index says",
     [](const TempDir& dir, const auto& index) {
         testing::append_file(data_path(dir, index.back().file), as_bytes("dangling bytes of an unindexed item"));
         return kRepairItems;
     },
     nullptr},
    {"index entries past the meta flush offset",
     [](const TempDir& dir, const auto&) {
         write_meta_file(dir / "headers.meta", {2, 0, 31 * kIndexEntrySize});
         return uint64_t{30};
     },
     nullptr},
    {"missing head data file (a crash before the directory was synced)",
     [](const TempDir& dir, const auto& index) {
         std::filesystem::remove(data_path(dir, index.back().file));
         uint64_t keep = 0;
         for (uint32_t f = 0; f < index.back().file; ++f) keep += items_in_file(index, f);
         return keep;
     },
     "is missing"},
    {"flush offset past the end of the index",
     [](const TempDir& dir, const auto&) {
         write_meta_file(dir / "headers.meta", {2, 0, (kRepairItems + 11) * kIndexEntrySize});
         return kRepairItems;
     },
     nullptr},
    {"legacy version 1 meta",
     [](const TempDir& dir, const auto&) {
         testing::write_file(dir / "headers.meta", from_hex("c20180").value());
         return kRepairItems;
     },
     nullptr},
    {"missing meta",
     [](const TempDir& dir, const auto&) {
         std::filesystem::remove(dir / "headers.meta");
         return kRepairItems;
     },
     "headers.meta at offset 0: missing"},
    {"undecodable meta",
     [](const TempDir& dir, const auto&) {
         testing::write_file(dir / "headers.meta", as_bytes("\xc3\x07garbage"));
         return kRepairItems;
     },
     "meta"},
    {"leftover data file past the head",
     [](const TempDir& dir, const auto& index) {
         testing::write_file(data_path(dir, index.back().file + 2), as_bytes("left by a truncation"));
         return kRepairItems;
     },
     nullptr},
    {"empty index",
     [](const TempDir& dir, const auto&) {
         std::filesystem::resize_file(dir / "headers.cidx", 0);
         return uint64_t{0};
     },
     "empty index"},
};

// A missing data file with items after it is damage no crash explains: cutting the table back there
// would silently drop every later file, so both opens refuse and the files stay as they are.
TEST(TableRepairRefusal, MissingMiddleDataFileIsRefusedAndNothingIsDropped) {
    const auto& h = mainnet_headers();
    TempDir dir;
    {
        auto t = open_table(posix, dir.path(), snappy_opts(kRepairMax));
        append_range(*t, h, 0, kRepairItems);
        ASSERT_TRUE(t->sync());
    }
    ASSERT_GE(parse_index(dir / "headers.cidx").back().file, 3u);
    std::filesystem::remove(data_path(dir, 1));
    const auto damaged = testing::snapshot_dir(dir.path());
    for (bool ro : {true, false}) {
        TableOptions opts = snappy_opts(kRepairMax);
        opts.read_only = ro;
        auto t = Table::open(posix, dir.path(), "headers", opts);
        ASSERT_FALSE(t) << "opened with " << (*t)->items() << " items";
        EXPECT_THAT(t.error().message, HasSubstr(data_path(dir, 1)));
        EXPECT_THAT(t.error().message, HasSubstr("later data files hold items"));
    }
    EXPECT_EQ(testing::snapshot_dir(dir.path()), damaged);
}

void PrintTo(const RepairCase& c, std::ostream* os) { *os << c.name; }

class TableRepair : public ::testing::TestWithParam<RepairCase> {};

TEST_P(TableRepair, RepairsToTheLongestIntactPrefix) {
    const RepairCase& c = GetParam();
    const auto& h = mainnet_headers();
    TempDir dir;
    {
        auto t = open_table(posix, dir.path(), snappy_opts(kRepairMax));
        append_range(*t, h, 0, kRepairItems);
        ASSERT_TRUE(t->sync());
    }
    const auto index = parse_index(dir / "headers.cidx");
    ASSERT_GE(index.back().file, 3u);
    const uint64_t expected = c.damage(dir, index);
    const auto damaged = testing::snapshot_dir(dir.path());

    // Read-only: reports the damage (or reads the table as it is) and changes nothing.
    {
        auto ro = Table::open(posix, dir.path(), "headers", read_only(snappy_opts(kRepairMax)));
        if (c.read_only_error != nullptr) {
            ASSERT_FALSE(ro) << "opened with " << (*ro)->items() << " items";
            EXPECT_THAT(ro.error().message, HasSubstr(c.read_only_error));
            EXPECT_THAT(ro.error().message, HasSubstr("ancient table headers"));
        } else {
            ASSERT_TRUE(ro) << ro.error().message;
            expect_prefix(**ro, h, expected);
        }
    }
    EXPECT_EQ(testing::snapshot_dir(dir.path()), damaged);

    // Writable, up to its first write (open_unrepaired): the repairs are decided, the table already
    // has its repaired length, and nothing is written (not even by the destructor); writes are
    // refused until apply_repairs().
    std::vector<std::string> decided;
    {
        auto t = Table::open_unrepaired(posix, dir.path(), "headers", snappy_opts(kRepairMax));
        ASSERT_TRUE(t) << t.error().message;
        EXPECT_EQ((*t)->items(), expected);
        decided = (*t)->repairs();
        EXPECT_THAT(decided, Not(IsEmpty()));
        EXPECT_TRUE((*t)->needs_reopen());
        const ByteView item = h[expected];
        EXPECT_FALSE((*t)->append(std::span(&item, 1)));
        EXPECT_FALSE((*t)->sync());
    }
    EXPECT_EQ(testing::snapshot_dir(dir.path()), damaged);

    // Writable: repairs to the longest prefix whose bytes are all there, and says what it did (what
    // open_unrepaired decided).
    {
        auto t = open_table(posix, dir.path(), snappy_opts(kRepairMax));
        ASSERT_TRUE(t);
        EXPECT_EQ(t->repairs(), decided);
        expect_prefix(*t, h, expected);
    }
    // The repaired table is clean and consistent on disk.
    const auto repaired = parse_index(dir / "headers.cidx");
    ASSERT_EQ(repaired.size(), expected + 1);
    EXPECT_TRUE(std::equal(repaired.begin() + 1, repaired.end(), index.begin() + 1));
    const uint32_t head = expected == 0 ? 0 : repaired.back().file;
    EXPECT_EQ(std::filesystem::file_size(data_path(dir, head)), expected == 0 ? 0 : repaired.back().offset);
    EXPECT_FALSE(std::filesystem::exists(data_path(dir, head + 1)));
    const auto meta = decode_meta(read_file(dir / "headers.meta"));
    ASSERT_TRUE(meta);
    EXPECT_EQ(meta->version, 2u);
    EXPECT_EQ(meta->flush_offset, (expected + 1) * kIndexEntrySize);
    {
        auto t = open_table(posix, dir.path(), snappy_opts(kRepairMax));
        EXPECT_THAT(t->repairs(), IsEmpty());
        // And it takes the rest of the chain as if nothing had happened.
        append_range(*t, h, expected, kRepairItems + 10);
        ASSERT_TRUE(t->sync());
    }
    EXPECT_EQ(parse_index(dir / "headers.cidx").at(kRepairItems), index.at(kRepairItems));
    auto ro = open_table(posix, dir.path(), read_only(snappy_opts(kRepairMax)));
    expect_prefix(*ro, h, kRepairItems + 10);
}

std::string repair_case_name(const ::testing::TestParamInfo<RepairCase>& param) {
    std::string name;
    for (const char* p = param.param.name; *p; ++p) name += std::isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
    return name;
}

INSTANTIATE_TEST_SUITE_P(Cases, TableRepair, ::testing::ValuesIn(kRepairCases), repair_case_name);

// ---- faults and crashes ------------------------------------------------------------------------

constexpr uint64_t kFaultMax = 3000;
using testing::kPowerCuts;
using testing::PowerCutCase;

// A synced table of `n` headers written without faults (the fsyncs skipped: nothing crashes here).
void make_table(const TempDir& dir, uint64_t n) {
    FaultInjectingFileSystem quick(posix, false);
    auto t = open_table(quick, dir.path(), snappy_opts(kFaultMax));
    append_range(*t, mainnet_headers(), 0, n);
    ASSERT_TRUE(t->sync());
}

// After a power cut, the table opens and holds a prefix of what was appended, at least `durable` long.
void expect_recovers(FaultInjectingFileSystem& fs, const TempDir& dir, uint64_t durable, uint64_t appended,
                     const FaultInjectingFileSystem::PowerCut& fate = {}) {
    auto dropped = fs.drop_unsynced_data(fate);
    ASSERT_TRUE(dropped) << dropped.error().message;
    FaultInjectingFileSystem quick(posix, false);
    auto t = open_table(quick, dir.path(), snappy_opts(kFaultMax));
    ASSERT_TRUE(t);
    EXPECT_GE(t->items(), durable);
    EXPECT_LE(t->items(), appended);
    expect_prefix(*t, mainnet_headers(), t->items());
    const uint64_t n = t->items();
    t.reset();
    auto again = open_table(quick, dir.path(), read_only(snappy_opts(kFaultMax)));
    ASSERT_TRUE(again);
    EXPECT_EQ(again->items(), n);
    EXPECT_THAT(again->repairs(), IsEmpty());
}

TEST(TableFaults, ShortWriteOfDataOrIndexRollsBack) {
    const auto& h = mainnet_headers();
    for (uint64_t nth : {1u, 2u}) {  // the first write of the append (data), then the next
        SCOPED_TRACE(nth);
        TempDir dir;
        make_table(dir, 20);
        FaultInjectingFileSystem fs(posix);
        auto t = open_table(fs, dir.path(), snappy_opts(kFaultMax));
        fs.short_write(fs.writes() + nth, 5);
        const auto v = views(h, 20, 25);
        auto r = t->append(v);
        ASSERT_FALSE(r);
        EXPECT_THAT(r.error().message, HasSubstr("short write"));
        EXPECT_FALSE(t->needs_reopen());
        expect_prefix(*t, h, 20);
        append_range(*t, h, 20, 30);
        ASSERT_TRUE(t->sync());
        t.reset();
        expect_recovers(fs, dir, 30, 30);
    }
}

TEST(TableFaults, FailedWriteAtEachStepOfAMultiFileAppend) {
    const auto& h = mainnet_headers();
    uint64_t writes = 0;
    {
        TempDir dir;
        make_table(dir, 10);
        FaultInjectingFileSystem fs(posix);
        auto t = open_table(fs, dir.path(), snappy_opts(kFaultMax));
        fs.reset_counters();
        append_range(*t, h, 10, 60);
        writes = fs.writes();
    }
    ASSERT_GE(writes, 5u);  // data per file, then the index
    for (uint64_t k = 1; k <= writes; ++k) {
        SCOPED_TRACE(k);
        TempDir dir;
        make_table(dir, 10);
        FaultInjectingFileSystem fs(posix);
        auto t = open_table(fs, dir.path(), snappy_opts(kFaultMax));
        const uint32_t head = parse_index(dir / "headers.cidx").back().file;
        fs.fail_write(fs.writes() + k);
        const auto v = views(h, 10, 60);
        ASSERT_FALSE(t->append(v));
        EXPECT_FALSE(t->needs_reopen());
        expect_prefix(*t, h, 10);
        // No file the failed append created is left behind.
        EXPECT_FALSE(std::filesystem::exists(dir / data_file_name("headers", head + 1, true)));
        append_range(*t, h, 10, 60);
        ASSERT_TRUE(t->sync());
        t.reset();
        expect_recovers(fs, dir, 60, 60);
    }
}

TEST(TableFaults, FailedFsyncAtEachStepNeedsReopenAndLosesOnlyUnsyncedItems) {
    const auto& h = mainnet_headers();
    uint64_t syncs = 0;
    {
        TempDir dir;
        make_table(dir, 20);
        FaultInjectingFileSystem fs(posix);
        auto t = open_table(fs, dir.path(), snappy_opts(kFaultMax));
        append_range(*t, h, 20, 40);
        fs.reset_counters();
        ASSERT_TRUE(t->sync());
        syncs = fs.syncs();
    }
    ASSERT_GE(syncs, 4u);  // data files, directory, index, meta
    for (uint64_t k = 1; k <= syncs; ++k) {
        SCOPED_TRACE(k);
        TempDir dir;
        make_table(dir, 20);
        FaultInjectingFileSystem fs(posix);
        auto t = open_table(fs, dir.path(), snappy_opts(kFaultMax));
        append_range(*t, h, 20, 40);
        fs.fail_sync(fs.syncs() + k);
        auto r = t->sync();
        ASSERT_FALSE(r);
        EXPECT_THAT(r.error().message, HasSubstr("injected failure"));
        EXPECT_TRUE(t->needs_reopen());
        const auto v = views(h, 40, 41);
        auto after = t->append(v);
        ASSERT_FALSE(after);
        EXPECT_THAT(after.error().message, HasSubstr("needs reopen"));
        EXPECT_FALSE(t->sync());
        t.reset();
        expect_recovers(fs, dir, 20, 40);
    }
}

TEST(TableFaults, AppendWhoseRollbackFailsNeedsReopen) {
    const auto& h = mainnet_headers();
    TempDir dir;
    make_table(dir, 20);
    FaultInjectingFileSystem fs(posix);
    auto t = open_table(fs, dir.path(), snappy_opts(kFaultMax));
    fs.crash_at(fs.mutations() + 2);  // the first write lands, everything after fails
    const auto v = views(h, 20, 30);
    auto r = t->append(v);
    ASSERT_FALSE(r);
    EXPECT_TRUE(t->needs_reopen());
    EXPECT_EQ(t->items(), 20u);
    t.reset();
    expect_recovers(fs, dir, 20, 20);
}

// Runs `scenario` against a table opened on a FaultInjectingFileSystem that crashes at its k-th
// mutation, for every k the scenario reaches, then checks what a power cut leaves.
void crash_at_every_step(uint64_t setup_items, uint64_t appended,
                         const std::function<uint64_t(Table&)>& scenario /* returns items known durable */) {
    uint64_t mutations = 0;
    {
        TempDir dir;
        make_table(dir, setup_items);
        FaultInjectingFileSystem fs(posix, false);
        auto t = open_table(fs, dir.path(), snappy_opts(kFaultMax));
        fs.reset_counters();
        EXPECT_EQ(scenario(*t), appended);
        mutations = fs.mutations();
    }
    ASSERT_GE(mutations, 10u);
    for (uint64_t k = 1; k <= mutations + 1; ++k) {
        for (const PowerCutCase& cut : kPowerCuts) {
            SCOPED_TRACE("crash at mutation " + std::to_string(k) + " of " + std::to_string(mutations) + ", " +
                         cut.name);
            TempDir dir;
            make_table(dir, setup_items);
            FaultInjectingFileSystem fs(posix, false);
            uint64_t durable = setup_items;
            {
                auto t = open_table(fs, dir.path(), snappy_opts(kFaultMax));
                ASSERT_TRUE(t);
                fs.crash_at(fs.mutations() + k);
                durable = std::max(durable, scenario(*t));
            }  // the destructor's sync fails too once crashed
            expect_recovers(fs, dir, durable, appended, cut.fate);
        }
    }
}

TEST(TableFaults, CrashAtEveryStepOfAppendAndSync) {
    const auto& h = mainnet_headers();
    crash_at_every_step(20, 60, [&](Table& t) -> uint64_t {
        uint64_t durable = 0;
        auto batch1 = views(h, 20, 40);
        if (t.append(batch1) && t.sync()) durable = 40;
        auto batch2 = views(h, 40, 60);
        if (t.items() == 40 && t.append(batch2) && t.sync()) durable = 60;
        return durable;
    });
}

TEST(TableFaults, CrashDuringTruncateHeadLeavesOldOrNewLength) {
    uint64_t mutations = 0;
    {
        TempDir dir;
        make_table(dir, 60);
        FaultInjectingFileSystem fs(posix, false);
        auto t = open_table(fs, dir.path(), snappy_opts(kFaultMax));
        fs.reset_counters();
        ASSERT_TRUE(t->truncate_head(25));
        mutations = fs.mutations();
    }
    for (uint64_t k = 1; k <= mutations + 1; ++k) {
        for (const PowerCutCase& cut : kPowerCuts) {
            SCOPED_TRACE("crash at mutation " + std::to_string(k) + ", " + cut.name);
            TempDir dir;
            make_table(dir, 60);
            FaultInjectingFileSystem fs(posix, false);
            bool done = false;
            {
                auto t = open_table(fs, dir.path(), snappy_opts(kFaultMax));
                fs.crash_at(fs.mutations() + k);
                done = static_cast<bool>(t->truncate_head(25));
            }
            ASSERT_TRUE(fs.drop_unsynced_data(cut.fate));
            auto t = open_table(posix, dir.path(), snappy_opts(kFaultMax));
            ASSERT_TRUE(t);
            EXPECT_TRUE(t->items() == 25 || t->items() == 60) << t->items();
            if (done) {
                EXPECT_EQ(t->items(), 25u);
            }
            expect_prefix(*t, mainnet_headers(), t->items());
        }
    }
}

TEST(TableFaults, CrashAtEveryStepOfCreatingATable) {
    uint64_t mutations = 0;
    {
        TempDir dir;
        FaultInjectingFileSystem fs(posix, false);
        auto t = open_table(fs, dir.path(), snappy_opts(kFaultMax));
        mutations = fs.mutations();
    }
    for (uint64_t k = 1; k <= mutations; ++k) {
        for (const PowerCutCase& cut : kPowerCuts) {
            SCOPED_TRACE(std::to_string(k) + ", " + cut.name);
            TempDir dir;
            FaultInjectingFileSystem fs(posix, false);
            fs.crash_at(k);
            EXPECT_FALSE(Table::open(fs, dir.path(), "headers", snappy_opts(kFaultMax)));
            expect_recovers(fs, dir, 0, 0, cut.fate);
        }
    }
}

}  // namespace
}  // namespace headerd::ancient
