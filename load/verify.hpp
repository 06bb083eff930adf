#pragma once

// Checks one BlockHeaders reply against its GetBlockHeaders request by the serving rules every
// client expects (geth's, which headerd follows; docs/load.md, "Verification"):
//  - amount 0, an origin past the server's head, or a hash origin the server cannot have: empty;
//  - otherwise the headers origin, origin +- (skip+1), ... in the request's direction, as many as
//    min(amount, the serve cap) and the chain allow, fewer only where the reply reached the 2 MiB
//    soft limit; never more;
//  - a hash origin: the first header has that hash;
//  - skip 0: each header links to its neighbour by parent hash;
//  - with a reference chain: every header byte for byte as in the reference.
// The server's head may move while a request is in flight, so the head is a range [low, high];
// on eth/68, which announces no head after Status, it may be anywhere above low.

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "core/bytes.hpp"
#include "core/item_buffer.hpp"
#include "p2p/eth/messages.hpp"

namespace headerd::load {

class ReferenceChain;

struct ServeRules {
    uint64_t max_headers{1024};          // geth maxHeadersServe
    size_t soft_bytes{size_t{2} << 20};  // geth softResponseLimit: a reply may stop once past it
    size_t max_header_bytes{2048};       // more than any real header; bounds "one more would pass it"
};

struct VerifyRequest {
    const eth::GetBlockHeadersRequest* request{nullptr};
    // For a hash origin: its number when the client knows it (it learned the hash from an earlier
    // reply), and whether the client knows the hash is on the server's chain (then empty is wrong).
    std::optional<uint64_t> origin_number;
    bool origin_on_chain{false};
    uint64_t head_low{0};   // the server's head when the request was sent
    uint64_t head_high{0};  // ... and when the reply came (>= head_low)
    // eth/68 tells a client its peer's head once, in Status: the head may since have grown past
    // head_high unannounced. Then headers past head_high are no fault when they are otherwise
    // right (in order, linked, as in the reference), up to what the request and the cap allow.
    bool head_unannounced{false};
};

// What a good reply held, for the walks of the profiles.
struct ReplyFacts {
    size_t count{0};
    size_t bytes{0};
    uint64_t first_number{0};
    uint64_t last_number{0};
    Hash32 first_hash{};        // keccak of the first header (computed for hash origins and links)
    Hash32 last_hash{};         // keccak of the last header (when links were checked)
    Hash32 last_parent_hash{};  // the last header's parent hash
    uint64_t expected{0};       // headers the rules allowed at head_high
};

// Scratch reused across calls on one thread.
struct VerifyScratch {
    ItemBuffer reference;
};

// Returns the facts of a good reply, or the reason it is wrong (one line, naming the header index
// and block number where it applies).
struct VerifyResult {
    std::optional<ReplyFacts> facts;  // set when the reply is good
    std::string failure;              // set when it is not
    bool ok() const noexcept { return facts.has_value(); }
};

VerifyResult verify_reply(const VerifyRequest& in, std::span<const ByteView> headers, const ServeRules& rules,
                          const ReferenceChain* reference, VerifyScratch& scratch);

// The block numbers a reply may hold, in order, for an origin number and a head (the rules above,
// without the byte limit): at most `limit` of them.
uint64_t expected_count(uint64_t origin, uint64_t amount, uint64_t skip, bool reverse, uint64_t head,
                        uint64_t max_headers) noexcept;

// One line describing a request, for failures: "by number 8000, 192 headers, skip 0, reverse".
std::string describe(const eth::GetBlockHeadersRequest& r);

}  // namespace headerd::load
