// libFuzzer target for what headerd accepts of a peer's BlockHeaders reply, over the real mainnet
// headers 0..8191 of tests/data. Byte 0 picks one of:
//
// 0: `headerd load`'s verifier (load::verify_reply) of a reply to a GetBlockHeaders request, with
//    and without the reference chain (the test data imported once, as `load --chain` does).
//    Input: flags, origin (2 bytes), amount (2), skip (1), server head low (2) and its growth (1),
//    the origin's known number (2), then the reply: [request id, [headers...]] as a peer sends it,
//    or (flag 0x40) a list of (block number (2 bytes), byte to flip (2)) building it from real headers.
//    A reply the verifier accepts must: hold at most min(amount, 1024, expected) headers; each
//    decode with the number the request asks for at its position; start with the requested hash;
//    link by parent hash when skip is 0; and, with the reference chain, be the real headers byte for
//    byte. A reply accepted with the reference chain must be accepted without it.
//
// 1: `headerd sync`'s Fetcher (sync/fetcher.hpp), trusted head = a real block <= 63, local chain =
//    real blocks 0..L. Input: a stream of operations (assign, deliver a reply of real, misnumbered,
//    flipped or raw headers from one of 4 peers, release, drop a peer, advance). Every header the
//    fetcher returns as verified must be the real header of its number (bytes and hash), verified
//    headers come out contiguous and descending from the head, the hash it expects next is the real
//    hash of next(), and a join is reported only where the real chain joins.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/block_header.hpp"
#include "core/rlp.hpp"
#include "load/reference_chain.hpp"
#include "load/verify.hpp"
#include "p2p/eth/messages.hpp"
#include "sync/fetcher.hpp"
#include "tests/data_dir.hpp"

using namespace headerd;

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "reply_fuzz: %s\n", what);
    std::abort();
}

struct Chain {
    Bytes file;
    std::vector<ByteView> headers;  // RLP of blocks 0..8191
    std::vector<Hash32> hashes;
    std::unique_ptr<load::ReferenceChain> reference;
};

const Chain& chain() {
    static const Chain c = [] {
        Chain out;
        const std::string path = headerd::testing::data_dir() + "/mainnet-headers-0-8191.rlp";
        std::ifstream in(path, std::ios::binary);
        out.file.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        ByteView rest{out.file};
        while (!rest.empty()) {
            auto item = rlp::next_item(rest);
            if (!item) fail("bad RLP in the test data");
            out.headers.push_back(*item);
            out.hashes.push_back(header_hash(*item));
        }
        if (out.headers.size() != 8192) fail("the test data does not hold 8192 headers");
        auto ref = load::ReferenceChain::open({path});
        if (!ref) fail("cannot import the reference chain");
        out.reference = std::move(*ref);
        return out;
    }();
    return c;
}

// REPLY_FUZZ_VERBOSE=1 prints what each input did (to check that the seeds reach deep).
bool verbose() {
    static const bool on = std::getenv("REPLY_FUZZ_VERBOSE") != nullptr;
    return on;
}

// Reads big-endian integers off the front of the input; zeros past its end.
struct Reader {
    ByteView in;
    uint64_t take(size_t n) {
        uint64_t v = 0;
        for (size_t i = 0; i < n; ++i) {
            v <<= 8;
            if (!in.empty()) {
                v |= in[0];
                in = in.subspan(1);
            }
        }
        return v;
    }
    bool empty() const { return in.empty(); }
};

// A copy of a real header with one byte flipped (none when `flip` is past its end): still often
// decodable, always another hash.
Bytes real_header(uint64_t number, uint64_t flip) {
    const ByteView h = chain().headers[number % 8192];
    Bytes out(h.begin(), h.end());
    if (flip != 0 && flip - 1 < out.size()) out[flip - 1] ^= 0x01;
    return out;
}

// ---- mode 0: load's verifier ----------------------------------------------------------------------

