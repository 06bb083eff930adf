// Makes the binary seeds of fuzz/corpus/ from the real test data (tests/data): run
//   build-fuzz/fuzz/make_fuzz_seeds fuzz/corpus
// after a change of an input format; it rewrites corpus/reply, corpus/freezer, corpus/era1, the
// body and receipt seeds of corpus/core and the history reply seeds of corpus/eth (the other seeds
// are small files written by hand). Each seed stays under a few KB.
//
//  - reply: BlockHeaders replies of real mainnet headers to the verifier (by number, by hash,
//    reverse, with a skip) and operation streams for the sync fetcher (a good download that joins,
//    one with a lying peer);
//  - freezer: a raw and a compressed "headers" table and a whole freezer holding real headers,
//    written by the ancient library itself, with data files small enough to roll over;
//  - era1: archives of the first blocks of the real mainnet era1 file (its own records, a
//    recomputed accumulator and block index), and its first 4 KiB as they are;
//  - core: a real Sepolia body and receipt list, the latter in both receipt forms.

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "ancient/freezer.hpp"
#include "ancient/table.hpp"
#include "core/block_body.hpp"
#include "core/block_header.hpp"
#include "core/era1.hpp"
#include "core/rlp.hpp"
#include "fuzz/freezer_input.hpp"
#include "fuzz/mem_file_system.hpp"
#include "p2p/eth/messages.hpp"
#include "tests/data_dir.hpp"

using namespace headerd;

namespace {

Bytes read(const std::string& name) {
    std::ifstream in(headerd::testing::data_dir() + "/" + name, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + name);
    return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write(const std::filesystem::path& path, ByteView bytes) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path.string());
    std::printf("%6zu %s\n", bytes.size(), path.c_str());
}

