#include "core/era1.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include <cryptopp/sha.h>
#include <snappy.h>

#include "core/hex.hpp"
#include "core/keccak.hpp"
#include "core/rlp.hpp"
#include "tests/data_dir.hpp"

namespace headerd::era1 {
namespace {

const std::string kDataDir = headerd::testing::data_dir();
const std::string kEra1Path = kDataDir + "/mainnet-00000-5ec1ffb8.era1";

Bytes read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in) << path;
    return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Test data, loaded once: the archive and the independent reference files (headers, hashes, TDs from a geth node).
struct Fixture {
    Bytes file = read_file(kEra1Path);
    std::vector<Bytes> headers;
    std::vector<Hash32> hashes;
    std::vector<U256> tds;

    Fixture() {
        const Bytes rlp_file = read_file(kDataDir + "/mainnet-headers-0-8191.rlp");
        ByteView in{rlp_file};
        while (!in.empty()) {
            auto item = rlp::next_item(in);
            if (!item) break;
            headers.emplace_back(item->begin(), item->end());
        }
        std::ifstream hashes_in(kDataDir + "/mainnet-headers-0-8191.hashes.txt");
        uint64_t number;
        std::string hex;
        while (hashes_in >> number >> hex) hashes.push_back(*hash_from_hex(hex));
        std::ifstream td_in(kDataDir + "/mainnet-headers-0-8191.td.txt");
        for (std::string line; std::getline(td_in, line);) {
            if (line.empty() || line[0] == '#') continue;
            std::istringstream fields(line);
            std::string td;
            size_t length;
            fields >> number >> hex >> td >> length;
            tds.emplace_back(td);
        }
    }
};

const Fixture& fixture() {
    static const Fixture f;
    return f;
}

// Layout facts of the real file used to aim corruptions (checked by Era1.RealFileLayout).
size_t index_pos(const Bytes& file) { return file.size() - kRecordHeaderSize - (16 + 8 * kMaxBlocks); }
size_t offset_pos(const Bytes& file, size_t i) { return index_pos(file) + kRecordHeaderSize + 8 + 8 * i; }
size_t accumulator_pos(const Bytes& file) { return index_pos(file) - kRecordHeaderSize - 32; }
// Absolute position of block i's CompressedHeader record.
size_t tuple_pos(const Archive& a, const Bytes& file, size_t i) {
    return static_cast<size_t>(a.entries()[i].compressed_header.data() - file.data()) - kRecordHeaderSize;
}

std::error_code parse_error(ByteView file) {
    auto a = Archive::parse(file);
    return a ? std::error_code{} : a.error();
}

// ---- writers for test input ---------------------------------------------------------------------

const Bytes kStreamId = {0xff, 0x06, 0x00, 0x00, 's', 'N', 'a', 'P', 'p', 'Y'};

void add_chunk(Bytes& out, uint8_t type, ByteView body) {
    out.push_back(type);
    out.push_back(static_cast<uint8_t>(body.size()));
    out.push_back(static_cast<uint8_t>(body.size() >> 8));
    out.push_back(static_cast<uint8_t>(body.size() >> 16));
    append(out, body);
}

// A data chunk: masked CRC32C of `data`, then `payload` (data itself, or its snappy block).
void add_data_chunk(Bytes& out, uint8_t type, ByteView data, ByteView payload) {
    const uint32_t crc = masked_crc32c(data);
    Bytes body = {static_cast<uint8_t>(crc), static_cast<uint8_t>(crc >> 8), static_cast<uint8_t>(crc >> 16),
                  static_cast<uint8_t>(crc >> 24)};
    append(body, payload);
    add_chunk(out, type, body);
}

Bytes compress(ByteView data) {
    std::string c;
    snappy::Compress(reinterpret_cast<const char*>(data.data()), data.size(), &c);
    return Bytes(c.begin(), c.end());
}

std::error_code frame_error(ByteView framed) {
    Bytes out;
    auto r = decode_snappy_frames(framed, out);
    return r ? std::error_code{} : r.error();
}

// A snappy framed stream as geth writes it: stream identifier, then one compressed chunk. REQUIRES: data.size() <=
// 65536 (enough for any header).
Bytes frame(ByteView data) {
    Bytes framed = kStreamId;
    add_data_chunk(framed, 0x00, data, compress(data));
    return framed;
}

void add_record(Bytes& out, uint16_t type, ByteView data) {
    const uint32_t n = static_cast<uint32_t>(data.size());
    const uint8_t header[8] = {static_cast<uint8_t>(type),
                               static_cast<uint8_t>(type >> 8),
                               static_cast<uint8_t>(n),
                               static_cast<uint8_t>(n >> 8),
                               static_cast<uint8_t>(n >> 16),
                               static_cast<uint8_t>(n >> 24),
                               0,
                               0};
    append(out, header);
    append(out, data);
}

void add_le64(Bytes& out, uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// A small era1 file in the layout geth writes, with `extra` (whole records) between the last tuple and the
// Accumulator. Bodies and receipts are framed empty lists: their content is never read by headerd.
Bytes build_archive(const std::vector<Bytes>& headers, const std::vector<U256>& tds, uint64_t start,
                    ByteView extra = {}) {
    Bytes out;
    add_record(out, kTypeVersion, {});
    std::vector<size_t> positions;
    std::vector<Hash32> hashes;
    for (size_t i = 0; i < headers.size(); ++i) {
        positions.push_back(out.size());
        hashes.push_back(keccak256(headers[i]));
        add_record(out, kTypeCompressedHeader, frame(headers[i]));
        add_record(out, kTypeCompressedBody, frame(Bytes{0xc2, 0xc0, 0xc0}));
        add_record(out, kTypeCompressedReceipts, frame(Bytes{0xc0}));
        Bytes td(32);
        U256 x = tds[i];
        for (size_t k = 0; k < 32; ++k, x >>= 8) td[k] = static_cast<uint8_t>(x & 0xff);
        add_record(out, kTypeTotalDifficulty, td);
    }
    append(out, extra);
    const Hash32 root = *accumulator_root(hashes, tds);
    add_record(out, kTypeAccumulator, root);
    const size_t index_at = out.size();
    Bytes index;
    add_le64(index, start);
    for (size_t p : positions) add_le64(index, uint64_t{p} - uint64_t{index_at});
    add_le64(index, headers.size());
    add_record(out, kTypeBlockIndex, index);
    return out;
}

// ---- the real epoch-0 archive ------------------------------------------------------------------

TEST(Era1, RealFileLayout) {
    const auto& f = fixture();
    ASSERT_EQ(f.headers.size(), kMaxBlocks);
    ASSERT_EQ(f.hashes.size(), kMaxBlocks);
    ASSERT_EQ(f.tds.size(), kMaxBlocks);
    ASSERT_EQ(f.file.size(), 3891337u);
    // Version record: type 0x3265 little-endian, zero length, zero reserved.
    EXPECT_EQ(to_hex(ByteView{f.file}.first(8)), "6532000000000000");
    // Block 0's CompressedHeader record follows, and its data opens with the snappy stream identifier chunk.
    EXPECT_EQ(to_hex(ByteView{f.file}.subspan(8, 8)), "0300d90000000000");
    EXPECT_EQ(to_hex(ByteView{f.file}.subspan(16, 10)), "ff060000734e61507059");
    EXPECT_EQ(to_hex(ByteView{f.file}.subspan(index_pos(f.file), 8)), "6632100001000000");
    EXPECT_EQ(to_hex(ByteView{f.file}.subspan(accumulator_pos(f.file), 8)), "0700200000000000");
}

TEST(Era1, ParsesRealEpochZero) {
    const auto& f = fixture();
    auto a = Archive::parse(f.file);
    ASSERT_TRUE(a) << a.error().message();
    EXPECT_EQ(a->start_number(), 0u);
    EXPECT_EQ(a->count(), 8192u);
    EXPECT_EQ(to_hex(a->accumulator_root()), "5ec1ffb8c3b146f42606c74ced973dc16ec5a107c0345858c343fc94780b4218");
    ASSERT_EQ(a->entries().size(), 8192u);
    EXPECT_EQ(a->entries()[0].number, 0u);
    EXPECT_EQ(a->entries()[8191].number, 8191u);
    // The first tuple starts right after the Version record.
    EXPECT_EQ(tuple_pos(*a, f.file, 0), 8u);
}

TEST(Era1, HeadersAreByteIdenticalToReference) {
    const auto& f = fixture();
    auto a = Archive::parse(f.file);
    ASSERT_TRUE(a);
    Bytes out;
    for (size_t i = 0; i < a->count(); ++i) {
        auto h = a->header(i, out);
        ASSERT_TRUE(h) << "block " << i << ": " << h.error().message();
        ASSERT_EQ(Bytes(h->begin(), h->end()), f.headers[i]) << "block " << i;
        ASSERT_EQ(keccak256(*h), f.hashes[i]) << "block " << i;
    }
    auto past = a->header(a->count(), out);
    ASSERT_FALSE(past);
    EXPECT_EQ(past.error(), Era1Error::kOutOfRange);
}

TEST(Era1, HeaderReusesOutputBuffer) {
    const auto& f = fixture();
    auto a = Archive::parse(f.file);
    ASSERT_TRUE(a);
    Bytes out(4096, 0xaa);
    const uint8_t* storage = out.data();
    auto h = a->header(5, out);
    ASSERT_TRUE(h);
    EXPECT_EQ(out.data(), storage);  // cleared, not reallocated
    EXPECT_EQ(h->data(), out.data());
    EXPECT_EQ(h->size(), f.headers[5].size());
}

TEST(Era1, TotalDifficultiesMatchReference) {
    const auto& f = fixture();
    auto a = Archive::parse(f.file);
    ASSERT_TRUE(a);
    for (size_t i = 0; i < a->count(); ++i) {
        ASSERT_EQ(a->total_difficulty(i), f.tds[i]) << "block " << i;
        ASSERT_EQ(a->entries()[i].total_difficulty, f.tds[i]) << "block " << i;
    }
    EXPECT_EQ(a->total_difficulty(0), U256{17179869184ull});  // genesis difficulty 2^34
}

TEST(Era1, AccumulatorRootFromReferenceMatchesRecordAndFileName) {
    const auto& f = fixture();
    auto a = Archive::parse(f.file);
    ASSERT_TRUE(a);
    auto root = accumulator_root(f.hashes, f.tds);
    ASSERT_TRUE(root);
    EXPECT_EQ(*root, a->accumulator_root());
    // The file name carries the first 4 bytes of the root.
    EXPECT_EQ(to_hex(ByteView{*root}.first(4)), "5ec1ffb8");
    EXPECT_NE(kEra1Path.find("-" + to_hex(ByteView{*root}.first(4)) + ".era1"), std::string::npos);
}

TEST(Era1, VerifyAccumulatorOnRealFile) {
    const auto& f = fixture();
    auto a = Archive::parse(f.file);
    ASSERT_TRUE(a);
    auto v = verify_accumulator(*a);
    EXPECT_TRUE(v) << v.error().message();
    EXPECT_TRUE(verify_accumulator(*a, f.hashes));
    auto short_list = verify_accumulator(*a, std::span{f.hashes}.first(100));
    ASSERT_FALSE(short_list);
    EXPECT_EQ(short_list.error(), Era1Error::kCountMismatch);
    std::vector<Hash32> wrong = f.hashes;
    wrong[4000][0] ^= 1;
    auto mismatch = verify_accumulator(*a, wrong);
    ASSERT_FALSE(mismatch);
    EXPECT_EQ(mismatch.error(), Era1Error::kAccumulatorMismatch);
}

// ---- corrupted copies --------------------------------------------------------------------------

TEST(Era1, FlippedByteInCompressedHeaderFailsCrc) {
    const auto& f = fixture();
    auto good = Archive::parse(f.file);
    ASSERT_TRUE(good);
    // The last byte of a header's stream is a literal (the tail of the nonce), so flipping it changes the decoded
    // bytes without breaking the snappy block: only the checksum can catch it.
    Bytes bad = f.file;
    const ByteView target = good->entries()[1000].compressed_header;
    bad[static_cast<size_t>(target.data() - f.file.data()) + target.size() - 1] ^= 0x01;
    auto a = Archive::parse(bad);  // parse does not decompress
    ASSERT_TRUE(a);
    Bytes out;
    EXPECT_TRUE(a->header(999, out));
    auto h = a->header(1000, out);
    ASSERT_FALSE(h);
    EXPECT_EQ(h.error(), Era1Error::kSnappyBadCrc);
    auto v = verify_accumulator(*a);
    ASSERT_FALSE(v);
    EXPECT_EQ(v.error(), Era1Error::kSnappyBadCrc);

    // A flipped checksum byte is caught the same way.
    Bytes bad_crc = f.file;
    // Stream identifier chunk (10 bytes), then the data chunk header (4 bytes), then its checksum.
    bad_crc[static_cast<size_t>(target.data() - f.file.data()) + 10 + 4] ^= 0x80;
    auto b = Archive::parse(bad_crc);
    ASSERT_TRUE(b);
    auto hb = b->header(1000, out);
    ASSERT_FALSE(hb);
    EXPECT_EQ(hb.error(), Era1Error::kSnappyBadCrc);
}

TEST(Era1, FlippedByteInAccumulatorRecordIsAMismatch) {
    const auto& f = fixture();
    Bytes bad = f.file;
    bad[accumulator_pos(f.file) + kRecordHeaderSize + 17] ^= 0x10;
    auto a = Archive::parse(bad);
    ASSERT_TRUE(a);  // the stored root is opaque until the caller verifies it
    auto v = verify_accumulator(*a);
    ASSERT_FALSE(v);
    EXPECT_EQ(v.error(), Era1Error::kAccumulatorMismatch);
}

TEST(Era1, FlippedTotalDifficultyIsAMismatchOrRefused) {
    const auto& f = fixture();
    auto good = Archive::parse(f.file);
    ASSERT_TRUE(good);
    const size_t td_data = tuple_pos(*good, f.file, 4001) - 32;  // block 4000's TD data ends where 4001 starts
    {
        // A higher TD in the middle of the range breaks monotonicity with its successor.
        Bytes bad = f.file;
        bad[td_data + 20] ^= 0x01;
        EXPECT_EQ(parse_error(bad), Era1Error::kBadTotalDifficulty);
    }
    {
        // A change in the lowest bit keeps the TDs monotonic; only the accumulator notices.
        Bytes bad = f.file;
        bad[td_data] ^= 0x01;
        auto a = Archive::parse(bad);
        ASSERT_TRUE(a);
        EXPECT_EQ(a->total_difficulty(4000), f.tds[4000] ^ U256{1});
        auto v = verify_accumulator(*a);
        ASSERT_FALSE(v);
        EXPECT_EQ(v.error(), Era1Error::kAccumulatorMismatch);
    }
}

TEST(Era1, TruncatedFileIsRefused) {
    const auto& f = fixture();
    auto good = Archive::parse(f.file);
    ASSERT_TRUE(good);
    struct Cut {
        size_t size;
        Era1Error error;
    };
    const size_t tuple_1000 = tuple_pos(*good, f.file, 1000);
    const Cut cuts[] = {
        {0, Era1Error::kTruncatedRecord},                       // empty file
        {5, Era1Error::kTruncatedRecord},                       // inside the Version header
        {8, Era1Error::kMissingIndex},                          // only the Version record
        {20, Era1Error::kTruncatedRecord},                      // inside block 0's header record
        {tuple_1000, Era1Error::kMissingIndex},                 // on a record boundary
        {tuple_1000 + 3, Era1Error::kTruncatedRecord},          // inside a record header
        {f.file.size() / 2, Era1Error::kTruncatedRecord},       // mid-file
        {accumulator_pos(f.file), Era1Error::kMissingIndex},    // before the Accumulator
        {index_pos(f.file), Era1Error::kMissingIndex},          // before the BlockIndex
        {index_pos(f.file) + 12, Era1Error::kTruncatedRecord},  // inside the BlockIndex
        {f.file.size() - 8, Era1Error::kTruncatedRecord},       // count missing
        {f.file.size() - 1, Era1Error::kTruncatedRecord},       // last byte missing
    };
    for (const auto& cut : cuts) {
        // A copy of its own, so a read past the cut is outside the allocation (visible to ASan).
        const Bytes copy(f.file.begin(), f.file.begin() + static_cast<long>(cut.size));
        EXPECT_EQ(parse_error(copy), cut.error) << "cut at " << cut.size;
    }
}

TEST(Era1, BadIndexOffsetIsRefused) {
    const auto& f = fixture();
    auto good = Archive::parse(f.file);
    ASSERT_TRUE(good);
    auto with_offset = [&](size_t i, uint64_t offset) {
        Bytes bad = f.file;
        for (size_t k = 0; k < 8; ++k) bad[offset_pos(f.file, i) + k] = static_cast<uint8_t>(offset >> (8 * k));
        return bad;
    };
    auto relative = [&](size_t absolute) { return uint64_t{absolute} - uint64_t{index_pos(f.file)}; };
    // One byte off: inside block 10's header record.
    EXPECT_EQ(parse_error(with_offset(10, relative(tuple_pos(*good, f.file, 10) + 1))), Era1Error::kBadIndexOffset);
    // A valid header record, but block 11's.
    EXPECT_EQ(parse_error(with_offset(10, relative(tuple_pos(*good, f.file, 11)))), Era1Error::kBadIndexOffset);
    // Positive offsets point into or past the index itself.
    EXPECT_EQ(parse_error(with_offset(10, 16)), Era1Error::kBadIndexOffset);
    EXPECT_EQ(parse_error(with_offset(10, uint64_t{1} << 62)), Era1Error::kBadIndexOffset);
    // Before the start of the file, and onto the Version record.
    EXPECT_EQ(parse_error(with_offset(0, relative(0) - 1)), Era1Error::kBadIndexOffset);
    EXPECT_EQ(parse_error(with_offset(0, relative(0))), Era1Error::kBadIndexOffset);
    // Onto the Accumulator record.
    EXPECT_EQ(parse_error(with_offset(8191, relative(accumulator_pos(f.file)))), Era1Error::kBadIndexOffset);
}

// The index-only view (EraStore's) gives every body and receipt list parse() gives, for both real
// epochs; a damaged offset or tuple is found when that block is read, a broken index at open.
TEST(Era1, IndexViewReadsWhatParseReadsAndChecksEachTupleWhenRead) {
    for (const std::string& path : {kEra1Path, kDataDir + "/sepolia-00021-b8814b14.era1"}) {
        SCOPED_TRACE(path);
        const Bytes file = read_file(path);
        auto archive = Archive::parse(file);
        auto view = IndexView::open(file);
        ASSERT_TRUE(archive && view);
        EXPECT_EQ(view->start_number(), archive->start_number());
        EXPECT_EQ(view->count(), archive->count());
        EXPECT_EQ(view->accumulator_root(), archive->accumulator_root());
        Bytes a, b;
        for (size_t i = 0; i < archive->count(); ++i) {
            ASSERT_EQ(Bytes(view->body(i, a).value().begin(), view->body(i, a).value().end()),
                      Bytes(archive->body(i, b).value().begin(), archive->body(i, b).value().end()))
                << i;
            ASSERT_EQ(view->receipts(i, a).value().size(), archive->receipts(i, b).value().size()) << i;
        }
        EXPECT_EQ(view->body(archive->count(), a).error(), Era1Error::kOutOfRange);
    }
    const auto& f = fixture();
    auto good = Archive::parse(f.file);
    ASSERT_TRUE(good);
    Bytes bad = f.file;
    const uint64_t offset = uint64_t{tuple_pos(*good, f.file, 11)} - uint64_t{index_pos(f.file)} + 1;
    for (size_t k = 0; k < 8; ++k) bad[offset_pos(f.file, 10) + k] = static_cast<uint8_t>(offset >> (8 * k));
    auto view = IndexView::open(bad);
    ASSERT_TRUE(view);  // only the block index is read at open
    Bytes out;
    EXPECT_TRUE(view->body(9, out));
    EXPECT_FALSE(view->body(10, out));  // one byte into block 11's header record: not a tuple
    Bytes cut(f.file.begin(), f.file.end() - 1);
    EXPECT_FALSE(IndexView::open(cut));
}

TEST(Era1, BadIndexIsRefused) {
    const auto& f = fixture();
    {
        // A count that disagrees with the index record's length.
        Bytes bad = f.file;
        bad[bad.size() - 8] = 0xff;  // 8191
        bad[bad.size() - 7] = 0x1f;
        EXPECT_EQ(parse_error(bad), Era1Error::kBadIndex);
    }
    {
        // Starting number so high that the last block's number overflows.
        Bytes bad = f.file;
        for (size_t k = 0; k < 8; ++k) bad[index_pos(f.file) + kRecordHeaderSize + k] = 0xff;
        EXPECT_EQ(parse_error(bad), Era1Error::kBadIndex);
    }
    {
        // Index record of the wrong type.
        Bytes bad = f.file;
        bad[index_pos(f.file)] = 0x67;
        EXPECT_EQ(parse_error(bad), Era1Error::kMissingIndex);
    }
}

TEST(Era1, WrongVersionRecordIsRefused) {
    const auto& f = fixture();
    Bytes bad = f.file;
    bad[0] = 0x66;  // BlockIndex type in place of Version
    EXPECT_EQ(parse_error(bad), Era1Error::kBadVersion);
    bad = f.file;
    bad[1] = 0x33;  // type 0x3365
    EXPECT_EQ(parse_error(bad), Era1Error::kBadVersion);
    // A Version record with data would shift every offset; it is refused outright.
    bad = f.file;
    bad[2] = 1;
    EXPECT_EQ(parse_error(bad), Era1Error::kBadVersion);
    bad = f.file;
    bad[7] = 1;
    EXPECT_EQ(parse_error(bad), Era1Error::kBadRecordHeader);
}

TEST(Era1, BadTupleRecordsAreRefused) {
    const auto& f = fixture();
    auto good = Archive::parse(f.file);
    ASSERT_TRUE(good);
    const size_t tuple = tuple_pos(*good, f.file, 77);
    {
        Bytes bad = f.file;
        bad[tuple] = kTypeCompressedBody;
        EXPECT_EQ(parse_error(bad), Era1Error::kUnexpectedRecord);
    }
    {
        Bytes bad = f.file;
        bad[tuple + 6] = 1;  // reserved byte
        EXPECT_EQ(parse_error(bad), Era1Error::kBadRecordHeader);
    }
    {
        // A header record claiming to run over the rest of the file.
        Bytes bad = f.file;
        bad[tuple + 5] = 0x7f;
        EXPECT_EQ(parse_error(bad), Era1Error::kTruncatedRecord);
    }
    {
        // The TD record of block 76 ends right where block 77 begins.
        Bytes bad = f.file;
        bad[tuple - 32 - kRecordHeaderSize] = kTypeAccumulator;
        EXPECT_EQ(parse_error(bad), Era1Error::kUnexpectedRecord);
    }
    {
        // Accumulator record of the wrong type.
        Bytes bad = f.file;
        bad[accumulator_pos(f.file)] = kTypeTotalDifficulty;
        EXPECT_EQ(parse_error(bad), Era1Error::kBadAccumulatorRecord);
    }
}

TEST(Era1, DecompressedHeaderIsChecked) {
    const auto& f = fixture();
    auto good = Archive::parse(f.file);
    ASSERT_TRUE(good);
    // Copying one block's compressed header over another's of the same stream length keeps every record valid; only
    // the number field inside then disagrees with the position.
    const auto entries = good->entries();
    size_t i = 0;
    size_t j = 0;
    for (size_t a = 1; a < entries.size() && j == 0; ++a) {
        for (size_t b = a + 1; b < entries.size() && b < a + 100; ++b) {
            if (entries[a].compressed_header.size() == entries[b].compressed_header.size()) {
                i = a;
                j = b;
                break;
            }
        }
    }
    ASSERT_NE(j, 0u);
    Bytes bad = f.file;
    const auto pos = [&](size_t k) { return static_cast<size_t>(entries[k].compressed_header.data() - f.file.data()); };
    std::memcpy(bad.data() + pos(i), f.file.data() + pos(j), entries[i].compressed_header.size());
    auto a = Archive::parse(bad);
    ASSERT_TRUE(a);
    Bytes out;
    auto h = a->header(i, out);
    ASSERT_FALSE(h);
    EXPECT_EQ(h.error(), Era1Error::kHeaderNumberMismatch);
}

TEST(Era1, ErrorCategory) {
    const std::error_code ec = Era1Error::kSnappyBadCrc;
    EXPECT_STREQ(ec.category().name(), "era1");
    EXPECT_EQ(ec.message(), "snappy: checksum mismatch");
    EXPECT_NE(std::error_code{Era1Error::kBadIndex}, std::error_code{Era1Error::kBadIndexOffset});
}

// ---- small archives written by the test ---------------------------------------------------------

std::vector<Bytes> first_headers(size_t n) {
    const auto& f = fixture();
    return {f.headers.begin(), f.headers.begin() + static_cast<long>(n)};
}
std::vector<U256> first_tds(size_t n) {
    const auto& f = fixture();
    return {f.tds.begin(), f.tds.begin() + static_cast<long>(n)};
}

TEST(Era1, SmallArchiveRoundTrip) {
    for (size_t n : {size_t{1}, size_t{16}}) {
        const Bytes file = build_archive(first_headers(n), first_tds(n), 0);
        auto a = Archive::parse(file);
        ASSERT_TRUE(a) << a.error().message();
        EXPECT_EQ(a->start_number(), 0u);
        ASSERT_EQ(a->count(), n);
        Bytes out;
        for (size_t i = 0; i < n; ++i) {
            auto h = a->header(i, out);
            ASSERT_TRUE(h);
            EXPECT_EQ(Bytes(h->begin(), h->end()), fixture().headers[i]);
            EXPECT_EQ(a->total_difficulty(i), fixture().tds[i]);
        }
        EXPECT_TRUE(verify_accumulator(*a));
    }
}

TEST(Era1, OtherEntriesBeforeAccumulatorAreAllowed) {
    Bytes extra;
    add_record(extra, 0x1234, as_bytes("later"));
    add_record(extra, 0x4321, {});
    const Bytes file = build_archive(first_headers(4), first_tds(4), 0, extra);
    auto a = Archive::parse(file);
    ASSERT_TRUE(a) << a.error().message();
    EXPECT_EQ(a->count(), 4u);
    EXPECT_TRUE(verify_accumulator(*a));

    // They must still be whole records: one claiming a byte more runs into the Accumulator.
    extra[2] += 1;
    EXPECT_EQ(parse_error(build_archive(first_headers(4), first_tds(4), 0, extra)), Era1Error::kTruncatedRecord);
}

TEST(Era1, StartNumberMustMatchHeaders) {
    const Bytes file = build_archive(first_headers(4), first_tds(4), 5);
    auto a = Archive::parse(file);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->start_number(), 5u);
    EXPECT_EQ(a->entries()[3].number, 8u);
    Bytes out;
    auto h = a->header(0, out);
    ASSERT_FALSE(h);
    EXPECT_EQ(h.error(), Era1Error::kHeaderNumberMismatch);
    auto v = verify_accumulator(*a);
    ASSERT_FALSE(v);
    EXPECT_EQ(v.error(), Era1Error::kHeaderNumberMismatch);
}

// Every single-bit flip of a small archive is either refused (by parse() or verify_accumulator()) or changes nothing
// headerd reads: the same numbers, header bytes, TDs and root. Undetected flips are those in body/receipts data, which
// headerd never decompresses, and snappy encodings that decode to the same bytes. Run under ASan/UBSan this is also
// the out-of-bounds check.
TEST(Era1, EveryBitFlipIsRefusedOrHarmless) {
    const auto headers = first_headers(8);
    const Bytes file = build_archive(headers, first_tds(8), 0);
    const auto good = Archive::parse(file);
    ASSERT_TRUE(good);
    size_t refused = 0;
    Bytes out;
    for (size_t pos = 0; pos < file.size(); ++pos) {
        for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x10}, uint8_t{0x80}}) {
            Bytes bad = file;
            bad[pos] ^= mask;
            auto a = Archive::parse(bad);
            if (!a || !verify_accumulator(*a)) {
                ++refused;
                continue;
            }
            SCOPED_TRACE(::testing::Message() << "flip 0x" << std::hex << int{mask} << " at " << std::dec << pos);
            ASSERT_EQ(a->start_number(), 0u);
            ASSERT_EQ(a->count(), headers.size());
            ASSERT_EQ(a->accumulator_root(), good->accumulator_root());
            for (size_t i = 0; i < headers.size(); ++i) {
                auto h = a->header(i, out);
                ASSERT_TRUE(h);
                ASSERT_EQ(Bytes(h->begin(), h->end()), headers[i]);
                ASSERT_EQ(a->total_difficulty(i), good->total_difficulty(i));
            }
        }
    }
    // Bodies and receipts are about a sixth of this file; everything else must be caught.
    EXPECT_GT(refused, file.size() * 3 * 3 / 4);
}

