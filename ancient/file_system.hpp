#pragma once

// The small slice of the operating system that the freezer needs, behind an interface so that tests
// (here and in db/) can inject write failures, short writes, failed fsyncs and crashes, and count
// read calls. PosixFileSystem is the real one; FaultInjectingFileSystem wraps any other.
//
// Every error message names the path (and offset, where there is one) and the OS reason.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/bytes.hpp"
#include "core/result.hpp"

namespace headerd::ancient {

enum class OpenMode {
    kRead,       // existing file, reads only
    kReadWrite,  // created if missing (mode 0644), content kept
    kTruncate,   // created if missing, content discarded
};

// An open file. There is no file position: every read and write names its offset, so one File can
// serve concurrent readers (read_at is const and thread-safe) while its owner appends.
class File {
  public:
    virtual ~File() = default;

    // Reads up to out.size() bytes at `offset` into the caller's buffer. Returns the number of bytes
    // read, which is less than out.size() only at end of file. The POSIX version is one pread(2) in
    // the normal case (it loops only on EINTR and partial reads).
    virtual Outcome<size_t> read_at(uint64_t offset, std::span<uint8_t> out) const = 0;
    // Writes all of `data` at `offset` (appending is write_at(size)). On error a prefix of `data`
    // may have been written.
    virtual Outcome<void> write_at(uint64_t offset, ByteView data) = 0;
    // Makes the content and size durable (fdatasync).
    virtual Outcome<void> sync() = 0;
    virtual Outcome<void> truncate(uint64_t size) = 0;
    virtual Outcome<uint64_t> size() const = 0;

    virtual const std::string& path() const noexcept = 0;
};

class FileSystem {
  public:
    virtual ~FileSystem() = default;

    virtual Outcome<std::unique_ptr<File>> open(const std::string& path, OpenMode mode) = 0;
    virtual Outcome<bool> exists(const std::string& path) = 0;
    // Creates the directory and any missing parents (like mkdir -p); an existing directory is fine.
    virtual Outcome<void> mkdir(const std::string& path) = 0;
    // Names (not paths) of the entries of a directory, without "." and "..", in no particular order.
    virtual Outcome<std::vector<std::string>> list(const std::string& dir) = 0;
    virtual Outcome<void> remove(const std::string& path) = 0;
    virtual Outcome<void> rename(const std::string& from, const std::string& to) = 0;
    // Makes the directory's entries (files created, removed or renamed in it) durable.
    virtual Outcome<void> sync_dir(const std::string& dir) = 0;
};

// POSIX file descriptors; reads with pread(2), writes with pwrite(2), syncs with fdatasync(2).
// Stateless: one instance may be shared by every table and thread.
class PosixFileSystem final : public FileSystem {
  public:
    Outcome<std::unique_ptr<File>> open(const std::string& path, OpenMode mode) override;
    Outcome<bool> exists(const std::string& path) override;
    Outcome<void> mkdir(const std::string& path) override;
    Outcome<std::vector<std::string>> list(const std::string& dir) override;
    Outcome<void> remove(const std::string& path) override;
    Outcome<void> rename(const std::string& from, const std::string& to) override;
    Outcome<void> sync_dir(const std::string& dir) override;

