#include "db/era_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "core/block_body.hpp"
#include "core/block_header.hpp"
#include "core/hex.hpp"

namespace headerd::db {

namespace {

namespace fs = std::filesystem;

// The epoch of an era1 file name <network>-<5 digits>-<8 hex digits>.era1; nullopt otherwise.
std::optional<uint64_t> epoch_of(std::string_view name) {
    constexpr std::string_view kSuffix = ".era1";
    if (name.size() < kSuffix.size() + 16 || !name.ends_with(kSuffix)) return std::nullopt;
    const std::string_view stem = name.substr(0, name.size() - kSuffix.size());
    const std::string_view hash = stem.substr(stem.size() - 8);
    if (stem[stem.size() - 9] != '-') return std::nullopt;
    for (char c : hash) {
        if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
    }
    const std::string_view rest = stem.substr(0, stem.size() - 9);
    const size_t dash = rest.rfind('-');
    if (dash == std::string_view::npos || dash == 0 || rest.size() - dash - 1 != 5) return std::nullopt;
    uint64_t epoch = 0;
    const char* begin = rest.data() + dash + 1;
    const char* end = rest.data() + rest.size();
    auto [ptr, ec] = std::from_chars(begin, end, epoch);
    if (ec != std::errc() || ptr != end) return std::nullopt;
    return epoch;
}

// The block count an era1 file ends with (its BlockIndex's last field), read without mapping it.
Outcome<uint64_t> block_count(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return make_error(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
    uint8_t tail[8];
    const off_t size = ::lseek(fd, 0, SEEK_END);
    const ssize_t n = size >= 8 ? ::pread(fd, tail, sizeof tail, size - 8) : -1;
    ::close(fd);
    if (n != 8) return make_error(fmt::format("{}: too short for an era1 file", path));
    uint64_t count = 0;
    for (int i = 7; i >= 0; --i) count = count << 8 | tail[i];
    if (count == 0 || count > kEpochBlocks) {
        return make_error(fmt::format("{}: its block index counts {} blocks (an era1 file holds 1 to {})", path, count,
                                      kEpochBlocks));
    }
    return count;
}

Outcome<void> copy_synced(const std::string& from, const std::string& to) {
    const std::string tmp = to + ".tmp";
    std::error_code ec;
    fs::copy_file(from, tmp, fs::copy_options::overwrite_existing, ec);
    if (ec) return make_error(fmt::format("cannot copy {} to {}: {}", from, tmp, ec.message()));
    const int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
    const bool synced = fd >= 0 && ::fsync(fd) == 0;
    const int err = errno;
    if (fd >= 0) ::close(fd);
    if (!synced) {
        fs::remove(tmp, ec);
        return make_error(fmt::format("cannot sync {}: {}", tmp, std::strerror(err)));
    }
    fs::rename(tmp, to, ec);
    if (ec) {
        std::error_code ignored;
        fs::remove(tmp, ignored);
        return make_error(fmt::format("cannot rename {} to {}: {}", tmp, to, ec.message()));
    }
    return {};
}

void sync_dir(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    ::fsync(fd);
    ::close(fd);
}

}  // namespace

std::string era1_file_name(std::string_view network, uint64_t epoch, const Hash32& accumulator_root) {
    return fmt::format("{}-{:05}-{}.era1", network, epoch, to_hex(ByteView(accumulator_root).first(4)));
}

Outcome<std::unique_ptr<EraStore>> EraStore::open(const std::string& dir, const EraStoreOptions& options) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return make_error(fmt::format("cannot create {}: {}", dir, ec.message()));
    std::unique_ptr<EraStore> store(new EraStore(dir, options));
    if (store->options_.max_open_files == 0) store->options_.max_open_files = 1;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.ends_with(".tmp")) continue;  // an add() cut short; the next one writes it again
        auto epoch = epoch_of(name);
        if (!epoch) {
            return make_error(
                fmt::format("{}: not an era1 file name (<network>-<epoch>-<root>.era1); "
                            "only `headerd import --history` puts files here",
                            entry.path().string()));
        }
        auto count = block_count(entry.path().string());
        if (!count) return count.error();
        auto [it, inserted] = store->epochs_.emplace(*epoch, EpochFile{entry.path().string(), *count});
        if (!inserted) {
            return make_error(
                fmt::format("{} and {} hold the same epoch {}", it->second.path, entry.path().string(), *epoch));
        }
    }
    if (ec) return make_error(fmt::format("cannot list {}: {}", dir, ec.message()));
    return store;
}

std::optional<BlockRange> EraStore::range() const {
    if (epochs_.empty()) return std::nullopt;
    auto it = std::prev(epochs_.end());
    BlockRange r{it->first * kEpochBlocks, it->first * kEpochBlocks + it->second.count - 1};
    // Down through consecutive full epochs.
    while (it != epochs_.begin()) {
        auto below = std::prev(it);
        if (below->first + 1 != it->first || below->second.count != kEpochBlocks) break;
        r.first = below->first * kEpochBlocks;
        it = below;
    }
    return r;
}