// ---- accumulator -------------------------------------------------------------------------------

Hash32 sha256(ByteView a, ByteView b) {
    CryptoPP::SHA256 sha;
    sha.Update(a.data(), a.size());
    sha.Update(b.data(), b.size());
    Hash32 out;
    sha.Final(out.data());
    return out;
}

// hash_tree_root computed the textbook way: a full tree of 8192 leaves, zero leaves past the records.
Hash32 naive_root(const std::vector<Hash32>& hashes, const std::vector<U256>& tds) {
    std::vector<Hash32> layer(kMaxBlocks, Hash32{});
    for (size_t i = 0; i < hashes.size(); ++i) {
        Hash32 td_le{};
        U256 x = tds[i];
        for (size_t k = 0; k < 32; ++k, x >>= 8) td_le[k] = static_cast<uint8_t>(x & 0xff);
        layer[i] = sha256(hashes[i], td_le);
    }
    while (layer.size() > 1) {
        std::vector<Hash32> up(layer.size() / 2);
        for (size_t i = 0; i < up.size(); ++i) up[i] = sha256(layer[2 * i], layer[2 * i + 1]);
        layer = std::move(up);
    }
    Hash32 length{};
    length[0] = static_cast<uint8_t>(hashes.size());
    length[1] = static_cast<uint8_t>(hashes.size() >> 8);
    return sha256(layer[0], length);
}

