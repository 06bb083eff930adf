// libFuzzer target for opening and repairing the freezer over random files (ancient::Table and
// ancient::Freezer on an in-memory FileSystem, mem_file_system.hpp). It drives what `serve`,
// `import` and `freeze` do on start: a read-only open (inspect, verify) and a writable open, which
// repairs what a crash or damage left.
//
// Input (freezer_input.hpp): a mode byte (one compressed or raw "headers" table, or the whole
// freezer; the data file size limit), then records [file id, length, bytes] creating its files.
//
// It asserts:
//  - a read-only open changes no byte of any file;
//  - an open either fails with an error (with a message) or yields a table whose every item in
//    [tail, items) reads back: a raw table's items always (and a range read agrees with the item
//    reads), a compressed table's items or an error (snappy bytes that do not decompress), a
//    freezer's headers or a kCorrupt error naming that block (checksum), its hashes or an error
//    naming the item (a hashes item that is not 32 bytes);
//  - after a writable open (the repair) and close, a second writable open succeeds, repairs nothing,
//    reports the same items and tail, reads the same bytes, and leaves every file byte for byte as
//    the first left it; a read-only open then succeeds too, with the same items.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ancient/freezer.hpp"
#include "ancient/table.hpp"
#include "fuzz/freezer_input.hpp"
#include "fuzz/mem_file_system.hpp"

using namespace headerd;
using headerd::fuzz::MemFileSystem;

namespace {

using headerd::fuzz::kFreezerDir;
using headerd::fuzz::kFreezerFiles;
using headerd::fuzz::kMaxFileSizes;

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "freezer_fuzz: %s\n", what.c_str());
    std::abort();
}

// Every item's bytes, or nullopt for an item whose read failed (as the reader reported it).
struct Items {
    uint64_t tail{0};
    uint64_t items{0};
    std::vector<std::optional<Bytes>> bytes;
    bool operator==(const Items&) const = default;
};

Items read_table(ancient::Table& t, bool compressed) {
    Items out{t.tail(), t.items(), {}};
    if (out.tail > out.items) fail("table tail past its head");
    ItemBuffer buf;
    for (uint64_t i = out.tail; i < out.items; ++i) {
        buf.clear();
        auto r = t.read_range(i, 1, ancient::kNoByteLimit, buf);
        if (!r) {
            if (!compressed) fail("an item of a raw table that opened does not read back: " + r.error().message);
            out.bytes.emplace_back(std::nullopt);
            continue;
        }
        if (buf.size() != 1) fail("a read of one item returned another count");
        const ByteView item = buf.item(0);
        out.bytes.emplace_back(Bytes(item.begin(), item.end()));
    }
    // One read of everything agrees with the reads one by one, up to the first failure.
    if (out.items > out.tail) {
        buf.clear();
        auto r = t.read_range(out.tail, out.items - out.tail, ancient::kNoByteLimit, buf);
        bool all_ok = true;
        for (const auto& b : out.bytes) all_ok = all_ok && b.has_value();
        if (r.has_value() != all_ok && !compressed) fail("a range read disagrees with the item reads");
        if (r) {
            for (size_t i = 0; i < buf.size(); ++i) {
                const ByteView item = buf.item(i);
                if (!out.bytes[i] || !std::equal(item.begin(), item.end(), out.bytes[i]->begin(), out.bytes[i]->end()))
                    fail("a range read returned other bytes than the item reads");
            }
        }
    }
    return out;
}

Items read_freezer(ancient::Freezer& f) {
    Items out{f.tail(), f.items(), {}};
    // Tables whose ranges do not overlap (a hashes index claiming billions of deleted items) are
    // refused by every open (docs/testing.md, "Fuzzing", finding 2): an open freezer has tail <= items.
    if (out.tail > out.items) fail("an opened freezer has its tail past its items");
    ItemBuffer buf;
    for (uint64_t i = out.tail; i < out.items; ++i) {
        buf.clear();
        auto r = f.read_headers(i, 1, ancient::kNoByteLimit, buf);
        if (!r) {
            // A header that rotted (its checksum) or does not decompress: reported as such, with its block.
            if (r.error().kind != ErrorKind::kCorrupt || r.error().block != i) {
                fail("a header read failed, not kCorrupt for its block: " + r.error().message);
            }
            out.bytes.emplace_back(std::nullopt);
        } else {
            if (buf.size() != 1) fail("a read of one header returned another count");
            const ByteView item = buf.item(0);
            out.bytes.emplace_back(Bytes(item.begin(), item.end()));
        }
        // The hashes table's index may give an item another length than 32 bytes: open accepts it
        // (it does not read items), the read reports it (docs/testing.md, "Fuzzing").
        auto hash = f.read_hash(i);
        if (hash) {
            out.bytes.emplace_back(Bytes(hash->begin(), hash->end()));
        } else {
            if (hash.error().message.find("item " + std::to_string(i)) == std::string::npos) {
                fail("a hash read failed without naming its item: " + hash.error().message);
            }
            out.bytes.emplace_back(std::nullopt);
        }
    }
    return out;
}

