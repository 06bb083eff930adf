#include "ancient/table.hpp"

#include <snappy.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/rlp.hpp"

namespace headerd::ancient {
namespace {

// Appends are written in chunks of about this size, so a large batch does not hold its whole
// encoding in memory.
constexpr size_t kWriteChunk = 4 << 20;
// Index entries read per call while checking an index at open.
constexpr uint64_t kScanEntries = 16384;
// The meta is a few dozen bytes; anything after its RLP list is ignored anyway.
constexpr uint64_t kMetaReadLimit = 256;

const char* data_extension(bool compressed) { return compressed ? "cdat" : "rdat"; }

// Grows a scratch buffer without ever shrinking it, so warm calls neither allocate nor zero-fill.
uint8_t* reserve_scratch(Bytes& b, size_t n) {
    if (b.size() < n) b.resize(n);
    return b.data();
}

}  // namespace

// ---- format ------------------------------------------------------------------------------------

Bytes encode_meta(const TableMeta& meta) {
    const uint64_t version = kMetaVersion;
    Bytes out;
    const size_t payload = rlp::length(version) + rlp::length(meta.virtual_tail) + rlp::length(meta.flush_offset);
    out.reserve(rlp::length_of_list(payload));
    rlp::encode_header(out, {true, payload});
    rlp::encode(out, version);
    rlp::encode(out, meta.virtual_tail);
    rlp::encode(out, meta.flush_offset);
    return out;
}

Outcome<TableMeta> decode_meta(ByteView in) {
    auto payload = rlp::decode_list(in);
    if (!payload) return make_error("meta is not an RLP list: " + payload.error().message());
    ByteView p = *payload;
    TableMeta meta;
    auto version = rlp::decode_uint64(p);
    if (!version) return make_error("meta version: " + version.error().message());
    meta.version = *version;
    if (meta.version != kMetaVersion && meta.version != kLegacyMetaVersion) {
        return make_error("unsupported meta version " + std::to_string(meta.version));
    }
    auto tail = rlp::decode_uint64(p);
    if (!tail) return make_error("meta virtual tail: " + tail.error().message());
    meta.virtual_tail = *tail;
    if (meta.version == kMetaVersion) {
        auto offset = rlp::decode_uint64(p);
        if (!offset) return make_error("meta flush offset: " + offset.error().message());
        meta.flush_offset = *offset;
    }
    if (!p.empty()) return make_error("meta version " + std::to_string(meta.version) + " has extra fields");
    return meta;
}

std::string index_file_name(std::string_view table, bool compressed) {
    return std::string(table) + (compressed ? ".cidx" : ".ridx");
}

std::string data_file_name(std::string_view table, uint32_t file, bool compressed) {
    std::array<char, 16> num{};
    std::snprintf(num.data(), num.size(), "%04u", file);
    return std::string(table) + "." + num.data() + "." + data_extension(compressed);
}

std::string meta_file_name(std::string_view table) { return std::string(table) + ".meta"; }

// ---- table -------------------------------------------------------------------------------------

struct Table::FileSpan {
    bool any{false};        // the file holds at least one indexed item
    uint64_t first_pos{0};  // index position of its first item
    uint64_t last_pos{0};   // and of its last
    uint32_t last_end{0};   // end offset of its last item: the size the file must have
};

struct Table::LoadState {
    std::string index_path;
    std::string meta_path;
    bool created{false};                       // the index or meta is missing: apply() creates it, fsyncs the directory
    std::optional<TableMeta> meta;             // nullopt: missing, empty or undecodable
    bool rewrite_meta{false};                  // the meta must be rewritten once the table is settled
    uint64_t index_on_disk{0};                 // the index file's size as found (0 if missing)
    uint64_t index_size{0};                    // index bytes kept so far
    std::vector<FileSpan> spans;               // spans[i]: the entries of data file tail_file_ + i
    std::vector<std::unique_ptr<File>> files;  // files[i]: data file tail_file_ + i if opened (else null)
    std::vector<uint64_t> file_sizes;          // in step with files
    std::vector<bool> truncated;               // files[i] is longer than its last item: apply() truncates it
    std::vector<std::string> stray;            // data files outside tail..head: apply() removes them
};

Table::Table(FileSystem& fs, std::string dir, std::string name, TableOptions opts)
    : fs_(fs), dir_(std::move(dir)), name_(std::move(name)), opts_(opts) {}

Table::~Table() {
    if (!opts_.read_only && !failed_ && index_) (void)sync();
}

namespace {
// What failed_ holds between open_unrepaired() and apply_repairs(): writes are refused until then.
constexpr const char* kRepairsPending = "the repairs decided at open are not made yet (apply_repairs)";
}  // namespace

Error Table::error(std::string_view what) const {
    return make_error("ancient table " + name_ + " in " + dir_ + ": " + std::string(what));
}

Error Table::error_at(const std::string& path, uint64_t offset, std::string_view what) const {
    return make_error("ancient table " + name_ + ": " + path + " at offset " + std::to_string(offset) + ": " +
                      std::string(what));
}

Error Table::corrupt_at(const std::string& path, uint64_t offset, std::string_view what, uint64_t item) const {
    Error e = error_at(path, offset, what);
    e.kind = ErrorKind::kCorrupt;
    e.block = item;
    return e;
}

Error Table::fail(Error e) {
    failed_ = e.message;
    return e;
}

File* Table::data_file(uint32_t file) const noexcept {
    if (file < tail_file_ || file - tail_file_ >= files_.size()) return nullptr;
    return files_[file - tail_file_].get();
}

Outcome<std::unique_ptr<Table>> Table::open_unrepaired(FileSystem& fs, std::string dir, std::string name,
                                                       TableOptions opts) {
    if (opts.max_file_size == 0 || opts.max_file_size > UINT32_MAX) {
        return make_error("ancient table " + name + " in " + dir + ": max_file_size " +
                          std::to_string(opts.max_file_size) + " outside 1..4294967295 (offsets are 32-bit)");
    }
    std::unique_ptr<Table> t(new Table(fs, std::move(dir), std::move(name), opts));
    auto s = std::make_unique<LoadState>();
    if (auto r = t->plan(*s); !r) {
        t->failed_ = r.error().message;  // keeps the destructor from writing to a half-opened table
        return r.error();
    }
    if (!opts.read_only) {
        t->pending_ = std::move(s);
        t->failed_ = kRepairsPending;
    }
    return t;
}

Outcome<std::unique_ptr<Table>> Table::open(FileSystem& fs, std::string dir, std::string name, TableOptions opts) {
    auto t = open_unrepaired(fs, std::move(dir), std::move(name), opts);
    if (!t) return t.error();
    if (auto r = (*t)->apply_repairs(); !r) return r.error();
    return t;
}

Outcome<void> Table::apply_repairs() {
    if (!pending_) return {};
    const std::unique_ptr<LoadState> s = std::move(pending_);
    failed_.reset();
    if (auto r = apply(*s); !r) {
        failed_ = r.error().message;
        return r.error();
    }
    return {};
}

Outcome<IndexEntry> Table::read_entry(uint64_t position) const {
    std::array<uint8_t, kIndexEntrySize> buf{};
    auto n = index_->read_at(position * kIndexEntrySize, buf);
    if (!n) return n.error();
    if (*n != buf.size()) return error_at(index_->path(), position * kIndexEntrySize, "index entry cut short");
    return IndexEntry::decode(buf.data());
}

Outcome<void> Table::scan_index(uint64_t size, std::vector<FileSpan>& spans, uint64_t& valid_size,
                                std::string& problem) {
    spans.clear();
    valid_size = size;
    const uint64_t entries = size / kIndexEntrySize;
    IndexEntry prev{};
    for (uint64_t pos = 1; pos < entries;) {
        const uint64_t batch = std::min(kScanEntries, entries - pos);
        const size_t bytes = static_cast<size_t>(batch * kIndexEntrySize);
        uint8_t* buf = reserve_scratch(scratch_.index, bytes);
        auto n = index_->read_at(pos * kIndexEntrySize, {buf, bytes});
        if (!n) return n.error();
        if (*n != bytes) return error_at(index_->path(), pos * kIndexEntrySize, "index shorter than its size");
        for (uint64_t i = 0; i < batch; ++i, ++pos) {
            const IndexEntry e = IndexEntry::decode(buf + i * kIndexEntrySize);
            // The rules geth's checkIndex applies: garbage left by a crash (typically zeros) breaks them.
            if (pos == 1) {
                if (e.file != tail_file_ && e.file != tail_file_ + 1) {
                    problem = "entry 1 points at data file " + std::to_string(e.file) + " but the first file is " +
                              std::to_string(tail_file_);
                }
            } else if (e.file != prev.file && e.file != prev.file + 1) {
                problem = "entry " + std::to_string(pos) + " jumps from data file " + std::to_string(prev.file) +
                          " to " + std::to_string(e.file);
            } else if (e.file == prev.file && e.offset < prev.offset) {
                problem = "entry " + std::to_string(pos) + " offset " + std::to_string(e.offset) +
                          " goes backwards from " + std::to_string(prev.offset);
            } else if (e.file != prev.file && e.offset == 0) {
                problem = "entry " + std::to_string(pos) + " starts data file " + std::to_string(e.file) +
                          " with an empty item";
            }
            if (!problem.empty()) {
                valid_size = pos * kIndexEntrySize;
                return {};
            }
            const size_t slot = e.file - tail_file_;
            if (spans.size() <= slot) spans.resize(slot + 1);
            FileSpan& span = spans[slot];
            if (!span.any) {
                span.any = true;
                span.first_pos = pos;
            }
            span.last_pos = pos;
            span.last_end = e.offset;
            prev = e;
        }
    }
    return {};
}

Outcome<uint64_t> Table::first_entry_past(const FileSpan& span, uint64_t file_size) const {
    // Offsets only grow within a file, so the first item that does not fit is found by bisection.
    uint64_t lo = span.first_pos;
    uint64_t hi = span.last_pos + 1;
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo) / 2;
        auto e = read_entry(mid);
        if (!e) return e.error();
        if (e->offset > file_size) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return lo;
}