TEST(Era1, AccumulatorMatchesNaiveTree) {
    const auto& f = fixture();
    for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{1000}, size_t{4097}}) {
        const std::vector<Hash32> hashes(f.hashes.begin(), f.hashes.begin() + static_cast<long>(n));
        const std::vector<U256> tds(f.tds.begin(), f.tds.begin() + static_cast<long>(n));
        auto root = accumulator_root(hashes, tds);
        ASSERT_TRUE(root);
        EXPECT_EQ(*root, naive_root(hashes, tds)) << n << " records";
    }
    EXPECT_EQ(*accumulator_root(f.hashes, f.tds), naive_root(f.hashes, f.tds));
}

TEST(Era1, AccumulatorRejectsBadInput) {
    const auto& f = fixture();
    auto mismatch = accumulator_root(f.hashes, std::span{f.tds}.first(10));
    ASSERT_FALSE(mismatch);
    EXPECT_EQ(mismatch.error(), Era1Error::kCountMismatch);
    std::vector<Hash32> hashes = f.hashes;
    std::vector<U256> tds = f.tds;
    hashes.push_back(Hash32{});
    tds.push_back(U256{});
    auto too_many = accumulator_root(hashes, tds);
    ASSERT_FALSE(too_many);
    EXPECT_EQ(too_many.error(), Era1Error::kTooManyRecords);
}

