#pragma once

// Refetching damaged headers (docs/operations.md, "Bit rot"): every block ChainDb has marked
// damaged is asked from peers and written back through ChainDb::repair_header, which takes a
// header only if it hashes to what the block above names and names the block below as its parent.
// Runs of damaged blocks are repaired highest first, so that each repaired header vouches for the
// one below it. Used by `headerd repair` and by the scrubber of `serve --follow`.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "db/chain_db.hpp"
#include "p2p/connection.hpp"
#include "p2p/enode/node_key.hpp"
#include "p2p/peer.hpp"

namespace headerd::sync {

struct RepairConfig {
    std::vector<p2p::Enode> peers;
    p2p::Clock::duration request_timeout{std::chrono::seconds(10)};
    p2p::Clock::duration handshake_timeout{std::chrono::seconds(10)};
    uint64_t max_request{1024};  // headers per request
};

struct RepairResult {
    uint64_t damaged{0};             // blocks marked damaged when it started
    uint64_t repaired{0};            // written back
    std::vector<uint64_t> left;      // still damaged at the end
    std::vector<std::string> notes;  // what failed, per peer or block, one line each
};

// Dials the peers (on its own io_context, in the calling thread), repairs what it can and returns
// what is left. Never throws; a peer that cannot be reached or gives a header that does not fit is
// noted and the next one is asked. REQUIRES: local.key, local.config outlive the call.
RepairResult repair_damaged(db::ChainDb& db, const p2p::LocalNode& local, const RepairConfig& config);

}  // namespace headerd::sync