Outcome<std::shared_ptr<const EraStore::Open>> EraStore::archive_of(uint64_t number) const {
    const uint64_t epoch = number / kEpochBlocks;
    auto held = epochs_.find(epoch);
    if (held == epochs_.end() || number - epoch * kEpochBlocks >= held->second.count) {
        return std::shared_ptr<const Open>{};
    }
    std::lock_guard lock(mu_);
    if (auto it = by_epoch_.find(epoch); it != by_epoch_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        return it->second->second;
    }
    auto file = MappedFile::open(held->second.path);
    if (!file) return corrupt_error(file.error().message, number);
    auto archive = era1::IndexView::open(file->bytes());
    if (!archive || archive->start_number() != epoch * kEpochBlocks) {
        return corrupt_error(fmt::format("{}: {}", held->second.path,
                                         archive ? fmt::format("starts at block {}, its name says epoch {}",
                                                               archive->start_number(), epoch)
                                                 : "not a valid era1 file: " + archive.error().message()),
                             number);
    }
    auto open = std::make_shared<Open>(Open{std::move(*file), std::move(*archive)});
    lru_.emplace_front(epoch, open);
    by_epoch_[epoch] = lru_.begin();
    while (lru_.size() > options_.max_open_files) {
        by_epoch_.erase(lru_.back().first);
        lru_.pop_back();  // the mapping goes when its last reader lets go
    }
    return open;
}

Outcome<bool> EraStore::read_into(uint64_t number, Bytes& out, bool receipts) const {
    if (any_damaged_.load(std::memory_order_acquire)) [[unlikely]] {
        std::lock_guard lock(damaged_mu_);
        if (damaged_.contains(number)) {
            return corrupt_error(fmt::format("block {}: its {} failed the scrubber's check (not served; import a sound "
                                             "copy of its epoch: docs/history.md)",
                                             number, receipts ? "receipt list" : "body"),
                                 number);
        }
    }
    auto open = archive_of(number);
    if (!open) return open.error();
    if (*open == nullptr) return false;
    const era1::IndexView& archive = (*open)->archive;
    const size_t i = static_cast<size_t>(number - archive.start_number());
    thread_local Bytes scratch;
    auto item = receipts ? archive.receipts(i, scratch) : archive.body(i, scratch);
    if (!item) {
        return corrupt_error(fmt::format("{}: block {}: the {} does not decompress intact: {}", (*open)->file.path(),
                                         number, receipts ? "receipt list" : "body", item.error().message()),
                             number);
    }
    append(out, *item);
    return true;
}

Outcome<bool> EraStore::append_body(uint64_t number, Bytes& out) const { return read_into(number, out, false); }

Outcome<bool> EraStore::append_receipts(uint64_t number, Bytes& out) const { return read_into(number, out, true); }

Outcome<void> EraStore::add(const std::string& path, std::string_view network, uint64_t epoch, const Hash32& root,
                            uint64_t count) {
    if (epochs_.contains(epoch)) return {};
    const std::string to = (fs::path(dir_) / era1_file_name(network, epoch, root)).string();
    std::error_code ec;
    fs::create_hard_link(path, to, ec);
    if (ec) {
        if (auto r = copy_synced(path, to); !r) return r;
    }
    sync_dir(dir_);
    epochs_.emplace(epoch, EpochFile{to, count});
    return {};
}

Outcome<std::vector<uint64_t>> EraStore::scrub(const HeaderSource& headers, uint64_t first, uint64_t count) {
    std::vector<uint64_t> found;
    ItemBuffer header;
    Bytes body, receipts;
    for (uint64_t number = first; number - first < count; ++number) {
        auto open = archive_of(number);
        std::string problem;
        if (!open) {
            problem = open.error().message;
        } else if (*open == nullptr) {
            continue;  // not held
        } else {
            const era1::IndexView& archive = (*open)->archive;
            const size_t i = static_cast<size_t>(number - archive.start_number());
            if (auto r = headers.header_range(number, 1, Order::kAscending, header); !r) return r.error();
            if (header.size() != 1) continue;  // no header to judge by (not held, or damaged itself)
            auto decoded = decode_block_header(header.item(0));
            if (!decoded) return make_error(fmt::format("block {}: the stored header does not decode", number));
            auto b = archive.body(i, body);
            auto r = archive.receipts(i, receipts);
            if (!b)
                problem = fmt::format("the body does not decompress intact: {}", b.error().message());
            else if (!r)
                problem = fmt::format("the receipt list does not decompress intact: {}", r.error().message());
            else if (auto v = verify_body(*decoded, *b); !v)
                problem = v.error().message();
            else if (auto w = verify_receipts(*decoded, *r); !w)
                problem = w.error().message();
        }
        std::lock_guard lock(damaged_mu_);
        if (problem.empty()) {
            damaged_.erase(number);
        } else {
            found.push_back(number);
            damaged_[number] = std::move(problem);
        }
        any_damaged_.store(!damaged_.empty(), std::memory_order_release);
    }
    return found;
}

std::vector<uint64_t> EraStore::damaged_blocks() const {
    std::lock_guard lock(damaged_mu_);
    std::vector<uint64_t> out;
    out.reserve(damaged_.size());
    for (const auto& entry : damaged_) out.push_back(entry.first);
    return out;
}

std::string EraStore::damage(uint64_t number) const {
    std::lock_guard lock(damaged_mu_);
    auto it = damaged_.find(number);
    return it == damaged_.end() ? std::string() : it->second;
}

size_t EraStore::open_files() const {
    std::lock_guard lock(mu_);
    return lru_.size();
}

}  // namespace headerd::db
