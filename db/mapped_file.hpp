#pragma once

#include <memory>
#include <string>

#include "core/bytes.hpp"
#include "core/result.hpp"

namespace headerd::db {

// A read-only memory map of a whole file (imports read archives of hundreds of MB without copying).
class MappedFile {
  public:
    static Outcome<MappedFile> open(const std::string& path);
    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&& other) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    ~MappedFile();

    ByteView bytes() const noexcept { return {data_, size_}; }
    const std::string& path() const noexcept { return path_; }

  private:
    MappedFile() = default;
    std::string path_;
    const uint8_t* data_{nullptr};
    size_t size_{0};
};

}  // namespace headerd::db