// ---- snappy framing ----------------------------------------------------------------------------

TEST(Era1Snappy, Crc32cKnownVectors) {
    // The CRC-32C check value from the catalogue of parametrised CRCs, and RFC 3720 B.4 (32 zero bytes).
    EXPECT_EQ(crc32c(as_bytes("123456789")), 0xe3069283u);
    EXPECT_EQ(crc32c(Bytes(32, 0)), 0x8a9136aau);
    EXPECT_EQ(crc32c(Bytes(32, 0xff)), 0x62a8ab43u);
    EXPECT_EQ(crc32c({}), 0u);
}

TEST(Era1Snappy, EmptyInputIsEmptyStream) {
    Bytes out = {1, 2, 3};
    ASSERT_TRUE(decode_snappy_frames({}, out));
    EXPECT_TRUE(out.empty());
    ASSERT_TRUE(decode_snappy_frames(kStreamId, out));
    EXPECT_TRUE(out.empty());
}

TEST(Era1Snappy, UncompressedChunk) {
    const ByteView text = as_bytes("hello, era1");
    Bytes framed = kStreamId;
    add_data_chunk(framed, 0x01, text, text);
    Bytes out = {9, 9};
    ASSERT_TRUE(decode_snappy_frames(framed, out));
    EXPECT_EQ(as_chars(out), "hello, era1");
}

