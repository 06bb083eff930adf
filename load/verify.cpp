#include "load/verify.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "core/block_header.hpp"
#include "core/hex.hpp"
#include "load/reference_chain.hpp"

namespace headerd::load {

namespace {

VerifyResult fail(std::string why) {
    VerifyResult r;
    r.failure = std::move(why);
    return r;
}

// The number of header i of a reply from `origin`; nullopt past the end of the number space.
std::optional<uint64_t> nth(uint64_t origin, uint64_t skip, bool reverse, uint64_t i) noexcept {
    if (i == 0) return origin;
    // step = (skip + 1) * i without overflow.
    if (skip == UINT64_MAX) return std::nullopt;
    const uint64_t stride = skip + 1;
    if (i > UINT64_MAX / stride) return std::nullopt;
    const uint64_t step = stride * i;
    if (reverse) {
        if (step > origin) return std::nullopt;
        return origin - step;
    }
    if (step > UINT64_MAX - origin) return std::nullopt;
    return origin + step;
}

}  // namespace

uint64_t expected_count(uint64_t origin, uint64_t amount, uint64_t skip, bool reverse, uint64_t head,
                        uint64_t max_headers) noexcept {
    if (amount == 0 || origin > head) return 0;
    const uint64_t limit = std::min(amount, max_headers);
    // Headers after the origin that the chain holds in the request's direction, then the origin.
    const uint64_t span = reverse ? origin : head - origin;
    const uint64_t after = skip == UINT64_MAX ? 0 : span / (skip + 1);
    return after >= limit ? limit : after + 1;
}

std::string describe(const eth::GetBlockHeadersRequest& r) {
    const std::string origin =
        r.origin.is_hash ? "by hash " + to_hex0x(r.origin.hash) : fmt::format("by number {}", r.origin.number);
    return fmt::format("id {}, {}, {} headers, skip {}, {}", r.request_id, origin, r.amount, r.skip,
                       r.reverse ? "reverse" : "forward");
}

VerifyResult verify_reply(const VerifyRequest& in, std::span<const ByteView> headers, const ServeRules& rules,
                          const ReferenceChain* reference, VerifyScratch& scratch) {
    const eth::GetBlockHeadersRequest& req = *in.request;
    ReplyFacts facts;
    facts.count = headers.size();
    for (ByteView h : headers) facts.bytes += h.size();

    if (req.amount == 0) {
        if (!headers.empty()) return fail(fmt::format("{} headers for amount 0 (must be empty)", headers.size()));
        return VerifyResult{facts, {}};
    }

    // The origin's number: given, or (hash origin) the first header's.
    uint64_t origin = req.origin.number;
    if (req.origin.is_hash) {
        if (headers.empty()) {
            bool known = in.origin_on_chain;
            std::optional<uint64_t> number = in.origin_number;
            if (!known && reference != nullptr) {
                auto n = reference->number_of(req.origin.hash);
                if (!n) return fail("reference chain: " + n.error().message);
                if (*n && **n <= in.head_low) {
                    known = true;
                    number = **n;
                }
            }
            if (known && (!number || *number <= in.head_low)) {
                return fail(fmt::format("empty reply for hash origin {}{} on the server's chain",
                                        to_hex0x(req.origin.hash), number ? fmt::format(" (block {})", *number) : ""));
            }
            return VerifyResult{facts, {}};
        }
        facts.first_hash = header_hash(headers.front());
        if (facts.first_hash != req.origin.hash) {
            return fail(fmt::format("first header has hash {}, not the requested origin {}", to_hex0x(facts.first_hash),
                                    to_hex0x(req.origin.hash)));
        }
        auto peek = peek_header(headers.front());
        if (!peek) return fail("header 0 does not decode: " + peek.error().message());
        origin = peek->number;
        if (in.origin_number && *in.origin_number != origin) {
            return fail(fmt::format("origin hash {} is block {} here, {} before", to_hex0x(req.origin.hash), origin,
                                    *in.origin_number));
        }
    }

    const uint64_t most = expected_count(origin, req.amount, req.skip, req.reverse, in.head_high, rules.max_headers);
    const uint64_t least = expected_count(origin, req.amount, req.skip, req.reverse, in.head_low, rules.max_headers);
    facts.expected = most;
    const uint64_t cap = in.head_unannounced
                             ? expected_count(origin, req.amount, req.skip, req.reverse, UINT64_MAX, rules.max_headers)
                             : most;
    if (headers.size() > cap) {
        return fail(fmt::format("{} headers, at most {} allowed (origin {}, server head {})", headers.size(), cap,
                                origin,
                                in.head_unannounced ? std::string("unannounced") : std::to_string(in.head_high)));
    }
    if (headers.size() < least && facts.bytes + rules.max_header_bytes <= rules.soft_bytes) {
        return fail(
            fmt::format("short reply: {} of {} headers (origin {}, server head {}), {} bytes, not at the {} "
                        "byte limit",
                        headers.size(), least, origin, in.head_low, facts.bytes, rules.soft_bytes));
    }
    if (headers.empty()) return VerifyResult{facts, {}};

    // Numbers.
    for (size_t i = 0; i < headers.size(); ++i) {
        auto peek = peek_header(headers[i]);
        if (!peek) return fail(fmt::format("header {} does not decode: {}", i, peek.error().message()));
        const auto want = nth(origin, req.skip, req.reverse, i);
        if (!want || peek->number != *want) {
            return fail(fmt::format("header {} is block {}, expected block {}", i, peek->number,
                                    want ? std::to_string(*want) : std::string("none")));
        }
        if (i + 1 == headers.size()) facts.last_parent_hash = peek->parent_hash;
        if (i == 0) facts.first_number = peek->number;
        facts.last_number = peek->number;
    }

    if (reference != nullptr) {
        // Byte for byte: the reference chain is verified, so this also checks hashes and links.
        const uint64_t hi = std::max(facts.first_number, facts.last_number);
        if (hi > reference->head()) {
            return fail(fmt::format("header of block {} is past the reference chain's head {}", hi, reference->head()));
        }
        // One read for a contiguous reply, one per header with a skip.
        const uint64_t lo = std::min(facts.first_number, facts.last_number);
        if (req.skip == 0) {
            if (auto r = reference->range(lo, hi - lo + 1, scratch.reference); !r) {
                return fail("reference chain: " + r.error().message);
            }
        }
        for (size_t i = 0; i < headers.size(); ++i) {
            const uint64_t n = *nth(origin, req.skip, req.reverse, i);
            if (req.skip != 0) {
                if (auto r = reference->range(n, 1, scratch.reference); !r) {
                    return fail("reference chain: " + r.error().message);
                }
            }
            const ByteView want = scratch.reference.item(req.skip == 0 ? static_cast<size_t>(n - lo) : 0);
            if (want.size() != headers[i].size() || std::memcmp(want.data(), headers[i].data(), want.size()) != 0) {
                return fail(
                    fmt::format("header {} (block {}) differs from the reference chain ({} bytes, reference {})", i, n,
                                headers[i].size(), want.size()));
            }
        }
        return VerifyResult{facts, {}};
    }

    if (req.skip == 0 && headers.size() > 1) {
        // Parent links: hash every header once.
        Hash32 hash = facts.first_hash != Hash32{} ? facts.first_hash : header_hash(headers.front());
        facts.first_hash = hash;
        for (size_t i = 1; i < headers.size(); ++i) {
            const Hash32 next = header_hash(headers[i]);
            // Ascending: header i names header i-1 as parent; descending: header i-1 names header i.
            const ByteView child = req.reverse ? headers[i - 1] : headers[i];
            const Hash32& parent = req.reverse ? next : hash;
            auto peek = peek_header(child);
            if (peek->parent_hash != parent) {
                return fail(fmt::format("broken parent link between header {} and {} (blocks {} and {})", i - 1, i,
                                        *nth(origin, 0, req.reverse, i - 1), *nth(origin, 0, req.reverse, i)));
            }
            hash = next;
        }
        facts.last_hash = hash;
    }
    return VerifyResult{facts, {}};
}

}  // namespace headerd::load