struct Opened {
    Items items;
    std::vector<std::string> repairs;
};

// FREEZER_FUZZ_VERBOSE=1 prints each open's outcome (to read what an input does).
void show(const char* what, const Outcome<void>& error, const Opened* opened) {
    static const bool on = std::getenv("FREEZER_FUZZ_VERBOSE") != nullptr;
    if (!on) return;
    if (!opened) {
        std::fprintf(stderr, "%s: %s\n", what, error ? "" : error.error().message.c_str());
        return;
    }
    std::fprintf(stderr, "%s: tail %llu, items %llu\n", what, static_cast<unsigned long long>(opened->items.tail),
                 static_cast<unsigned long long>(opened->items.items));
    for (const auto& r : opened->repairs) std::fprintf(stderr, "  repair: %s\n", r.c_str());
}

std::optional<Opened> open_once(MemFileSystem& fs, bool freezer, bool compressed, uint64_t max_file_size,
                                bool read_only) {
    if (freezer) {
        auto f = ancient::Freezer::open(fs, kFreezerDir, {max_file_size, read_only});
        if (!f) {
            if (f.error().message.empty()) fail("an open failed without a message");
            show(read_only ? "freezer read-only open" : "freezer open", f.error(), nullptr);
            return std::nullopt;
        }
        Opened opened{read_freezer(**f), (*f)->repairs()};
        show(read_only ? "freezer read-only open" : "freezer open", {}, &opened);
        return opened;
    }
    auto t = ancient::Table::open(fs, kFreezerDir, "headers", {compressed, max_file_size, read_only});
    if (!t) {
        if (t.error().message.empty()) fail("an open failed without a message");
        show(read_only ? "table read-only open" : "table open", t.error(), nullptr);
        return std::nullopt;
    }
    Opened opened{read_table(**t, compressed), (*t)->repairs()};
    show(read_only ? "table read-only open" : "table open", {}, &opened);
    return opened;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const bool freezer = (data[0] & headerd::fuzz::kModeFreezer) != 0;
    const bool compressed = (data[0] & headerd::fuzz::kModeCompressed) != 0;
    const uint64_t max_file_size = kMaxFileSizes[(data[0] >> 2) & 7];
    MemFileSystem fs;
    (void)fs.mkdir(kFreezerDir);
    size_t pos = 1;
    while (pos + 3 <= size) {
        const std::string_view name = kFreezerFiles[data[pos] % std::size(kFreezerFiles)];
        const size_t len = std::min<size_t>((size_t{data[pos + 1]} << 8) | data[pos + 2], size - pos - 3);
        fs.put(std::string(kFreezerDir) + "/" + std::string(name), ByteView{data + pos + 3, len});
        pos += 3 + len;
    }

    const auto before = fs.snapshot();
    const auto read_only = open_once(fs, freezer, compressed, max_file_size, true);
    if (fs.snapshot() != before) fail("a read-only open changed the files");

    const auto repaired = open_once(fs, freezer, compressed, max_file_size, false);
    if (!repaired) {
        // Everything that refuses an open is found before any repair is made.
        if (fs.snapshot() != before) fail("a refused writable open changed the files");
        return 0;
    }
    const auto after_repair = fs.snapshot();
    const auto again = open_once(fs, freezer, compressed, max_file_size, false);
    if (!again) fail("a second writable open failed after a repair");
    if (!again->repairs.empty()) fail("a second writable open repaired again");
    if (again->items != repaired->items) fail("a second writable open reads other items");
    if (fs.snapshot() != after_repair) fail("a second writable open changed the files");
    const auto reader = open_once(fs, freezer, compressed, max_file_size, true);
    if (!reader) fail("a read-only open failed after a repair");
    if (reader->items != repaired->items) fail("a read-only open after the repair reads other items");
    // A table that was already sound opens read-only with what the repair kept.
    if (read_only && read_only->repairs.empty() && read_only->items != repaired->items) {
        fail("a writable open changed a table that needed no repair");
    }
    return 0;
}