TEST(Era1Snappy, CompressedChunksAndRepeatedStreamId) {
    Bytes data(100000);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>((i * 7) % 251);
    const ByteView first = ByteView{data}.first(65536);
    const ByteView second = ByteView{data}.subspan(65536);
    Bytes framed = kStreamId;
    add_data_chunk(framed, 0x00, first, compress(first));
    add_chunk(framed, 0xfe, Bytes(7, 0));  // padding
    framed.insert(framed.end(), kStreamId.begin(), kStreamId.end());
    add_data_chunk(framed, 0x01, second, second);
    Bytes out;
    ASSERT_TRUE(decode_snappy_frames(framed, out));
    EXPECT_EQ(out, data);
}

TEST(Era1Snappy, PaddingAndSkippableChunksAreSkipped) {
    const ByteView text = as_bytes("abc");
    Bytes framed = kStreamId;
    add_chunk(framed, 0xfe, Bytes(3, 0));
    add_data_chunk(framed, 0x01, text, text);
    add_chunk(framed, 0x80, as_bytes("skip me"));
    add_chunk(framed, 0xfd, {});
    add_chunk(framed, 0xfe, {});
    Bytes out;
    ASSERT_TRUE(decode_snappy_frames(framed, out));
    EXPECT_EQ(as_chars(out), "abc");
}

