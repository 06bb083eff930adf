#include "core/era1.hpp"

#include <array>
#include <cstring>
#include <string>

#include <cryptopp/crc.h>
#include <cryptopp/sha.h>
#include <snappy.h>

#include "core/keccak.hpp"
#include "core/rlp.hpp"

namespace headerd::era1 {
namespace {

class Era1Category final : public std::error_category {
  public:
    const char* name() const noexcept override { return "era1"; }
    std::string message(int ev) const override {
        switch (static_cast<Era1Error>(ev)) {
            case Era1Error::kTruncatedRecord:
                return "truncated e2store record";
            case Era1Error::kBadRecordHeader:
                return "e2store record header with non-zero reserved bytes";
            case Era1Error::kBadVersion:
                return "missing or malformed version record";
            case Era1Error::kMissingIndex:
                return "no block index at the end of the file";
            case Era1Error::kBadIndex:
                return "malformed block index";
            case Era1Error::kBadIndexOffset:
                return "block index offset does not point at its block";
            case Era1Error::kUnexpectedRecord:
                return "unexpected record type in block tuple";
            case Era1Error::kBadTotalDifficulty:
                return "malformed or decreasing total difficulty";
            case Era1Error::kBadAccumulatorRecord:
                return "missing or malformed accumulator record";
            case Era1Error::kOutOfRange:
                return "block position out of range";
            case Era1Error::kBadHeaderRlp:
                return "decompressed header is not an RLP header list";
            case Era1Error::kHeaderNumberMismatch:
                return "header number does not match its position";
            case Era1Error::kCountMismatch:
                return "number of hashes and total difficulties differ";
            case Era1Error::kTooManyRecords:
                return "more than 8192 header records";
            case Era1Error::kAccumulatorMismatch:
                return "accumulator root mismatch";
            case Era1Error::kSnappyBadStreamId:
                return "snappy: missing or bad stream identifier";
            case Era1Error::kSnappyBadChunk:
                return "snappy: truncated or malformed chunk";
            case Era1Error::kSnappyUnskippableChunk:
                return "snappy: reserved unskippable chunk type";
            case Era1Error::kSnappyTooLarge:
                return "snappy: chunk larger than 65536 bytes";
            case Era1Error::kSnappyCorrupt:
                return "snappy: corrupt compressed block";
            case Era1Error::kSnappyBadCrc:
                return "snappy: checksum mismatch";
            case Era1Error::kBadBodyRlp:
                return "decompressed body is not one RLP list";
            case Era1Error::kBadReceiptsRlp:
                return "decompressed receipt list is not one RLP list";
        }
        return "unknown era1 error";
    }
};

// e2store and era1 integers are little-endian (core/bytes.hpp only has the big-endian ones used by LevelDB).
uint16_t load_le16(const uint8_t* p) noexcept { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t load_le24(const uint8_t* p) noexcept {
    return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16);
}
uint32_t load_le32(const uint8_t* p) noexcept { return load_le24(p) | (uint32_t{p[3]} << 24); }
uint64_t load_le64(const uint8_t* p) noexcept { return uint64_t{load_le32(p)} | (uint64_t{load_le32(p + 4)} << 32); }
void store_le64(uint8_t* p, uint64_t v) noexcept {
    for (int i = 0; i < 8; ++i) {
        p[i] = static_cast<uint8_t>(v);
        v >>= 8;
    }
}

U256 load_le256(const uint8_t* p) noexcept {
    U256 v = 0;
    for (int limb = 3; limb >= 0; --limb) v = (v << 64) | load_le64(p + 8 * limb);
    return v;
}

void store_le256(uint8_t* p, const U256& v) noexcept {
    U256 x = v;
    for (int limb = 0; limb < 4; ++limb) {
        store_le64(p + 8 * limb, static_cast<uint64_t>(x & U256{UINT64_MAX}));
        x >>= 64;
    }
}

// ---- e2store records ---------------------------------------------------------------------------

struct Record {
    uint16_t type{0};
    ByteView data;
    size_t end{0};  // offset just past the record
};

// Reads the record at `pos` of `area`; the whole record must lie inside `area`, so callers pass the part of the file
// the record is allowed to occupy. REQUIRES: pos <= area.size().
Result<Record> read_record(ByteView area, size_t pos) noexcept {
    if (area.size() - pos < kRecordHeaderSize) return Era1Error::kTruncatedRecord;
    const uint8_t* h = area.data() + pos;
    if (h[6] != 0 || h[7] != 0) return Era1Error::kBadRecordHeader;
    const uint32_t length = load_le32(h + 2);
    if (area.size() - pos - kRecordHeaderSize < length) return Era1Error::kTruncatedRecord;
    return Record{load_le16(h), area.subspan(pos + kRecordHeaderSize, length), pos + kRecordHeaderSize + length};
}

// Cold path: the trailing count does not lead to a BlockIndex. Walking the records from the start tells a file cut
// short (the usual cause: an interrupted download) from a damaged index.
Era1Error diagnose_missing_index(ByteView file) noexcept {
    size_t pos = 0;
    uint16_t last_type = 0;
    while (pos < file.size()) {
        auto r = read_record(file, pos);
        if (!r) return static_cast<Era1Error>(r.error().value());
        last_type = r->type;
        pos = r->end;
    }
    return last_type == kTypeBlockIndex ? Era1Error::kBadIndex : Era1Error::kMissingIndex;
}

// ---- snappy framing ----------------------------------------------------------------------------

constexpr uint8_t kChunkCompressed = 0x00;
constexpr uint8_t kChunkUncompressed = 0x01;
constexpr uint8_t kChunkPadding = 0xfe;
constexpr uint8_t kChunkStreamId = 0xff;
constexpr uint8_t kLastUnskippable = 0x7f;
constexpr size_t kChunkHeaderSize = 4;
constexpr size_t kChecksumSize = 4;
constexpr size_t kMaxChunkData = 65536;
constexpr std::array<uint8_t, 6> kStreamIdMagic = {'s', 'N', 'a', 'P', 'p', 'Y'};
// Every type above kLastUnskippable other than the two data types and the stream identifier is skipped.
static_assert(kChunkPadding > kLastUnskippable);

// ---- SSZ accumulator ---------------------------------------------------------------------------

constexpr size_t kTreeDepth = 13;  // log2(kMaxBlocks)
static_assert(size_t{1} << kTreeDepth == kMaxBlocks);

Hash32 sha256_pair(CryptoPP::SHA256& sha, const uint8_t* left, const uint8_t* right) noexcept {
    Hash32 out;
    sha.Update(left, 32);
    sha.Update(right, 32);
    sha.Final(out.data());
    return out;
}

Hash32 header_record_root(CryptoPP::SHA256& sha, const Hash32& hash, const U256& td) noexcept {
    // SSZ container of two 32-byte fields: its root is the hash of the two chunks side by side.
    std::array<uint8_t, 32> td_le;
    store_le256(td_le.data(), td);
    return sha256_pair(sha, hash.data(), td_le.data());
}

// hash_tree_root of a List[HeaderRecord, 8192] with n records, record_root(i) giving record i's root. The tree is
// built left to right keeping one pending node per level, so no layer of 8192 hashes is materialised and the virtual
// zero leaves up to the limit cost one hash per level. REQUIRES: n <= kMaxBlocks.
template <class RecordRoot>
Hash32 list_root(size_t n, RecordRoot&& record_root) noexcept {
    CryptoPP::SHA256 sha;
    std::array<Hash32, kTreeDepth + 1> zero{};
    for (size_t d = 0; d < kTreeDepth; ++d) zero[d + 1] = sha256_pair(sha, zero[d].data(), zero[d].data());

    std::array<Hash32, kTreeDepth + 1> pending{};
    // Adds leaf `i` (or, with i == n, closes the tree by pairing with zero subtrees) and carries it upwards while the
    // level's left sibling is complete.
    auto merge = [&](Hash32 h, size_t i) noexcept {
        size_t level = 0;
        while (level < kTreeDepth) {
            if ((i >> level) & 1) {
                h = sha256_pair(sha, pending[level].data(), h.data());
            } else if (i == n) {
                h = sha256_pair(sha, h.data(), zero[level].data());
            } else {
                break;
            }
            ++level;
        }
        pending[level] = h;
    };
    for (size_t i = 0; i < n; ++i) merge(record_root(sha, i), i);
    if (n != kMaxBlocks) merge(zero[0], n);

    // mix_in_length: the list's length as a little-endian uint256 chunk.
    std::array<uint8_t, 32> length{};
    store_le64(length.data(), n);
    return sha256_pair(sha, pending[kTreeDepth].data(), length.data());
}

Result<void> compare_root(const Archive& archive, std::span<const Hash32> hashes) noexcept {
    if (hashes.size() != archive.count()) return Era1Error::kCountMismatch;
    const auto entries = archive.entries();
    const Hash32 root = list_root(entries.size(), [&](CryptoPP::SHA256& sha, size_t i) noexcept {
        return header_record_root(sha, hashes[i], entries[i].total_difficulty);
    });
    if (root != archive.accumulator_root()) return Era1Error::kAccumulatorMismatch;
    return {};
}

}  // namespace

const std::error_category& era1_category() noexcept {
    static const Era1Category category;
    return category;
}

std::error_code make_error_code(Era1Error e) noexcept { return {static_cast<int>(e), era1_category()}; }

// ---- snappy framing ----------------------------------------------------------------------------

uint32_t crc32c(ByteView data) noexcept {
    // Crypto++ uses the SSE4.2 crc32 instruction when the CPU has it. The digest is the register's bytes in host
    // order, so copying them back yields the value on any host.
    CryptoPP::CRC32C crc;
    crc.Update(data.data(), data.size());
    uint8_t digest[CryptoPP::CRC32C::DIGESTSIZE];
    crc.Final(digest);
    uint32_t v;
    std::memcpy(&v, digest, sizeof v);
    return v;
}

uint32_t masked_crc32c(ByteView data) noexcept {
    // The rotation and offset keep the CRC of data that itself embeds CRCs from being trivially related to them.
    const uint32_t c = crc32c(data);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

Result<void> decode_snappy_frames(ByteView framed, Bytes& out) noexcept {
    out.clear();
    bool have_stream_id = false;
    while (!framed.empty()) {
        if (framed.size() < kChunkHeaderSize) return Era1Error::kSnappyBadChunk;
        const uint8_t type = framed[0];
        const size_t length = load_le24(framed.data() + 1);
        framed = framed.subspan(kChunkHeaderSize);
        if (framed.size() < length) return Era1Error::kSnappyBadChunk;
        const ByteView body = framed.first(length);
        framed = framed.subspan(length);

        if (type == kChunkStreamId) {
            // Also legal mid-stream: concatenated streams are one stream.
            if (length != kStreamIdMagic.size() || std::memcmp(body.data(), kStreamIdMagic.data(), length) != 0) {
                return Era1Error::kSnappyBadStreamId;
            }
            have_stream_id = true;
            continue;
        }
        if (!have_stream_id) return Era1Error::kSnappyBadStreamId;

        if (type == kChunkCompressed || type == kChunkUncompressed) {
            if (length < kChecksumSize) return Era1Error::kSnappyBadChunk;
            const uint32_t expected_crc = load_le32(body.data());
            const ByteView payload = body.subspan(kChecksumSize);
            const size_t old_size = out.size();
            if (type == kChunkCompressed) {
                const char* src = reinterpret_cast<const char*>(payload.data());
                size_t n = 0;
                if (!snappy::GetUncompressedLength(src, payload.size(), &n)) return Era1Error::kSnappyCorrupt;
                // Checked before resizing: the declared length is attacker-controlled.
                if (n > kMaxChunkData) return Era1Error::kSnappyTooLarge;
                out.resize(old_size + n);
                if (!snappy::RawUncompress(src, payload.size(), reinterpret_cast<char*>(out.data() + old_size))) {
                    return Era1Error::kSnappyCorrupt;
                }
            } else {
                if (payload.size() > kMaxChunkData) return Era1Error::kSnappyTooLarge;
                append(out, payload);
            }
            if (masked_crc32c(ByteView{out}.subspan(old_size)) != expected_crc) return Era1Error::kSnappyBadCrc;
            continue;
        }
        if (type <= kLastUnskippable) return Era1Error::kSnappyUnskippableChunk;
        // Padding and the reserved skippable types 0x80-0xfd carry nothing for us.
    }
    return {};
}

// ---- archive -----------------------------------------------------------------------------------

namespace {

using detail::Layout;

Result<Layout> locate(ByteView file) noexcept {
    // era1 := Version | block-tuple* | other-entries* | Accumulator | BlockIndex
    auto version = read_record(file, 0);
    if (!version) return version.error();
    if (version->type != kTypeVersion || !version->data.empty()) return Era1Error::kBadVersion;
    Layout l;
    l.blocks_begin = version->end;

    // The BlockIndex is the last record and ends with its count, so its position follows from the file size.
    constexpr size_t kIndexFixed = 16;  // starting number + count
    if (file.size() - l.blocks_begin < kRecordHeaderSize + kIndexFixed) return diagnose_missing_index(file);
    l.count = load_le64(file.data() + file.size() - 8);
    if (l.count == 0 || l.count > kMaxBlocks) return diagnose_missing_index(file);
    const size_t index_length = kIndexFixed + 8 * l.count;
    if (file.size() - l.blocks_begin < kRecordHeaderSize + index_length) return diagnose_missing_index(file);
    l.index_pos = file.size() - kRecordHeaderSize - index_length;
    auto index = read_record(file, l.index_pos);
    if (!index || index->type != kTypeBlockIndex || index->data.size() != index_length) {
        return diagnose_missing_index(file);
    }
    l.index = index->data;
    l.start = load_le64(index->data.data());
    if (l.start > UINT64_MAX - (l.count - 1)) return Era1Error::kBadIndex;

    // The Accumulator record sits directly before the index.
    constexpr size_t kAccumulatorRecordSize = kRecordHeaderSize + 32;
    if (l.index_pos - l.blocks_begin < kAccumulatorRecordSize) return Era1Error::kBadAccumulatorRecord;
    l.accumulator_pos = l.index_pos - kAccumulatorRecordSize;
    auto accumulator = read_record(file.first(l.index_pos), l.accumulator_pos);
    if (!accumulator || accumulator->type != kTypeAccumulator || accumulator->data.size() != 32) {
        return Era1Error::kBadAccumulatorRecord;
    }
    std::memcpy(l.root.data(), accumulator->data.data(), 32);
    return l;
}

constexpr uint16_t kTupleTypes[] = {kTypeCompressedHeader, kTypeCompressedBody, kTypeCompressedReceipts,
                                    kTypeTotalDifficulty};

// Where the index puts block i's tuple. Offsets are signed and relative to the index record:
// unsigned wrap-around gives the same absolute position as signed arithmetic.
uint64_t tuple_pos(const Layout& l, size_t i) noexcept {
    return uint64_t{l.index_pos} + load_le64(l.index.data() + 8 + 8 * i);
}

// The four records of block i's tuple, at the position the index gives (any position not below
// accumulator_pos is outside the block area); `area` is the block area.
Result<std::array<Record, 4>> read_tuple(const Layout& l, ByteView area, size_t i) noexcept {
    const uint64_t pos = tuple_pos(l, i);
    if (pos < l.blocks_begin || pos >= l.accumulator_pos) return Era1Error::kBadIndexOffset;
    std::array<Record, 4> tuple;
    size_t at = static_cast<size_t>(pos);
    for (size_t k = 0; k < 4; ++k) {
        auto r = read_record(area, at);
        if (!r) return r.error();
        if (r->type != kTupleTypes[k]) return Era1Error::kUnexpectedRecord;
        tuple[k] = *r;
        at = r->end;
    }
    if (tuple[3].data.size() != 32) return Era1Error::kBadTotalDifficulty;
    return tuple;
}

}  // namespace

Result<Archive> Archive::parse(ByteView file) noexcept {
    auto layout = locate(file);
    if (!layout) return layout.error();
    const Layout& l = *layout;
    Archive archive;
    archive.start_ = l.start;
    archive.root_ = l.root;

    // Block tuples may only occupy [blocks_begin, accumulator_pos).
    const ByteView area = file.first(l.accumulator_pos);
    archive.entries_.reserve(l.count);
    size_t expected_pos = l.blocks_begin;
    for (size_t i = 0; i < l.count; ++i) {
        // Tuples are written back to back, so an offset elsewhere points at another block (or inside one).
        if (tuple_pos(l, i) != expected_pos) return Era1Error::kBadIndexOffset;
        auto read = read_tuple(l, area, i);
        if (!read) return read.error();
        const std::array<Record, 4>& tuple = *read;
        Entry entry{archive.start_ + i, tuple[0].data, load_le256(tuple[3].data.data()), tuple[1].data, tuple[2].data};
        // TD grows with every proof-of-work block and stays flat after the merge; it never decreases.
        if (i > 0 && entry.total_difficulty < archive.entries_.back().total_difficulty) {
            return Era1Error::kBadTotalDifficulty;
        }
        archive.entries_.push_back(entry);
        expected_pos = tuple[3].end;
    }

    // other-entries*: whatever lies between the last tuple and the Accumulator must still be whole records.
    while (expected_pos < l.accumulator_pos) {
        auto r = read_record(area, expected_pos);
        if (!r) return r.error();
        expected_pos = r->end;
    }
    return archive;
}

Result<ByteView> Archive::header(size_t i, Bytes& out) const noexcept {
    if (i >= entries_.size()) return Era1Error::kOutOfRange;
    auto decoded = decode_snappy_frames(entries_[i].compressed_header, out);
    if (!decoded) return decoded.error();

    // Exactly one list, and its ninth field (number) names this block: catches an archive whose tuples are out of
    // order without decoding the whole header.
    ByteView rest{out};
    auto fields = rlp::decode_list(rest);
    if (!fields || !rest.empty()) return Era1Error::kBadHeaderRlp;
    ByteView payload = *fields;
    for (int k = 0; k < 8; ++k) {
        if (!rlp::next_item(payload)) return Era1Error::kBadHeaderRlp;
    }
    auto number = rlp::decode_uint64(payload);
    if (!number) return Era1Error::kBadHeaderRlp;
    if (*number != entries_[i].number) return Era1Error::kHeaderNumberMismatch;
    return ByteView{out};
}

namespace {

// Decompresses one block's record and checks it is exactly one RLP list.
Result<ByteView> one_list(ByteView framed, Bytes& out, Era1Error bad) noexcept {
    auto decoded = decode_snappy_frames(framed, out);
    if (!decoded) return decoded.error();
    ByteView rest{out};
    auto list = rlp::decode_list(rest);
    if (!list || !rest.empty()) return bad;
    return ByteView{out};
}

}  // namespace

Result<ByteView> Archive::body(size_t i, Bytes& out) const noexcept {
    if (i >= entries_.size()) return Era1Error::kOutOfRange;
    return one_list(entries_[i].compressed_body, out, Era1Error::kBadBodyRlp);
}

Result<ByteView> Archive::receipts(size_t i, Bytes& out) const noexcept {
    if (i >= entries_.size()) return Era1Error::kOutOfRange;
    return one_list(entries_[i].compressed_receipts, out, Era1Error::kBadReceiptsRlp);
}

// ---- index view --------------------------------------------------------------------------------

Result<IndexView> IndexView::open(ByteView file) noexcept {
    auto l = locate(file);
    if (!l) return l.error();
    IndexView v;
    v.file_ = file;
    v.layout_ = *l;
    return v;
}

Result<ByteView> IndexView::item(size_t i, size_t record, Bytes& out, Era1Error bad) const noexcept {
    if (i >= layout_.count) return Era1Error::kOutOfRange;
    auto tuple = read_tuple(layout_, file_.first(layout_.accumulator_pos), i);
    if (!tuple) return tuple.error();
    return one_list((*tuple)[record].data, out, bad);
}

Result<ByteView> IndexView::body(size_t i, Bytes& out) const noexcept {
    return item(i, 1, out, Era1Error::kBadBodyRlp);
}

Result<ByteView> IndexView::receipts(size_t i, Bytes& out) const noexcept {
    return item(i, 2, out, Era1Error::kBadReceiptsRlp);
}

// ---- accumulator -------------------------------------------------------------------------------

Result<Hash32> accumulator_root(std::span<const Hash32> hashes, std::span<const U256> tds) noexcept {
    if (hashes.size() != tds.size()) return Era1Error::kCountMismatch;
    if (hashes.size() > kMaxBlocks) return Era1Error::kTooManyRecords;
    return list_root(hashes.size(), [&](CryptoPP::SHA256& sha, size_t i) noexcept {
        return header_record_root(sha, hashes[i], tds[i]);
    });
}

Result<void> verify_accumulator(const Archive& archive, std::span<const Hash32> hashes) noexcept {
    return compare_root(archive, hashes);
}

Result<void> verify_accumulator(const Archive& archive) noexcept {
    std::vector<Hash32> hashes;
    hashes.reserve(archive.count());
    Bytes buffer;
    for (size_t i = 0; i < archive.count(); ++i) {
        auto rlp = archive.header(i, buffer);
        if (!rlp) return rlp.error();
        hashes.push_back(keccak256(*rlp));
    }
    return compare_root(archive, hashes);
}

}  // namespace headerd::era1