Outcome<void> Table::plan(LoadState& s) {
    s.index_path = path_of(index_file_name(name_, opts_.compressed));
    s.meta_path = path_of(meta_file_name(name_));
    if (auto r = open_index_and_meta(s); !r) return r;
    if (auto r = load_meta(s); !r) return r;
    if (auto r = trim_index_to_whole_entries(s); !r) return r;
    if (auto r = apply_flush_offset(s); !r) return r;
    if (auto r = cut_to_data_files(s); !r) return r;
    if (auto r = settle_data_files(s); !r) return r;
    settle_virtual_tail(s);
    if (opts_.read_only) return {};
    return find_stray_files(s);
}

Outcome<void> Table::apply(const LoadState& s) {
    if (auto r = fs_.mkdir(dir_); !r) return error("cannot create directory: " + r.error().message);
    for (auto [path, file] : {std::pair{&s.index_path, &index_}, std::pair{&s.meta_path, &meta_}}) {
        if (*file) continue;
        auto created = fs_.open(*path, OpenMode::kReadWrite);
        if (!created) return created.error();
        *file = std::move(*created);
    }
    if (s.index_on_disk < kIndexEntrySize) {
        const std::array<uint8_t, kIndexEntrySize> first{};  // (file 0, nothing deleted): an empty table
        if (auto r = index_->write_at(0, first); !r) return r;
        index_dirty_ = true;
    } else if (s.index_on_disk > index_size_) {
        if (auto r = index_->truncate(index_size_); !r) return r;
        index_dirty_ = true;
    }
    if (!files_.back()) {  // the head data file is missing
        auto f = fs_.open(data_path(head_file_), OpenMode::kReadWrite);
        if (!f) return f.error();
        files_.back() = std::move(*f);
        dir_dirty_ = true;
    }
    for (size_t i = 0; i < files_.size(); ++i) {
        if (!s.truncated[i]) continue;
        if (auto r = files_[i]->truncate(sizes_[i]); !r) return r;
    }
    if (auto r = remove_stray_files(s); !r) return r;
    return make_repairs_durable(s);
}

