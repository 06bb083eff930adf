#pragma once

// A side chain of the published mainnet headers (tests/reference_chain.hpp): real-looking headers
// that fork from mainnet at a chosen block, to reorganise a stored chain with (db/skeleton_test.cpp,
// db/skeleton_concurrency_test.cpp) or to lie to a fetcher with (sync/fetcher_test.cpp).

#include <cstdint>
#include <utility>
#include <vector>

#include "core/block_header.hpp"
#include "core/bytes.hpp"
#include "db/chain_db.hpp"
#include "tests/reference_chain.hpp"

namespace headerd::testing {

// A chain that leaves mainnet at block `fork`: that block with one byte of its extra-data changed
// (re-encoded, so still a valid header), every block above it up to `top` the real one with its
// parent hash rewritten to the new parent's hash. Same difficulties, so the same total difficulty.
struct SideChain {
    uint64_t fork;
    std::vector<Bytes> rlps;  // index i: block fork + i
    std::vector<Hash32> hashes;

    SideChain(uint64_t fork_at, uint64_t top) : fork(fork_at) {
        for (uint64_t n = fork; n <= top; ++n) {
            BlockHeader h = *decode_block_header(reference_chain().headers.at(n));
            if (n == fork) {
                if (h.extra_data.empty()) {
                    h.extra_data.push_back(0x01);
                } else {
                    h.extra_data.back() ^= 0x01;
                }
            } else {
                h.parent_hash = hashes.back();
            }
            Bytes out;
            encode(out, h);
            hashes.push_back(header_hash(out));
            rlps.push_back(std::move(out));
        }
    }
    ByteView rlp(uint64_t n) const { return rlps.at(n - fork); }
    const Hash32& hash(uint64_t n) const { return hashes.at(n - fork); }
    db::SkeletonHeader header(uint64_t n) const { return db::SkeletonHeader{rlp(n), hash(n), n}; }
    // Headers top, top - 1, ..., bottom.
    std::vector<db::SkeletonHeader> down(uint64_t top, uint64_t bottom) const {
        std::vector<db::SkeletonHeader> out;
        for (uint64_t n = top; n >= bottom && n <= top; --n) out.push_back(header(n));
        return out;
    }
};

}  // namespace headerd::testing
