#include "db/import.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "core/block_body.hpp"
#include "core/block_header.hpp"
#include "core/era1.hpp"
#include "core/hex.hpp"
#include "core/keccak.hpp"
#include "core/rlp.hpp"
#include "core/synthetic.hpp"
#include "db/mapped_file.hpp"

namespace headerd::db {
namespace {

constexpr size_t kWriteBatch = 10'000;
constexpr uint64_t kChunk = 1024;

std::string u256_str(const U256& v) { return v.str(); }

// Checks headers one after the other against the network and the stored chain.
class Checker {
  public:
    Checker(const ChainDb& db, const ChainConfig& config, std::string path)
        : db_(db), config_(config), path_(std::move(path)), head_(db.head()) {
        if (head_) {
            next_ = head_->number + 1;
            parent_ = head_->hash;
            td_ = head_->total_difficulty;
        }
    }

    // `where` describes the position ("offset N" or "entry N") for messages.
    Outcome<void> add(ByteView rlp, const std::optional<U256>& claimed_td, const std::string& where,
                      std::vector<NewHeader>& out) {
        auto header = decode_block_header(rlp);
        if (!header) {
            return make_error(
                fmt::format("{}: {}: not a valid block header: {}", path_, where, header.error().message()));
        }
        const uint64_t n = header->number;
        const Hash32 hash = header_hash(rlp);
        if (head_ && n <= head_->number && staged_ == 0) {
            // Already stored? Re-importing the same chain is a no-op, anything else a conflict.
            auto stored = db_.canonical_hash(n);
            if (!stored) return stored.error();
            if (*stored && **stored == hash) {
                ++skipped_;
                return {};
            }
            return make_error(fmt::format(
                "{}: block {}: hash {} conflicts with the stored block {} hash {} (head is {}); import does not "
                "replace stored headers",
                path_, n, to_hex0x(hash), n, *stored ? to_hex0x(**stored) : std::string("(none)"), head_->number));
        }
        if (n != next_) {
            if (!head_ && staged_ == 0) {
                return make_error(fmt::format(
                    "{}: block {}: the database is empty, so the import must start at the genesis (block 0), or at "
                    "an .era1 epoch whose accumulator root --trusted-root names",
                    path_, n));
            }
            return make_error(fmt::format("{}: block {}: does not link: expected block {} next", path_, n, next_));
        }
        if (n == 0) {
            if (hash != config_.genesis_hash) {
                return make_error(fmt::format("{}: block 0: genesis hash {} is not the {} genesis {}", path_,
                                              to_hex0x(hash), config_.name, to_hex0x(config_.genesis_hash)));
            }
        } else if (header->parent_hash != parent_) {
            return make_error(fmt::format("{}: block {}: parent hash {} does not match block {} hash {}", path_, n,
                                          to_hex0x(header->parent_hash), n - 1, to_hex0x(parent_)));
        }
        const size_t want_fields = config_.expected_field_count(n, header->timestamp);
        if (header->field_count() != want_fields) {
            return make_error(fmt::format("{}: block {}: header has {} fields, {} expects {} at this block", path_, n,
                                          header->field_count(), config_.name, want_fields));
        }
        const U256 td = n == 0 ? header->difficulty : td_ + header->difficulty;
        if (claimed_td && *claimed_td != td) {
            return make_error(fmt::format("{}: block {}: total difficulty {} in the file, {} computed", path_, n,
                                          u256_str(*claimed_td), u256_str(td)));
        }
        out.push_back(NewHeader{rlp, hash, n, td, header->timestamp});
        ++staged_;
        next_ = n + 1;
        parent_ = hash;
        td_ = td;
        return {};
    }

    uint64_t skipped() const { return skipped_; }
    // Whether the database held no chain when the import began.
    bool starts_chain() const { return !head_; }
    // Starts the chain staged here at `anchor` instead of the genesis. REQUIRES: starts_chain(),
    // nothing staged yet.
    void start_at(const Anchor& anchor) {
        anchor_ = anchor;
        next_ = anchor.number;
        parent_ = anchor.parent_hash;
        td_ = anchor.parent_td;
    }
    const std::optional<Anchor>& anchor() const { return anchor_; }