Outcome<void> Table::open_index_and_meta(LoadState& s) {
    const bool ro = opts_.read_only;
    const OpenMode mode = ro ? OpenMode::kRead : OpenMode::kReadWrite;
    for (auto [path, file] : {std::pair{&s.index_path, &index_}, std::pair{&s.meta_path, &meta_}}) {
        auto exists = fs_.exists(*path);
        if (!exists) return exists.error();
        if (!*exists) {
            if (ro) return error_at(*path, 0, "missing (a read-only open does not create tables)");
            s.created = true;  // apply() creates it
            continue;
        }
        auto opened = fs_.open(*path, mode);
        if (!opened) return opened.error();
        *file = std::move(*opened);
    }
    return {};
}

Outcome<void> Table::load_meta(LoadState& s) {
    const bool ro = opts_.read_only;
    meta_size_ = 0;
    if (meta_) {
        auto meta_size = meta_->size();
        if (!meta_size) return meta_size.error();
        meta_size_ = *meta_size;
    }
    if (meta_size_ > 0) {
        Bytes buf(static_cast<size_t>(std::min(meta_size_, kMetaReadLimit)));
        auto n = meta_->read_at(0, buf);
        if (!n) return n.error();
        buf.resize(*n);
        auto decoded = decode_meta(buf);
        if (decoded) {
            s.meta = *decoded;
        } else if (ro) {
            return error_at(s.meta_path, 0, decoded.error().message);
        } else {
            repairs_.push_back(s.meta_path + ": " + decoded.error().message + "; rebuilt from the index");
        }
    }
    s.rewrite_meta = !ro && (!s.meta || s.meta->version != kMetaVersion);
    if (s.meta && s.meta->version == kLegacyMetaVersion && !ro) {
        repairs_.push_back(s.meta_path + ": version 1 meta; flush offset taken from the checked index");
    }
    return {};
}

Outcome<void> Table::trim_index_to_whole_entries(LoadState& s) {
    const bool ro = opts_.read_only;
    if (index_) {
        auto index_size = index_->size();
        if (!index_size) return index_size.error();
        s.index_on_disk = *index_size;
    }
    uint64_t size = s.index_on_disk;
    if (size % kIndexEntrySize != 0) {
        const uint64_t whole = size - size % kIndexEntrySize;
        if (ro) return error_at(s.index_path, whole, "index size " + std::to_string(size) + " is not a multiple of 6");
        repairs_.push_back(s.index_path + ": dropped " + std::to_string(size - whole) + " bytes of a partial entry");
        size = whole;
    }
    if (size == 0) {
        if (ro) return error_at(s.index_path, 0, "empty index");
        // apply() writes entry 0 = (file 0, nothing deleted): an empty table.
        s.index_size = kIndexEntrySize;
        tail_file_ = 0;
        deleted_ = 0;
        return {};
    }
    if (!s.meta && size > kIndexEntrySize) {
        repairs_.push_back(s.meta_path + ": no usable meta; trusting the " +
                           std::to_string(size / kIndexEntrySize - 1) + " index entries that match the data files");
    }
    s.index_size = size;
    auto first = read_entry(0);
    if (!first) return first.error();
    tail_file_ = first->file;
    deleted_ = first->offset;
    return {};
}

Outcome<void> Table::apply_flush_offset(LoadState& s) {
    const bool ro = opts_.read_only;
    if (!s.meta || s.meta->version != kMetaVersion) return {};
    const TableMeta& meta = *s.meta;
    uint64_t& size = s.index_size;
    const uint64_t flush = std::max<uint64_t>(meta.flush_offset - meta.flush_offset % kIndexEntrySize, kIndexEntrySize);
    if (size > flush) {
        if (ro) {
            // Appends never synced (a process killed before its sync leaves them): a writable open
            // drops them, a read-only one leaves them on disk and reads the table without them.
            size = flush;
            return {};
        }
        repairs_.push_back(s.index_path + ": dropped " + std::to_string((size - flush) / kIndexEntrySize) +
                           " entries past the flush offset " + std::to_string(flush));
        size = flush;
    } else if (size < flush && !ro) {
        // Only a crash between shortening the index and rewriting the meta leaves this; the shorter
        // index was synced first, so all of it is trusted.
        repairs_.push_back(s.meta_path + ": flush offset " + std::to_string(meta.flush_offset) +
                           " past the index end " + std::to_string(size) + ", rewound");
    }
    if (meta.flush_offset != size) s.rewrite_meta = !ro;
    return {};
}

