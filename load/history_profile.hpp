#pragma once

// The history profiles: clients that sync as real clients do after (or beside) their headers,
// asking GetBlockBodies and GetReceipts for the blocks of the headers they got, with the imitated
// client's request sizes, order, concurrency, and rules for what it skips and whom it drops
// (docs/load.md, "History profiles", names the source of every constant).
//
// A history walk takes the chain in windows from the head down: one header request of the
// client's shape (geth's 512-header skeleton batch, Nethermind's 192, Besu's 192, reth's 1000)
// gives the window's headers, which the walk keeps (decoded) to ask for and to check the window's
// bodies and receipt lists; when every one of them is in (or given up), the next window's headers
// are asked. Within a window the client's own order, sizes and requests in flight apply.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "load/profile.hpp"

namespace headerd::load {

std::unique_ptr<Walk> make_history_walk(const ProfileSpec& spec);
std::unique_ptr<Judge> make_history_judge(const ProfileSpec& spec);

// Nethermind's per-peer request sizer for bodies and receipts (LatencyAndMessageSizeBasedRequestSizer
// over AdaptiveRequestSizer, set up in NodeStatsLight): the size grows x1.5 after a full reply within
// 2 s, shrinks /1.5 after a failed or short reply, one over 3 s, or one over 3,000,000 bytes.
struct NethermindSizer {
    uint64_t min{1};
    uint64_t max{128};
    uint64_t size{4};
    // After a request of `asked` items (at most `size`, fewer when fewer were left to ask): `got`
    // came back in `bytes` after `rtt`; `failed` for a timeout or an invalid reply. It grows only
    // when the request was as big as the size allowed (Nethermind: "if the original request size
    // is low, increasing wont do anything").
    void update(bool failed, uint64_t asked, uint64_t got, uint64_t bytes, std::chrono::steady_clock::duration rtt);
};

}  // namespace headerd::load
