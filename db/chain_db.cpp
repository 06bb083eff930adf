#include "db/chain_db.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/filter_policy.h>
#include <leveldb/write_batch.h>

#include "ancient/file_system.hpp"
#include "ancient/freezer.hpp"
#include "core/block_header.hpp"
#include "core/hex.hpp"
#include "core/rlp.hpp"
#include "db/chain_db_impl.hpp"
#include "db/schema.hpp"

namespace headerd::db {
namespace {

namespace fs = std::filesystem;

// Freezer read buffers: one per thread, so concurrent readers share no state and a warm reader
// allocates nothing.
ancient::ReadScratch& freezer_scratch() {
    thread_local ancient::ReadScratch s;
    return s;
}

// Hashes of the headers ChainDb::Impl::scan_kv has read at one height: one list per thread, reused.
std::vector<Hash32>& candidates_scratch() {
    thread_local std::vector<Hash32> c;
    return c;
}

// Drops the items from `first` on that take their bytes (counted from item `first`) past max_bytes;
// item `first` itself always stays.
void trim_to_bytes(ItemBuffer& out, size_t first, size_t max_bytes) {
    if (out.ends.size() <= first) return;
    const size_t base = first == 0 ? 0 : out.ends[first - 1];
    if (out.bytes.size() - base <= max_bytes) return;
    size_t keep = first + 1;
    while (keep < out.ends.size() && out.ends[keep] - base <= max_bytes) ++keep;
    out.ends.resize(keep);
    out.bytes.resize(out.ends.back());
}

}  // namespace

void reverse_items(ItemBuffer& out, size_t first) {
    const size_t n = out.ends.size();
    if (n - first < 2) return;
    const size_t base = first == 0 ? 0 : out.ends[first - 1];
    // Copy the items, last first, into per-thread scratch and back: two memcpy passes over the
    // bytes. (Reversing the bytes twice in place, as before, went byte by byte and cost as much as
    // the reply's keccak MAC on a 192-header reverse reply.)
    thread_local Bytes bytes;
    thread_local std::vector<size_t> ends;
    bytes.resize(out.bytes.size() - base);
    ends.resize(n - first);
    size_t written = 0;
    for (size_t i = n; i-- > first;) {
        const size_t begin = i == first ? base : out.ends[i - 1];
        const size_t size = out.ends[i] - begin;
        std::memcpy(bytes.data() + written, out.bytes.data() + begin, size);
        written += size;
        ends[n - 1 - i] = base + written;
    }
    std::memcpy(out.bytes.data() + base, bytes.data(), written);
    std::copy(ends.begin(), ends.end(), out.ends.begin() + static_cast<ptrdiff_t>(first));
}

namespace {

// The pid of another process holding a POSIX write lock on `path`, if any (F_GETLK; a lock of this
// process is not reported, and a missing file has no holder).
std::optional<pid_t> lock_holder(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    struct flock query {};
    query.l_type = F_WRLCK;
    query.l_whence = SEEK_SET;
    const int rc = ::fcntl(fd, F_GETLK, &query);
    ::close(fd);
    if (rc != 0 || query.l_type == F_UNLCK) return std::nullopt;
    return query.l_pid;
}

}  // namespace

ChainDb::ChainDb(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ChainDb::~ChainDb() = default;

Outcome<std::unique_ptr<ChainDb>> ChainDb::open(const std::string& datadir, const ChainDbOptions& options) {
    auto impl = std::make_unique<Impl>();
    impl->datadir = datadir;
    impl->chaindata = (fs::path(datadir) / "chaindata").string();
    const std::string ancient_dir = (fs::path(impl->chaindata) / "ancient" / "chain").string();

    std::error_code ec;
    if (!fs::is_directory(datadir, ec)) {
        if (!options.create_if_missing || options.read_only) {
            return make_error(fmt::format("datadir {} does not exist", datadir));
        }
        fs::create_directories(datadir, ec);
        if (ec) return make_error(fmt::format("cannot create datadir {}: {}", datadir, ec.message()));
    }
    // A LevelDB exists once its CURRENT file does: a process killed while creating one can leave
    // chaindata/ without it, which holds no chain either.
    if (!options.create_if_missing) {
        const fs::path current = fs::path(impl->chaindata) / "CURRENT";
        const bool exists = fs::exists(current, ec);
        if (ec) return make_error(fmt::format("cannot access {}: {}", current.string(), ec.message()));
        if (!exists) {
            return make_error(fmt::format(
                "datadir {} holds no chain database (no chaindata/CURRENT); import or generate first", datadir));
        }
    }
    if (!options.read_only) {
        fs::create_directories(ancient_dir, ec);
        if (ec) return make_error(fmt::format("cannot create {}: {}", ancient_dir, ec.message()));
    }

    // LevelDB holds a POSIX write lock on chaindata/LOCK while a process has the database open, and
    // its own error for a held lock is just text. Asking the kernel who holds it first gives a
    // typed error that names the process.
    if (const auto holder = lock_holder((fs::path(impl->chaindata) / "LOCK").string())) {
        return make_error(fmt::format("datadir {} is in use by process {} (it holds chaindata/LOCK); stop it or use "
                                      "another datadir",
                                      datadir, *holder),
                          ErrorKind::kInUse);
    }

    if (options.fs == nullptr) {
        impl->owned_fs = std::make_unique<ancient::PosixFileSystem>();
        impl->fs = impl->owned_fs.get();
    } else {
        impl->fs = options.fs;
    }
    auto open_freezer = [&]() -> Outcome<void> {
        ancient::Freezer::Options fopts;
        fopts.max_file_size = options.ancient_max_file_size;
        fopts.read_only = options.read_only;
        auto freezer = ancient::Freezer::open(*impl->fs, ancient_dir, fopts);
        if (!freezer) return freezer.error();
        impl->freezer = std::move(*freezer);
        impl->ancient_items = impl->freezer->items();
        return {};
    };
    // A new database gets its freezer tables before LevelDB writes CURRENT, so that a process
    // killed while creating them leaves a datadir without a database rather than a LevelDB whose
    // freezer a read-only open cannot read.
    const bool creating = !options.read_only && !fs::exists(fs::path(impl->chaindata) / "CURRENT", ec);
    if (creating) {
        if (auto r = open_freezer(); !r) return r.error();
    }

    leveldb::Options lopts;
    lopts.create_if_missing = options.create_if_missing && !options.read_only;
    impl->cache.reset(leveldb::NewLRUCache(options.leveldb_cache_bytes));
    impl->cache_capacity = options.leveldb_cache_bytes;
    impl->filter.reset(leveldb::NewBloomFilterPolicy(10));
    lopts.block_cache = impl->cache.get();
    lopts.filter_policy = impl->filter.get();
    // Imports and generate write in batches of 10,000 headers (about 6 MB): a larger memtable than
    // LevelDB's 4 MB default turns each batch into fewer, larger level-0 files.
    lopts.write_buffer_size = 32u << 20;
    lopts.block_size = 16u << 10;
    // Without it LevelDB recovers a damaged write-ahead log by dropping the damaged records, then
    // deletes the log: an import is one record per batch, so a flipped byte would silently lose
    // thousands of headers for good. With it, opening fails and names the corruption, and the files
    // stay as they are for the operator to look at.
    lopts.paranoid_checks = true;
    leveldb::DB* raw = nullptr;
    leveldb::Status s = leveldb::DB::Open(lopts, impl->chaindata, &raw);
    if (!s.ok()) return make_error(fmt::format("cannot open LevelDB at {}: {}", impl->chaindata, s.ToString()));
    impl->ldb.reset(raw);

    if (!creating) {
        if (auto r = open_freezer(); !r) return r.error();
    }

    auto version = impl->get(slice(schema::kVersionKey));
    if (!version) return version.error();
    if (*version) {
        ByteView v = view(**version);
        auto n = rlp::decode_uint64(v);
        if (!n || *n != schema::kSchemaVersion) {
            return make_error(fmt::format("{}: unsupported database schema version (this headerd reads version {})",
                                          impl->chaindata, schema::kSchemaVersion));
        }
    }

    auto cfg = impl->get(slice(schema::kConfigKey));
    if (!cfg) return cfg.error();
    if (*cfg) {
        auto decoded = decode_chain_config(view(**cfg));
        if (!decoded) {
            return make_error(
                fmt::format("{}: stored chain config is unreadable: {}", impl->chaindata, decoded.error().message()));
        }
        impl->config = std::move(*decoded);
    }
    if (auto r = impl->load_head(); !r) return r.error();
    if (auto r = impl->load_anchor(); !r) return r.error();
    if (auto r = impl->load_skeleton(); !r) return r.error();
    if (auto r = impl->check_stores_join(); !r) return r.error();
    return std::unique_ptr<ChainDb>(new ChainDb(std::move(impl)));
}

Outcome<void> ChainDb::Impl::load_head() {
    auto last = get(slice(schema::kLastHeaderKey));
    if (!last) return last.error();
    if (!*last) return {};
    if ((*last)->size() != 32) return make_error(fmt::format("{}: LastHeader is not a 32-byte hash", chaindata));
    Head h;
    std::copy((*last)->begin(), (*last)->end(), h.hash.begin());

    auto num = get(slice(schema::number_key(h.hash)));
    if (!num) return num.error();
    if (!*num || (*num)->size() != 8) {
        return make_error(fmt::format("{}: head {} has no block number entry", chaindata, to_hex0x(h.hash)));
    }
    h.number = load_be64(reinterpret_cast<const uint8_t*>((*num)->data()));

    // The head header may already be in the freezer (freeze --keep 0).
    Bytes rlp;
    if (h.number < ancient_items) {
        ItemBuffer buf;
        auto r = freezer->read_headers(h.number, 1, std::numeric_limits<uint64_t>::max(), buf);
        if (!r) return r.error();
        rlp.assign(buf.item(0).begin(), buf.item(0).end());
    } else {
        auto hdr = get(slice(schema::header_key(h.number, h.hash)));
        if (!hdr) return hdr.error();
        if (!*hdr) {
            return make_error(fmt::format("{}: head header {} {} is missing", chaindata, h.number, to_hex0x(h.hash)));
        }
        rlp.assign((*hdr)->begin(), (*hdr)->end());
    }
    auto decoded = decode_block_header(rlp);
    if (!decoded) {
        return make_error(
            fmt::format("{}: head header {} does not decode: {}", chaindata, h.number, decoded.error().message()));
    }
    h.timestamp = decoded->timestamp;

    auto td = get(slice(schema::kHeadTdKey));
    if (!td) return td.error();
    if (*td) {
        ByteView v = view(**td);
        auto n = rlp::decode_u256(v);
        if (!n) return make_error(fmt::format("{}: head total difficulty is unreadable", chaindata));
        h.total_difficulty = *n;
    }
    head = h;
    return {};
}

namespace {

Bytes encode_anchor(const Anchor& a) {
    Bytes payload;
    rlp::encode(payload, a.number);
    rlp::encode(payload, a.parent_hash);
    rlp::encode(payload, a.parent_td);
    Bytes out;
    rlp::encode_header(out, {true, payload.size()});
    out.insert(out.end(), payload.begin(), payload.end());
    return out;
}

Result<Anchor> decode_anchor(ByteView in) {
    auto list = rlp::decode_list(in);
    if (!list) return list.error();
    if (!in.empty()) return rlp::DecodeError::kTrailingBytes;
    ByteView p = *list;
    auto number = rlp::decode_uint64(p);
    if (!number) return number.error();
    auto parent = rlp::decode_hash(p);
    if (!parent) return parent.error();
    auto td = rlp::decode_u256(p);
    if (!td) return td.error();
    if (!p.empty()) return rlp::DecodeError::kTrailingBytes;
    return Anchor{*number, *parent, *td};
}

}  // namespace

Outcome<void> ChainDb::Impl::load_anchor() {
    auto v = get(slice(schema::kAnchorKey));
    if (!v) return v.error();
    if (!*v) return {};
    auto a = decode_anchor(view(**v));
    if (!a || a->number == 0) {
        return make_error(fmt::format("{}: the stored anchor (the chain's first block) is unreadable", chaindata));
    }
    anchor = *a;
    return {};
}

Outcome<void> ChainDb::Impl::check_stores_join() {
    if (anchor) {
        // An anchored chain lives in LevelDB only: [anchor, head].
        if (ancient_items > 0) {
            return make_error(fmt::format("{}: the chain starts at block {} but the ancient store holds blocks [0, {})",
                                          chaindata, anchor->number, ancient_items));
        }
        if (!head || head->number < anchor->number) {
            return make_error(fmt::format("{}: the chain starts at block {} but has no head header at or above it",
                                          chaindata, anchor->number));
        }
        kv_low = anchor->number;
        return {};
    }
    if (!head) {
        if (ancient_items > 0) {
            return make_error(fmt::format("{}: ancient store holds blocks [0, {}) but LevelDB has no head header",
                                          chaindata, ancient_items));
        }
        return {};
    }
    if (ancient_items > head->number + 1) {
        return make_error(
            fmt::format("{}: ancient store holds blocks [0, {}) beyond the LevelDB head {}; the stores disagree",
                        chaindata, ancient_items, head->number));
    }
    // The lowest canonical header in LevelDB, by a scan from the first "h" key. Only needed on the
    // rare paths below: right after a freeze that scan steps over a tombstone for every deleted key
    // until LevelDB compacts them away, which takes seconds on a large freezer.
    auto lowest_in_kv = [&]() -> Outcome<uint64_t> {
        std::unique_ptr<leveldb::Iterator> it(ldb->NewIterator(leveldb::ReadOptions()));
        uint64_t lowest = head->number + 1;
        const auto start = schema::canonical_key(0);
        for (it->Seek(leveldb::Slice(reinterpret_cast<const char*>(start.data()), 1)); it->Valid(); it->Next()) {
            const leveldb::Slice k = it->key();
            if (k.empty() || static_cast<uint8_t>(k[0]) != schema::kHeaderPrefix) break;
            if (k.size() == 10 && static_cast<uint8_t>(k[9]) == schema::kCanonicalSuffix) {
                lowest = load_be64(reinterpret_cast<const uint8_t*>(k.data()) + 1);
                break;
            }
        }
        if (!it->status().ok()) {
            return make_error(fmt::format("LevelDB scan in {}: {}", chaindata, it->status().ToString()));
        }
        return lowest;
    };
    // The stores join when LevelDB holds the block right after the freezer's last one.
    if (ancient_items <= head->number) {
        auto at = kv_canonical_hash(ancient_items);
        if (!at) return at.error();
        if (!*at) {
            auto lowest = lowest_in_kv();
            if (!lowest) return lowest.error();
            return make_error(
                fmt::format("{}: gap between the ancient store, blocks [0, {}), and LevelDB, blocks [{}, {}]: blocks "
                            "{}..{} are missing",
                            chaindata, ancient_items, *lowest, head->number, ancient_items, *lowest - 1));
        }
    }
    // Freezing deletes LevelDB copies from the bottom up, so copies left by an interrupted freeze
    // end right below the freezer's head: one point read tells whether there are any.
    kv_low = ancient_items;
    if (ancient_items > 0) {
        auto below = kv_canonical_hash(ancient_items - 1);
        if (!below) return below.error();
        if (*below) {
            auto lowest = lowest_in_kv();
            if (!lowest) return lowest.error();
            kv_low = *lowest;
        }
    }
    return {};
}

const std::string& ChainDb::datadir() const noexcept { return impl_->datadir; }

const ChainConfig* ChainDb::config() const noexcept { return impl_->config ? &*impl_->config : nullptr; }

Outcome<void> ChainDb::set_config(const ChainConfig& config) {
    if (impl_->config) {
        const ChainConfig& have = *impl_->config;
        if (have.name != config.name || have.network_id != config.network_id ||
            have.genesis_hash != config.genesis_hash) {
            return make_error(fmt::format("datadir {} holds network {} (id {}, genesis {}), not {} (id {}, genesis {})",
                                          impl_->datadir, have.name, have.network_id, to_hex0x(have.genesis_hash),
                                          config.name, config.network_id, to_hex0x(config.genesis_hash)));
        }
        return {};
    }
    Bytes enc;
    encode(enc, config);
    Bytes ver;
    rlp::encode(ver, schema::kSchemaVersion);
    leveldb::WriteBatch batch;
    batch.Put(slice(schema::kConfigKey), slice(enc));
    batch.Put(slice(schema::kVersionKey), slice(ver));
    leveldb::WriteOptions wo;
    wo.sync = true;
    leveldb::Status s = impl_->write(wo, &batch);
    if (!s.ok()) return make_error(fmt::format("LevelDB write in {}: {}", impl_->chaindata, s.ToString()));
    impl_->config = config;
    return {};
}

std::optional<Head> ChainDb::head() const {
    std::shared_lock lock(impl_->mu);
    return impl_->head;
}

uint64_t ChainDb::ancient_items() const noexcept {
    std::shared_lock lock(impl_->mu);
    return impl_->ancient_items;
}

uint64_t ChainDb::generation() const noexcept { return impl_->generation.load(std::memory_order_acquire); }

void ChainDb::set_read_observer(ReadObserver* observer) noexcept { impl_->observer = observer; }

Outcome<void> ChainDb::append(std::span<const NewHeader> headers, const std::optional<Anchor>& anchor) {
    if (headers.empty()) return {};
    std::optional<Head> head = this->head();
    if (anchor && (head || anchor->number == 0)) {
        return make_error(head ? fmt::format("an anchor starts a chain, but {} holds one already (head {})",
                                             impl_->chaindata, head->number)
                               : std::string("an anchor at block 0: a chain from the genesis has none"));
    }
    uint64_t expect = head ? head->number + 1 : (anchor ? anchor->number : 0);
    Hash32 parent = head ? head->hash : (anchor ? anchor->parent_hash : Hash32{});
    leveldb::WriteBatch batch;
    if (anchor) batch.Put(slice(schema::kAnchorKey), slice(encode_anchor(*anchor)));
    uint8_t numbuf[8];
    for (const NewHeader& h : headers) {
        if (h.number != expect) {
            return make_error(fmt::format("block {}: expected block {} next", h.number, expect));
        }
        auto peek = peek_header(h.rlp);
        if (!peek) return make_error(fmt::format("block {}: {}", h.number, peek.error().message()));
        if (h.number > 0 && peek->parent_hash != parent) {
            return make_error(fmt::format("block {}: parent hash {} does not match block {} hash {}", h.number,
                                          to_hex0x(peek->parent_hash), h.number - 1, to_hex0x(parent)));
        }
        store_be64(numbuf, h.number);
        batch.Put(slice(schema::header_key(h.number, h.hash)), slice(h.rlp));
        batch.Put(slice(schema::canonical_key(h.number)), slice(h.hash));
        batch.Put(slice(schema::number_key(h.hash)), leveldb::Slice(reinterpret_cast<const char*>(numbuf), 8));
        parent = h.hash;
        ++expect;
    }
    const NewHeader& last = headers.back();
    Bytes td;
    rlp::encode(td, last.total_difficulty);
    batch.Put(slice(schema::kLastHeaderKey), slice(last.hash));
    batch.Put(slice(schema::kHeadTdKey), slice(td));
    leveldb::WriteOptions wo;
    wo.sync = true;
    leveldb::Status s = impl_->write(wo, &batch);
    if (!s.ok()) return make_error(fmt::format("LevelDB write in {}: {}", impl_->chaindata, s.ToString()));

    std::unique_lock lock(impl_->mu);
    if (!impl_->head) impl_->kv_low = headers.front().number;
    if (anchor) impl_->anchor = anchor;
    impl_->head = Head{last.number, last.hash, last.total_difficulty, last.timestamp};
    return {};
}

std::optional<Anchor> ChainDb::anchor() const {
    std::shared_lock lock(impl_->mu);
    return impl_->anchor;
}

uint64_t ChainDb::first_block() const {
    std::shared_lock lock(impl_->mu);
    return impl_->first_block();
}

Outcome<void> ChainDb::Impl::finish_height(KvScan& scan, ItemBuffer& out) const {
    const uint64_t n = scan.n;
    const std::vector<Hash32>& candidates = scan.candidates;
    if (!scan.canonical) {
        return corrupt_error(fmt::format("LevelDB in {} has no canonical hash for block {}", chaindata, n), n);
    }
    const Hash32& canonical = *scan.canonical;
    size_t keep = candidates.size();
    for (size_t i = 0; i < candidates.size(); ++i) {
        if (candidates[i] == canonical) keep = i;
    }
    if (keep == candidates.size()) {
        return corrupt_error(fmt::format("LevelDB in {}: header {} {} is missing", chaindata, n, to_hex0x(canonical)),
                             n);
    }
    if (candidates.size() > 1) {
        // Side-chain headers at this height: keep only the canonical one (rare; moves bytes once).
        const ByteView item = out.item(scan.group_begin + keep);
        const size_t begin = scan.group_begin == 0 ? 0 : out.ends[scan.group_begin - 1];
        std::memmove(out.bytes.data() + begin, item.data(), item.size());
        out.bytes.resize(begin + item.size());
        out.ends.resize(scan.group_begin + 1);
        out.ends.back() = out.bytes.size();
    }
    const ByteView rlp = out.item(scan.group_begin);
    auto peek = peek_header(rlp);
    if (!peek || peek->number != n) {
        return corrupt_error(
            fmt::format("LevelDB in {}: header {} is corrupt{}", chaindata, n,
                        peek ? fmt::format(" (it says block {})", peek->number) : ": " + peek.error().message()),
            n);
    }
    if (scan.have_parent && peek->parent_hash != scan.parent) {
        return corrupt_error(fmt::format("LevelDB in {}: header {} parent hash {} does not link to block {} hash {}",
                                         chaindata, n, to_hex0x(peek->parent_hash), n - 1, to_hex0x(scan.parent)),
                             n);
    }
    scan.parent = canonical;
    scan.have_parent = true;
    return {};
}

Outcome<void> ChainDb::Impl::scan_kv(uint64_t lo, uint64_t hi, ItemBuffer& out) const {
    // One iterator pass over the "h" keys of [lo, hi]. For each number LevelDB yields, in key
    // order, the canonical entry ("h"+num+"n") and the header entries ("h"+num+hash) of every
    // stored header at that height; the header whose hash is the canonical one is kept. Parent
    // links are checked against the previous header's hash (taken from its key, so nothing is
    // hashed), which also catches a canonical mapping that does not form a chain.
    std::unique_ptr<leveldb::Iterator> it(ldb->NewIterator(read_options()));
    const auto start = schema::canonical_key(lo);
    it->Seek(leveldb::Slice(reinterpret_cast<const char*>(start.data()), 9));

    KvScan scan(lo, out.size(), candidates_scratch());
    scan.candidates.clear();

    for (; it->Valid(); it->Next()) {
        const leveldb::Slice key = it->key();
        if (key.size() < 9 || static_cast<uint8_t>(key[0]) != schema::kHeaderPrefix) break;
        const auto* k = reinterpret_cast<const uint8_t*>(key.data());
        const uint64_t num = load_be64(k + 1);
        if (num > hi) break;
        if (num != scan.n) {
            if (auto r = finish_height(scan, out); !r) return r;
            if (num != scan.n + 1) {
                return corrupt_error(fmt::format("LevelDB in {}: header {} is missing", chaindata, scan.n + 1),
                                     scan.n + 1);
            }
            scan.n = num;
            scan.group_begin = out.size();
            scan.candidates.clear();
            scan.canonical.reset();
        }
        const leveldb::Slice value = it->value();
        if (key.size() == schema::CanonicalKey{}.size() && k[9] == schema::kCanonicalSuffix) {
            if (value.size() != 32) {
                return make_error(fmt::format("LevelDB in {}: canonical hash of block {} has {} bytes", chaindata,
                                              scan.n, value.size()));
            }
            Hash32 h;
            std::memcpy(h.data(), value.data(), 32);
            scan.canonical = h;
        } else if (key.size() == schema::HeaderKey{}.size()) {
            Hash32 h;
            std::memcpy(h.data(), k + 9, 32);
            scan.candidates.push_back(h);
            out.push(as_bytes(std::string_view(value.data(), value.size())));
        }
    }
    if (!it->status().ok()) {
        // The damaged table block holds the height being read or the next one; the mark may be one
        // too low, and the scrubber clears a mark on a header it finds sound.
        const bool done = scan.canonical && !scan.candidates.empty();
        return leveldb_error(it->status(), "scan", done ? scan.n + 1 : scan.n);
    }
    if (auto r = finish_height(scan, out); !r) return r;
    if (scan.n != hi) {
        return corrupt_error(fmt::format("LevelDB in {}: header {} is missing", chaindata, scan.n + 1), scan.n + 1);
    }
    return {};
}

Outcome<void> ChainDb::append_header_range(uint64_t from, uint64_t count, Order order, ItemBuffer& out,
                                           size_t max_bytes) const {
    return read_range(from, count, order, out, max_bytes, true);
}

Outcome<void> ChainDb::read_range(uint64_t from, uint64_t count, Order order, ItemBuffer& out, size_t max_bytes,
                                  bool gate) const {
    const size_t first = out.size();  // the items before it are the caller's
    const size_t base = out.bytes.size();
    std::shared_lock lock(impl_->mu);
    if (!impl_->head || count == 0 || from > impl_->head->number) return {};
    const uint64_t head = impl_->head->number;
    // A range ends at the first block not held: below an anchored chain's first block.
    const uint64_t first_held = impl_->first_block();
    if (from < first_held) return {};
    uint64_t lo = 0;
    uint64_t hi = 0;
    if (order == Order::kAscending) {
        lo = from;
        hi = from + std::min(count - 1, head - from);
    } else {
        hi = from;
        lo = from - std::min(count - 1, from - first_held);
    }
    if (gate && impl_->range_damaged(lo, hi)) {
        return corrupt_error(fmt::format("blocks {}..{} hold a damaged header (found by a read or the scrubber; "
                                         "headerd repair, or serve --follow, fetches it again)",
                                         lo, hi),
                             lo);
    }
    const uint64_t ancient = impl_->ancient_items;
    const bool has_ancient = lo < ancient;
    const bool has_kv = hi >= ancient;
    const uint64_t ancient_hi = has_kv ? ancient - 1 : hi;  // inclusive, valid when has_ancient
    const uint64_t kv_lo = has_ancient ? ancient : lo;

    ReadObserver* const observer = impl_->observer;
    // A damaged header found by a read is marked, so that later reads refuse its ranges at once.
    auto marked = [&](Outcome<void> r) -> Outcome<void> {
        if (!r && r.error().kind == ErrorKind::kCorrupt && r.error().block) [[unlikely]]
            impl_->mark(*r.error().block);
        return r;
    };
    auto read_ancient = [&](uint64_t cap) -> Outcome<void> {
        std::shared_lock flock(impl_->freezer_mu);
        const ancient::Freezer& freezer = *impl_->freezer;
        if (observer == nullptr) {
            return marked(freezer.read_headers(lo, ancient_hi - lo + 1, cap, out, freezer_scratch()));
        }
        const size_t before = out.size();
        const auto start = std::chrono::steady_clock::now();
        auto r = freezer.read_headers(lo, ancient_hi - lo + 1, cap, out, freezer_scratch());
        observer->on_read(Store::kAncient, out.size() - before, std::chrono::steady_clock::now() - start);
        return marked(std::move(r));
    };
    auto read_kv = [&]() -> Outcome<void> {
        if (observer == nullptr) return marked(impl_->scan_kv(kv_lo, hi, out));
        const size_t before = out.size();
        const auto start = std::chrono::steady_clock::now();
        auto r = impl_->scan_kv(kv_lo, hi, out);
        observer->on_read(Store::kLevelDb, out.size() - before, std::chrono::steady_clock::now() - start);
        return marked(std::move(r));
    };

    if (order == Order::kAscending) {
        if (has_ancient) {
            if (auto r = read_ancient(max_bytes); !r) return r;
            if (out.size() - first < ancient_hi - lo + 1) return {};  // byte cap reached inside the freezer
        }
        if (has_kv) {
            if (auto r = read_kv(); !r) return r;
        }
    } else {
        if (has_kv) {
            if (auto r = read_kv(); !r) return r;
            reverse_items(out, first);
        }
        if (has_ancient && out.bytes.size() - base < max_bytes) {
            const size_t first_ancient = out.size();
            if (auto r = read_ancient(std::numeric_limits<uint64_t>::max()); !r) return r;
            reverse_items(out, first_ancient);
        }
    }
    trim_to_bytes(out, first, max_bytes);
    return {};
}

Outcome<std::optional<uint64_t>> ChainDb::number_by_hash(const Hash32& hash) const {
    auto v = impl_->get(slice(schema::number_key(hash)));
    if (!v) return v.error();
    if (!*v) return std::optional<uint64_t>{};
    if ((*v)->size() != 8) {
        return make_error(
            fmt::format("LevelDB in {}: number entry of {} is not 8 bytes", impl_->chaindata, to_hex0x(hash)));
    }
    return std::optional<uint64_t>{load_be64(reinterpret_cast<const uint8_t*>((*v)->data()))};
}

Outcome<std::optional<Hash32>> ChainDb::canonical_hash(uint64_t number) const {
    std::shared_lock lock(impl_->mu);
    if (!impl_->head || number > impl_->head->number) return std::optional<Hash32>{};
    if (number < impl_->ancient_items) {
        std::shared_lock flock(impl_->freezer_mu);
        auto h = std::as_const(*impl_->freezer).read_hash(number, freezer_scratch());
        if (!h) return h.error();
        return std::optional<Hash32>{*h};
    }
    return impl_->kv_canonical_hash(number);
}

Outcome<void> ChainDb::canonical_hashes(uint64_t from, uint64_t count, std::vector<Hash32>& out) const {
    std::shared_lock lock(impl_->mu);
    if (!impl_->head || count == 0 || from > impl_->head->number || from < impl_->first_block()) return {};
    const uint64_t last = from + std::min(count - 1, impl_->head->number - from);
    uint64_t n = from;
    if (n < impl_->ancient_items) {
        const uint64_t frozen = std::min(last + 1, impl_->ancient_items) - n;
        std::shared_lock flock(impl_->freezer_mu);
        if (auto r = std::as_const(*impl_->freezer).read_hashes(n, frozen, out, freezer_scratch()); !r) return r;
        n += frozen;
    }
    if (n > last) return {};
    if (n == last) {
        auto h = impl_->kv_canonical_hash(n);
        if (!h) return h.error();
        if (*h) out.push_back(**h);
        return {};
    }
    // A run in LevelDB: one iterator over "h" + be64(n) + "n" keys (each height's header keys lie
    // between them) instead of a point read per block.
    std::unique_ptr<leveldb::Iterator> it(impl_->ldb->NewIterator(Impl::read_options()));
    const auto start = schema::canonical_key(n);
    for (it->Seek(slice(start)); it->Valid() && n <= last; it->Next()) {
        const leveldb::Slice k = it->key();
        if (k.size() < 9 || static_cast<uint8_t>(k[0]) != schema::kHeaderPrefix) break;
        if (load_be64(reinterpret_cast<const uint8_t*>(k.data()) + 1) > n) break;  // height n has no canonical hash
        if (k.size() != 10 || static_cast<uint8_t>(k[9]) != schema::kCanonicalSuffix) continue;  // a header key
        const leveldb::Slice v = it->value();
        if (v.size() != 32) {
            return make_error(fmt::format("LevelDB canonical hash of block {} has {} bytes, expected 32", n, v.size()));
        }
        Hash32& h = out.emplace_back();
        std::memcpy(h.data(), v.data(), 32);
        ++n;
    }
    if (!it->status().ok())
        return impl_->leveldb_error(it->status(), fmt::format("scan of canonical hashes from {}", n), n);
    return {};
}

Outcome<bool> ChainDb::header_by_hash(const Hash32& hash, Bytes& out) const {
    out.clear();
    auto number = number_by_hash(hash);
    if (!number) return number.error();
    if (!*number) return false;
    const uint64_t n = **number;
    std::shared_lock lock(impl_->mu);
    if (n < impl_->ancient_items) {
        std::shared_lock flock(impl_->freezer_mu);
        const ancient::Freezer& freezer = *impl_->freezer;
        auto stored = freezer.read_hash(n, freezer_scratch());
        if (!stored) return stored.error();
        if (*stored != hash) return false;  // a side-chain header that was never frozen
        ItemBuffer buf;
        auto r = freezer.read_headers(n, 1, std::numeric_limits<uint64_t>::max(), buf, freezer_scratch());
        if (!r) return r.error();
        headerd::append(out, buf.item(0));
        return true;
    }
    auto v = impl_->get(slice(schema::header_key(n, hash)));
    if (!v) return v.error();
    if (!*v) return false;
    headerd::append(out, view(**v));
    return true;
}

Outcome<uint64_t> ChainDb::freeze(const FreezeOptions& options) {
    const std::optional<Head> head = this->head();
    if (!head || anchor()) return uint64_t{0};
    const uint64_t limit = head->number + 1 > options.keep ? head->number + 1 - options.keep : 0;
    const uint64_t start = ancient_items();
    if (limit <= start) return start;
    const uint64_t total = limit - start;
    const uint64_t batch_size = std::max<uint64_t>(1, options.batch);

    std::vector<std::string> rlps;
    std::vector<ByteView> views;
    std::vector<Hash32> hashes;
    for (uint64_t from = start; from < limit;) {
        const uint64_t to = std::min(limit, from + batch_size);
        rlps.clear();
        views.clear();
        hashes.clear();
        for (uint64_t n = from; n < to; ++n) {
            auto h = impl_->kv_canonical_hash(n);
            if (!h) return h.error();
            if (!*h)
                return make_error(
                    fmt::format("freeze: LevelDB in {} has no canonical hash for block {}", impl_->chaindata, n));
            auto v = impl_->get(slice(schema::header_key(n, **h)));
            if (!v) return v.error();
            if (!*v) return make_error(fmt::format("freeze: LevelDB in {} is missing header {}", impl_->chaindata, n));
            hashes.push_back(**h);
            rlps.push_back(std::move(**v));
        }
        for (const std::string& r : rlps) views.push_back(view(r));
        {
            std::unique_lock flock(impl_->freezer_mu);
            if (auto r = impl_->freezer->append(from, views, hashes); !r) return r.error();
        }
        if (options.on_step && !options.on_step(FreezeStep::kAppended, to)) return from;
        {
            std::unique_lock flock(impl_->freezer_mu);
            if (auto r = impl_->freezer->sync(); !r) return r.error();
        }
        if (options.on_step && !options.on_step(FreezeStep::kSynced, to)) return from;

        // The freezer is durable: switch readers over, then drop the LevelDB copies.
        leveldb::WriteBatch del;
        std::unique_lock lock(impl_->mu);
        impl_->ancient_items = to;
        for (uint64_t n = impl_->kv_low; n < to; ++n) {
            // Headers below `from` are duplicates left by an interrupted freeze; their hashes come
            // from the freezer, which has them all.
            Hash32 h;
            if (n >= from) {
                h = hashes[n - from];
            } else {
                std::shared_lock flock(impl_->freezer_mu);
                auto fh = std::as_const(*impl_->freezer).read_hash(n, freezer_scratch());
                if (!fh) return fh.error();
                h = *fh;
            }
            del.Delete(slice(schema::header_key(n, h)));
            del.Delete(slice(schema::canonical_key(n)));
        }
        leveldb::WriteOptions wo;
        wo.sync = true;
        leveldb::Status s = impl_->write(wo, &del);
        if (!s.ok()) return make_error(fmt::format("freeze: LevelDB delete in {}: {}", impl_->chaindata, s.ToString()));
        impl_->kv_low = to;
        lock.unlock();
        if (options.on_step && !options.on_step(FreezeStep::kDeleted, to)) return to;
        if (options.on_progress) options.on_progress(to - start, total);
        from = to;
    }
    // The deletes leave a tombstone per key until LevelDB compacts them; compacting the frozen range
    // now gives the disk space back and keeps later scans from stepping over them.
    const auto lo_key = schema::canonical_key(start);
    const auto hi_key = schema::canonical_key(limit);
    const leveldb::Slice lo_slice(reinterpret_cast<const char*>(lo_key.data()), 9);
    const leveldb::Slice hi_slice(reinterpret_cast<const char*>(hi_key.data()), 9);
    impl_->ldb->CompactRange(&lo_slice, &hi_slice);
    return limit;
}

ChainDb::MemoryUse ChainDb::memory_use() const {
    MemoryUse m;
    m.block_cache_bytes = impl_->cache->TotalCharge();
    m.block_cache_capacity = impl_->cache_capacity;
    // LevelDB's figure counts the block cache too.
    std::string all;
    if (impl_->ldb->GetProperty("leveldb.approximate-memory-usage", &all)) {
        const uint64_t total = std::strtoull(all.c_str(), nullptr, 10);
        m.memtable_bytes = total > m.block_cache_bytes ? total - m.block_cache_bytes : 0;
    }
    return m;
}

StoreStats ChainDb::stats() const {
    StoreStats st;
    {
        std::shared_lock lock(impl_->mu);
        st.ancient_items = impl_->ancient_items;
        if (impl_->head) {
            const uint64_t low = std::max(impl_->kv_low, impl_->ancient_items);
            st.kv_headers = impl_->head->number + 1 > low ? impl_->head->number + 1 - low : 0;
        }
    }
    {
        std::shared_lock flock(impl_->freezer_mu);
        st.ancient_bytes = impl_->freezer->bytes_on_disk();
    }
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(impl_->chaindata, ec)) {
        if (e.is_regular_file(ec)) st.leveldb_bytes += e.file_size(ec);
    }
    return st;
}

}  // namespace headerd::db