Outcome<void> Table::cut_to_data_files(LoadState& s) {
    const bool ro = opts_.read_only;
    const OpenMode mode = ro ? OpenMode::kRead : OpenMode::kReadWrite;
    uint64_t& size = s.index_size;
    // A cut in the data shortens the index, which is then checked again.
    for (;;) {
        uint64_t valid = 0;
        std::string problem;
        if (auto r = scan_index(size, s.spans, valid, problem); !r) return r;
        if (valid < size) {
            if (ro) return error_at(s.index_path, valid, problem);
            repairs_.push_back(s.index_path + ": " + problem + "; dropped it and " +
                               std::to_string((size - valid) / kIndexEntrySize - 1) + " entries after it");
            size = valid;
        }
        const std::vector<FileSpan>& spans = s.spans;
        s.files.clear();
        s.files.resize(spans.size());
        s.file_sizes.assign(spans.size(), 0);
        uint64_t cut = size / kIndexEntrySize;
        std::string cut_reason;
        for (size_t i = 0; i < spans.size(); ++i) {
            if (!spans[i].any) continue;
            const uint32_t file = tail_file_ + static_cast<uint32_t>(i);
            const std::string path = data_path(file);
            auto exists = fs_.exists(path);
            if (!exists) return exists.error();
            if (!*exists) {
                // Losing the head file is what a crash before the directory fsync looks like; cut back
                // to before it. A missing file with items after it is damage no crash explains, and
                // cutting there would drop every later file: refuse, like geth, and keep the data.
                for (size_t j = i + 1; j < spans.size(); ++j) {
                    if (spans[j].any) {
                        return error_at(path, 0,
                                        "is missing but later data files hold items; refusing to cut the "
                                        "table back (restore the file, or remove the table to rebuild it)");
                    }
                }
                cut = spans[i].first_pos;
                cut_reason = path + " is missing";
                break;
            }
            auto f = fs_.open(path, mode);
            if (!f) return f.error();
            auto fsize = (*f)->size();
            if (!fsize) return fsize.error();
            if (*fsize < spans[i].last_end) {
                auto past = first_entry_past(spans[i], *fsize);
                if (!past) return past.error();
                cut = *past;
                cut_reason = path + " has " + std::to_string(*fsize) + " bytes but the index needs " +
                             std::to_string(spans[i].last_end);
                break;
            }
            s.files[i] = std::move(*f);
            s.file_sizes[i] = *fsize;
        }
        if (cut == size / kIndexEntrySize) return {};
        if (ro) return error_at(s.index_path, cut * kIndexEntrySize, cut_reason);
        repairs_.push_back(cut_reason + "; index cut back to " + std::to_string(cut - 1) + " items (dropped " +
                           std::to_string(size / kIndexEntrySize - cut) + ")");
        size = cut * kIndexEntrySize;
        s.rewrite_meta = !ro;
    }
}

Outcome<void> Table::settle_data_files(LoadState& s) {
    const bool ro = opts_.read_only;
    const OpenMode mode = ro ? OpenMode::kRead : OpenMode::kReadWrite;
    head_file_ = s.spans.empty() ? tail_file_ : tail_file_ + static_cast<uint32_t>(s.spans.size() - 1);
    if (s.spans.empty()) {
        s.files.resize(1);
        s.file_sizes.resize(1);
        s.spans.resize(1);
    }
    s.truncated.assign(s.files.size(), false);
    for (size_t i = 0; i < s.files.size(); ++i) {
        const uint32_t file = tail_file_ + static_cast<uint32_t>(i);
        const bool head = file == head_file_;
        if (!s.files[i]) {
            if (!head) continue;  // a file before the first item (after tail deletion): never read
            const std::string path = data_path(file);
            auto exists = fs_.exists(path);
            if (!exists) return exists.error();
            if (!*exists) {
                if (ro) return error_at(path, 0, "head data file is missing");
                continue;  // it holds no item: apply() creates it
            }
            auto f = fs_.open(path, mode);
            if (!f) return f.error();
            auto fsize = (*f)->size();
            if (!fsize) return fsize.error();
            s.files[i] = std::move(*f);
            s.file_sizes[i] = *fsize;
        }
        const uint64_t expected = s.spans[i].last_end;
        if (s.file_sizes[i] > expected) {
            const std::string& path = s.files[i]->path();
            if (ro) {
                // Never read (the head's are an append the index never took: a process killed
                // mid-append leaves them), and only a writable open may tidy them.
                s.file_sizes[i] = expected;
                continue;
            }
            repairs_.push_back(path + ": dropped " + std::to_string(s.file_sizes[i] - expected) +
                               " bytes past the last indexed item");
            s.file_sizes[i] = expected;
            s.truncated[i] = true;
        }
    }
    files_ = std::move(s.files);
    sizes_ = std::move(s.file_sizes);
    head_bytes_ = sizes_.back();
    index_size_ = s.index_size;
    items_ = deleted_ + s.index_size / kIndexEntrySize - 1;
    return {};
}

void Table::settle_virtual_tail(LoadState& s) {
    const bool ro = opts_.read_only;
    hidden_ = s.meta ? s.meta->virtual_tail : deleted_;
    if (hidden_ < deleted_) {
        hidden_ = deleted_;
        s.rewrite_meta = !ro;
    }
    if (hidden_ > items_) {
        repairs_.push_back(s.meta_path + ": virtual tail " + std::to_string(hidden_) + " past the head " +
                           std::to_string(items_) + ", lowered");
        hidden_ = items_;
        s.rewrite_meta = !ro;
    }
}

