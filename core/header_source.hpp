#pragma once

// HeaderSource: what the header server reads from. headerd's ChainDb (db/chain_db.hpp) is one
// implementation; a program that embeds the server may give it any other, an in-memory store for
// instance (docs/embedding.md). The server only reads: appending, freezing and repair are the
// store's own business.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "core/bytes.hpp"
#include "core/chain_config.hpp"
#include "core/item_buffer.hpp"
#include "core/result.hpp"
#include "core/uint256.hpp"

namespace headerd {

enum class Order { kAscending, kDescending };

// Which store a header came from: the freezer (blocks below ancient_items) or LevelDB. A source
// with one store reports every header as kLevelDb (ancient_items() 0).
enum class Store : uint8_t { kAncient = 0, kLevelDb = 1 };
inline constexpr size_t kStoreCount = 2;

// Told about every store read a source makes, so a node can export read times without the store
// depending on a metrics library. Called on the reading thread; must be cheap.
class ReadObserver {
  public:
    virtual ~ReadObserver() = default;
    virtual void on_read(Store store, uint64_t headers, std::chrono::steady_clock::duration elapsed) noexcept = 0;
};

// The head of a chain: what Status announces.
struct Head {
    uint64_t number{0};
    Hash32 hash{};
    U256 total_difficulty{0};
    uint64_t timestamp{0};
};

// Thread-safety: the server calls every member from any of its worker threads at once, while the
// store may grow (a source that changes must serve each range whole or not at all). Calls may
// block the calling worker (a disk read); they should not wait on the network.
class HeaderSource {
  public:
    virtual ~HeaderSource() = default;

    // The network the headers belong to (network id, genesis, forks: Status and the fork id);
    // nullptr while there is none. The server needs one before it starts.
    virtual const ChainConfig* config() const noexcept = 0;
    // The highest canonical block; nullopt while there is none (the server needs one to start).
    virtual std::optional<Head> head() const = 0;
    // Blocks below this number come from the "ancient" store (a label on the served-headers metric).
    virtual uint64_t ancient_items() const noexcept { return 0; }
    // Changes whenever a canonical header at or below the head may have changed (a reorg, a
    // repair): a reader that keeps what it read (the server's cache of compressed replies) keeps it
    // under the generation it read before reading, and never uses it under another. Growing the
    // head and freezing change nothing. A source whose canonical headers never change keeps 0.
    virtual uint64_t generation() const noexcept { return 0; }

    // Appends canonical header RLP to `out` behind the items it holds, byte for byte as received:
    // from, from+1, ... (ascending) or from, from-1, ... (descending); at most `count` headers,
    // fewer where the chain ends (past the head, below genesis) or once the appended bytes reach
    // max_bytes (the first header is always appended). An error means the store cannot answer (a
    // damaged block); its message names the block.
    // REQUIRES: out.bytes holds exactly its items (out.bytes.size() is the last end, or 0).
    virtual Outcome<void> append_header_range(uint64_t from, uint64_t count, Order order, ItemBuffer& out,
                                              size_t max_bytes = std::numeric_limits<size_t>::max()) const = 0;
    // Point lookups; nullopt when absent. number_by_hash knows side-chain headers too, if the store
    // keeps any; canonical_hash only the canonical chain.
    virtual Outcome<std::optional<uint64_t>> number_by_hash(const Hash32& hash) const = 0;
    virtual Outcome<std::optional<Hash32>> canonical_hash(uint64_t number) const = 0;
    // Appends the canonical hashes of blocks [from, from + count) to `out`, stopping at the first
    // block not held. This default asks canonical_hash for each; a store that keeps runs of hashes
    // together (ChainDb's freezer) reads them at once.
    virtual Outcome<void> canonical_hashes(uint64_t from, uint64_t count, std::vector<Hash32>& out) const {
        for (uint64_t n = from; n - from < count; ++n) {
            auto h = canonical_hash(n);
            if (!h) return h.error();
            if (!*h) break;
            out.push_back(**h);
        }
        return {};
    }
    // Header RLP by hash into `out` (cleared first); false when unknown.
    virtual Outcome<bool> header_by_hash(const Hash32& hash, Bytes& out) const = 0;

    // append_header_range into an emptied `out`.
    Outcome<void> header_range(uint64_t from, uint64_t count, Order order, ItemBuffer& out,
                               size_t max_bytes = std::numeric_limits<size_t>::max()) const {
        out.clear();
        return append_header_range(from, count, order, out, max_bytes);
    }
};

}  // namespace headerd