void check_verified(const eth::GetBlockHeadersRequest& req, const load::VerifyRequest& in,
                    std::span<const ByteView> headers, const load::ReplyFacts& facts, bool with_reference) {
    if (facts.count != headers.size()) fail("facts count differs from the reply");
    if (headers.size() > req.amount || headers.size() > 1024 || headers.size() > facts.expected) {
        fail("accepted more headers than allowed");
    }
    if (headers.empty()) return;
    const Hash32 first = header_hash(headers[0]);
    if (req.origin.is_hash && first != req.origin.hash) fail("accepted a reply that does not start at the hash");
    auto peek0 = peek_header(headers[0]);
    if (!peek0) fail("accepted an undecodable header");
    const uint64_t origin = req.origin.is_hash ? peek0->number : req.origin.number;
    if (req.origin.is_hash && in.origin_number && *in.origin_number != origin) fail("accepted a moved hash origin");
    Hash32 prev{};
    for (size_t i = 0; i < headers.size(); ++i) {
        auto peek = peek_header(headers[i]);
        if (!peek) fail("accepted an undecodable header");
        // origin +- (skip + 1) * i, computed in 128 bits.
        const unsigned __int128 step = static_cast<unsigned __int128>(req.skip + 1) * i;
        const unsigned __int128 want = req.reverse ? static_cast<unsigned __int128>(origin) - step : origin + step;
        if (peek->number != want || (req.reverse && step > origin)) fail("accepted a header at the wrong number");
        const Hash32 hash = header_hash(headers[i]);
        if (req.skip == 0 && i > 0) {
            // Ascending: header i names header i-1 as parent; descending: header i-1 names header i.
            const bool linked =
                req.reverse ? peek_header(headers[i - 1])->parent_hash == hash : peek->parent_hash == prev;
            if (!linked) fail("accepted a reply whose headers do not link");
        }
        if (with_reference) {
            if (peek->number > 8191) fail("accepted a header past the reference chain");
            const ByteView real = chain().headers[peek->number];
            if (!std::equal(real.begin(), real.end(), headers[i].begin(), headers[i].end())) {
                fail("accepted a header that is not the reference chain's");
            }
            if (hash != chain().hashes[peek->number]) fail("accepted a header with another hash");
        }
        prev = hash;
    }
    if (facts.first_number != origin) fail("facts: wrong first number");
}

void fuzz_verify(Reader r) {
    const uint8_t flags = static_cast<uint8_t>(r.take(1));
    const uint64_t origin = r.take(2);
    eth::GetBlockHeadersRequest req;
    req.request_id = 7;
    req.origin =
        (flags & 0x01) != 0 ? eth::HashOrNumber::of(chain().hashes[origin % 8192]) : eth::HashOrNumber::of(origin);
    if ((flags & 0x01) != 0 && (flags & 0x20) != 0) req.origin.hash[origin % 32] ^= 0x80;  // a hash not on the chain
    req.amount = r.take(2);
    req.skip = r.take(1);
    if (req.skip == 0xff) req.skip = UINT64_MAX;
    req.reverse = (flags & 0x02) != 0;
    load::VerifyRequest in;
    in.request = &req;
    in.head_low = r.take(2);
    in.head_high = in.head_low + r.take(1);
    const uint64_t known = r.take(2);
    if ((flags & 0x08) != 0) in.origin_number = known;
    in.origin_on_chain = (flags & 0x10) != 0;
    const bool with_reference = (flags & 0x04) != 0;
    if (with_reference) {
        // The reference chain's head bounds what a server may have.
        in.head_low = std::min<uint64_t>(in.head_low, 8191);
        in.head_high = std::min<uint64_t>(in.head_high, 8191);
    }

    Bytes payload;
    std::vector<Bytes> built;
    std::vector<ByteView> headers;
    if ((flags & 0x40) != 0) {
        while (!r.empty() && built.size() < 64) {
            const uint64_t number = r.take(2);
            built.push_back(real_header(number, r.take(2)));
        }
        for (const Bytes& b : built) headers.emplace_back(b);
    } else {
        payload.assign(r.in.begin(), r.in.end());
        auto msg = eth::BlockHeadersMessage::decode(payload);
        if (!msg) return;
        headers = msg->headers;
    }

    load::ServeRules rules;
    load::VerifyScratch scratch;
    const auto plain = load::verify_reply(in, headers, rules, nullptr, scratch);
    if (verbose())
        std::fprintf(stderr, "verify: %zu headers, %s\n", headers.size(),
                     plain.ok() ? "accepted" : plain.failure.c_str());
    if (plain.ok()) check_verified(req, in, headers, *plain.facts, false);
    if (!plain.ok() && plain.failure.empty()) fail("a rejection without a reason");
    if (with_reference) {
        const auto checked = load::verify_reply(in, headers, rules, chain().reference.get(), scratch);
        if (checked.ok()) {
            check_verified(req, in, headers, *checked.facts, true);
            if (!plain.ok()) fail("accepted with the reference chain but not without it");
        }
    }
}

// ---- mode 1: sync's fetcher -----------------------------------------------------------------------

p2p::HeadersReply make_reply(const std::vector<Bytes>& headers) {
    p2p::HeadersReply reply;
    reply.request_id = 1;
    std::vector<size_t> offsets;
    for (const Bytes& h : headers) {
        offsets.push_back(reply.payload.size());
        reply.payload.insert(reply.payload.end(), h.begin(), h.end());
    }
    for (size_t i = 0; i < headers.size(); ++i) {
        reply.headers.push_back(ByteView{reply.payload}.subspan(offsets[i], headers[i].size()));
    }
    return reply;
}

