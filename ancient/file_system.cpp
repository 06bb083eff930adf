#include "ancient/file_system.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <system_error>

namespace headerd::ancient {
namespace {

// std::error_code's message is thread-safe, unlike strerror.
Error os_error(const char* op, const std::string& path, int err) {
    return make_error(std::string(op) + " " + path + ": " + std::error_code(err, std::generic_category()).message());
}

Error os_error_at(const char* op, const std::string& path, uint64_t offset, int err) {
    return make_error(std::string(op) + " " + path + " at offset " + std::to_string(offset) + ": " +
                      std::error_code(err, std::generic_category()).message());
}

class PosixFile final : public File {
  public:
    PosixFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
    ~PosixFile() override { ::close(fd_); }
    PosixFile(const PosixFile&) = delete;
    PosixFile& operator=(const PosixFile&) = delete;

    Outcome<size_t> read_at(uint64_t offset, std::span<uint8_t> out) const override {
        size_t done = 0;
        while (done < out.size()) {
            const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
            if (n < 0) {
                if (errno == EINTR) continue;
                return os_error_at("read", path_, offset + done, errno);
            }
            if (n == 0) break;  // end of file
            done += static_cast<size_t>(n);
        }
        return done;
    }

    Outcome<void> write_at(uint64_t offset, ByteView data) override {
        size_t done = 0;
        while (done < data.size()) {
            const ssize_t n = ::pwrite(fd_, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
            if (n < 0) {
                if (errno == EINTR) continue;
                return os_error_at("write", path_, offset + done, errno);
            }
            done += static_cast<size_t>(n);
        }
        return {};
    }

    Outcome<void> sync() override {
        // fdatasync also flushes the file size, which is the metadata an append changes.
        while (::fdatasync(fd_) != 0) {
            if (errno != EINTR) return os_error("fdatasync", path_, errno);
        }
        return {};
    }

    Outcome<void> truncate(uint64_t size) override {
        while (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
            if (errno != EINTR) return os_error_at("truncate", path_, size, errno);
        }
        return {};
    }

    Outcome<uint64_t> size() const override {
        struct stat st {};
        if (::fstat(fd_, &st) != 0) return os_error("stat", path_, errno);
        return static_cast<uint64_t>(st.st_size);
    }

    const std::string& path() const noexcept override { return path_; }

  private:
    int fd_;
    std::string path_;
};

std::string parent_dir(const std::string& path) {
    return std::filesystem::path(path).lexically_normal().parent_path().string();
}

std::string normal_dir(const std::string& dir) {
    std::string s = std::filesystem::path(dir).lexically_normal().string();
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return s;
}

Outcome<Bytes> read_whole(File& f) {
    auto size = f.size();
    if (!size) return size.error();
    Bytes content(*size);
    auto n = f.read_at(0, content);
    if (!n) return n.error();
    content.resize(*n);
    return content;
}

}  // namespace

// ---- PosixFileSystem -----------------------------------------------------------------------------

Outcome<std::unique_ptr<File>> PosixFileSystem::open(const std::string& path, OpenMode mode) {
    int flags = O_CLOEXEC;
    switch (mode) {
        case OpenMode::kRead:
            flags |= O_RDONLY;
            break;
        case OpenMode::kReadWrite:
            flags |= O_RDWR | O_CREAT;
            break;
        case OpenMode::kTruncate:
            flags |= O_RDWR | O_CREAT | O_TRUNC;
            break;
    }
    int fd;
    do {
        fd = ::open(path.c_str(), flags, 0644);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return os_error("open", path, errno);
    return std::unique_ptr<File>(std::make_unique<PosixFile>(fd, path));
}

Outcome<bool> PosixFileSystem::exists(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) return true;
    if (errno == ENOENT) return false;
    return os_error("stat", path, errno);
}

Outcome<void> PosixFileSystem::mkdir(const std::string& path) {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) return make_error("mkdir " + path + ": " + ec.message());
    return {};
}

Outcome<std::vector<std::string>> PosixFileSystem::list(const std::string& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        names.push_back(it->path().filename().string());
    }
    if (ec) return make_error("list " + dir + ": " + ec.message());
    return names;
}

Outcome<void> PosixFileSystem::remove(const std::string& path) {
    if (::unlink(path.c_str()) != 0) return os_error("remove", path, errno);
    return {};
}

Outcome<void> PosixFileSystem::rename(const std::string& from, const std::string& to) {
    if (::rename(from.c_str(), to.c_str()) != 0) return os_error("rename", from + " to " + to, errno);
    return {};
}

