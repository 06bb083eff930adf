#pragma once

// The input format of freezer_fuzz, shared with the seed maker (make_seeds.cpp): byte 0 picks the
// mode (bit 0: one "headers" table or the whole freezer; bit 1: a compressed table; bits 2-4: the
// data file size limit, kMaxFileSizes), then records [file id, length (2 bytes, big-endian), bytes]
// each creating the file kFiles[id % size] in kDir.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

#include "ancient/table.hpp"
#include "core/bytes.hpp"

namespace headerd::fuzz {

inline constexpr const char* kFreezerDir = "/chain";
inline constexpr std::string_view kFreezerFiles[] = {
    "headers.cidx",      "headers.meta", "headers.0000.cdat", "headers.0001.cdat",
    "headers.0002.cdat", "headers.ridx", "headers.0000.rdat", "headers.0001.rdat",
    "headers.0002.rdat", "hashes.ridx",  "hashes.meta",       "hashes.0000.rdat",
    "hashes.0001.rdat",  "headers.xxh3", "headers.0003.cdat", "headers.0003.rdat",
};
inline constexpr uint64_t kMaxFileSizes[] = {64, 256, 600, 1024, 2048, 4096, 65536, ancient::kDefaultMaxFileSize};

inline constexpr uint8_t kModeFreezer = 1;
inline constexpr uint8_t kModeCompressed = 2;
inline uint8_t mode_byte(bool freezer, bool compressed, size_t max_file_size_index) {
    return static_cast<uint8_t>((freezer ? kModeFreezer : 0) | (compressed ? kModeCompressed : 0) |
                                (max_file_size_index << 2));
}

// Appends the record of one file (REQUIRES: content.size() < 65536).
inline void append_file_record(Bytes& out, std::string_view name, ByteView content) {
    size_t id = 0;
    while (id < std::size(kFreezerFiles) && kFreezerFiles[id] != name) ++id;
    out.push_back(static_cast<uint8_t>(id));
    out.push_back(static_cast<uint8_t>(content.size() >> 8));
    out.push_back(static_cast<uint8_t>(content.size()));
    out.insert(out.end(), content.begin(), content.end());
}

}  // namespace headerd::fuzz