Outcome<void> Table::make_repairs_durable(const LoadState& s) {
    // The order sync() uses: data, directory, index, meta.
    for (size_t i = 0; i < files_.size(); ++i) {
        if (!s.truncated[i]) continue;
        if (auto r = files_[i]->sync(); !r) return r;
    }
    if (s.created || dir_dirty_) {
        if (auto r = fs_.sync_dir(dir_); !r) return r;
        dir_dirty_ = false;
    }
    if (index_dirty_) {
        if (auto r = index_->sync(); !r) return r;
        index_dirty_ = false;
    }
    flush_offset_ = s.meta && s.meta->version == kMetaVersion ? s.meta->flush_offset : 0;
    if (s.rewrite_meta || flush_offset_ != index_size_) {
        if (auto r = write_meta(index_size_); !r) return r;
    }
    return {};
}

Outcome<void> Table::find_stray_files(LoadState& s) {
    auto dir_exists = fs_.exists(dir_);
    if (!dir_exists) return dir_exists.error();
    if (!*dir_exists) return {};
    auto names = fs_.list(dir_);
    if (!names) return names.error();
    const std::string prefix = name_ + ".";
    const std::string suffix = std::string(".") + data_extension(opts_.compressed);
    for (const std::string& n : *names) {
        if (n.size() <= prefix.size() + suffix.size() || !n.starts_with(prefix) || !n.ends_with(suffix)) continue;
        const std::string_view digits =
            std::string_view(n).substr(prefix.size(), n.size() - prefix.size() - suffix.size());
        uint64_t file = 0;
        auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), file);
        if (ec != std::errc{} || end != digits.data() + digits.size()) continue;
        if (file >= tail_file_ && file <= head_file_) continue;
        // Left by a head truncation (or a repair) that did not get to delete it, or by tail deletion.
        s.stray.push_back(path_of(n));
        repairs_.push_back(path_of(n) + ": removed, outside the table's files " + std::to_string(tail_file_) + ".." +
                           std::to_string(head_file_));
    }
    return {};
}

Outcome<void> Table::remove_stray_files(const LoadState& s) {
    for (const std::string& path : s.stray) {
        if (auto r = fs_.remove(path); !r) return r;
        dir_dirty_ = true;
    }
    if (dir_dirty_) {
        if (auto r = fs_.sync_dir(dir_); !r) return r;
        dir_dirty_ = false;
    }
    return {};
}

Outcome<void> Table::write_meta(uint64_t flush_offset) {
    const Bytes encoded = encode_meta({kMetaVersion, hidden_, flush_offset});
    if (auto r = meta_->write_at(0, encoded); !r) return r;
    // geth leaves the tail of a longer old encoding behind; dropping it keeps the file exactly one item.
    if (meta_size_ > encoded.size()) {
        if (auto r = meta_->truncate(encoded.size()); !r) return r;
    }
    meta_size_ = encoded.size();
    if (auto r = meta_->sync(); !r) return r;
    flush_offset_ = flush_offset;
    return {};
}

// ---- writing -----------------------------------------------------------------------------------

Outcome<void> Table::roll_over() {
    if (head_file_ >= kMaxFileNumber) {
        return error("data file number " + std::to_string(head_file_) + " is the last the 16-bit index can name");
    }
    const uint32_t next = head_file_ + 1;
    // Truncating: a leftover file of that number holds nothing the index knows about.
    auto f = fs_.open(data_path(next), OpenMode::kTruncate);
    if (!f) return f.error();
    sizes_.back() = head_bytes_;
    files_.push_back(std::move(*f));
    sizes_.push_back(0);
    head_file_ = next;
    head_bytes_ = 0;
    dir_dirty_ = true;
    return {};
}

void Table::rollback_append(uint32_t head_file, uint64_t head_bytes, uint64_t index_size) {
    write_data_.clear();
    write_index_.clear();
    // Forget the files this append opened before touching the disk, so that this object is right even
    // if the disk cannot be put back.
    std::vector<std::string> created;
    while (head_file_ > head_file) {
        created.push_back(files_.back()->path());
        files_.pop_back();
        sizes_.pop_back();
        --head_file_;
        dir_dirty_ = true;
    }
    head_bytes_ = head_bytes;
    auto undo = [&]() -> Outcome<void> {
        if (auto r = index_->truncate(index_size); !r) return r;
        for (const std::string& path : created) {
            if (auto r = fs_.remove(path); !r) return r;
        }
        return files_.back()->truncate(head_bytes);
    }();
    if (!undo) fail(error("rolling back a failed append: " + undo.error().message));
}

