#include "p2p/eth/serve.hpp"

#include <algorithm>
#include <array>
#include <limits>

#include <fmt/format.h>

#include "core/block_header.hpp"
#include "core/hex.hpp"
#include "p2p/eth/reply_cache.hpp"

namespace headerd::eth {
namespace {

// A strided request with a step up to this reads contiguous windows and keeps every step-th header:
// one range read beats step point reads (each a canonical-hash lookup plus a header read) while
// the headers skipped over are few.
constexpr uint64_t kMaxWindowStep = 16;
// Headers read per window, skipped ones included; bounds the memory one window takes.
constexpr uint64_t kWindowHeaders = 1024;

// Moves `n` by `d` toward the head (or genesis); false when that leaves the uint64 range, so that
// an enormous skip ends the walk instead of wrapping around to a block already sent.
bool advance(uint64_t& n, uint64_t d, bool reverse) noexcept {
    if (reverse) {
        if (n < d) return false;
        n -= d;
    } else {
        if (n > std::numeric_limits<uint64_t>::max() - d) return false;
        n += d;
    }
    return true;
}

// Room left in front of a reply's headers for its RLP prefix: the prefix's length when the header
// list takes 64 KiB to 16 MiB, as every full reply of real headers does (192 headers of at least
// 500 bytes), so that the prefix fills it exactly and no header byte moves. Other replies move
// once, in place_prefix; the small ones cheaply.
size_t prefix_room(uint64_t request_id) noexcept {
    std::array<uint8_t, kMaxBlockHeadersPrefix> prefix;
    return encode_block_headers_prefix(request_id, size_t{1} << 16, prefix);
}

// `buf` holds `room` bytes, then the header list's `header_bytes` bytes: makes it the BlockHeaders
// payload [request_id, [headers...]].
void place_prefix(Bytes& buf, size_t room, uint64_t request_id, size_t header_bytes) {
    std::array<uint8_t, kMaxBlockHeadersPrefix> prefix;
    const size_t n = encode_block_headers_prefix(request_id, header_bytes, prefix);
    if (n < room) {
        buf.erase(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(room - n));
    } else if (n > room) {
        buf.insert(buf.begin(), n - room, uint8_t{0});
    }
    std::copy(prefix.begin(), prefix.begin() + static_cast<std::ptrdiff_t>(n), buf.begin());
}

}  // namespace

std::string_view to_string(ServeKind k) noexcept {
    switch (k) {
        case ServeKind::kZeroAmount:
            return "zero_amount";
        case ServeKind::kUnknownHash:
            return "unknown_hash";
        case ServeKind::kContiguous:
            return "contiguous";
        case ServeKind::kSkip:
            return "skip";
        case ServeKind::kNonCanonical:
            return "non_canonical";
    }
    return "unknown";
}

// Headers gathered one at a time. Their bytes go straight into the reply after room for its prefix
// (prefix_room); finish() writes the prefix there, so the headers are copied once and no second
// buffer is needed.
class HeaderServer::Collector {
  public:
    Collector(Bytes& reply, uint64_t request_id, uint64_t max_headers, size_t max_bytes) noexcept
        : reply_(reply),
          request_id_(request_id),
          room_(prefix_room(request_id)),
          max_headers_(max_headers),
          max_bytes_(max_bytes) {
        reply_.assign(room_, 0);
    }

    size_t count() const noexcept { return count_; }
    size_t ancient() const noexcept { return ancient_; }
    size_t bytes() const noexcept { return reply_.size() - room_; }
    bool full() const noexcept { return full_ || count_ >= max_headers_; }

    // Appends one header unless that would pass the byte limit (the first header always goes in);
    // false once the reply is full. `from_ancient` says which store it was read from.
    bool add(ByteView header, bool from_ancient) {
        if (full()) return false;
        if (count_ > 0 && bytes() + header.size() > max_bytes_) {
            full_ = true;
            return false;
        }
        append(reply_, header);
        ++count_;
        ancient_ += from_ancient ? 1 : 0;
        return true;
    }