Outcome<void> PosixFileSystem::sync_dir(const std::string& dir) {
    int fd;
    do {
        fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return os_error("open directory", dir, errno);
    int rc;
    do {
        rc = ::fsync(fd);
    } while (rc != 0 && errno == EINTR);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return os_error("fsync directory", dir, err);
    return {};
}

PosixFileSystem& PosixFileSystem::instance() {
    static PosixFileSystem fs;
    return fs;
}

// ---- FaultInjectingFileSystem --------------------------------------------------------------------

class FaultInjectingFileSystem::FaultFile final : public File {
  public:
    FaultFile(FaultInjectingFileSystem& fs, std::unique_ptr<File> base) : fs_(fs), base_(std::move(base)) {}

    Outcome<size_t> read_at(uint64_t offset, std::span<uint8_t> out) const override {
        fs_.reads_.fetch_add(1);
        return base_->read_at(offset, out);
    }

    Outcome<void> write_at(uint64_t offset, ByteView data) override {
        std::lock_guard lock(fs_.mu_);
        const uint64_t nth = ++fs_.writes_;
        if (auto e = fs_.begin_mutation_locked(path(), "write")) return *e;
        if (nth == fs_.fail_write_at_) {
            return make_error("write " + path() + " at offset " + std::to_string(offset) + ": injected failure");
        }
        if (nth == fs_.short_write_at_) {
            const size_t keep = std::min(fs_.short_write_keep_, data.size());
            if (auto r = base_->write_at(offset, data.first(keep)); !r) return r;
            return make_error("write " + path() + " at offset " + std::to_string(offset) + ": injected short write (" +
                              std::to_string(keep) + " of " + std::to_string(data.size()) + " bytes)");
        }
        return base_->write_at(offset, data);
    }

    Outcome<void> sync() override {
        std::lock_guard lock(fs_.mu_);
        const uint64_t nth = ++fs_.syncs_;
        if (auto e = fs_.begin_mutation_locked(path(), "fsync")) return *e;
        if (nth == fs_.fail_sync_at_) return make_error("fdatasync " + path() + ": injected failure");
        if (fs_.forward_syncs_) {
            if (auto r = base_->sync(); !r) return r;
        }
        auto content = read_whole(*base_);
        if (!content) return content.error();
        fs_.durable_[path()].content = std::move(*content);
        return {};
    }

    Outcome<void> truncate(uint64_t size) override {
        std::lock_guard lock(fs_.mu_);
        if (auto e = fs_.begin_mutation_locked(path(), "truncate")) return *e;
        return base_->truncate(size);
    }

    Outcome<uint64_t> size() const override { return base_->size(); }
    const std::string& path() const noexcept override { return base_->path(); }

  private:
    FaultInjectingFileSystem& fs_;
    std::unique_ptr<File> base_;
};

FaultInjectingFileSystem::FaultInjectingFileSystem(FileSystem& base, bool forward_syncs)
    : base_(base), forward_syncs_(forward_syncs) {}
FaultInjectingFileSystem::~FaultInjectingFileSystem() = default;

std::optional<Error> FaultInjectingFileSystem::begin_mutation_locked(const std::string& path, const char* what) {
    ++mutations_;
    if (crash_at_ != 0 && mutations_ >= crash_at_) crashed_ = true;
    if (crashed_) return make_error(std::string(what) + " " + path + ": injected crash");
    if (!path.empty()) track_locked(path);
    return std::nullopt;
}

void FaultInjectingFileSystem::track_locked(const std::string& path) {
    if (durable_.contains(path)) return;
    Durable d;
    auto exists = base_.exists(path);
    d.exists = exists && *exists;
    if (d.exists) {
        if (auto f = base_.open(path, OpenMode::kRead)) {
            if (auto content = read_whole(**f)) d.content = std::move(*content);
        }
    }
    durable_.emplace(path, std::move(d));
}

Outcome<std::unique_ptr<File>> FaultInjectingFileSystem::open(const std::string& path, OpenMode mode) {
    if (mode != OpenMode::kRead) {
        std::lock_guard lock(mu_);
        auto exists = base_.exists(path);
        if (!exists) return exists.error();
        if (mode == OpenMode::kTruncate || !*exists) {
            if (auto e = begin_mutation_locked(path, "create")) return *e;
        }
    }
    auto f = base_.open(path, mode);
    if (!f) return f.error();
    return std::unique_ptr<File>(std::make_unique<FaultFile>(*this, std::move(*f)));
}

Outcome<bool> FaultInjectingFileSystem::exists(const std::string& path) { return base_.exists(path); }

Outcome<void> FaultInjectingFileSystem::mkdir(const std::string& path) {
    std::lock_guard lock(mu_);
    if (auto e = begin_mutation_locked("", "mkdir")) return *e;
    return base_.mkdir(path);
}

Outcome<std::vector<std::string>> FaultInjectingFileSystem::list(const std::string& dir) { return base_.list(dir); }

Outcome<void> FaultInjectingFileSystem::remove(const std::string& path) {
    std::lock_guard lock(mu_);
    if (auto e = begin_mutation_locked(path, "remove")) return *e;
    return base_.remove(path);
}

Outcome<void> FaultInjectingFileSystem::rename(const std::string& from, const std::string& to) {
    std::lock_guard lock(mu_);
    if (auto e = begin_mutation_locked(from, "rename")) return *e;
    track_locked(to);
    if (auto r = base_.rename(from, to); !r) return r;
    // Simplification: the rename is durable at once and carries the durable content with it.
    durable_[to] = Durable{true, std::move(durable_[from].content)};
    durable_[from] = Durable{};
    return {};
}

Outcome<void> FaultInjectingFileSystem::sync_dir(const std::string& dir) {
    std::lock_guard lock(mu_);
    const uint64_t nth = ++syncs_;
    if (auto e = begin_mutation_locked("", "fsync directory")) return *e;
    if (nth == fail_sync_at_) return make_error("fsync directory " + dir + ": injected failure");
    if (forward_syncs_) {
        if (auto r = base_.sync_dir(dir); !r) return r;
    }
    const std::string d = normal_dir(dir);
    for (auto& [path, durable] : durable_) {
        if (parent_dir(path) != d) continue;
        auto exists = base_.exists(path);
        if (!exists) return exists.error();
        durable.exists = *exists;
        if (!durable.exists) durable.content.clear();
    }
    return {};
}

uint64_t FaultInjectingFileSystem::writes() const {
    std::lock_guard lock(mu_);
    return writes_;
}

uint64_t FaultInjectingFileSystem::syncs() const {
    std::lock_guard lock(mu_);
    return syncs_;
}

uint64_t FaultInjectingFileSystem::mutations() const {
    std::lock_guard lock(mu_);
    return mutations_;
}

void FaultInjectingFileSystem::reset_counters() {
    std::lock_guard lock(mu_);
    reads_ = 0;
    writes_ = syncs_ = mutations_ = 0;
}

void FaultInjectingFileSystem::fail_write(uint64_t nth) {
    std::lock_guard lock(mu_);
    fail_write_at_ = nth;
}

void FaultInjectingFileSystem::short_write(uint64_t nth, size_t keep) {
    std::lock_guard lock(mu_);
    short_write_at_ = nth;
    short_write_keep_ = keep;
}

void FaultInjectingFileSystem::fail_sync(uint64_t nth) {
    std::lock_guard lock(mu_);
    fail_sync_at_ = nth;
}

void FaultInjectingFileSystem::crash_at(uint64_t nth_mutation) {
    std::lock_guard lock(mu_);
    crash_at_ = nth_mutation;
    if (crash_at_ != 0 && mutations_ >= crash_at_) crashed_ = true;
}

bool FaultInjectingFileSystem::crashed() const {
    std::lock_guard lock(mu_);
    return crashed_;
}

void FaultInjectingFileSystem::clear_faults() {
    std::lock_guard lock(mu_);
    fail_write_at_ = short_write_at_ = fail_sync_at_ = crash_at_ = 0;
    short_write_keep_ = 0;
    crashed_ = false;
}

Outcome<void> FaultInjectingFileSystem::drop_unsynced_data(const PowerCut& fate) {
    {
        std::lock_guard lock(mu_);
        for (const auto& [path, durable] : durable_) {
            const Unsynced what = fate ? fate(path) : Unsynced::kLost;
            if (what == Unsynced::kKept) continue;
            auto exists = base_.exists(path);
            if (!exists) return exists.error();
            Bytes content = durable.content;
            if (what == Unsynced::kZeroed && *exists) {
                auto f = base_.open(path, OpenMode::kRead);
                if (!f) return f.error();
                auto size = (*f)->size();
                if (!size) return size.error();
                content.resize(static_cast<size_t>(*size), 0);
            } else if (!durable.exists) {
                if (*exists) {
                    if (auto r = base_.remove(path); !r) return r;
                }
                continue;
            }
            // Replaced rather than truncated: ext4 flushes a file truncated to zero on close
            // (auto_da_alloc), which would make every simulated power cut cost a real one.
            if (*exists) {
                if (auto r = base_.remove(path); !r) return r;
            }
            auto f = base_.open(path, OpenMode::kTruncate);
            if (!f) return f.error();
            if (auto r = (*f)->write_at(0, content); !r) return r;
        }
        durable_.clear();  // what is on disk now is the starting point of the next run
    }
    clear_faults();
    return {};
}

}  // namespace headerd::ancient