Outcome<void> Table::append(std::span<const ByteView> items) {
    if (opts_.read_only) return error("append to a table opened read-only");
    if (failed_) return error("needs reopen after an earlier failure: " + *failed_);
    if (items.empty()) return {};

    const uint32_t old_head_file = head_file_;
    const uint64_t old_head_bytes = head_bytes_;
    const uint64_t old_index_size = index_size_;
    write_data_.clear();
    write_index_.clear();
    uint64_t pending_at = head_bytes_;  // where write_data_ goes in the head file

    auto flush_pending = [&]() -> Outcome<void> {
        if (write_data_.empty()) return {};
        if (auto r = files_.back()->write_at(pending_at, write_data_); !r) return r;
        pending_at += write_data_.size();
        write_data_.clear();
        return {};
    };
    auto write_all = [&]() -> Outcome<void> {
        for (size_t i = 0; i < items.size(); ++i) {
            ByteView stored = items[i];
            if (opts_.compressed) {
                const size_t max = snappy::MaxCompressedLength(stored.size());
                char* dst = reinterpret_cast<char*>(reserve_scratch(compressed_, max));
                size_t n = 0;
                snappy::RawCompress(reinterpret_cast<const char*>(stored.data()), stored.size(), dst, &n);
                stored = ByteView(compressed_).first(n);
            }
            if (stored.size() > UINT32_MAX) {
                return error("item " + std::to_string(items_ + i) + " takes " + std::to_string(stored.size()) +
                             " bytes; the index can address at most 4294967295 per file");
            }
            // Items never straddle files. An item larger than a whole file gets a file of its own, and an
            // empty item never opens a file: geth's index check rejects a file that starts at offset 0.
            if (!stored.empty() && head_bytes_ > 0 && head_bytes_ + stored.size() > opts_.max_file_size) {
                if (auto r = flush_pending(); !r) return r;
                if (auto r = roll_over(); !r) return r;
                pending_at = 0;
            }
            headerd::append(write_data_, stored);
            head_bytes_ += stored.size();
            const size_t at = write_index_.size();
            write_index_.resize(at + kIndexEntrySize);
            IndexEntry{head_file_, static_cast<uint32_t>(head_bytes_)}.encode(write_index_.data() + at);
            if (write_data_.size() >= kWriteChunk) {
                if (auto r = flush_pending(); !r) return r;
            }
        }
        if (auto r = flush_pending(); !r) return r;
        // Index entries go last: until they are written, the data past the old end is dangling and a
        // reopen truncates it.
        return index_->write_at(index_size_, write_index_);
    };
    if (auto r = write_all(); !r) {
        rollback_append(old_head_file, old_head_bytes, old_index_size);
        return r.error();
    }
    if (!data_dirty_) {
        data_dirty_ = true;
        dirty_from_file_ = old_head_file;
    }
    index_dirty_ = true;
    index_size_ += write_index_.size();
    items_ += items.size();
    return {};
}

Outcome<void> Table::sync() {
    if (opts_.read_only) return {};
    if (failed_) return error("needs reopen after an earlier failure: " + *failed_);
    // Data before the directory and index, and all of them before the meta's flush offset moves: the
    // flush offset is the commit point that open() trusts.
    if (data_dirty_) {
        for (uint32_t f = std::max(dirty_from_file_, tail_file_); f <= head_file_; ++f) {
            if (File* file = data_file(f)) {
                if (auto r = file->sync(); !r) return fail(r.error());
            }
        }
        data_dirty_ = false;
    }
    if (dir_dirty_) {
        if (auto r = fs_.sync_dir(dir_); !r) return fail(r.error());
        dir_dirty_ = false;
    }
    if (index_dirty_) {
        if (auto r = index_->sync(); !r) return fail(r.error());
        index_dirty_ = false;
    }
    if (flush_offset_ != index_size_) {
        if (auto r = write_meta(index_size_); !r) return fail(r.error());
    }
    return {};
}

Outcome<void> Table::rewrite_item(uint64_t item, ByteView bytes) {
    if (opts_.read_only) return error("rewrite of a table opened read-only");
    if (failed_) return error("needs reopen after an earlier failure: " + *failed_);
    if (item < hidden_ || item >= items_) {
        return error("rewrite of item " + std::to_string(item) + " outside [" + std::to_string(hidden_) + ", " +
                     std::to_string(items_) + ")");
    }
    ByteView stored = bytes;
    if (opts_.compressed) {
        const size_t max = snappy::MaxCompressedLength(bytes.size());
        char* dst = reinterpret_cast<char*>(reserve_scratch(compressed_, max));
        size_t n = 0;
        snappy::RawCompress(reinterpret_cast<const char*>(bytes.data()), bytes.size(), dst, &n);
        stored = ByteView(compressed_).first(n);
    }
    const uint64_t rel = item - deleted_;
    auto before = read_entry(rel);
    if (!before) return before.error();
    auto after = read_entry(rel + 1);
    if (!after) return after.error();
    const uint32_t begin = rel == 0 || before->file != after->file ? 0 : before->offset;
    File* file = data_file(after->file);
    if (file == nullptr || after->offset < begin || after->offset - begin != stored.size()) {
        return error_at(index_->path(), (rel + 1) * kIndexEntrySize,
                        "item " + std::to_string(item) + " cannot be rewritten in place: the index gives it file " +
                            std::to_string(after->file) + " bytes " + std::to_string(begin) + ".." +
                            std::to_string(after->offset) + ", the new bytes take " + std::to_string(stored.size()));
    }
    // Same length at the same place: the index and every other item stay as they are.
    if (auto r = file->write_at(begin, stored); !r) return fail(r.error());
    if (auto r = file->sync(); !r) return fail(r.error());
    return {};
}

Outcome<void> Table::truncate_head(uint64_t items) {
    if (items >= items_) return {};
    if (opts_.read_only) return error("truncate of a table opened read-only");
    if (failed_) return error("needs reopen after an earlier failure: " + *failed_);
    if (items < hidden_) {
        return error("truncate head to " + std::to_string(items) + " is below the tail " + std::to_string(hidden_));
    }
    const uint64_t keep = items - deleted_;
    const uint64_t new_size = (keep + 1) * kIndexEntrySize;
    IndexEntry end{tail_file_, 0};
    if (keep > 0) {
        auto e = read_entry(keep);
        if (!e) return e.error();
        end = *e;
    }
    if (end.file < tail_file_ || end.file > head_file_) {
        return error_at(index_->path(), keep * kIndexEntrySize,
                        "index entry names data file " + std::to_string(end.file) + " outside " +
                            std::to_string(tail_file_) + ".." + std::to_string(head_file_));
    }
    // Index first, synced: a crash after this point leaves data past the index, which open() cuts.
    if (auto r = index_->truncate(new_size); !r) return fail(r.error());
    if (auto r = index_->sync(); !r) return fail(r.error());
    if (flush_offset_ > new_size) {
        if (auto r = write_meta(new_size); !r) return fail(r.error());
    }
    bool removed = false;
    while (head_file_ > end.file) {
        const std::string path = files_.back()->path();
        files_.pop_back();
        sizes_.pop_back();
        --head_file_;
        removed = true;
        if (auto r = fs_.remove(path); !r) return fail(r.error());
    }
    if (!files_.back()) {  // the new head held no item until now (tail file after tail deletion)
        auto f = fs_.open(data_path(head_file_), OpenMode::kReadWrite);
        if (!f) return fail(f.error());
        files_.back() = std::move(*f);
    }
    if (auto r = files_.back()->truncate(end.offset); !r) return fail(r.error());
    if (auto r = files_.back()->sync(); !r) return fail(r.error());
    head_bytes_ = end.offset;
    index_size_ = new_size;
    items_ = items;
    if (removed) {
        if (auto r = fs_.sync_dir(dir_); !r) return fail(r.error());
    }
    return {};
}

