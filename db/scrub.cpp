// ChainDb's damage handling: marks, the scrub walk and repairs (declared in db/chain_db.hpp; the
// scrubber thread that drives scrub() is db/scrubber.cpp; docs/operations.md, "Bit rot").

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <leveldb/db.h>
#include <leveldb/env.h>
#include <leveldb/filter_policy.h>
#include <leveldb/table.h>
#include <leveldb/write_batch.h>

#include "core/block_header.hpp"
#include "core/hex.hpp"
#include "core/keccak.hpp"
#include "db/chain_db.hpp"
#include "db/chain_db_impl.hpp"
#include "db/schema.hpp"

namespace headerd::db {

std::vector<uint64_t> ChainDb::damaged_blocks() const {
    std::lock_guard lock(impl_->damaged_mu);
    return {impl_->damaged.begin(), impl_->damaged.end()};
}

void ChainDb::mark_damaged(uint64_t block) const { impl_->mark(block); }

Outcome<ChainDb::ScrubStep> ChainDb::scrub(uint64_t top, uint64_t count, std::optional<Hash32> expect) {
    ScrubStep step;
    const std::optional<Head> head = this->head();
    const uint64_t first = first_block();
    if (!head || count == 0 || top > head->number || top < first) return step;
    const uint64_t lo = std::max(first, top + 1 > count ? top + 1 - count : 0);
    const uint64_t want = top - lo + 1;
    constexpr size_t kNoCap = std::numeric_limits<size_t>::max();

    // One read of the whole range; if it fails (a damaged header in it), one read per header, so
    // that every sound header is still checked and every damaged one is found.
    ItemBuffer headers;
    std::vector<bool> readable(want, true);
    auto whole = read_range(lo, want, Order::kAscending, headers, kNoCap, false);
    if (!whole || headers.size() != want) {
        headers.clear();
        ItemBuffer one;
        for (uint64_t i = 0; i < want; ++i) {
            one.clear();
            auto r = read_range(lo + i, 1, Order::kAscending, one, kNoCap, false);
            if (r && one.size() == 1) {
                headers.push(one.item(0));
            } else {
                readable[i] = false;
                headers.push(ByteView{});
            }
        }
    }

    // The hash block n must have when nothing above vouches for it: the stored canonical hash.
    auto stored_hash = [&](uint64_t n) -> std::optional<Hash32> {
        auto h = canonical_hash(n);
        return h ? *h : std::nullopt;
    };
    for (uint64_t i = want; i-- > 0;) {
        const uint64_t n = lo + i;
        if (!expect) expect = stored_hash(n);
        const ByteView rlp = headers.item(i);
        bool sound = false;
        if (readable[i]) {
            const Hash32 hash = keccak256(rlp);
            // A header that matches its own canonical hash but not the link from above is sound: the
            // chain was reorganised under the walk (serve --follow), not damaged.
            sound = (expect && hash == *expect) || hash == stored_hash(n);
        }
        std::optional<Hash32> below;
        if (sound) {
            auto peek = peek_header(rlp);
            sound = peek && peek->number == n;
            if (sound) below = peek->parent_hash;
        }
        if (sound) {
            const bool file_mark = n >= ancient_items() && impl_->leveldb_files_damaged.load();
            if (!file_mark && impl_->range_damaged(n, n)) impl_->unmark(n);
            expect = below;
        } else {
            impl_->mark(n);
            step.damaged.push_back(n);
            expect = n > 0 ? stored_hash(n - 1) : std::nullopt;
        }
        ++step.checked;
    }
    step.next_expect = expect;
    return step;
}

Outcome<std::vector<std::string>> ChainDb::scrub_leveldb_files(const std::function<bool(uint64_t bytes)>& after_file) {
    std::string listing;
    if (!impl_->ldb->GetProperty("leveldb.sstables", &listing)) {
        return make_error(fmt::format("LevelDB in {} does not list its tables", impl_->chaindata));
    }
    // Lines such as " 12:2097152['key' @ 5 : 1 .. 'key' @ 9 : 1]": the file number before the colon.
    std::vector<uint64_t> numbers;
    size_t at = 0;
    while (at < listing.size()) {
        const size_t end = std::min(listing.find('\n', at), listing.size());
        std::string_view line(listing.data() + at, end - at);
        at = end + 1;
        while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
        const size_t colon = line.find(':');
        if (line.empty() || line.front() == '-' || colon == std::string_view::npos) continue;
        uint64_t n = 0;
        if (std::from_chars(line.data(), line.data() + colon, n).ec == std::errc{}) numbers.push_back(n);
    }

    leveldb::Env* env = leveldb::Env::Default();
    leveldb::Options options;  // no block cache: every block is read from the file
    leveldb::ReadOptions ro;
    ro.verify_checksums = true;
    ro.fill_cache = false;
    std::vector<std::string> damaged_files;
    const std::optional<Head> head = this->head();
    const uint64_t ancient = ancient_items();
    uint64_t read_before = 0;  // the size of the file read last, not yet reported to after_file
    for (uint64_t number : numbers) {
        if (read_before != 0 && after_file && !after_file(std::exchange(read_before, 0))) break;
        std::string path = fmt::format("{}/{:06}.ldb", impl_->chaindata, number);
        uint64_t size = 0;
        if (!env->GetFileSize(path, &size).ok()) {
            path = fmt::format("{}/{:06}.sst", impl_->chaindata, number);
            if (!env->GetFileSize(path, &size).ok()) continue;  // compacted away meanwhile
        }
        read_before = size;
        leveldb::RandomAccessFile* raw_file = nullptr;
        if (!env->NewRandomAccessFile(path, &raw_file).ok()) continue;
        std::unique_ptr<leveldb::RandomAccessFile> file(raw_file);
        leveldb::Table* raw_table = nullptr;
        leveldb::Status s = leveldb::Table::Open(options, file.get(), size, &raw_table);
        std::unique_ptr<leveldb::Table> table(raw_table);
        // Which recent heights the table holds a canonical entry (bit 1) and a header (bit 2) of.
        std::map<uint64_t, uint8_t> heights;
        if (s.ok()) {
            std::unique_ptr<leveldb::Iterator> it(table->NewIterator(ro));
            for (it->SeekToFirst(); it->Valid(); it->Next()) {
                const leveldb::Slice k = it->key();  // internal key: user key + 8 bytes
                if (k.size() < 8 + 9 || static_cast<uint8_t>(k[0]) != schema::kHeaderPrefix) continue;
                const size_t user = k.size() - 8;
                const uint64_t n = load_be64(reinterpret_cast<const uint8_t*>(k.data()) + 1);
                if (user == 10 && static_cast<uint8_t>(k[9]) == schema::kCanonicalSuffix) heights[n] |= 1;
                if (user == 41) heights[n] |= 2;
            }
            s = it->status();
        }
        if (s.ok()) continue;
        damaged_files.push_back(path + ": " + s.ToString());
        if (!head || heights.empty()) continue;
        // The heights between the table's first and last that lack an entry went with the damaged
        // block (or blocks).
        for (uint64_t n = std::max(heights.begin()->first, ancient);
             n <= std::min(heights.rbegin()->first, head->number); ++n) {
            auto h = heights.find(n);
            if (h == heights.end() || h->second != 3) impl_->mark(n);
        }
    }
    impl_->leveldb_files_damaged.store(!damaged_files.empty());
    return damaged_files;
}

Outcome<std::optional<Hash32>> ChainDb::expected_hash(uint64_t number) const {
    const std::optional<Head> head = this->head();
    if (!head || number > head->number) return std::optional<Hash32>{};
    if (number == head->number) return std::optional<Hash32>{head->hash};
    if (impl_->range_damaged(number + 1, number + 1)) return std::optional<Hash32>{};
    ItemBuffer above;
    auto r = read_range(number + 1, 1, Order::kAscending, above, std::numeric_limits<size_t>::max(), false);
    if (!r || above.size() != 1) return std::optional<Hash32>{};
    auto peek = peek_header(above.item(0));
    if (!peek) return std::optional<Hash32>{};
    return std::optional<Hash32>{peek->parent_hash};
}

Outcome<void> ChainDb::repair_header(uint64_t number, ByteView rlp) {
    auto want = expected_hash(number);
    if (!want) return want.error();
    if (!*want) {
        return make_error(
            fmt::format("repair of block {}: no sound header above it says what its hash must be "
                        "(repair the blocks above first)",
                        number));
    }
    const Hash32 hash = keccak256(rlp);
    if (hash != **want) {
        return make_error(
            fmt::format("repair of block {}: the new header hashes to {}, but block {} names {} as its "
                        "parent",
                        number, to_hex0x(hash), number + 1, to_hex0x(**want)));
    }
    auto peek = peek_header(rlp);
    if (!peek || peek->number != number) {
        return make_error(
            fmt::format("repair of block {}: the new header does not decode as block {}", number, number));
    }
    if (const auto anchor = this->anchor(); anchor && number == anchor->number) {
        if (peek->parent_hash != anchor->parent_hash) {
            return make_error(
                fmt::format("repair of block {}: the new header's parent hash {} is not {}, where the "
                            "chain is anchored",
                            number, to_hex0x(peek->parent_hash), to_hex0x(anchor->parent_hash)));
        }
    } else if (number > 0 && !impl_->range_damaged(number - 1, number - 1)) {
        ItemBuffer below;
        auto r = read_range(number - 1, 1, Order::kAscending, below, std::numeric_limits<size_t>::max(), false);
        if (r && below.size() == 1 && keccak256(below.item(0)) != peek->parent_hash) {
            return make_error(fmt::format("repair of block {}: the new header's parent hash {} is not block {}'s hash",
                                          number, to_hex0x(peek->parent_hash), number - 1));
        }
    }

    if (number >= ancient_items() && impl_->leveldb_files_damaged.load()) {
        return make_error(
            fmt::format("repair of block {}: a LevelDB table file is damaged (found by the scrubber); "
                        "stop the node and run headerd repair",
                        number));
    }
    if (number < ancient_items()) {
        std::unique_lock flock(impl_->freezer_mu);
        if (auto r = impl_->freezer->rewrite_header(number, rlp); !r) return r;
    } else {
        uint8_t numbuf[8];
        store_be64(numbuf, number);
        leveldb::WriteBatch batch;
        batch.Put(slice(schema::header_key(number, hash)), slice(rlp));
        batch.Put(slice(schema::canonical_key(number)), slice(hash));
        batch.Put(slice(schema::number_key(hash)), leveldb::Slice(reinterpret_cast<const char*>(numbuf), 8));
        leveldb::WriteOptions wo;
        wo.sync = true;
        leveldb::Status s = impl_->write(wo, &batch);
        if (!s.ok()) {
            return make_error(
                fmt::format("repair of block {}: LevelDB write in {}: {}", number, impl_->chaindata, s.ToString()));
        }
        // The header is written, but a read that meets the damaged table block beside it still
        // fails: then only an offline salvage (headerd repair) can rewrite that table.
        ItemBuffer check;
        auto r = read_range(number, 1, Order::kAscending, check, std::numeric_limits<size_t>::max(), false);
        if (!r) {
            return make_error(
                fmt::format("repair of block {}: the header is written, but the LevelDB table beside it "
                            "is damaged ({}); stop the node and run headerd repair",
                            number, r.error().message));
        }
    }
    impl_->unmark(number);
    impl_->generation.fetch_add(1, std::memory_order_acq_rel);
    return {};
}

Outcome<std::string> ChainDb::salvage_leveldb(const std::string& datadir) {
    const std::string chaindata = datadir + "/chaindata";
    leveldb::Options options;
    std::unique_ptr<const leveldb::FilterPolicy> filter(leveldb::NewBloomFilterPolicy(10));
    options.filter_policy = filter.get();
    options.block_size = 16u << 10;
    // With it, RepairDB reads every block with its checksum checked, so that a damaged block is
    // dropped and its table rewritten; without it a block that still decompresses is kept.
    options.paranoid_checks = true;
    leveldb::Status s = leveldb::RepairDB(chaindata, options);
    if (!s.ok()) return make_error(fmt::format("LevelDB salvage of {}: {}", chaindata, s.ToString()));
    std::string done = fmt::format(
        "LevelDB in {} salvaged: every table rewritten without its damaged blocks (the old files are in {}/lost)",
        chaindata, chaindata);
    return Outcome<std::string>(boost::system::in_place_value, std::move(done));
}

}  // namespace headerd::db
