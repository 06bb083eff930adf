#include "ancient/freezer.hpp"

#include <algorithm>
#include <utility>

namespace headerd::ancient {

Freezer::Freezer(std::unique_ptr<Table> headers, std::unique_ptr<Table> hashes)
    : headers_(std::move(headers)), hashes_(std::move(hashes)) {}

Outcome<std::unique_ptr<Freezer>> Freezer::open(FileSystem& fs, std::string dir, Options opts) {
    auto headers = Table::open(fs, dir, kHeadersTable, {true, opts.max_file_size, opts.read_only});
    if (!headers) return headers.error();
    auto hashes = Table::open(fs, dir, kHashesTable, {false, opts.max_file_size, opts.read_only});
    if (!hashes) return hashes.error();
    std::unique_ptr<Freezer> f(new Freezer(std::move(*headers), std::move(*hashes)));

    // The tables are appended and synced one after the other, so a crash can leave one longer.
    const uint64_t h = f->headers_->items();
    const uint64_t x = f->hashes_->items();
    if (h != x) {
        if (opts.read_only) {
            return make_error("ancient freezer " + dir + ": tables differ in length: headers has " + std::to_string(h) +
                              " items but hashes has " + std::to_string(x));
        }
        Table& longer = h > x ? *f->headers_ : *f->hashes_;
        const uint64_t keep = std::min(h, x);
        if (auto r = longer.truncate_head(keep); !r) return r.error();
        f->repairs_.push_back("ancient freezer " + dir + ": table " + longer.name() + " truncated from " +
                              std::to_string(std::max(h, x)) + " to " + std::to_string(keep) + " items to match");
    }
    return f;
}

uint64_t Freezer::items() const noexcept { return std::min(headers_->items(), hashes_->items()); }

uint64_t Freezer::tail() const noexcept { return std::max(headers_->tail(), hashes_->tail()); }

Outcome<void> Freezer::append(uint64_t first_number, std::span<const ByteView> header_rlps,
                              std::span<const Hash32> hashes) {
    if (first_number != items()) {
        return make_error("ancient freezer: append of block " + std::to_string(first_number) + " but the next is " +
                          std::to_string(items()));
    }
    if (header_rlps.size() != hashes.size()) {
        return make_error("ancient freezer: append of " + std::to_string(header_rlps.size()) + " headers with " +
                          std::to_string(hashes.size()) + " hashes");
    }
    if (header_rlps.empty()) return {};
    hash_views_.clear();
    for (const Hash32& h : hashes) hash_views_.emplace_back(h);
    if (auto r = headers_->append(header_rlps); !r) return r;
    if (auto r = hashes_->append(hash_views_); !r) {
        // Keep the tables in step: take the headers back out.
        if (auto undo = headers_->truncate_head(first_number); !undo) {
            return make_error(r.error().message + "; and then " + undo.error().message);
        }
        return r;
    }
    return {};
}

Outcome<void> Freezer::sync() {
    if (auto r = headers_->sync(); !r) return r;
    return hashes_->sync();
}

Outcome<void> Freezer::truncate_head(uint64_t items) {
    if (auto r = hashes_->truncate_head(items); !r) return r;
    return headers_->truncate_head(items);
}

Outcome<void> Freezer::read_headers(uint64_t start, uint64_t count, uint64_t max_bytes, ItemBuffer& out) {
    return headers_->read_range(start, count, max_bytes, out, scratch_);
}

Outcome<void> Freezer::read_headers(uint64_t start, uint64_t count, uint64_t max_bytes, ItemBuffer& out,
                                    ReadScratch& scratch) const {
    return headers_->read_range(start, count, max_bytes, out, scratch);
}

Outcome<Hash32> Freezer::read_hash(uint64_t number) { return std::as_const(*this).read_hash(number, scratch_); }

Outcome<Hash32> Freezer::read_hash(uint64_t number, ReadScratch& scratch) const {
    scratch.items.clear();
    if (auto r = hashes_->read_range(number, 1, kNoByteLimit, scratch.items, scratch); !r) return r.error();
    const ByteView item = scratch.items.item(0);
    if (item.size() != Hash32{}.size()) {
        return make_error("ancient table hashes: item " + std::to_string(number) + " has " +
                          std::to_string(item.size()) + " bytes, not 32");
    }
    Hash32 h;
    std::copy(item.begin(), item.end(), h.begin());
    return h;
}

uint64_t Freezer::bytes_on_disk() const { return headers_->bytes_on_disk() + hashes_->bytes_on_disk(); }

std::vector<std::string> Freezer::repairs() const {
    std::vector<std::string> all = headers_->repairs();
    all.insert(all.end(), hashes_->repairs().begin(), hashes_->repairs().end());
    all.insert(all.end(), repairs_.begin(), repairs_.end());
    return all;
}

}  // namespace headerd::ancient
