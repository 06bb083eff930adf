#include "p2p/eth/reply_cache.hpp"

#include <algorithm>
#include <utility>

namespace headerd::eth {

std::optional<RangeKey> range_key(const GetBlockHeadersRequest& req, uint64_t max_headers, const HeaderSource& source) {
    const uint64_t want = std::min(req.amount, max_headers);
    if (req.origin.is_hash || want == 0 || req.skip == UINT64_MAX) return std::nullopt;
    // The generation before the head: a reorg between the two leaves the key with the old
    // generation, which the reorg's end makes unreachable.
    const uint64_t generation = source.generation();
    const auto head = source.head();
    const uint64_t from = req.origin.number;
    if (!head || from > head->number) return std::nullopt;
    const uint64_t step = req.skip + 1;
    const uint64_t room = req.reverse ? from : head->number - from;  // blocks beyond `from` that exist
    const uint64_t count = std::min(want, room / step + 1);
    return RangeKey{from, count, step, req.reverse, generation};
}

uint64_t ancient_headers(const RangeKey& key, uint64_t headers, uint64_t ancient_items) noexcept {
    if (headers == 0) return 0;
    if (!key.reverse) {
        // from + i*step < ancient_items for i = 0 .. (ancient_items - 1 - from) / step.
        return key.from < ancient_items ? std::min(headers, (ancient_items - 1 - key.from) / key.step + 1) : 0;
    }
    // from - i*step < ancient_items from i = ceil((from - ancient_items + 1) / step) on.
    if (key.from < ancient_items) return headers;
    const uint64_t first = (key.from - ancient_items) / key.step + 1;
    return headers > first ? headers - first : 0;
}

size_t ReplyCache::Hash::operator()(const RangeKey& k) const noexcept {
    uint64_t h = k.from * 0x9e3779b97f4a7c15ULL;
    for (uint64_t v : {k.count, k.step, k.generation, uint64_t{k.reverse}}) {
        h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    }
    return static_cast<size_t>(h);
}

const ReplyCache::Entry* ReplyCache::find(const RangeKey& key) {
    const auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return &it->second->entry;
}

const ReplyCache::Entry* ReplyCache::insert(const RangeKey& key, ByteView header_bytes, size_t headers,
                                            Change& change) {
    change = {};
    auto compressed = p2p::compress_body(header_bytes, compress_buf_);
    if (!compressed) return nullptr;  // above the send limit: no reply is sent from it either
    Entry entry{Bytes(compressed->elements.begin(), compressed->elements.end()), compressed->length, headers};
    if (const auto old = index_.find(key); old != index_.end()) {
        // Two sessions of the worker missed on the same range: keep the newer copy.
        bytes_ -= cost(old->second->entry);
        change.bytes -= static_cast<int64_t>(cost(old->second->entry));
        change.entries -= 1;
        lru_.erase(old->second);
        index_.erase(old);
    }
    const size_t need = cost(entry);
    if (need > max_bytes_) {
        spare_ = std::move(entry);
        return &spare_;
    }
    while (bytes_ + need > max_bytes_ && !lru_.empty()) {
        Slot& last = lru_.back();
        bytes_ -= cost(last.entry);
        change.bytes -= static_cast<int64_t>(cost(last.entry));
        change.entries -= 1;
        ++change.evicted;
        index_.erase(last.key);
        lru_.pop_back();
    }
    lru_.push_front(Slot{key, std::move(entry)});
    index_.emplace(key, lru_.begin());
    bytes_ += need;
    change.bytes += static_cast<int64_t>(need);
    change.entries += 1;
    return &lru_.front().entry;
}

}  // namespace headerd::eth