    // A process-wide instance for callers that need no other.
    static PosixFileSystem& instance();
};

// Wraps another FileSystem and misbehaves on request, for tests.
//
// Counters: every read_at, write_at and sync (File::sync and sync_dir) is counted, and so is every
// mutation (a call that changes what is on disk: write_at, truncate, sync, sync_dir, open that creates
// or truncates, remove, rename, mkdir). Fault positions are 1-based values of these counters, so a
// test arms a fault relative to the current count, e.g. fail_write(fs.writes() + 2) fails the second
// write from now. A value of 0 disarms.
//
// Durability model used by drop_unsynced_data() (a power cut): a file's content is durable as of its
// last successful File::sync; a file created through this object exists after a power cut only if
// sync_dir of its directory succeeded after the creation; a removed file comes back (with its durable
// content) unless sync_dir followed the removal. rename and mkdir are treated as durable at once. What
// happens to each file's unsynced bytes is chosen per file (Unsynced), because the kernel may have
// written back any of them, or only the new size with zeros behind it. The model only knows files
// that were mutated through this object; it snapshots a file's content the first time it is mutated,
// so keep test files small.
//
// Thread-safe (one mutex), since counters are also read by tests while readers run.
class FaultInjectingFileSystem final : public FileSystem {
  public:
    // What a power cut does to the bytes written to a file since its last sync.
    enum class Unsynced {
        kLost,    // the file is back to its synced content (and gone if its creation was not durable)
        kKept,    // everything written survived, as after a process crash without power loss
        kZeroed,  // the file kept its new size, but bytes past its synced size read as zeros and bytes
                  // overwritten in place are back to their synced values
    };
    using PowerCut = std::function<Unsynced(const std::string& path)>;

    // forward_syncs = false keeps fsyncs from reaching the base file system: the model above decides
    // what survives, so tests need not pay for real fsyncs.
    explicit FaultInjectingFileSystem(FileSystem& base, bool forward_syncs = true);
    ~FaultInjectingFileSystem() override;

    Outcome<std::unique_ptr<File>> open(const std::string& path, OpenMode mode) override;
    Outcome<bool> exists(const std::string& path) override;
    Outcome<void> mkdir(const std::string& path) override;
    Outcome<std::vector<std::string>> list(const std::string& dir) override;
    Outcome<void> remove(const std::string& path) override;
    Outcome<void> rename(const std::string& from, const std::string& to) override;
    Outcome<void> sync_dir(const std::string& dir) override;

    uint64_t reads() const noexcept { return reads_.load(); }
    uint64_t writes() const;
    uint64_t syncs() const;
    uint64_t mutations() const;
    void reset_counters();

    // The nth write_at fails and writes nothing.
    void fail_write(uint64_t nth);
    // The nth write_at writes only its first `keep` bytes (fewer if the write is smaller), then fails.
    void short_write(uint64_t nth, size_t keep);
    // The nth sync (File::sync or sync_dir) fails without syncing.
    void fail_sync(uint64_t nth);
    // The nth mutation and every mutation after it fail without effect, as if the machine had stopped
    // there; reads keep working. Call drop_unsynced_data() to simulate the power cut that follows.
    void crash_at(uint64_t nth_mutation);
    bool crashed() const;
    // Disarms every fault and ends a crash; counters are kept.
    void clear_faults();
    // A power cut: puts every known file into the state `fate` picks for it (kLost for all by
    // default, see the model above), then clear_faults(); the model then starts over from what is on
    // disk. REQUIRES: no File from this object is open.
    Outcome<void> drop_unsynced_data(const PowerCut& fate = {});

  private:
    class FaultFile;
    friend class FaultFile;

    struct Durable {
        bool exists{false};  // whether the directory entry survives a power cut
        Bytes content;       // content as of the last sync (or of the first mutation)
    };

    // Counts a mutation of `path` and snapshots its durable state if this is the first one. Returns
    // the error to report if the machine has "crashed". REQUIRES: mu_ held.
    std::optional<Error> begin_mutation_locked(const std::string& path, const char* what);
    void track_locked(const std::string& path);

    FileSystem& base_;
    const bool forward_syncs_;
    std::atomic<uint64_t> reads_{0};
    mutable std::mutex mu_;
    uint64_t writes_{0};
    uint64_t syncs_{0};
    uint64_t mutations_{0};
    uint64_t fail_write_at_{0};
    uint64_t short_write_at_{0};
    size_t short_write_keep_{0};
    uint64_t fail_sync_at_{0};
    uint64_t crash_at_{0};
    bool crashed_{false};
    std::map<std::string, Durable> durable_;  // by path, for every file mutated through this object
};

}  // namespace headerd::ancient