// ---- reading -----------------------------------------------------------------------------------

namespace {

// The uncompressed length that opens a snappy block: a varint32 of at most 5 bytes, exactly as
// snappy::GetUncompressedLength reads it. Returns the bytes it takes, or 0 if it is not one.
size_t read_snappy_length(const uint8_t* p, size_t n, size_t& length) noexcept {
    uint64_t v = 0;
    for (size_t i = 0; i < 5 && i < n; ++i) {
        v |= uint64_t{p[i] & 0x7fu} << (7 * i);
        if (p[i] < 0x80) {
            if (v > 0xffffffffu) return 0;
            length = static_cast<size_t>(v);
            return i + 1;
        }
    }
    return 0;
}

// Writes to op the `len` bytes that start `offset` bytes before it (when offset < len, the bytes
// written repeat with period offset). room >= len bytes may be written from op.
void copy_from_behind(uint8_t* op, size_t offset, size_t len, size_t room) noexcept {
    const uint8_t* src = op - offset;
    if (offset >= 16) {
        // 16-byte moves, each from at least 16 bytes behind what it writes.
        if (len + 15 <= room) {
            for (size_t i = 0; i < len; i += 16) std::memcpy(op + i, src + i, 16);
        } else if (offset >= len) {
            std::memcpy(op, src, len);
        } else {
            for (size_t i = 0; i < len; ++i) op[i] = src[i];
        }
    } else if (offset == 1) {
        std::memset(op, *src, len);
    } else {
        // The pattern has period `offset`: 16 bytes of it, stored every `step` bytes (a multiple of
        // the period), so that the overlapping stores agree.
        uint8_t pattern[16];
        for (size_t i = 0; i < 16; ++i) pattern[i] = src[i % offset];
        const size_t step = 16 - 16 % offset;
        size_t i = 0;
        for (; i < len && i + 16 <= room; i += step) std::memcpy(op + i, pattern, 16);
        for (; i < len; ++i) op[i] = pattern[i % step];
    }
}

// Decodes the elements of a snappy block (what follows its length) into exactly [dst, dst + n).
// Accepts what snappy::RawUncompress accepts, with the same bytes out: true only if every element
// is whole, every copy reaches back into bytes already written, and they make exactly n bytes.
// headerd decodes its own freezer items because snappy 1.1.9 repeats short patterns (offsets below
// 8: the zero runs in every header's bloom and difficulty) a few bytes at a time through memory,
// which made decoding a 192-header range 4-5x slower than this (docs/performance.md, "Scaling and
// the crypto floor").
bool decode_snappy_elements(const uint8_t* ip, const uint8_t* const end, uint8_t* const dst, size_t n) noexcept {
    uint8_t* op = dst;
    uint8_t* const op_end = dst + n;
    while (ip < end) {
        const uint8_t tag = *ip++;
        size_t len = 0;
        size_t offset = 0;
        switch (tag & 3) {
            case 0: {  // literal: length - 1 in the tag, or in the 1-4 bytes after it
                len = (tag >> 2) + size_t{1};
                if (len > 60) {
                    const size_t extra = len - 60;
                    if (static_cast<size_t>(end - ip) < extra) return false;
                    size_t v = 0;
                    for (size_t k = 0; k < extra; ++k) v |= size_t{ip[k]} << (8 * k);
                    ip += extra;
                    len = v + 1;
                }
                if (static_cast<size_t>(end - ip) < len || static_cast<size_t>(op_end - op) < len) return false;
                if (len <= 16 && end - ip >= 16 && op_end - op >= 16) {
                    std::memcpy(op, ip, 16);  // one move; the bytes past len are overwritten next
                } else {
                    std::memcpy(op, ip, len);
                }
                op += len;
                ip += len;
                continue;
            }
            case 1:  // copy, length 4-11, 11-bit offset
                if (ip == end) return false;
                len = 4 + ((tag >> 2) & 7u);
                offset = (size_t{tag & 0xe0u} << 3) | *ip++;
                break;
            case 2:  // copy, length 1-64, 16-bit offset
                if (end - ip < 2) return false;
                len = 1 + (tag >> 2);
                offset = size_t{ip[0]} | size_t{ip[1]} << 8;
                ip += 2;
                break;
            default:  // copy, length 1-64, 32-bit offset
                if (end - ip < 4) return false;
                len = 1 + (tag >> 2);
                offset = size_t{ip[0]} | size_t{ip[1]} << 8 | size_t{ip[2]} << 16 | size_t{ip[3]} << 24;
                ip += 4;
                break;
        }
        const size_t room = static_cast<size_t>(op_end - op);
        if (offset == 0 || offset > static_cast<size_t>(op - dst) || len > room) return false;
        copy_from_behind(op, offset, len, room);
        op += len;
    }
    return op == op_end;
}

}  // namespace

