#pragma once

// The header-serving policy: turns one GetBlockHeaders request into the full BlockHeaders payload,
// splicing stored header RLP from a HeaderSource (a ChainDb in headerd) into the reply. Sans-I/O;
// the session compresses and frames the reply. Rules (caps, overflow guards, hash origins): docs/wire.md, "Serving
// headers".

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/bytes.hpp"
#include "core/header_source.hpp"
#include "core/item_buffer.hpp"
#include "core/result.hpp"
#include "p2p/eth/messages.hpp"

namespace headerd::eth {

struct ServeLimits {
    uint64_t max_headers{1024};         // per reply (geth maxHeadersServe)
    size_t max_bytes{size_t{2} << 20};  // header RLP per reply; the first header is always sent
    uint64_t max_lookups{1024};         // point reads a walk along a side chain may make
};

// How a request was served; a label for headerd_header_requests_total{kind}.
enum class ServeKind : uint8_t {
    kZeroAmount,    // amount 0: empty reply, nothing read
    kUnknownHash,   // hash origin we do not have: empty reply
    kContiguous,    // skip 0 from a number or canonical hash: one header_range call
    kSkip,          // skip > 0 from a number or canonical hash
    kNonCanonical,  // hash origin off the canonical chain
};
std::string_view to_string(ServeKind k) noexcept;

struct ServeSummary {
    ServeKind kind{ServeKind::kZeroAmount};
    size_t headers{0};          // headers in the reply, <= min(amount, max_headers)
    size_t header_bytes{0};     // their RLP bytes
    size_t ancient_headers{0};  // of `headers`, those read from the freezer (the rest came from LevelDB)
};

// Thread-safety: serve() is const and keeps no state between calls, so one HeaderServer may serve
// every connection at once; each connection passes its own scratch and reply buffers.
class HeaderServer {
  public:
    explicit HeaderServer(const HeaderSource& source, ServeLimits limits = {}) noexcept
        : source_(source), limits_(limits) {}

    // Replaces `reply` with the BlockHeaders payload [request id, [headers...]] for `req`: at most
    // min(amount, max_headers) headers and about max_bytes of them, numbers origin, origin +/-
    // (skip+1), ... while they exist (a short or empty list past the head, below genesis or for an
    // unknown hash). `scratch` is working space (skip 0 reads the headers straight into `reply`'s
    // buffer, lent to scratch for the call, and uses only scratch's item ends). With warm buffers, a
    // number origin and skip 0, no heap allocation is made here beyond what the source does, and each
    // header byte is written once. An error means a damaged store (the
    // message names the block); `reply` then holds an empty reply for the same request id, which
    // the session may still send.
    Outcome<ServeSummary> serve(const GetBlockHeadersRequest& req, ItemBuffer& scratch, Bytes& reply) const;

    const HeaderSource& source() const noexcept { return source_; }
    const ServeLimits& limits() const noexcept { return limits_; }

  private:
    class Collector;
    Outcome<ServeSummary> serve_impl(const GetBlockHeadersRequest& req, ItemBuffer& scratch, Bytes& reply) const;
    Outcome<void> collect_numbers(uint64_t from, uint64_t step, bool reverse, uint64_t want, ItemBuffer& scratch,
                                  Collector& out) const;
    Outcome<void> collect_side_chain(const GetBlockHeadersRequest& req, uint64_t want, ItemBuffer& scratch,
                                     Collector& out) const;

    const HeaderSource& source_;
    ServeLimits limits_;
};

}  // namespace headerd::eth
