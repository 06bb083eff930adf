#pragma once

// What the discv4 and discv5 services share of Kademlia: the iterative lookup (geth's
// p2p/discover/lookup.go) over a protocol's own query, and the randomised refresh timing.

#include <chrono>
#include <cstddef>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>

#include "disc/table.hpp"

namespace headerd::disc {

// geth: alpha queries at a time, bucketSize results.
inline constexpr size_t kLookupAlpha = 3;
inline constexpr size_t kLookupResults = 16;
// Nodes in an answer to FindNode (discv4) or FINDNODE (discv5): geth's bucketSize, as a lookup keeps.
inline constexpr size_t kFindNodeResults = kLookupResults;

// For unordered containers of node ids (uniformly random bits: the first 8 bytes will do).
struct NodeIdHash {
    size_t operator()(const NodeId& id) const noexcept {
        size_t h;
        std::memcpy(&h, id.data(), sizeof h);
        return h;
    }
};

// Asks one node for nodes near the target; nullopt when it did not answer.
using LookupQuery = std::function<boost::asio::awaitable<std::optional<std::vector<Node>>>(Node)>;

struct LookupHooks {
    LookupQuery query;
    std::function<void(const Node&)> on_found;  // each node an answer named, before it is ranked
    std::function<bool()> stopped;              // no new query once it holds
};

// Starts from `seeds` and asks the closest not yet asked nodes, kLookupAlpha at a time, until every
// one of the kLookupResults closest known has been asked: those, nearest to `target` first. `self`
// is never ranked. The queries run on `io` as coroutines of their own; `hooks` is kept until the
// last one ends.
boost::asio::awaitable<std::vector<Node>> iterative_lookup(boost::asio::io_context& io, NodeId self, NodeId target,
                                                           const std::vector<Node>& seeds, LookupHooks hooks);

// geth's refresh timing: a random delay in [interval/2, interval).
std::chrono::milliseconds refresh_delay(std::chrono::seconds interval, std::mt19937_64& rng);

}  // namespace headerd::disc