TEST(Era1Snappy, BadCrc) {
    const ByteView text = as_bytes("hello");
    Bytes framed = kStreamId;
    add_data_chunk(framed, 0x01, text, text);
    framed.back() ^= 0x20;  // data changed after its checksum was taken
    EXPECT_EQ(frame_error(framed), Era1Error::kSnappyBadCrc);

    Bytes compressed = kStreamId;
    Bytes data(300, 'x');
    add_data_chunk(compressed, 0x00, data, compress(data));
    compressed[kStreamId.size() + 4] ^= 1;  // checksum field
    EXPECT_EQ(frame_error(compressed), Era1Error::kSnappyBadCrc);
}

TEST(Era1Snappy, ReservedUnskippableChunkIsRefused) {
    for (uint8_t type : {uint8_t{0x02}, uint8_t{0x40}, uint8_t{0x7f}}) {
        Bytes framed = kStreamId;
        add_chunk(framed, type, as_bytes("??"));
        EXPECT_EQ(frame_error(framed), Era1Error::kSnappyUnskippableChunk) << int{type};
    }
}

TEST(Era1Snappy, StreamIdentifierIsRequired) {
    const ByteView text = as_bytes("hello");
    Bytes framed;
    add_data_chunk(framed, 0x01, text, text);
    EXPECT_EQ(frame_error(framed), Era1Error::kSnappyBadStreamId);
    Bytes bad_magic = kStreamId;
    bad_magic[4] = 'S';
    EXPECT_EQ(frame_error(bad_magic), Era1Error::kSnappyBadStreamId);
    Bytes bad_length = {0xff, 0x05, 0x00, 0x00, 's', 'N', 'a', 'P', 'p'};
    EXPECT_EQ(frame_error(bad_length), Era1Error::kSnappyBadStreamId);
}

