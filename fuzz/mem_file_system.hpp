#pragma once

// An in-memory ancient::FileSystem for the freezer fuzz target: files are byte vectors kept by path,
// directories a set of paths. It follows POSIX where the freezer relies on it: a file stays readable
// through an open File after it was removed or renamed, kRead of a missing file fails, reads past the
// end return fewer bytes, writes past the end fill the gap with zeros. Not thread-safe (the fuzzer
// runs one input at a time). snapshot() returns every file with its bytes, to compare runs.

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ancient/file_system.hpp"

namespace headerd::fuzz {

class MemFileSystem final : public ancient::FileSystem {
  public:
    using Content = std::shared_ptr<Bytes>;

    void put(const std::string& path, ByteView bytes) {
        files_[path] = std::make_shared<Bytes>(bytes.begin(), bytes.end());
        dirs_.insert(parent(path));
    }
    std::map<std::string, Bytes> snapshot() const {
        std::map<std::string, Bytes> out;
        for (const auto& [path, content] : files_) out.emplace(path, *content);
        return out;
    }

    Outcome<std::unique_ptr<ancient::File>> open(const std::string& path, ancient::OpenMode mode) override {
        auto it = files_.find(path);
        if (it == files_.end()) {
            if (mode == ancient::OpenMode::kRead) return make_error("open " + path + ": No such file or directory");
            if (dirs_.count(parent(path)) == 0) return make_error("open " + path + ": No such file or directory");
            it = files_.emplace(path, std::make_shared<Bytes>()).first;
        } else if (mode == ancient::OpenMode::kTruncate) {
            it->second->clear();
        }
        return std::unique_ptr<ancient::File>(std::make_unique<MemFile>(it->second, path));
    }
    Outcome<bool> exists(const std::string& path) override { return files_.count(path) + dirs_.count(path) > 0; }
    Outcome<void> mkdir(const std::string& path) override {
        for (std::string p = path; !p.empty() && p != "/"; p = parent(p)) dirs_.insert(p);
        return {};
    }
    Outcome<std::vector<std::string>> list(const std::string& dir) override {
        if (dirs_.count(dir) == 0) return make_error("opendir " + dir + ": No such file or directory");
        std::vector<std::string> names;
        const std::string prefix = dir + "/";
        for (const auto& [path, content] : files_) {
            if (path.starts_with(prefix) && path.find('/', prefix.size()) == std::string::npos) {
                names.push_back(path.substr(prefix.size()));
            }
        }
        return names;
    }
    Outcome<void> remove(const std::string& path) override {
        if (files_.erase(path) == 0) return make_error("unlink " + path + ": No such file or directory");
        return {};
    }
    Outcome<void> rename(const std::string& from, const std::string& to) override {
        auto it = files_.find(from);
        if (it == files_.end()) return make_error("rename " + from + ": No such file or directory");
        Content content = it->second;
        files_.erase(it);
        files_[to] = std::move(content);
        return {};
    }
    Outcome<void> sync_dir(const std::string&) override { return {}; }

  private:
    class MemFile final : public ancient::File {
      public:
        MemFile(Content content, std::string path) : content_(std::move(content)), path_(std::move(path)) {}
        Outcome<size_t> read_at(uint64_t offset, std::span<uint8_t> out) const override {
            if (offset >= content_->size()) return size_t{0};
            const size_t n = std::min<uint64_t>(out.size(), content_->size() - offset);
            if (n > 0) std::memcpy(out.data(), content_->data() + offset, n);
            return n;
        }
        Outcome<void> write_at(uint64_t offset, ByteView data) override {
            // A fuzzed offset (from an index entry) must not make the fuzzer allocate gigabytes.
            if (offset + data.size() > (uint64_t{64} << 20)) return make_error("write " + path_ + ": File too large");
            if (content_->size() < offset + data.size()) content_->resize(offset + data.size());
            std::copy(data.begin(), data.end(), content_->begin() + static_cast<std::ptrdiff_t>(offset));
            return {};
        }
        Outcome<void> sync() override { return {}; }
        Outcome<void> truncate(uint64_t size) override {
            if (size > (uint64_t{64} << 20)) return make_error("truncate " + path_ + ": File too large");
            content_->resize(size);
            return {};
        }
        Outcome<uint64_t> size() const override { return uint64_t{content_->size()}; }
        const std::string& path() const noexcept override { return path_; }

      private:
        Content content_;
        std::string path_;
    };

    static std::string parent(const std::string& path) {
        const size_t slash = path.rfind('/');
        return slash == std::string::npos || slash == 0 ? std::string("/") : path.substr(0, slash);
    }

    std::map<std::string, Content> files_;
    std::set<std::string> dirs_{"/"};
};

}  // namespace headerd::fuzz