void fuzz_fetcher(Reader r) {
    const auto& c = chain();
    const uint64_t head = r.take(1) % 64;
    const uint64_t local = r.take(1);  // the local chain holds blocks 0..local - 1 (none when 0)
    const uint64_t local_head_plus_one = std::min<uint64_t>(local % 72, head + 1);
    const uint64_t floor = (r.take(1) & 1) != 0 ? local_head_plus_one : 0;
    const uint64_t window = r.take(1) % 80;
    sync::Fetcher f(head, c.hashes[head], floor, window);
    // The syncer's rule: the header above the local head links to it; block 0 with the genesis hash.
    const sync::JoinFn join = [&](uint64_t number, const Hash32& hash, const Hash32& parent) {
        if (number == 0) return hash == c.hashes[0] ? sync::Join::kLinked : sync::Join::kWrongGenesis;
        if (local_head_plus_one > 0 && number == local_head_plus_one && parent == c.hashes[number - 1]) {
            return sync::Join::kLinked;
        }
        return sync::Join::kNo;
    };

    std::vector<sync::Task> out;  // handed out, not answered
    std::optional<uint64_t> lowest_verified;
    sync::Verified verified;
    for (int step = 0; step < 200 && !r.empty(); ++step) {
        const uint8_t op = static_cast<uint8_t>(r.take(1));
        switch (op % 6) {
            case 0: {
                if (auto task = f.assign(r.take(1) % 24)) {
                    if (task->amount == 0 || task->origin > head || task->lowest() > task->origin) fail("a bad task");
                    out.push_back(*task);
                }
                break;
            }
            case 1:
            case 2: {
                if (out.empty()) break;
                const size_t at = r.take(1) % out.size();
                const sync::Task task = out[at];
                out.erase(out.begin() + static_cast<std::ptrdiff_t>(at));
                const size_t owner = r.take(1) % 4;
                const uint64_t count = r.take(1) % (task.amount + 2);
                std::vector<Bytes> headers;
                for (uint64_t i = 0; i < count; ++i) {
                    const uint64_t number = task.origin >= i ? task.origin - i : 0;
                    const uint8_t how = op == 1 ? 0 : static_cast<uint8_t>(r.take(1));
                    switch (how % 4) {
                        case 0:  // the real header
                            headers.push_back(real_header(number, 0));
                            break;
                        case 1:  // another real header
                            headers.push_back(real_header(r.take(1) % 64, 0));
                            break;
                        case 2:  // a real header with a byte flipped
                            headers.push_back(real_header(number, 1 + r.take(2) % 600));
                            break;
                        default: {  // raw bytes
                            const size_t len = r.take(1);
                            Bytes raw;
                            for (size_t k = 0; k < len && !r.empty(); ++k)
                                raw.push_back(static_cast<uint8_t>(r.take(1)));
                            headers.push_back(std::move(raw));
                        }
                    }
                }
                auto fault = f.deliver(task, owner, make_reply(headers));
                if (fault && fault->reason.empty()) fail("a fault without a reason");
                if (verbose()) {
                    std::fprintf(stderr, "deliver %zu headers for %llu..%llu: %s\n", headers.size(),
                                 static_cast<unsigned long long>(task.origin),
                                 static_cast<unsigned long long>(task.lowest()),
                                 fault ? fault->reason.c_str() : "held");
                }
                break;
            }
            case 3:
                if (!out.empty()) {
                    const size_t at = r.take(1) % out.size();
                    f.release(out[at]);
                    out.erase(out.begin() + static_cast<std::ptrdiff_t>(at));
                }
                break;
            case 4:
                f.drop_owner(r.take(1) % 4);
                break;
            default: {
                const bool was_done = f.done();
                auto fault = f.advance(join, verified);
                if (fault && fault->reason.empty()) fail("a fault without a reason");
                if (was_done && !verified.headers.empty()) fail("verified headers after the download was done");
                for (const auto& h : verified.headers) {
                    const uint64_t want = lowest_verified ? *lowest_verified - 1 : head;
                    if (h.number != want) fail("verified headers are not contiguous from the head");
                    if (h.number > head) fail("verified a header above the trusted head");
                    const ByteView real = c.headers[h.number];
                    if (!std::equal(real.begin(), real.end(), h.rlp.begin(), h.rlp.end())) {
                        fail("verified a header that is not the real one");
                    }
                    if (h.hash != c.hashes[h.number] || header_hash(h.rlp) != h.hash) fail("verified a wrong hash");
                    lowest_verified = h.number;
                }
                if (verified.linked) {
                    if (!f.linked() || !lowest_verified) fail("linked without a verified header");
                    if (*lowest_verified != 0 && *lowest_verified != local_head_plus_one)
                        fail("linked at the wrong block");
                }
                if (f.wrong_genesis()) fail("the real chain led to another genesis");
                if (verbose()) {
                    std::fprintf(stderr, "advance: %zu verified, next %llu, linked %d\n", verified.headers.size(),
                                 static_cast<unsigned long long>(f.next()), f.linked() ? 1 : 0);
                }
                break;
            }
        }
        if (!f.done() && f.expect() != c.hashes[f.next()]) fail("the hash expected next is not the real one");
        if (f.next() > head) fail("next() above the trusted head");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    Reader r{ByteView{data + 1, size - 1}};
    if (data[0] % 2 == 0) {
        fuzz_verify(r);
    } else {
        fuzz_fetcher(r);
    }
    return 0;
}