TEST(Era1Snappy, TruncatedChunksAreRefused) {
    const ByteView text = as_bytes("hello");
    Bytes framed = kStreamId;
    add_data_chunk(framed, 0x01, text, text);
    for (size_t cut = kStreamId.size() + 1; cut < framed.size(); ++cut) {
        EXPECT_EQ(frame_error(ByteView{framed}.first(cut)), Era1Error::kSnappyBadChunk) << "cut at " << cut;
    }
    Bytes no_checksum = kStreamId;
    add_chunk(no_checksum, 0x00, Bytes(3, 0));
    EXPECT_EQ(frame_error(no_checksum), Era1Error::kSnappyBadChunk);
}

TEST(Era1Snappy, OversizedChunksAreRefused) {
    Bytes big(65537, 'z');
    Bytes raw = kStreamId;
    add_data_chunk(raw, 0x01, big, big);
    EXPECT_EQ(frame_error(raw), Era1Error::kSnappyTooLarge);
    Bytes compressed = kStreamId;
    add_data_chunk(compressed, 0x00, big, compress(big));
    EXPECT_EQ(frame_error(compressed), Era1Error::kSnappyTooLarge);
    // Exactly 65536 is the limit, not over it.
    big.pop_back();
    Bytes ok = kStreamId;
    add_data_chunk(ok, 0x00, big, compress(big));
    Bytes out;
    ASSERT_TRUE(decode_snappy_frames(ok, out));
    EXPECT_EQ(out, big);
}

TEST(Era1Snappy, CorruptBlockIsRefused) {
    Bytes data(1000);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i % 13);
    Bytes block = compress(data);
    block[0] ^= 0x01;  // declared length no longer matches what the block produces
    Bytes framed = kStreamId;
    add_data_chunk(framed, 0x00, data, block);
    EXPECT_EQ(frame_error(framed), Era1Error::kSnappyCorrupt);
    Bytes cut = kStreamId;
    const Bytes whole = compress(data);
    add_data_chunk(cut, 0x00, data, ByteView{whole}.first(whole.size() / 2));
    EXPECT_EQ(frame_error(cut), Era1Error::kSnappyCorrupt);
}

}  // namespace
}  // namespace headerd::era1