    // The reply is complete: the prefix goes in front. Returns the header bytes.
    size_t finish() {
        const size_t header_bytes = bytes();
        place_prefix(reply_, room_, request_id_, header_bytes);
        return header_bytes;
    }

  private:
    Bytes& reply_;
    uint64_t request_id_;
    size_t room_;
    uint64_t max_headers_;
    size_t max_bytes_;
    size_t count_{0};
    size_t ancient_{0};
    bool full_{false};
};

Outcome<ServeSummary> HeaderServer::serve(const GetBlockHeadersRequest& req, ItemBuffer& scratch, Bytes& reply) const {
    auto r = serve_impl(req, scratch, reply);
    if (!r) encode_block_headers(reply, req.request_id, {});
    return r;
}

Outcome<ServeSummary> HeaderServer::serve_impl(const GetBlockHeadersRequest& req, ItemBuffer& scratch,
                                               Bytes& reply) const {
    const uint64_t want = std::min(req.amount, limits_.max_headers);
    if (want == 0) {
        encode_block_headers(reply, req.request_id, {});
        return ServeSummary{ServeKind::kZeroAmount, 0, 0};
    }

    uint64_t from = req.origin.number;
    if (req.origin.is_hash) {
        auto number = source_.number_by_hash(req.origin.hash);
        if (!number) return number.error();
        if (!*number) {
            encode_block_headers(reply, req.request_id, {});
            return ServeSummary{ServeKind::kUnknownHash, 0, 0};
        }
        auto canonical = source_.canonical_hash(**number);
        if (!canonical) return canonical.error();
        if (!*canonical || **canonical != req.origin.hash) {
            Collector out(reply, req.request_id, want, limits_.max_bytes);
            if (auto r = collect_side_chain(req, want, scratch, out); !r) return r.error();
            const size_t header_bytes = out.finish();
            const ServeKind kind = out.count() == 0 ? ServeKind::kUnknownHash : ServeKind::kNonCanonical;
            return ServeSummary{kind, out.count(), header_bytes, out.ancient()};
        }
        // A canonical hash is served exactly like its number.
        from = **number;
    }

    const Order order = req.reverse ? Order::kDescending : Order::kAscending;
    if (req.skip == 0) {
        // The fast path: one range read, its bytes spliced into the reply as they are. The store
        // writes them straight into the reply's buffer (lent to `scratch` for the call), behind room
        // for the prefix that is item 0, so every header byte is written once.
        const uint64_t ancient_items = source_.ancient_items();
        const size_t room = prefix_room(req.request_id);
        scratch.clear();
        scratch.bytes.swap(reply);
        scratch.bytes.assign(room, 0);
        scratch.ends.push_back(room);
        auto read = source_.append_header_range(from, want, order, scratch, limits_.max_bytes);
        scratch.bytes.swap(reply);
        const uint64_t n = scratch.size() - 1;
        scratch.clear();
        if (!read) return read.error();
        const size_t header_bytes = reply.size() - room;
        place_prefix(reply, room, req.request_id, header_bytes);
        // The range is from, from +/- 1, ...: the frozen ones are those below ancient_items.
        const uint64_t ancient = ancient_headers(RangeKey{from, n, 1, req.reverse, 0}, n, ancient_items);
        return ServeSummary{ServeKind::kContiguous, n, header_bytes, ancient};
    }

    // skip + 1 wraps to 0 for skip = 2^64-1: then only the origin can be served.
    const uint64_t step = req.skip + 1;
    Collector out(reply, req.request_id, want, limits_.max_bytes);
    if (auto r = collect_numbers(from, step, req.reverse, want, scratch, out); !r) return r.error();
    const size_t header_bytes = out.finish();
    return ServeSummary{ServeKind::kSkip, out.count(), header_bytes, out.ancient()};
}

// Canonical headers from, from +/- step, ... until `want` are collected, the chain ends or the reply
// is full. step 0 stands for an overflowed skip + 1: only `from` is served.
Outcome<void> HeaderServer::collect_numbers(uint64_t from, uint64_t step, bool reverse, uint64_t want,
                                            ItemBuffer& scratch, Collector& out) const {
    const Order order = reverse ? Order::kDescending : Order::kAscending;
    const uint64_t ancient_items = source_.ancient_items();
    uint64_t n = from;
    while (out.count() < want && !out.full()) {
        const uint64_t remaining = want - out.count();
        if (step != 0 && step <= kMaxWindowStep) {
            // k results lie in a window of (k-1)*step + 1 consecutive headers.
            const uint64_t k = std::min(remaining, (kWindowHeaders - 1) / step + 1);
            const uint64_t span = (k - 1) * step + 1;
            if (auto r = source_.header_range(n, span, order, scratch); !r) return r;
            for (size_t i = 0; i < scratch.size(); i += step) {
                const uint64_t number = reverse ? n - i : n + i;
                if (!out.add(scratch.item(i), number < ancient_items)) return {};
            }
            if (scratch.size() < span) return {};  // past the head or below genesis
            if (!advance(n, k * step, reverse)) return {};
        } else {
            if (auto r = source_.header_range(n, 1, order, scratch); !r) return r;
            if (scratch.empty() || !out.add(scratch.item(0), n < ancient_items)) return {};
            if (step == 0 || !advance(n, step, reverse)) return {};
        }
    }
    return {};
}

// A hash origin off the canonical chain. Ascending, only the origin is served: its descendants
// cannot be found by number, and geth continues only from canonical origins too. Descending, the
// walk follows parent hashes skip+1 generations per step and, once it meets the canonical chain,
// continues by number. Point reads are capped by max_lookups so that a long side chain cannot
// make one request expensive.
Outcome<void> HeaderServer::collect_side_chain(const GetBlockHeadersRequest& req, uint64_t want, ItemBuffer& scratch,
                                               Collector& out) const {
    Bytes& header = scratch.bytes;  // scratch serves as a plain byte buffer here
    scratch.ends.clear();
    auto found = source_.header_by_hash(req.origin.hash, header);
    if (!found) return found.error();
    if (!*found) return {};
    out.add(header, false);  // the freezer holds canonical headers only
    if (!req.reverse) return {};

    const uint64_t step = req.skip + 1;  // 0 on overflow: nothing before the origin is asked for
    uint64_t lookups = 1;
    auto peek = peek_header(header);
    if (!peek) {
        return make_error(
            fmt::format("stored header {} is corrupt: {}", to_hex0x(req.origin.hash), peek.error().message()));
    }
    while (out.count() < want && !out.full()) {
        if (step == 0 || peek->number < step) return {};
        const uint64_t target = peek->number - step;
        Hash32 hash = peek->parent_hash;
        uint64_t number = peek->number - 1;
        for (;;) {
            if (++lookups > limits_.max_lookups) return {};
            auto canonical = source_.canonical_hash(number);
            if (!canonical) return canonical.error();
            if (*canonical && **canonical == hash) {
                // Back on the canonical chain, so is every further ancestor: target and the rest
                // are found by number.
                return collect_numbers(target, step, true, want, scratch, out);
            }
            if (++lookups > limits_.max_lookups) return {};
            auto got = source_.header_by_hash(hash, header);
            if (!got) return got.error();
            if (!*got) return {};  // the side chain's ancestry is not stored
            peek = peek_header(header);
            if (!peek) {
                return make_error(
                    fmt::format("stored header {} is corrupt: {}", to_hex0x(hash), peek.error().message()));
            }
            if (peek->number != number) {
                return make_error(fmt::format("stored header {} has number {}, its child says {}", to_hex0x(hash),
                                              peek->number, number));
            }
            if (number == target) {
                if (!out.add(header, false)) return {};
                break;
            }
            hash = peek->parent_hash;
            --number;
        }
    }
    return {};
}

}  // namespace headerd::eth
