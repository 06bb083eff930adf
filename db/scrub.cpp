// ChainDb's damage handling: marks, the scrub walk and repairs (declared in db/chain_db.hpp; the
// scrubber thread that drives scrub() is db/scrubber.cpp; docs/operations.md, "Bit rot").

#include <algorithm>
#include <limits>
#include <mutex>
#include <shared_mutex>

#include <fmt/format.h>
#include <leveldb/db.h>
#include <leveldb/filter_policy.h>
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
    if (!head || count == 0 || top > head->number) return step;
    const uint64_t lo = top + 1 > count ? top + 1 - count : 0;
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
        bool sound = readable[i] && expect && keccak256(rlp) == *expect;
        std::optional<Hash32> below;
        if (sound) {
            auto peek = peek_header(rlp);
            sound = peek && peek->number == n;
            if (sound) below = peek->parent_hash;
        }
        if (sound) {
            if (impl_->range_damaged(n, n)) impl_->unmark(n);
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
    if (number > 0 && !impl_->range_damaged(number - 1, number - 1)) {
        ItemBuffer below;
        auto r = read_range(number - 1, 1, Order::kAscending, below, std::numeric_limits<size_t>::max(), false);
        if (r && below.size() == 1 && keccak256(below.item(0)) != peek->parent_hash) {
            return make_error(fmt::format("repair of block {}: the new header's parent hash {} is not block {}'s hash",
                                          number, to_hex0x(peek->parent_hash), number - 1));
        }
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
        leveldb::Status s = impl_->ldb->Write(wo, &batch);
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