Outcome<void> Table::read_range(uint64_t start, uint64_t count, uint64_t max_bytes, ItemBuffer& out) {
    return read_range(start, count, max_bytes, out, scratch_);
}

Outcome<void> Table::read_range(uint64_t start, uint64_t count, uint64_t max_bytes, ItemBuffer& out,
                                ReadScratch& scratch) const {
    if (start < hidden_ || start > items_ || count > items_ - start) [[unlikely]] {
        return error("items [" + std::to_string(start) + ", " + std::to_string(start + count) +
                     ") requested, table holds [" + std::to_string(hidden_) + ", " + std::to_string(items_) + ")");
    }
    if (count == 0) return {};

    // One read for the count+1 index entries that bound the items.
    const uint64_t rel = start - deleted_;
    const size_t index_bytes = static_cast<size_t>((count + 1) * kIndexEntrySize);
    const uint8_t* idx = reserve_scratch(scratch.index, index_bytes);
    {
        auto n = index_->read_at(rel * kIndexEntrySize, {scratch.index.data(), index_bytes});
        if (!n) [[unlikely]]
            return n.error();
        if (*n != index_bytes) [[unlikely]] {
            return error_at(index_->path(), rel * kIndexEntrySize, "index shorter than the table's item count");
        }
    }
    // Where each item lies, decoded once from the index and checked against the data files; which
    // items to fetch: all of them, or up to the byte cap (for snappy, one more, since its stored size
    // says little about its decoded size).
    std::vector<ReadScratch::Span>& spans = scratch.spans;
    spans.clear();
    uint64_t stored_total = 0;
    uint64_t data_bytes = 0;  // of the fetched items
    IndexEntry prev = IndexEntry::decode(idx);
    for (uint64_t i = 0; i < count; ++i) {
        const IndexEntry next = IndexEntry::decode(idx + (i + 1) * kIndexEntrySize);
        // Entry 0 carries the deletion count, not an offset; an item that opens a file starts at 0.
        const ReadScratch::Span b{next.file, (i == 0 && rel == 0) || prev.file != next.file ? 0 : prev.offset,
                                  next.offset};
        prev = next;
        const File* file = data_file(b.file);
        const uint64_t file_size = b.file == head_file_ ? head_bytes_ : (file ? sizes_[b.file - tail_file_] : 0);
        if (!file || b.end < b.begin || b.end > file_size) [[unlikely]] {
            return corrupt_at(index_->path(), (rel + i + 1) * kIndexEntrySize,
                              "bad index entry for item " + std::to_string(start + i) + ": file " +
                                  std::to_string(b.file) + " bytes " + std::to_string(b.begin) + ".." +
                                  std::to_string(b.end),
                              start + i);
        }
        const uint64_t size = b.end - b.begin;
        const bool capped = i > 0 && stored_total + size > max_bytes;
        if (capped && !opts_.compressed) break;
        spans.push_back(b);
        data_bytes += size;
        if (capped) break;
        stored_total += size;
    }
    const size_t fetch = spans.size();

    // One read per data file touched: items of one file are contiguous.
    uint8_t* data = reserve_scratch(scratch.data, static_cast<size_t>(data_bytes));
    uint64_t at = 0;
    for (size_t i = 0; i < fetch;) {
        const ReadScratch::Span first = spans[i];
        size_t j = i + 1;
        uint32_t run_end = first.end;
        for (; j < fetch && spans[j].file == first.file; ++j) run_end = spans[j].end;
        const File* file = data_file(first.file);
        const size_t len = run_end - first.begin;
        auto n = file->read_at(first.begin, {data + at, len});
        if (!n) [[unlikely]]
            return n.error();
        if (*n != len) [[unlikely]]
            return error_at(file->path(), first.begin + *n, "data file ends inside an item");
        at += len;
        i = j;
    }

    // Decode in order, stopping before the item that would pass the cap.
    uint64_t out_total = 0;
    at = 0;
    for (size_t i = 0; i < fetch; ++i) {
        const ReadScratch::Span b = spans[i];
        const size_t stored = b.end - b.begin;
        const uint8_t* src = data + at;
        at += stored;
        size_t size = stored;
        size_t length_bytes = 0;
        if (opts_.compressed) {
            length_bytes = read_snappy_length(src, stored, size);
            if (length_bytes == 0) [[unlikely]] {
                return corrupt_at(data_file(b.file)->path(), b.begin,
                                  "item " + std::to_string(start + i) + " is not snappy block data", start + i);
            }
        }
        if (i > 0 && out_total + size > max_bytes) break;
        if (opts_.compressed) {
            // No element makes more than 64 bytes from 3, so a larger size is corrupt: refused before
            // a huge buffer is allocated for it.
            const bool plausible = size / 32 <= stored;
            const size_t old = out.bytes.size();
            if (plausible) out.bytes.resize(old + size);
            if (!plausible || !decode_snappy_elements(src + length_bytes, src + stored, out.bytes.data() + old, size))
                [[unlikely]] {
                out.bytes.resize(old);
                return corrupt_at(data_file(b.file)->path(), b.begin,
                                  "item " + std::to_string(start + i) + " is corrupt snappy data", start + i);
            }
        } else {
            headerd::append(out.bytes, ByteView{src, stored});
        }
        out.ends.push_back(out.bytes.size());
        out_total += size;
    }
    return {};
}

uint64_t Table::bytes_on_disk() const noexcept {
    uint64_t total = index_size_ + meta_size_ + head_bytes_;
    for (size_t i = 0; i + 1 < sizes_.size(); ++i) total += sizes_[i];
    return total;
}

}  // namespace headerd::ancient
