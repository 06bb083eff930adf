#pragma once

// The published mainnet headers of blocks 0..8191 (tests/data), loaded once per test binary: the
// RLP file split into headers, and their hashes from the .hashes.txt list.

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/bytes.hpp"
#include "core/hex.hpp"
#include "core/rlp.hpp"
#include "tests/data_dir.hpp"

namespace headerd::testing {

inline const std::string kDataDir = data_dir();

// The number of the last header: the head of a datadir that holds them all.
inline constexpr uint64_t kReferenceHead = 8191;

inline Bytes read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct ReferenceChain {
    Bytes rlp;
    std::vector<ByteView> headers;
    std::vector<Hash32> hashes;

    ReferenceChain() {
        rlp = read_file(kDataDir + "/mainnet-headers-0-8191.rlp");
        ByteView rest{rlp};
        while (!rest.empty()) headers.push_back(*rlp::next_item(rest));
        std::ifstream in(kDataDir + "/mainnet-headers-0-8191.hashes.txt");
        uint64_t n = 0;
        std::string hex;
        while (in >> n >> hex) hashes.push_back(*hash_from_hex(hex));
    }
};

inline const ReferenceChain& reference_chain() {
    static const ReferenceChain r;
    return r;
}

}  // namespace headerd::testing