void put_be(Bytes& out, uint64_t v, size_t n) {
    for (size_t i = n; i-- > 0;) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_le(Bytes& out, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

struct Headers {
    Bytes file;
    std::vector<ByteView> rlp;
    std::vector<Hash32> hashes;
};

const Headers& headers() {
    static const Headers h = [] {
        Headers out;
        out.file = read("mainnet-headers-0-8191.rlp");
        ByteView rest{out.file};
        while (!rest.empty()) {
            auto item = rlp::next_item(rest);
            if (!item) throw std::runtime_error("bad RLP in the test data");
            out.rlp.push_back(*item);
            out.hashes.push_back(header_hash(*item));
        }
        return out;
    }();
    return h;
}

// ---- reply ----------------------------------------------------------------------------------------

// Mode 0 input: flags, origin, amount, skip, head low, head growth, known origin number, reply.
Bytes verify_input(uint8_t flags, uint64_t origin, uint64_t amount, uint8_t skip, std::vector<uint64_t> numbers) {
    Bytes in{0x00, flags};
    put_be(in, origin, 2);
    put_be(in, amount, 2);
    in.push_back(skip);
    put_be(in, 8191, 2);
    in.push_back(0);
    put_be(in, 0, 2);
    if ((flags & 0x40) != 0) {
        for (uint64_t n : numbers) {
            put_be(in, n, 2);
            put_be(in, 0, 2);
        }
        return in;
    }
    eth::BlockHeadersMessage msg;
    msg.request_id = 7;
    for (uint64_t n : numbers) msg.headers.push_back(headers().rlp[n]);
    Bytes payload;
    msg.encode(payload);
    in.insert(in.end(), payload.begin(), payload.end());
    return in;
}

void reply_seeds(const std::filesystem::path& dir) {
    write(dir / "verify_forward", verify_input(0x04, 100, 4, 0, {100, 101, 102, 103}));
    write(dir / "verify_reverse_by_hash", verify_input(0x01 | 0x02 | 0x04, 200, 3, 0, {200, 199, 198}));
    write(dir / "verify_skip", verify_input(0x00, 300, 3, 2, {300, 303, 306}));
    write(dir / "verify_built", verify_input(0x40 | 0x04, 50, 3, 0, {50, 51, 52}));
    // Mode 1: trusted head 40, local chain 0..19 (floor 20), window 32.
    // assign 8 (40..33), assign 8 (32..25), assign 8 (24..20), deliver the second, the first, advance,
    // deliver the last, advance: the download joins at block 20.
    Bytes good{0x01, 40, 20, 1, 32};
    const Bytes ops = {0, 8, 0, 8, 0, 8,  // three assigns
                       1, 1, 0, 8,        // deliver task 1 (32..25), owner 0, 8 headers
                       1, 0, 1, 8,        // deliver task 0 (40..33), owner 1
                       5,                 // advance
                       1, 0, 0, 5, 5};    // deliver the last task (24..20), advance
    good.insert(good.end(), ops.begin(), ops.end());
    write(dir / "fetcher_joins", good);
    // A peer that flips a byte of one header: op 2 reads a "how" per header.
    Bytes liar{0x01, 40, 20, 1, 32, 0, 4, 2, 0, 2, 4, 0, 0, 2, 0, 0x00, 0x40, 0, 0, 5, 4, 2, 0, 4, 1, 0, 3, 4, 5};
    write(dir / "fetcher_liar", liar);
}

// ---- freezer --------------------------------------------------------------------------------------

void freezer_seeds(const std::filesystem::path& dir) {
    const auto& h = headers();
    for (bool compressed : {false, true}) {
        fuzz::MemFileSystem fs;
        (void)fs.mkdir(fuzz::kFreezerDir);
        {
            auto t = ancient::Table::open(fs, fuzz::kFreezerDir, "headers", {compressed, 1024, false}).value();
            std::vector<ByteView> items(h.rlp.begin(), h.rlp.begin() + 5);
            t->append(items).value();
            t->sync().value();
        }
        Bytes in{fuzz::mode_byte(false, compressed, 3)};
        for (const auto& [path, bytes] : fs.snapshot()) {
            fuzz::append_file_record(in, std::string_view(path).substr(std::string_view(fuzz::kFreezerDir).size() + 1),
                                     bytes);
        }
        write(dir / (compressed ? "table_compressed" : "table_raw"), in);
    }
    fuzz::MemFileSystem fs;
    (void)fs.mkdir(fuzz::kFreezerDir);
    {
        auto f = ancient::Freezer::open(fs, fuzz::kFreezerDir, {600, false}).value();
        std::vector<ByteView> items(h.rlp.begin(), h.rlp.begin() + 4);
        std::vector<Hash32> hashes(h.hashes.begin(), h.hashes.begin() + 4);
        f->append(0, items, hashes).value();
        f->sync().value();
    }
    Bytes in{fuzz::mode_byte(true, true, 2)};
    for (const auto& [path, bytes] : fs.snapshot()) {
        fuzz::append_file_record(in, std::string_view(path).substr(std::string_view(fuzz::kFreezerDir).size() + 1),
                                 bytes);
    }
    write(dir / "freezer", in);
}

// ---- era1 -----------------------------------------------------------------------------------------

// An archive of blocks 0..n-1 made of the real file's own records.
Bytes small_era1(const Bytes& file, size_t n) {
    auto archive = era1::Archive::parse(file).value();
    std::vector<Hash32> hashes;
    std::vector<U256> tds;
    Bytes scratch;
    for (size_t i = 0; i < n; ++i) {
        hashes.push_back(header_hash(archive.header(i, scratch).value()));
        tds.push_back(archive.total_difficulty(i));
    }
    // Version record, then n tuples of 4 records each, copied as they are.
    size_t pos = era1::kRecordHeaderSize;
    std::vector<size_t> tuples;
    for (size_t i = 0; i < n; ++i) {
        tuples.push_back(pos);
        for (int r = 0; r < 4; ++r) {
            const uint32_t length = file[pos + 2] | (file[pos + 3] << 8) | (file[pos + 4] << 16) |
                                    (static_cast<uint32_t>(file[pos + 5]) << 24);
            pos += era1::kRecordHeaderSize + length;
        }
    }
    Bytes out(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(pos));
    const Hash32 root = era1::accumulator_root(hashes, tds).value();
    put_le(out, era1::kTypeAccumulator, 2);
    put_le(out, 32, 4);
    put_le(out, 0, 2);
    out.insert(out.end(), root.begin(), root.end());
    const size_t index = out.size();
    put_le(out, era1::kTypeBlockIndex, 2);
    put_le(out, 16 + 8 * n, 4);
    put_le(out, 0, 2);
    put_le(out, 0, 8);  // start number
    for (size_t t : tuples)
        put_le(out, static_cast<uint64_t>(static_cast<int64_t>(t) - static_cast<int64_t>(index)), 8);
    put_le(out, n, 8);
    // The result must be an archive the reader accepts, accumulator and all.
    auto check = era1::Archive::parse(out);
    if (!check || check->count() != n || !era1::verify_accumulator(*check)) {
        throw std::runtime_error("the small era1 archive does not verify");
    }
    return out;
}

void era1_seeds(const std::filesystem::path& dir) {
    const Bytes file = read("mainnet-00000-5ec1ffb8.era1");
    write(dir / "blocks_0_7", small_era1(file, 8));
    write(dir / "block_0", small_era1(file, 1));
    write(dir / "head_4k", ByteView{file}.first(4096));
}

// core_fuzz selectors 7 (a body, a consensus-form receipt list) and 8 (an eth/69 receipt list):
// the first Sepolia block of epoch 21 with two to four transactions, as the archive holds it.
void history_seeds(const std::filesystem::path& dir) {
    const Bytes file = read("sepolia-00021-b8814b14.era1");
    auto archive = era1::Archive::parse(file).value();
    Bytes body, receipts;
    for (size_t i = 0; i < archive.count(); ++i) {
        const ByteView b = archive.body(i, body).value();
        const auto txs = parse_body(b).value().transactions.size();
        if (txs < 2 || txs > 4) continue;
        const ByteView r = archive.receipts(i, receipts).value();
        Bytes seed{7};
        append(seed, b);
        write(dir / "body_sepolia", seed);
        seed.assign({7});
        append(seed, r);
        write(dir / "receipts_sepolia", seed);
        seed.assign({8});
        receipts_to_eth69(r, seed).value();
        write(dir / "receipts69_sepolia", seed);
        return;
    }
    throw std::runtime_error("no Sepolia block with two to four transactions");
}

// eth_fuzz selector 12 (the asking side's BlockBodies and Receipts decoder): replies carrying the
// same Sepolia block's body and receipt list, as eth/68 bodies (pick 0), eth/68 receipts (pick 5)
// and eth/70 receipts with lastBlockIncomplete set (pick 7: version 70, receipts).
void history_reply_seeds(const std::filesystem::path& dir) {
    const Bytes file = read("sepolia-00021-b8814b14.era1");
    auto archive = era1::Archive::parse(file).value();
    Bytes body, receipts;
    for (size_t i = 0; i < archive.count(); ++i) {
        const ByteView b = archive.body(i, body).value();
        if (parse_body(b).value().transactions.size() < 2) continue;
        const ByteView r = archive.receipts(i, receipts).value();
        Bytes eth69;
        receipts_to_eth69(r, eth69).value();
        auto reply = [](uint8_t pick, std::optional<bool> incomplete, ByteView item) {
            Bytes payload;
            rlp::encode(payload, uint64_t{7});
            if (incomplete) payload.push_back(*incomplete ? 0x01 : 0x80);
            rlp::encode_header(payload, {true, item.size()});
            append(payload, item);
            Bytes seed{12, pick};
            rlp::encode_header(seed, {true, payload.size()});
            append(seed, payload);
            return seed;
        };
        write(dir / "bodies_reply_sepolia", reply(0, std::nullopt, b));
        write(dir / "receipts_reply_sepolia", reply(5, std::nullopt, r));
        write(dir / "receipts70_reply_sepolia", reply(7, true, eth69));
        return;
    }
    throw std::runtime_error("no Sepolia block with two transactions");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s CORPUS_DIR (fuzz/corpus)\n", argv[0]);
        return 2;
    }
    try {
        const std::filesystem::path root = argv[1];
        reply_seeds(root / "reply");
        freezer_seeds(root / "freezer");
        era1_seeds(root / "era1");
        history_seeds(root / "core");
        history_reply_seeds(root / "eth");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_fuzz_seeds: %s\n", e.what());
        return 1;
    }
    return 0;
}
