#pragma once

// Helpers shared by the ancient/ tests (and usable by db/ tests): a scratch directory, the real
// mainnet headers and hashes from tests/data, and whole-file reads and writes.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ancient/file_system.hpp"
#include "ancient/table.hpp"
#include "core/bytes.hpp"
#include "core/hex.hpp"
#include "core/rlp.hpp"
#include "tests/data_dir.hpp"

namespace headerd::ancient::testing {

// The real file system, for tests that do not inject faults.
inline PosixFileSystem& posix = PosixFileSystem::instance();

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
  public:
    TempDir() {
        const char* base = std::getenv("TMPDIR");
        std::string pattern = std::string(base && *base ? base : "/tmp") + "/headerd-ancient-XXXXXX";
        if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern);
        path_ = pattern;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const { return path_; }
    std::string operator/(const std::string& name) const { return path_ + "/" + name; }

  private:
    std::string path_;
};

inline Bytes read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline void write_file(const std::string& path, ByteView content) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(content.size()));
    if (!out) throw std::runtime_error("cannot write " + path);
}

inline void append_file(const std::string& path, ByteView content) {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out.write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(content.size()));
    if (!out) throw std::runtime_error("cannot append to " + path);
}

// Where item `item` of the headers table in freezer directory `dir` lies in its data file: [begin,
// end). Throws if the item is not wholly in one file.
inline std::pair<uint64_t, uint64_t> item_span(const std::string& dir, uint64_t item) {
    std::ifstream index(dir + "/headers.cidx", std::ios::binary);
    uint8_t e[2 * kIndexEntrySize];
    index.seekg(static_cast<std::streamoff>(item * kIndexEntrySize));
    index.read(reinterpret_cast<char*>(e), sizeof e);
    if (!index) throw std::runtime_error("cannot read the index entries of item " + std::to_string(item));
    const IndexEntry a = IndexEntry::decode(e);
    const IndexEntry b = IndexEntry::decode(e + kIndexEntrySize);
    if (a.file != b.file && item != 0) throw std::runtime_error("item " + std::to_string(item) + " spans two files");
    return {item == 0 ? 0 : a.offset, b.offset};
}

// Flips the bits `mask` of the byte at `offset` of a file (bit rot); a second call undoes it.
inline void flip_byte(const std::string& path, uint64_t offset, uint8_t mask = 0x01) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ static_cast<char>(mask));
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(&c, 1);
    if (!f) throw std::runtime_error("cannot flip byte " + std::to_string(offset) + " of " + path);
}

// Every regular file of a directory with its bytes, to show that something left a directory alone.
inline std::map<std::string, Bytes> snapshot_dir(const std::string& dir) {
    std::map<std::string, Bytes> files;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        if (e.is_regular_file()) files[e.path().filename().string()] = read_file(e.path().string());
    }
    return files;
}

// Header RLP of mainnet blocks 0..8191, split with rlp::next_item.
inline const std::vector<Bytes>& mainnet_headers() {
    static const std::vector<Bytes> headers = [] {
        const Bytes all = read_file(headerd::testing::data_dir() + "/mainnet-headers-0-8191.rlp");
        std::vector<Bytes> out;
        ByteView in{all};
        while (!in.empty()) {
            auto item = rlp::next_item(in);
            if (!item) throw std::runtime_error("bad RLP in mainnet-headers-0-8191.rlp");
            out.emplace_back(item->begin(), item->end());
        }
        return out;
    }();
    return headers;
}

// Block hashes 0..8191 from mainnet-headers-0-8191.hashes.txt ("NUMBER 0xHASH" lines).
inline const std::vector<Hash32>& mainnet_hashes() {
    static const std::vector<Hash32> hashes = [] {
        std::ifstream in(headerd::testing::data_dir() + "/mainnet-headers-0-8191.hashes.txt");
        std::vector<Hash32> out;
        uint64_t number = 0;
        std::string hex;
        while (in >> number >> hex) {
            auto h = hash_from_hex(hex);
            if (!h || number != out.size()) throw std::runtime_error("bad line in mainnet-headers-0-8191.hashes.txt");
            out.push_back(*h);
        }
        return out;
    }();
    return hashes;
}

inline std::vector<ByteView> views(const std::vector<Bytes>& items, size_t begin, size_t end) {
    std::vector<ByteView> out;
    for (size_t i = begin; i < end; ++i) out.emplace_back(items[i]);
    return out;
}

// What a power cut may do to bytes not yet synced, file by file, for crash tests to run through. The
// mixed cases are the ones that punish a wrong sync order: an index written back while its data was
// not.
struct PowerCutCase {
    const char* name;
    FaultInjectingFileSystem::PowerCut fate;
};

inline const PowerCutCase kPowerCuts[] = {
    {"unsynced bytes lost", nullptr},
    {"unsynced bytes kept (process crash)",
     [](const std::string&) { return FaultInjectingFileSystem::Unsynced::kKept; }},
    {"unsynced bytes zeroed", [](const std::string&) { return FaultInjectingFileSystem::Unsynced::kZeroed; }},
    {"index and meta written back, data zeroed",
     [](const std::string& path) {
         return path.ends_with("dat") ? FaultInjectingFileSystem::Unsynced::kZeroed
                                      : FaultInjectingFileSystem::Unsynced::kKept;
     }},
    {"data and meta written back, index zeroed",
     [](const std::string& path) {
         return path.ends_with("idx") ? FaultInjectingFileSystem::Unsynced::kZeroed
                                      : FaultInjectingFileSystem::Unsynced::kKept;
     }},
    {"data and index written back, meta lost",
     [](const std::string& path) {
         return path.ends_with("meta") ? FaultInjectingFileSystem::Unsynced::kLost
                                       : FaultInjectingFileSystem::Unsynced::kKept;
     }},
};

}  // namespace headerd::ancient::testing
