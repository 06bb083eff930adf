#include "ancient/freezer.hpp"

#include <algorithm>
#include <limits>
#include <utility>

#include <xxhash.h>

namespace headerd::ancient {

uint32_t header_checksum(ByteView rlp) noexcept { return static_cast<uint32_t>(XXH3_64bits(rlp.data(), rlp.size())); }

Freezer::Freezer(std::unique_ptr<Table> headers, std::unique_ptr<Table> hashes)
    : headers_(std::move(headers)), hashes_(std::move(hashes)) {}

Outcome<std::unique_ptr<Freezer>> Freezer::open(FileSystem& fs, std::string dir, Options opts) {
    // Both tables are checked, and their repairs decided, before either is written to.
    auto headers = Table::open_unrepaired(fs, dir, kHeadersTable, {true, opts.max_file_size, opts.read_only});
    if (!headers) return headers.error();
    auto hashes = Table::open_unrepaired(fs, dir, kHashesTable, {false, opts.max_file_size, opts.read_only});
    if (!hashes) return hashes.error();
    std::unique_ptr<Freezer> f(new Freezer(std::move(*headers), std::move(*hashes)));

    const uint64_t h = f->headers_->items();
    const uint64_t x = f->hashes_->items();
    // A table that hides more items than the other holds (an index claiming deleted items, a tail
    // raised in its meta): nothing sound can be read from the pair, and no repair of either table
    // is made, so the files stay as they were for whoever looks into it.
    if (f->tail() > f->items()) {
        return make_error("ancient freezer " + dir + ": the tables disagree: " + kHeadersTable + " starts at item " +
                          std::to_string(f->headers_->tail()) + " and holds " + std::to_string(h) + ", " +
                          kHashesTable + " starts at item " + std::to_string(f->hashes_->tail()) + " and holds " +
                          std::to_string(x));
    }
    // Everything that can refuse the open is read before anything is written: a header that does
    // not decompress, met while computing the checksums the file lacks, leaves the files as they were.
    auto sums = f->plan_checksums(fs, dir, opts.read_only);
    if (!sums) return sums.error();
    if (auto r = f->headers_->apply_repairs(); !r) return r.error();
    if (auto r = f->hashes_->apply_repairs(); !r) return r.error();
    // The tables are appended and synced one after the other, so a crash can leave one longer. A
    // read-only open reads the shorter length (items()) and leaves the longer table as it is.
    if (h != x && !opts.read_only) {
        Table& longer = h > x ? *f->headers_ : *f->hashes_;
        const uint64_t keep = std::min(h, x);
        if (auto r = longer.truncate_head(keep); !r) return r.error();
        f->repairs_.push_back("ancient freezer " + dir + ": table " + longer.name() + " truncated from " +
                              std::to_string(std::max(h, x)) + " to " + std::to_string(keep) + " items to match");
    }
    if (auto r = f->apply_checksums(fs, dir, *sums); !r) return r.error();
    return f;
}

Outcome<Freezer::ChecksumPlan> Freezer::plan_checksums(FileSystem& fs, const std::string& dir, bool read_only) {
    ChecksumPlan plan;
    plan.read_only = read_only;
    const std::string path = dir + "/" + kChecksumFile;
    const uint64_t items = this->items();
    auto exists = fs.exists(path);
    if (!exists) return exists.error();
    plan.existed = *exists;
    if (!plan.existed) {
        if (read_only) {
            repairs_.push_back("ancient freezer " + dir + ": no " + kChecksumFile +
                               " (written by another client?): reads are not checked for damage");
            return plan;
        }
    } else {
        auto file = fs.open(path, read_only ? OpenMode::kRead : OpenMode::kReadWrite);
        if (!file) return file.error();
        sums_ = std::move(*file);
        auto size = sums_->size();
        if (!size) return size.error();
        plan.size = *size;
    }
    plan.have = std::min(plan.size / kChecksumSize, items);
    if (read_only) {
        sums_items_ = plan.have;
        return plan;
    }
    // Checksums the file lacks (a freezer written before it existed or by another client, or a crash
    // between the tables' sync and its own) are computed from the headers as they are now, here in
    // memory (4 bytes a block, grown as the reads succeed: the index's count is not trusted); the scrubber checks those
    // against the chain's hash links.
    ItemBuffer buf;
    ReadScratch scratch;
    for (uint64_t at = plan.have; at < items;) {
        const uint64_t n = std::min<uint64_t>(4096, items - at);
        buf.clear();
        if (auto r = headers_->read_range(at, n, kNoByteLimit, buf, scratch); !r) return r.error();
        for (size_t i = 0; i < buf.size(); ++i) {
            uint8_t sum[kChecksumSize];
            store_be32(sum, header_checksum(buf.item(i)));
            plan.missing.insert(plan.missing.end(), sum, sum + kChecksumSize);
        }
        at += n;
    }
    return plan;
}

Outcome<void> Freezer::apply_checksums(FileSystem& fs, const std::string& dir, const ChecksumPlan& plan) {
    if (plan.read_only) return {};
    if (!plan.existed) {
        auto file = fs.open(dir + "/" + kChecksumFile, OpenMode::kReadWrite);
        if (!file) return file.error();
        sums_ = std::move(*file);
    }
    const uint64_t items = this->items();
    if (plan.size != plan.have * kChecksumSize) {
        if (auto r = sums_->truncate(plan.have * kChecksumSize); !r) return r;
        if (auto r = sums_->sync(); !r) return r;
        repairs_.push_back("ancient freezer " + dir + ": " + kChecksumFile + " cut from " + std::to_string(plan.size) +
                           " to " + std::to_string(plan.have * kChecksumSize) + " bytes to match the headers table");
    }
    sums_items_ = plan.have;
    if (plan.have < items) {
        if (auto r = sums_->write_at(plan.have * kChecksumSize, plan.missing); !r) return r;
        if (auto r = sums_->sync(); !r) return r;
        sums_items_ = items;
        repairs_.push_back("ancient freezer " + dir + ": computed the checksums of blocks [" +
                           std::to_string(plan.have) + ", " + std::to_string(items) + ") from the stored headers");
    }
    if (!plan.existed) {
        if (auto r = fs.sync_dir(dir); !r) return r;  // the file is new
    }
    return {};
}

Outcome<void> Freezer::write_checksums(uint64_t first_number, std::span<const ByteView> header_rlps) {
    sums_write_.resize(header_rlps.size() * kChecksumSize);
    for (size_t i = 0; i < header_rlps.size(); ++i) {
        store_be32(sums_write_.data() + i * kChecksumSize, header_checksum(header_rlps[i]));
    }
    if (auto r = sums_->write_at(first_number * kChecksumSize, sums_write_); !r) return r;
    sums_items_ = std::max(sums_items_, first_number + header_rlps.size());
    return {};
}

Outcome<void> Freezer::check(uint64_t start, size_t before, ItemBuffer& out, ReadScratch& scratch) const {
    const size_t got = out.size() - before;
    if (got == 0 || start >= sums_items_) return {};
    const size_t checked = static_cast<size_t>(std::min<uint64_t>(got, sums_items_ - start));
    scratch.sums.resize(checked * kChecksumSize);
    auto n = sums_->read_at(start * kChecksumSize, scratch.sums);
    if (!n) return n.error();
    if (*n != scratch.sums.size()) {
        return make_error(sums_->path() + ": shorter than its " + std::to_string(sums_items_) + " checksums");
    }
    for (size_t i = 0; i < checked; ++i) {
        if (header_checksum(out.item(before + i)) != load_be32(scratch.sums.data() + i * kChecksumSize)) [[unlikely]] {
            out.ends.resize(before + i);
            out.bytes.resize(before + i == 0 ? 0 : out.ends.back());
            return corrupt_error("ancient freezer: block " + std::to_string(start + i) +
                                     " does not match its checksum in " + sums_->path() +
                                     ": the stored header is damaged",
                                 start + i);
        }
    }
    return {};
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
    auto r = hashes_->append(hash_views_);
    if (r && sums_) r = write_checksums(first_number, header_rlps);
    if (!r) {
        // Keep the tables in step: take the headers (and hashes) back out.
        if (auto undo = truncate_head(first_number); !undo) {
            return make_error(r.error().message + "; and then " + undo.error().message);
        }
        return r;
    }
    return {};
}

Outcome<void> Freezer::sync() {
    // Checksums first: every item a synced table holds then has its durable checksum (those past the
    // tables after a crash are cut at the next open).
    if (sums_) {
        if (auto r = sums_->sync(); !r) return r;
    }
    if (auto r = headers_->sync(); !r) return r;
    return hashes_->sync();
}

Outcome<void> Freezer::truncate_head(uint64_t items) {
    if (auto r = hashes_->truncate_head(items); !r) return r;
    if (auto r = headers_->truncate_head(items); !r) return r;
    if (sums_ && sums_items_ > items) {
        if (auto r = sums_->truncate(items * kChecksumSize); !r) return r;
        if (auto r = sums_->sync(); !r) return r;
        sums_items_ = items;
    }
    return {};
}

Outcome<void> Freezer::rewrite_header(uint64_t number, ByteView rlp) {
    if (auto r = headers_->rewrite_item(number, rlp); !r) return r;
    if (!sums_ || number >= sums_items_) return {};
    const ByteView one[] = {rlp};
    if (auto r = write_checksums(number, one); !r) return r;
    return sums_->sync();
}

Outcome<void> Freezer::read_headers(uint64_t start, uint64_t count, uint64_t max_bytes, ItemBuffer& out) {
    return std::as_const(*this).read_headers(start, count, max_bytes, out, scratch_);
}

Outcome<void> Freezer::read_headers(uint64_t start, uint64_t count, uint64_t max_bytes, ItemBuffer& out,
                                    ReadScratch& scratch) const {
    const size_t before = out.size();
    auto r = headers_->read_range(start, count, max_bytes, out, scratch);
    // The headers read before a damaged item are checked too, so that the caller can trust them.
    if (auto c = check(start, before, out, scratch); !c) return c;
    return r;
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

Outcome<void> Freezer::read_hashes(uint64_t start, uint64_t count, std::vector<Hash32>& out,
                                   ReadScratch& scratch) const {
    scratch.items.clear();
    if (auto r = hashes_->read_range(start, count, kNoByteLimit, scratch.items, scratch); !r) return r.error();
    for (size_t i = 0; i < scratch.items.size(); ++i) {
        const ByteView item = scratch.items.item(i);
        if (item.size() != Hash32{}.size()) {
            return make_error("ancient table hashes: item " + std::to_string(start + i) + " has " +
                              std::to_string(item.size()) + " bytes, not 32");
        }
        Hash32& h = out.emplace_back();
        std::copy(item.begin(), item.end(), h.begin());
    }
    return {};
}

uint64_t Freezer::bytes_on_disk() const {
    return headers_->bytes_on_disk() + hashes_->bytes_on_disk() + sums_items_ * kChecksumSize;
}

std::vector<std::string> Freezer::repairs() const {
    std::vector<std::string> all = headers_->repairs();
    all.insert(all.end(), hashes_->repairs().begin(), hashes_->repairs().end());
    all.insert(all.end(), repairs_.begin(), repairs_.end());
    return all;
}

}  // namespace headerd::ancient