  private:
    const ChainDb& db_;
    const ChainConfig& config_;
    std::string path_;
    std::optional<Head> head_;
    std::optional<Anchor> anchor_;
    uint64_t next_{0};
    Hash32 parent_{};
    U256 td_{0};
    uint64_t staged_{0};
    uint64_t skipped_{0};
};

bool has_suffix(const std::string& s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// An era1 file that starts a chain above the genesis is taken on trust in its accumulator root,
// which commits to every header hash and total difficulty in the epoch (docs/history.md, "Later
// epochs without the earlier ones"); its first header's parent and difficulty anchor the chain.
Outcome<void> anchor_era1(const era1::Archive& archive, ByteView first_header, const std::optional<U256>& first_td,
                          const std::optional<Hash32>& trusted, Checker& checker, const std::string& path) {
    const uint64_t start = archive.start_number();
    if (!trusted) {
        return make_error(fmt::format(
            "{}: block {}: the database is empty and this epoch does not start at the genesis; to start the datadir "
            "here, name the epoch's accumulator root, from a source you trust, with --trusted-root (the file records "
            "{})",
            path, start, to_hex0x(archive.accumulator_root())));
    }
    auto header = decode_block_header(first_header);
    if (!header) {
        return make_error(
            fmt::format("{}: block {}: not a valid block header: {}", path, start, header.error().message()));
    }
    if (!first_td || *first_td < header->difficulty) {
        return make_error(fmt::format("{}: block {}: total difficulty below the block's own difficulty", path, start));
    }
    checker.start_at(Anchor{start, header->parent_hash, *first_td - header->difficulty});
    return {};
}

Outcome<void> stage_era1(ByteView file, Checker& checker, const std::string& path, ItemBuffer& storage,
                         std::vector<NewHeader>& staged, const std::optional<Hash32>& trusted) {
    auto archive = era1::Archive::parse(file);
    if (!archive) return make_error(fmt::format("{}: not a valid era1 archive: {}", path, archive.error().message()));
    const size_t count = archive->count();
    Bytes scratch;
    storage.clear();
    for (size_t i = 0; i < count; ++i) {
        auto rlp = archive->header(i, scratch);
        if (!rlp) {
            return make_error(fmt::format("{}: block {}: header entry does not decompress: {}", path,
                                          archive->start_number() + i, rlp.error().message()));
        }
        storage.push(*rlp);
    }
    // Views into storage are taken only once it stops growing.
    std::vector<Hash32> hashes;
    std::vector<U256> tds;
    hashes.reserve(count);
    tds.reserve(count);
    for (size_t i = 0; i < count; ++i) {
        const ByteView rlp = storage.item(i);
        hashes.push_back(header_hash(rlp));
        tds.push_back(archive->total_difficulty(i));
    }
    auto root = era1::accumulator_root(hashes, tds);
    if (!root) return make_error(fmt::format("{}: cannot compute the accumulator: {}", path, root.error().message()));
    if (*root != archive->accumulator_root()) {
        return make_error(fmt::format("{}: accumulator mismatch: the archive records {}, its headers give {}", path,
                                      to_hex0x(archive->accumulator_root()), to_hex0x(*root)));
    }
    if (trusted && *trusted != *root) {
        return make_error(fmt::format("{}: accumulator root {} is not the trusted root {} (--trusted-root)", path,
                                      to_hex0x(*root), to_hex0x(*trusted)));
    }
    if (checker.starts_chain() && archive->start_number() > 0 && count > 0) {
        if (auto r = anchor_era1(*archive, storage.item(0), tds[0], trusted, checker, path); !r) return r;
    }
    for (size_t i = 0; i < count; ++i) {
        const uint64_t number = archive->start_number() + i;
        if (auto r = checker.add(storage.item(i), tds[i], fmt::format("block {}", number), staged); !r) return r;
    }
    return {};
}

Outcome<void> stage_rlp(ByteView file, Checker& checker, const std::string& path, std::vector<NewHeader>& staged) {
    ByteView rest = file;
    while (!rest.empty()) {
        const size_t offset = file.size() - rest.size();
        auto item = rlp::next_item(rest);
        if (!item) {
            return make_error(fmt::format("{}: offset {}: not an RLP item: {} (truncated or not a header/block file?)",
                                          path, offset, item.error().message()));
        }
        // A header is a list whose first element is the 32-byte parent hash; a block is a list whose
        // first element is the header list.
        ByteView inner = *item;
        auto payload = rlp::decode_list(inner);
        if (!payload) {
            return make_error(fmt::format("{}: offset {}: expected a header or block list: {}", path, offset,
                                          payload.error().message()));
        }
        ByteView header = *item;
        ByteView first_view = *payload;
        auto first = rlp::decode_header(first_view);
        if (first && first->list) {
            ByteView p = *payload;
            auto h = rlp::next_item(p);
            if (!h) return make_error(fmt::format("{}: offset {}: block without a header", path, offset));
            header = *h;
        }
        if (auto r = checker.add(header, std::nullopt, fmt::format("offset {}", offset), staged); !r) return r;
    }
    return {};
}

}  // namespace

Outcome<ImportSummary> import_file(ChainDb& db, const ChainConfig& config, const std::string& path,
                                   const ProgressFn& progress, const ImportOptions& options) {
    auto file = MappedFile::open(path);
    if (!file) return file.error();
    if (file->bytes().empty()) return make_error(fmt::format("{}: file is empty", path));
    if (db.config() != nullptr) {
        if (auto r = db.set_config(config); !r) return r.error();  // same network, or a clear error
    }

    Checker checker(db, config, path);
    std::vector<NewHeader> staged;
    ItemBuffer storage;
    if (has_suffix(path, ".era1")) {
        if (auto r = stage_era1(file->bytes(), checker, path, storage, staged, options.trusted_root); !r) {
            return r.error();
        }
    } else {
        if (options.trusted_root) {
            return make_error(
                fmt::format("{}: --trusted-root names an epoch's accumulator root: .era1 files only", path));
        }
        if (auto r = stage_rlp(file->bytes(), checker, path, staged); !r) return r.error();
    }

    ImportSummary summary;
    summary.skipped = checker.skipped();
    if (staged.empty()) return summary;
    if (db.config() == nullptr) {
        if (auto r = db.set_config(config); !r) return r.error();
    }
    for (size_t i = 0; i < staged.size(); i += kWriteBatch) {
        const size_t end = std::min(staged.size(), i + kWriteBatch);
        const std::span<const NewHeader> batch(staged.data() + i, end - i);
        const std::optional<Anchor> anchor = i == 0 ? checker.anchor() : std::nullopt;
        if (auto r = db.append(batch, anchor); !r) return make_error(fmt::format("{}: {}", path, r.error().message));
        if (progress) progress("import", end, staged.size());
    }
    summary.imported = staged.size();
    summary.first = staged.front().number;
    summary.last = staged.back().number;
    return summary;
}

Outcome<HistorySummary> import_history(const ChainDb& db, EraStore& store, const std::string& path,
                                       const ProgressFn& progress) {
    if (db.config() == nullptr) return make_error(fmt::format("{}: the datadir holds no chain yet", path));
    auto file = MappedFile::open(path);
    if (!file) return file.error();
    auto archive = era1::Archive::parse(file->bytes());
    if (!archive) return make_error(fmt::format("{}: not a valid era1 archive: {}", path, archive.error().message()));
    HistorySummary summary;
    summary.epoch = archive->start_number() / kEpochBlocks;
    summary.blocks = archive->count();
    if (archive->start_number() % kEpochBlocks != 0) {
        return make_error(fmt::format("{}: starts at block {}, not at the first block of an epoch (a multiple of {})",
                                      path, archive->start_number(), kEpochBlocks));
    }
    if (store.epochs().contains(summary.epoch)) {
        summary.already_held = true;
        return summary;
    }
    Bytes header_rlp, body, receipts;
    std::vector<Hash32> hashes;
    hashes.reserve(archive->count());
    for (size_t i = 0; i < archive->count(); ++i) {
        const uint64_t number = archive->start_number() + i;
        auto fail = [&](std::string_view what) {
            return make_error(fmt::format("{}: block {}: {}", path, number, what));
        };
        auto rlp = archive->header(i, header_rlp);
        if (!rlp) return fail(fmt::format("the header does not decompress: {}", rlp.error().message()));
        hashes.push_back(header_hash(*rlp));
        auto stored = db.canonical_hash(number);
        if (!stored) return fail(stored.error().message);
        if (!*stored) {
            return fail(
                "its header is not in the datadir; import the headers first (`headerd import` without "
                "--history, or with it: the same command imports them when they follow the head)");
        }
        if (**stored != hashes.back()) {
            return fail(fmt::format("the header's hash {} differs from the datadir's canonical {}",
                                    to_hex0x(hashes.back()), to_hex0x(**stored)));
        }
        auto header = decode_block_header(*rlp);
        if (!header) return fail(fmt::format("the header does not decode: {}", header.error().message()));
        auto b = archive->body(i, body);
        if (!b) return fail(fmt::format("the body does not decompress: {}", b.error().message()));
        if (auto v = verify_body(*header, *b); !v) return fail(v.error().message());
        auto r = archive->receipts(i, receipts);
        if (!r) return fail(fmt::format("the receipt list does not decompress: {}", r.error().message()));
        if (auto v = verify_receipts(*header, *r); !v) return fail(v.error().message());
        summary.transactions += parse_body(*b)->transactions.size();
        summary.receipts += parse_receipts(*r)->size();
        if (progress && (i + 1) % 1024 == 0) progress("history", i + 1, archive->count());
    }
    if (auto v = era1::verify_accumulator(*archive, hashes); !v) {
        return make_error(fmt::format("{}: {}", path, v.error().message()));
    }
    if (auto r = store.add(path, db.config()->name, summary.epoch, archive->accumulator_root(), archive->count()); !r) {
        return r.error();
    }
    if (progress) progress("history", archive->count(), archive->count());
    return summary;
}

Outcome<void> generate_chain(ChainDb& db, uint64_t count, uint64_t seed, const ProgressFn& progress) {
    if (auto head = db.head()) {
        return make_error(fmt::format("datadir {} already holds a chain (head {}); generate needs an empty datadir",
                                      db.datadir(), head->number));
    }
    synthetic::Generator gen(count, seed);
    if (auto r = db.set_config(gen.config()); !r) return r.error();
    ItemBuffer rlps;
    std::vector<synthetic::Generator::Produced> produced;
    std::vector<NewHeader> batch;
    uint64_t done = 0;
    while (!gen.done()) {
        rlps.clear();
        produced.clear();
        while (!gen.done() && produced.size() < kWriteBatch) {
            produced.push_back(gen.next(rlps.bytes));  // appends the header RLP
            rlps.ends.push_back(rlps.bytes.size());
        }
        batch.clear();
        for (size_t i = 0; i < produced.size(); ++i) {
            const auto& p = produced[i];
            batch.push_back(NewHeader{rlps.item(i), p.hash, p.number, p.total_difficulty, p.timestamp});
        }
        if (auto r = db.append(batch); !r) return r.error();
        done += batch.size();
        if (progress) progress("generate", done, count);
    }
    return {};
}

Outcome<uint64_t> export_headers(const ChainDb& db, uint64_t from, uint64_t count, const std::string& path,
                                 const ProgressFn& progress) {
    const auto head = db.head();
    if (!head) return make_error(fmt::format("datadir {} holds no headers", db.datadir()));
    if (count == 0) return make_error("export: --count must be at least 1");
    if (from > head->number || count - 1 > head->number - from) {
        return make_error(fmt::format("export: blocks {}..{} requested but the head is block {}", from,
                                      count - 1 > UINT64_MAX - from ? UINT64_MAX : from + count - 1, head->number));
    }
    const std::string tmp = path + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return make_error(fmt::format("cannot create {}: {}", tmp, std::strerror(errno)));
    auto fail = [&](std::string msg) -> Outcome<uint64_t> {
        ::close(fd);
        ::unlink(tmp.c_str());
        return make_error(std::move(msg));
    };
    ItemBuffer buf;
    for (uint64_t done = 0; done < count;) {
        const uint64_t n = std::min(kChunk, count - done);
        auto r = db.header_range(from + done, n, Order::kAscending, buf);
        if (!r) return fail(r.error().message);
        if (buf.size() != n) {
            return fail(fmt::format("export: the database returned {} headers from block {}, expected {}", buf.size(),
                                    from + done, n));
        }
        const uint8_t* p = buf.bytes.data();
        size_t left = buf.bytes.size();
        while (left > 0) {
            const ssize_t w = ::write(fd, p, left);
            if (w < 0) {
                if (errno == EINTR) continue;
                return fail(fmt::format("write {}: {}", tmp, std::strerror(errno)));
            }
            p += w;
            left -= static_cast<size_t>(w);
        }
        done += n;
        if (progress) progress("export", done, count);
    }
    if (::fsync(fd) != 0) return fail(fmt::format("fsync {}: {}", tmp, std::strerror(errno)));
    ::close(fd);
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        ::unlink(tmp.c_str());
        return make_error(fmt::format("rename {} to {}: {}", tmp, path, ec.message()));
    }
    return count;
}

Outcome<VerifySummary> verify_chain(const ChainDb& db, const ProgressFn& progress) {
    VerifySummary summary;
    const auto head = db.head();
    const ChainConfig* config = db.config();
    if (!head || config == nullptr) return make_error(fmt::format("datadir {} holds no headers", db.datadir()));
    summary.ancient_items = db.ancient_items();
    // A chain anchored above the genesis is checked from its anchor up.
    const std::optional<Anchor> anchor = db.anchor();
    const uint64_t first = anchor ? anchor->number : 0;
    const uint64_t total = head->number + 1;
    ItemBuffer buf;
    Hash32 parent = anchor ? anchor->parent_hash : Hash32{};
    U256 td = anchor ? anchor->parent_td : U256{0};
    for (uint64_t from = first; from < total;) {
        const uint64_t n = std::min(kChunk, total - from);
        auto r = db.header_range(from, n, Order::kAscending, buf);
        if (!r) {
            // A damaged header (a failed checksum, bytes that do not decode) names its block.
            Error e = r.error();
            if (e.block) e.message = fmt::format("verify: block {}: {}", *e.block, e.message);
            return e;
        }
        if (buf.size() != n) {
            return make_error(fmt::format("verify: the database returned {} headers from block {}, expected {}",
                                          buf.size(), from, n));
        }
        for (size_t i = 0; i < buf.size(); ++i) {
            const uint64_t number = from + i;
            const char* store = number < summary.ancient_items ? "ancient" : "LevelDB";
            const ByteView rlp = buf.item(i);
            auto header = decode_block_header(rlp);
            if (!header) {
                return make_error(fmt::format("verify: block {} ({}): header does not decode: {}", number, store,
                                              header.error().message()));
            }
            if (header->number != number) {
                return make_error(
                    fmt::format("verify: block {} ({}): header says number {}", number, store, header->number));
            }
            const Hash32 hash = header_hash(rlp);
            if (number == 0 && hash != config->genesis_hash) {
                return make_error(fmt::format("verify: block 0: hash {} is not the {} genesis {}", to_hex0x(hash),
                                              config->name, to_hex0x(config->genesis_hash)));
            }
            if (number > 0 && header->parent_hash != parent) {
                return make_error(fmt::format("verify: block {} ({}): parent hash {} but block {} hashes to {}", number,
                                              store, to_hex0x(header->parent_hash), number - 1, to_hex0x(parent)));
            }
            auto canonical = db.canonical_hash(number);
            if (!canonical) return canonical.error();
            if (!*canonical || **canonical != hash) {
                return make_error(
                    fmt::format("verify: block {} ({}): canonical hash entry {} but the header hashes to {}", number,
                                store, *canonical ? to_hex0x(**canonical) : "missing", to_hex0x(hash)));
            }
            auto indexed = db.number_by_hash(hash);
            if (!indexed) return indexed.error();
            if (!*indexed || **indexed != number) {
                return make_error(fmt::format("verify: block {}: hash->number entry for {} is {}", number,
                                              to_hex0x(hash), *indexed ? std::to_string(**indexed) : "missing"));
            }
            td = number == 0 ? header->difficulty : td + header->difficulty;
            parent = hash;
        }
        from += n;
        summary.headers += n;
        if (progress) progress("verify", from - first, total - first);
    }
    if (parent != head->hash) {
        return make_error(fmt::format("verify: the last header hashes to {} but the head entry is {}", to_hex0x(parent),
                                      to_hex0x(head->hash)));
    }
    if (td != head->total_difficulty) {
        return make_error(fmt::format("verify: total difficulty of the chain is {} but the stored head TD is {}",
                                      td.str(), head->total_difficulty.str()));
    }
    return summary;
}

}  // namespace headerd::db
