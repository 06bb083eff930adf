#pragma once

// Compressed header lists kept for the requests that come again (docs/wire.md, "Compressed replies
// kept"). Syncing clients ask for the same ranges over and over: a skeleton's fills, the probes
// of several clients, many clients on one range. A BlockHeaders reply is [request id, [headers]],
// and a snappy block can be cut where the header list's bytes begin (p2p/wire/message_codec.hpp,
// CompressedBody), so the header list of a range compressed once is sent again behind a new
// prefix, with nothing read and nothing compressed but the prefix.
//
// One cache per worker (no lock: only its thread touches it), bounded by the bytes it keeps, least
// recently used out first. A range is named by what its reply holds: the first number, the step,
// the direction, the count of headers the chain had for it when it was asked (so a range cut by
// the head is not served once the head has moved on) and the chain's generation (a reorg or a
// repair changes it, and every range kept before is never found again).

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>

#include "core/bytes.hpp"
#include "core/header_source.hpp"
#include "p2p/eth/messages.hpp"
#include "p2p/wire/message_codec.hpp"

namespace headerd::eth {

struct RangeKey {
    uint64_t from{0};
    uint64_t count{0};  // headers the chain held for the request when it came: min(amount, to the head or 0)
    uint64_t step{1};   // skip + 1
    bool reverse{false};
    uint64_t generation{0};  // HeaderSource::generation() when it came
    bool operator==(const RangeKey&) const = default;
};

// The range a request by number reads, against `source` as it is now; nullopt for what is not one
// (a hash origin, amount 0, an origin past the head, a skip whose step overflows).
std::optional<RangeKey> range_key(const GetBlockHeadersRequest& req, uint64_t max_headers, const HeaderSource& source);

// How many of `headers` headers from, from +/- step, ... lie below `ancient_items` (for the served-
// headers metric's store label).
uint64_t ancient_headers(const RangeKey& key, uint64_t headers, uint64_t ancient_items) noexcept;

class ReplyCache {
  public:
    struct Entry {
        Bytes elements;     // the header list's bytes compressed (CompressedBody::elements)
        size_t length{0};   // their uncompressed length
        size_t headers{0};  // how many headers (at most RangeKey::count: the byte cap may cut it)
        p2p::CompressedBody body() const noexcept { return {elements, length}; }
    };
    // What a change of the cache did, for the caller's metrics.
    struct Change {
        int64_t bytes{0};
        int64_t entries{0};
        uint64_t evicted{0};
    };

    // Keeps entries up to `max_bytes` of compressed bytes (0: keeps nothing).
    explicit ReplyCache(size_t max_bytes) : max_bytes_(max_bytes) {}
    ReplyCache(const ReplyCache&) = delete;
    ReplyCache& operator=(const ReplyCache&) = delete;

    // The entry for `key` (now the most recently used), or nullptr. The pointer is valid until the
    // next insert.
    const Entry* find(const RangeKey& key);
    // Compresses `header_bytes` (the `headers` headers of the range's reply, as they are in it) and
    // keeps them, evicting the least recently used entries to make room; an entry larger than the
    // whole budget is compressed but not kept. Returns the entry (valid until the next insert) and
    // what changed in `change`; nullptr only for a body above the send limit.
    const Entry* insert(const RangeKey& key, ByteView header_bytes, size_t headers, Change& change);

    size_t max_bytes() const noexcept { return max_bytes_; }
    size_t bytes() const noexcept { return bytes_; }
    size_t entries() const noexcept { return lru_.size(); }

  private:
    struct Hash {
        size_t operator()(const RangeKey& k) const noexcept;
    };
    struct Slot {
        RangeKey key;
        Entry entry;
    };
    // What an entry takes: its buffer, its list node and its index entry (an estimate of both).
    static size_t cost(const Entry& e) noexcept { return e.elements.capacity() + sizeof(Slot) + 64; }

    size_t max_bytes_;
    size_t bytes_{0};
    std::list<Slot> lru_;  // most recently used first
    std::unordered_map<RangeKey, std::list<Slot>::iterator, Hash> index_;
    Entry spare_;  // an entry too large to keep
    Bytes compress_buf_;
};

}  // namespace headerd::eth
