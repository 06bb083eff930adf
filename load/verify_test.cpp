#include "load/verify.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/block_header.hpp"
#include "core/hex.hpp"
#include "core/rlp.hpp"
#include "load/reference_chain.hpp"
#include "tests/data_dir.hpp"
#include "tests/reference_chain.hpp"

namespace headerd::load {
namespace {

namespace fs = std::filesystem;
using eth::GetBlockHeadersRequest;
using eth::HashOrNumber;
using testing::kReferenceHead;  // the server's head in these tests
using testing::reference_chain;

// Headers of another chain (the hive test chain, blocks 1..600): same numbers, other parents.
struct OtherChain {
    Bytes file;
    std::vector<ByteView> headers;  // index i: block i + 1

    OtherChain() : file(testing::read_file(headerd::testing::data_dir() + "/hive-testchain-blocks-1-600.rlp")) {
        ByteView rest{file};
        while (!rest.empty()) {
            auto block = rlp::decode_list(rest);
            if (!block) break;
            ByteView body = *block;
            auto header = rlp::next_item(body);
            if (!header) break;
            headers.push_back(*header);
        }
    }
    ByteView block(uint64_t n) const { return headers.at(n - 1); }
};

const OtherChain& other_chain() {
    static const OtherChain c;
    return c;
}

// The reference chain from the era1 archive of the same epoch, imported once for every test.
const ReferenceChain* reference() {
    static const std::unique_ptr<ReferenceChain> ref = []() -> std::unique_ptr<ReferenceChain> {
        auto r = ReferenceChain::open({headerd::testing::data_dir() + "/mainnet-00000-5ec1ffb8.era1"});
        if (!r) {
            ADD_FAILURE() << "ReferenceChain::open: " << r.error().message;
            return nullptr;
        }
        return std::move(*r);
    }();
    return ref.get();
}

GetBlockHeadersRequest by_number(uint64_t origin, uint64_t amount, uint64_t skip, bool reverse) {
    GetBlockHeadersRequest r;
    r.request_id = 7;
    r.origin = HashOrNumber::of(origin);
    r.amount = amount;
    r.skip = skip;
    r.reverse = reverse;
    return r;
}

GetBlockHeadersRequest by_hash(const Hash32& hash, uint64_t amount, uint64_t skip, bool reverse) {
    GetBlockHeadersRequest r = by_number(0, amount, skip, reverse);
    r.origin = HashOrNumber::of(hash);
    return r;
}

// The real headers origin, origin +- (skip + 1), ... : `count` of them.
std::vector<ByteView> blocks(uint64_t origin, uint64_t count, uint64_t skip, bool reverse) {
    std::vector<ByteView> out;
    for (uint64_t i = 0; i < count; ++i) {
        const uint64_t n = reverse ? origin - i * (skip + 1) : origin + i * (skip + 1);
        out.push_back(reference_chain().headers.at(n));
    }
    return out;
}

std::vector<ByteView> blocks(std::initializer_list<uint64_t> numbers) {
    std::vector<ByteView> out;
    for (uint64_t n : numbers) out.push_back(reference_chain().headers.at(n));
    return out;
}

size_t bytes_of(std::span<const ByteView> headers) {
    size_t n = 0;
    for (ByteView h : headers) n += h.size();
    return n;
}

struct Check {
    const ReferenceChain* reference{nullptr};
    uint64_t head_low{kReferenceHead};
    uint64_t head_high{kReferenceHead};
    std::optional<uint64_t> origin_number;
    bool origin_on_chain{false};
    bool head_unannounced{false};
    ServeRules rules{};
};

VerifyResult verify(const GetBlockHeadersRequest& r, std::span<const ByteView> reply, const Check& c) {
    VerifyRequest in;
    in.request = &r;
    in.origin_number = c.origin_number;
    in.origin_on_chain = c.origin_on_chain;
    in.head_low = c.head_low;
    in.head_high = c.head_high;
    in.head_unannounced = c.head_unannounced;
    VerifyScratch scratch;
    return verify_reply(in, reply, c.rules, c.reference, scratch);
}

VerifyResult verify(const GetBlockHeadersRequest& r, std::span<const ByteView> reply,
                    const ReferenceChain* ref = nullptr) {
    Check c;
    c.reference = ref;
    return verify(r, reply, c);
}

// A copy of header n with one byte of its mixHash flipped: still a valid header, another hash.
Bytes tampered(uint64_t n) {
    Bytes h(reference_chain().headers.at(n).begin(), reference_chain().headers.at(n).end());
    // Pre-London layout: ... mixHash (0xa0 + 32 bytes), nonce (0x88 + 8 bytes) at the end.
    h[h.size() - 9 - 5] ^= 0x01;
    return h;
}

TEST(LoadVerifyData, ChainAndReferenceAreTheMainnetEpoch) {
    ASSERT_EQ(reference_chain().headers.size(), kReferenceHead + 1);
    EXPECT_EQ(to_hex0x(reference_chain().hashes[0]),
              "0xd4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3");
    ASSERT_EQ(other_chain().headers.size(), 600u);
    EXPECT_EQ(peek_header(other_chain().block(105))->number, 105u);
    EXPECT_NE(header_hash(other_chain().block(105)), reference_chain().hashes[105]);

    const ReferenceChain* ref = reference();
    ASSERT_NE(ref, nullptr);
    EXPECT_EQ(ref->head(), kReferenceHead);
    EXPECT_EQ(ref->genesis_hash(), reference_chain().hashes[0]);
    auto n = ref->number_of(reference_chain().hashes[5000]);
    ASSERT_TRUE(n);
    EXPECT_EQ(*n, std::optional<uint64_t>(5000));
    ItemBuffer out;
    ASSERT_TRUE(ref->range(8100, 200, out));
    ASSERT_EQ(out.size(), 92u);  // fewer past the head
    for (size_t i = 0; i < out.size(); ++i) {
        const ByteView want = reference_chain().headers[8100 + i];
        ASSERT_TRUE(std::equal(want.begin(), want.end(), out.item(i).begin(), out.item(i).end())) << i;
    }

    const Bytes t = tampered(42);
    auto decoded = decode_block_header(t);
    ASSERT_TRUE(decoded) << "the tampered header must stay valid RLP";
    EXPECT_EQ(decoded->number, 42u);
    EXPECT_NE(decoded->mix_hash, decode_block_header(reference_chain().headers[42])->mix_hash);
    EXPECT_NE(header_hash(t), reference_chain().hashes[42]);
}

TEST(LoadVerifyData, ReferenceChainOpenRefusesWhatIsNotAChain) {
    auto none = ReferenceChain::open({});
    ASSERT_FALSE(none);
    EXPECT_NE(none.error().message.find("no source given"), std::string::npos) << none.error().message;
    const std::string missing = headerd::testing::data_dir() + "/no-such-file.era1";
    auto absent = ReferenceChain::open({missing});
    ASSERT_FALSE(absent);
    EXPECT_NE(absent.error().message.find("not a file"), std::string::npos) << absent.error().message;
    EXPECT_NE(absent.error().message.find(missing), std::string::npos) << absent.error().message;
}

// ---- good replies -------------------------------------------------------------------------------

struct GoodCase {
    const char* what;
    GetBlockHeadersRequest request;
    uint64_t origin;  // the origin's number
    uint64_t count;   // headers the server must send
};

std::vector<GoodCase> good_cases() {
    const auto& h = reference_chain().hashes;
    return {
        {"forward, skip 0", by_number(100, 192, 0, false), 100, 192},
        {"reverse, skip 0", by_number(8000, 192, 0, true), 8000, 192},
        {"forward, skip 191", by_number(0, 128, 191, false), 0, 43},  // 0, 192, ..., 8064
        {"reverse, skip 99", by_number(8191, 10, 99, true), 8191, 10},
        {"reverse, skip 99 to genesis", by_number(8191, 100, 99, true), 8191, 82},  // ..., 91
        {"by hash, reverse, skip 0", by_hash(h[5000], 192, 0, true), 5000, 192},
        {"by hash, forward, skip 15", by_hash(h[4000], 12, 15, false), 4000, 12},
        {"by hash, reverse, skip 63", by_hash(h[8191], 2, 63, true), 8191, 2},
        {"by hash, genesis", by_hash(h[0], 1, 0, false), 0, 1},
        {"forward up to the head", by_number(8100, 192, 0, false), 8100, 92},
        {"reverse down to genesis", by_number(100, 192, 0, true), 100, 101},
        {"amount 2000 capped at 1024", by_number(0, 2000, 0, false), 0, 1024},
        {"reverse amount 2000 capped at 1024", by_number(8191, 2000, 0, true), 8191, 1024},
        {"skip 2^64-1 forward", by_number(4095, 10, UINT64_MAX, false), 4095, 1},
        {"skip 2^64-1 reverse", by_number(4095, 10, UINT64_MAX, true), 4095, 1},
        {"the head alone", by_number(8191, 1, 0, false), 8191, 1},
    };
}

TEST(LoadVerify, GoodRepliesPassWithAndWithoutReference) {
    for (const ReferenceChain* ref : {static_cast<const ReferenceChain*>(nullptr), reference()}) {
        for (const GoodCase& c : good_cases()) {
            SCOPED_TRACE(std::string(c.what) + (ref ? ", with reference" : ", without reference"));
            const auto& r = c.request;
            const auto reply = blocks(c.origin, c.count, r.skip, r.reverse);
            const VerifyResult v = verify(r, reply, ref);
            ASSERT_TRUE(v.ok()) << v.failure;
            EXPECT_TRUE(v.failure.empty());
            const ReplyFacts& f = *v.facts;
            EXPECT_EQ(f.count, c.count);
            EXPECT_EQ(f.expected, c.count);
            EXPECT_EQ(f.bytes, bytes_of(reply));
            EXPECT_EQ(f.first_number, c.origin);
            const uint64_t last = peek_header(reply.back())->number;
            EXPECT_EQ(f.last_number, last);
            EXPECT_EQ(f.last_parent_hash, last == 0 ? Hash32{} : reference_chain().hashes[last - 1]);
            if (r.origin.is_hash) {
                EXPECT_EQ(f.first_hash, reference_chain().hashes[c.origin]);
            }
        }
    }
}

TEST(LoadVerify, LinkCheckedRepliesReportFirstAndLastHash) {
    const auto forward = blocks(300, 192, 0, false);
    VerifyResult v = verify(by_number(300, 192, 0, false), forward);
    ASSERT_TRUE(v.ok()) << v.failure;
    EXPECT_EQ(v.facts->first_hash, reference_chain().hashes[300]);
    EXPECT_EQ(v.facts->last_hash, reference_chain().hashes[491]);
    EXPECT_EQ(v.facts->last_parent_hash, reference_chain().hashes[490]);

    const auto reverse = blocks(491, 192, 0, true);
    v = verify(by_number(491, 192, 0, true), reverse);
    ASSERT_TRUE(v.ok()) << v.failure;
    EXPECT_EQ(v.facts->first_hash, reference_chain().hashes[491]);
    EXPECT_EQ(v.facts->last_hash, reference_chain().hashes[300]);
    EXPECT_EQ(v.facts->last_parent_hash, reference_chain().hashes[299]);
}

TEST(LoadVerify, EmptyRepliesPassWhereTheRulesAskForNone) {
    for (const ReferenceChain* ref : {static_cast<const ReferenceChain*>(nullptr), reference()}) {
        SCOPED_TRACE(ref ? "with reference" : "without reference");
        const std::vector<ByteView> none;
        // Amount 0.
        VerifyResult v = verify(by_number(100, 0, 0, false), none, ref);
        ASSERT_TRUE(v.ok()) << v.failure;
        EXPECT_EQ(v.facts->count, 0u);
        // Origin past the head, both directions.
        v = verify(by_number(kReferenceHead + 1, 192, 0, false), none, ref);
        ASSERT_TRUE(v.ok()) << v.failure;
        EXPECT_EQ(v.facts->expected, 0u);
        EXPECT_TRUE(verify(by_number(kReferenceHead + 1000, 192, 0, true), none, ref).ok());
        EXPECT_TRUE(verify(by_number(UINT64_MAX, 192, 0, true), none, ref).ok());
        // A hash nobody knows.
        Hash32 unknown{};
        unknown.fill(0x5a);
        v = verify(by_hash(unknown, 192, 0, true), none, ref);
        ASSERT_TRUE(v.ok()) << v.failure;
    }
    // A hash the reference knows, but of a block above the server's head when it was asked.
    Check c;
    c.reference = reference();
    c.head_low = 5000;
    c.head_high = 5000;
    EXPECT_TRUE(verify(by_hash(reference_chain().hashes[6000], 192, 0, true), {}, c).ok());
    // The client knows the block, but not yet on the server's chain when it asked.
    Check k;
    k.head_low = 5000;
    k.head_high = 5100;
    k.origin_number = 5050;
    k.origin_on_chain = true;
    EXPECT_TRUE(verify(by_hash(reference_chain().hashes[5050], 1, 0, false), {}, k).ok());
}

// ---- bad replies --------------------------------------------------------------------------------

// The failure of `reply`, with and without the reference (same reason expected from both).
void expect_failure(const GetBlockHeadersRequest& r, std::span<const ByteView> reply, const std::string& reason,
                    Check c = {}) {
    for (const ReferenceChain* ref : {static_cast<const ReferenceChain*>(nullptr), reference()}) {
        SCOPED_TRACE(ref ? "with reference" : "without reference");
        c.reference = ref;
        const VerifyResult v = verify(r, reply, c);
        ASSERT_FALSE(v.ok()) << describe(r);
        EXPECT_FALSE(v.facts.has_value());
        EXPECT_NE(v.failure.find(reason), std::string::npos) << "failure: " << v.failure << "\nwanted: " << reason;
    }
}

TEST(LoadVerify, ExtraHeaderIsTooMany) {
    expect_failure(by_number(100, 10, 0, false), blocks(100, 11, 0, false),
                   "11 headers, at most 10 allowed (origin 100, server head 8191)");
    expect_failure(by_number(8000, 192, 0, true), blocks(8000, 193, 0, true), "193 headers, at most 192 allowed");
    expect_failure(by_number(0, 2000, 0, false), blocks(0, 1025, 0, false), "1025 headers, at most 1024 allowed");
    expect_failure(by_number(4095, 10, UINT64_MAX, false), blocks({4095, 4096}), "2 headers, at most 1 allowed");
    auto to_genesis = blocks(100, 101, 0, true);
    to_genesis.push_back(reference_chain().headers[0]);
    expect_failure(by_number(100, 192, 0, true), to_genesis, "102 headers, at most 101 allowed");
}

TEST(LoadVerify, ShortReplyFailsUnlessAtTheByteLimit) {
    expect_failure(by_number(100, 192, 0, false), blocks(100, 191, 0, false),
                   "short reply: 191 of 192 headers (origin 100, server head 8191)");
    expect_failure(by_number(100, 192, 0, false), blocks(100, 191, 0, false), "not at the 2097152 byte limit");
    expect_failure(by_number(8100, 192, 0, false), blocks(8100, 91, 0, false), "short reply: 91 of 92 headers");
    expect_failure(by_number(100, 192, 0, true), blocks(100, 100, 0, true), "short reply: 100 of 101 headers");
    expect_failure(by_hash(reference_chain().hashes[5000], 192, 0, true), blocks(5000, 1, 0, true),
                   "short reply: 1 of 192 headers");
    expect_failure(by_number(0, 2000, 0, false), blocks(0, 1000, 0, false), "short reply: 1000 of 1024 headers");

    // A reply that stops where one more header could have passed the soft limit is fine.
    const auto hundred = blocks(100, 100, 0, false);
    Check c;
    c.rules.soft_bytes = bytes_of(hundred) + 1;
    for (const ReferenceChain* ref : {static_cast<const ReferenceChain*>(nullptr), reference()}) {
        c.reference = ref;
        const VerifyResult v = verify(by_number(100, 192, 0, false), hundred, c);
        ASSERT_TRUE(v.ok()) << v.failure;
        EXPECT_EQ(v.facts->count, 100u);
        EXPECT_EQ(v.facts->expected, 192u);  // what the walks ask again for
    }
    // ... but not one that stops far below it.
    const auto fifty = blocks(100, 50, 0, false);
    expect_failure(by_number(100, 192, 0, false), fifty, "short reply: 50 of 192 headers", c);
    expect_failure(by_number(100, 192, 0, false), fifty,
                   fmt::format("not at the {} byte limit", c.rules.soft_bytes).c_str(), c);
}

TEST(LoadVerify, WrongFirstNumberGapAndOrderNameTheHeader) {
    expect_failure(by_number(100, 192, 0, false), blocks(101, 192, 0, false),
                   "header 0 is block 101, expected block 100");
    expect_failure(by_number(8000, 192, 0, true), blocks(7999, 192, 0, true),
                   "header 0 is block 7999, expected block 8000");

    // A gap: block 150 left out, one more at the end.
    auto gap = blocks(100, 50, 0, false);
    const auto after = blocks(151, 142, 0, false);
    gap.insert(gap.end(), after.begin(), after.end());
    ASSERT_EQ(gap.size(), 192u);
    expect_failure(by_number(100, 192, 0, false), gap, "header 50 is block 151, expected block 150");

    // A gap in a skip reply: 0, 192, 384, 577 (should be 576).
    expect_failure(by_number(0, 4, 191, false), blocks({0, 192, 384, 577}),
                   "header 3 is block 577, expected block 576");

    // Ascending where descending was asked, and two neighbours swapped.
    expect_failure(by_number(109, 10, 0, true), blocks(100, 10, 0, false), "header 0 is block 100, expected block 109");
    expect_failure(by_number(100, 10, 0, false), blocks({100, 101, 102, 104, 103, 105, 106, 107, 108, 109}),
                   "header 3 is block 104, expected block 103");
    // Skip ignored: a contiguous reply to a skip request.
    expect_failure(by_number(1000, 5, 9, true), blocks(1000, 5, 0, true), "header 1 is block 999, expected block 990");
}

TEST(LoadVerify, BrokenParentLinkOrReferenceMismatch) {
    // A header of another chain with the right number, in the middle of a forward reply.
    auto forward = blocks(100, 20, 0, false);
    forward[5] = other_chain().block(105);
    EXPECT_EQ(verify(by_number(100, 20, 0, false), forward).failure,
              "broken parent link between header 4 and 5 (blocks 104 and 105)");
    const VerifyResult with_ref = verify(by_number(100, 20, 0, false), forward, reference());
    ASSERT_FALSE(with_ref.ok());
    EXPECT_NE(with_ref.failure.find("header 5 (block 105) differs from the reference chain ("), std::string::npos)
        << with_ref.failure;

    // A real header with one byte of its mixHash changed, in a reverse reply: header 7 is block 7993,
    // so header 6 (block 7994) no longer names its parent.
    const Bytes bad = tampered(7993);
    auto reverse = blocks(8000, 192, 0, true);
    reverse[7] = bad;
    EXPECT_EQ(verify(by_number(8000, 192, 0, true), reverse).failure,
              "broken parent link between header 6 and 7 (blocks 7994 and 7993)");
    const VerifyResult ref_reverse = verify(by_number(8000, 192, 0, true), reverse, reference());
    EXPECT_NE(ref_reverse.failure.find("header 7 (block 7993) differs from the reference chain"), std::string::npos)
        << ref_reverse.failure;

    // The same in a skip reply: only the reference sees it (no links to check with a skip).
    const Bytes bad_skip = tampered(8191 - 2 * 100);
    auto skipping = blocks(8191, 10, 99, true);
    skipping[2] = bad_skip;
    const VerifyResult ref_skip = verify(by_number(8191, 10, 99, true), skipping, reference());
    EXPECT_NE(ref_skip.failure.find("header 2 (block 7991) differs from the reference chain"), std::string::npos)
        << ref_skip.failure;

    // The last header of a reply: nothing links to it, the reference still catches it.
    auto last = blocks(200, 10, 0, false);
    const Bytes bad_last = tampered(209);
    last[9] = bad_last;
    const VerifyResult ref_last = verify(by_number(200, 10, 0, false), last, reference());
    EXPECT_NE(ref_last.failure.find("header 9 (block 209) differs from the reference chain"), std::string::npos)
        << ref_last.failure;
    // A single header.
    const Bytes bad_one = tampered(4242);
    const std::vector<ByteView> one{bad_one};
    EXPECT_NE(verify(by_number(4242, 1, 0, false), one, reference()).failure.find("header 0 (block 4242) differs"),
              std::string::npos);
}

TEST(LoadVerify, HashOriginMustBeTheFirstHeader) {
    const Hash32& h5000 = reference_chain().hashes[5000];
    expect_failure(by_hash(h5000, 192, 0, true), blocks(5001, 192, 0, true),
                   "first header has hash " + to_hex0x(reference_chain().hashes[5001]) + ", not the requested origin " +
                       to_hex0x(h5000));
    // Another chain's header of the same number.
    const std::vector<ByteView> other{other_chain().block(105)};
    expect_failure(by_hash(reference_chain().hashes[105], 1, 0, false), other, "not the requested origin");
    // The hash is block 5000, the client had learned it as 4999.
    Check c;
    c.origin_number = 4999;
    c.origin_on_chain = true;
    expect_failure(by_hash(h5000, 192, 0, true), blocks(5000, 192, 0, true),
                   "origin hash " + to_hex0x(h5000) + " is block 5000 here, 4999 before", c);
}

TEST(LoadVerify, NonEmptyReplyToAmountZero) {
    expect_failure(by_number(100, 0, 0, false), blocks({100}), "1 headers for amount 0 (must be empty)");
    expect_failure(by_hash(reference_chain().hashes[100], 0, 0, true), blocks(100, 3, 0, true),
                   "3 headers for amount 0 (must be empty)");
}

TEST(LoadVerify, ReplyPastTheHead) {
    Check c;
    c.head_low = 8000;
    c.head_high = 8000;
    expect_failure(by_number(7990, 192, 0, false), blocks(7990, 192, 0, false),
                   "192 headers, at most 11 allowed (origin 7990, server head 8000)", c);
    expect_failure(by_number(7990, 192, 0, false), blocks(7990, 12, 0, false), "12 headers, at most 11 allowed", c);
    // The origin itself past the head: by number and by hash.
    c.head_low = c.head_high = 5000;
    expect_failure(by_number(6000, 1, 0, false), blocks({6000}), "1 headers, at most 0 allowed (origin 6000", c);
    expect_failure(by_hash(reference_chain().hashes[6000], 192, 0, true), blocks(6000, 192, 0, true),
                   "192 headers, at most 0 allowed (origin 6000, server head 5000)", c);
    // Skip past the head.
    expect_failure(by_number(4000, 10, 499, false), blocks(4000, 4, 499, false), "4 headers, at most 3 allowed", c);
}

TEST(LoadVerify, HeaderPastTheReferenceHead) {
    // A reference of blocks 0..1023 only (an .rlp export), a server that has more.
    const fs::path dir = fs::temp_directory_path() / ("headerd-load-verify-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string path = (dir / "headers-0-1023.rlp").string();
    {
        std::ofstream out(path, std::ios::binary);
        for (uint64_t n = 0; n <= 1023; ++n) {
            const ByteView h = reference_chain().headers[n];
            out.write(reinterpret_cast<const char*>(h.data()), static_cast<std::streamsize>(h.size()));
        }
    }
    auto short_ref = ReferenceChain::open({path});
    fs::remove_all(dir);
    ASSERT_TRUE(short_ref) << short_ref.error().message;
    EXPECT_EQ((*short_ref)->head(), 1023u);
    EXPECT_EQ((*short_ref)->description(), path);

    const VerifyResult v = verify(by_number(1000, 192, 0, false), blocks(1000, 192, 0, false), short_ref->get());
    EXPECT_EQ(v.failure, "header of block 1191 is past the reference chain's head 1023");
    const VerifyResult rev = verify(by_number(2000, 10, 99, true), blocks(2000, 10, 99, true), short_ref->get());
    EXPECT_EQ(rev.failure, "header of block 2000 is past the reference chain's head 1023");
    EXPECT_TRUE(verify(by_number(1000, 24, 0, false), blocks(1000, 24, 0, false), short_ref->get()).ok());
}

TEST(LoadVerify, EmptyReplyToAHashOnTheServersChain) {
    const Hash32& h = reference_chain().hashes[5000];
    const std::string reason = "empty reply for hash origin " + to_hex0x(h) + " (block 5000) on the server's chain";
    // The reference knows it.
    EXPECT_EQ(verify(by_hash(h, 192, 0, true), {}, reference()).failure, reason);
    // The client knows it (it learned the hash from an earlier reply).
    Check c;
    c.origin_number = 5000;
    c.origin_on_chain = true;
    EXPECT_EQ(verify(by_hash(h, 192, 0, true), {}, c).failure, reason);
    // The client knows it is on the chain, not its number.
    Check unnumbered;
    unnumbered.origin_on_chain = true;
    EXPECT_EQ(verify(by_hash(h, 1, 0, false), {}, unnumbered).failure,
              "empty reply for hash origin " + to_hex0x(h) + " on the server's chain");
    // Without either, an empty reply is all it can judge by: fine.
    EXPECT_TRUE(verify(by_hash(h, 192, 0, true), {}).ok());
}

TEST(LoadVerify, HeadMovingDuringTheRequestAcceptsEveryCountInBetween) {
    Check c;
    c.head_low = 8000;
    c.head_high = 8100;
    const auto r = by_number(7950, 192, 0, false);
    // At send: 7950..8000 (51 headers); at reply: 7950..8100 (151).
    for (uint64_t n = 51; n <= 151; ++n) {
        const VerifyResult v = verify(r, blocks(7950, n, 0, false), c);
        ASSERT_TRUE(v.ok()) << n << ": " << v.failure;
        EXPECT_EQ(v.facts->expected, 151u);
    }
    c.reference = reference();
    for (uint64_t n : {51u, 100u, 151u}) {
        const VerifyResult v = verify(r, blocks(7950, n, 0, false), c);
        EXPECT_TRUE(v.ok()) << n << ": " << v.failure;
    }
    expect_failure(r, blocks(7950, 50, 0, false), "short reply: 50 of 51 headers (origin 7950, server head 8000)", c);
    expect_failure(r, blocks(7950, 152, 0, false), "152 headers, at most 151 allowed (origin 7950, server head 8100)",
                   c);

    // An origin the server reached only while the request was in flight: empty or full.
    const auto rev = by_number(8050, 100, 0, true);
    c.reference = nullptr;
    EXPECT_TRUE(verify(rev, {}, c).ok());
    EXPECT_TRUE(verify(rev, blocks(8050, 100, 0, true), c).ok());
    expect_failure(rev, blocks(8050, 99, 0, true), "short reply: 99 of 100 headers", [] {
        Check same;
        same.head_low = same.head_high = 8100;
        return same;
    }());
}

TEST(LoadVerify, UnannouncedHeadAcceptsGrowthThatMatchesTheChain) {
    // An eth/68 client saw head 8000 in Status; the server has since grown to 8191 and said nothing.
    Check c;
    c.head_low = c.head_high = 8000;
    c.head_unannounced = true;
    for (const ReferenceChain* ref : {static_cast<const ReferenceChain*>(nullptr), reference()}) {
        c.reference = ref;
        const VerifyResult v = verify(by_number(7990, 192, 0, false), blocks(7990, 192, 0, false), c);
        ASSERT_TRUE(v.ok()) << v.failure;
        EXPECT_EQ(v.facts->expected, 11u);  // what the known head allows: a walk asks for no more
        EXPECT_EQ(v.facts->last_number, 8181u);
        EXPECT_TRUE(verify(by_number(7990, 11, 0, false), blocks(7990, 11, 0, false), c).ok());
        EXPECT_TRUE(verify(by_number(8100, 1, 0, false), blocks({8100}), c).ok());
        EXPECT_TRUE(verify(by_hash(reference_chain().hashes[8100], 2, 63, true), blocks({8100, 8036}), c).ok());
        // Still never more than asked for or past the cap, never short below the known head, and
        // always in order.
        expect_failure(by_number(7990, 10, 0, false), blocks(7990, 11, 0, false),
                       "11 headers, at most 10 allowed (origin 7990, server head unannounced)", c);
        expect_failure(by_number(7000, 2000, 0, false), blocks(7000, 1025, 0, false),
                       "1025 headers, at most 1024 allowed", c);
        expect_failure(by_number(7990, 192, 0, false), blocks(7990, 10, 0, false),
                       "short reply: 10 of 11 headers (origin 7990, server head 8000)", c);
        std::vector<ByteView> gap = blocks(7990, 20, 0, false);
        gap.erase(gap.begin() + 15);
        expect_failure(by_number(7990, 192, 0, false), gap, "header 15 is block 8006, expected block 8005", c);
    }
    // Growth that is not the chain: with the reference, the bytes; without, the links.
    const Bytes forged = tampered(8100);
    std::vector<ByteView> forged_tail = blocks(8095, 10, 0, false);
    forged_tail[5] = forged;
    c.reference = reference();
    EXPECT_EQ(verify(by_number(8095, 10, 0, false), forged_tail, c).failure,
              "header 5 (block 8100) differs from the reference chain (534 bytes, reference 534)");
    c.reference = nullptr;
    EXPECT_EQ(verify(by_number(8095, 10, 0, false), forged_tail, c).failure,
              "broken parent link between header 5 and 6 (blocks 8100 and 8101)");
}

// ---- expected_count and describe ----------------------------------------------------------------

TEST(LoadVerify, ExpectedCountEdgeCases) {
    // Skip 2^64-1: only the origin, in both directions.
    EXPECT_EQ(expected_count(4095, 10, UINT64_MAX, false, kReferenceHead, 1024), 1u);
    EXPECT_EQ(expected_count(4095, 10, UINT64_MAX, true, kReferenceHead, 1024), 1u);
    EXPECT_EQ(expected_count(0, 10, UINT64_MAX, true, kReferenceHead, 1024), 1u);
    EXPECT_EQ(expected_count(kReferenceHead, 10, UINT64_MAX - 1, false, kReferenceHead, 1024), 1u);
    EXPECT_EQ(expected_count(kReferenceHead, 10, UINT64_MAX - 1, true, kReferenceHead, 1024), 1u);
    // Origin past the head: none, whatever else.
    EXPECT_EQ(expected_count(kReferenceHead + 1, 192, 0, false, kReferenceHead, 1024), 0u);
    EXPECT_EQ(expected_count(kReferenceHead + 1, 192, 0, true, kReferenceHead, 1024), 0u);
    EXPECT_EQ(expected_count(UINT64_MAX, 192, UINT64_MAX, true, kReferenceHead, 1024), 0u);
    // Amount 0.
    EXPECT_EQ(expected_count(100, 0, 0, false, kReferenceHead, 1024), 0u);
    EXPECT_EQ(expected_count(100, 0, 0, true, kReferenceHead, 1024), 0u);
    // The serve cap.
    EXPECT_EQ(expected_count(0, 2000, 0, false, kReferenceHead, 1024), 1024u);
    EXPECT_EQ(expected_count(kReferenceHead, 2000, 0, true, kReferenceHead, 1024), 1024u);
    EXPECT_EQ(expected_count(0, 1024, 0, false, kReferenceHead, 1024), 1024u);
    EXPECT_EQ(expected_count(0, 1025, 0, false, kReferenceHead, 1024), 1024u);
    EXPECT_EQ(expected_count(0, UINT64_MAX, 0, false, kReferenceHead, 1024), 1024u);
    EXPECT_EQ(expected_count(0, 2000, 0, false, kReferenceHead, 512), 512u);
    // Reverse to genesis: the origin and every (skip+1)-th block down to 0.
    EXPECT_EQ(expected_count(100, 192, 0, true, kReferenceHead, 1024), 101u);
    EXPECT_EQ(expected_count(100, 101, 0, true, kReferenceHead, 1024), 101u);
    EXPECT_EQ(expected_count(100, 100, 0, true, kReferenceHead, 1024), 100u);
    EXPECT_EQ(expected_count(100, 192, 9, true, kReferenceHead, 1024), 11u);  // 100, 90, ..., 0
    EXPECT_EQ(expected_count(99, 192, 9, true, kReferenceHead, 1024), 10u);   // 99, 89, ..., 9
    EXPECT_EQ(expected_count(0, 192, 0, true, kReferenceHead, 1024), 1u);
    // Forward to the head.
    EXPECT_EQ(expected_count(8100, 192, 0, false, kReferenceHead, 1024), 92u);
    EXPECT_EQ(expected_count(0, 128, 191, false, kReferenceHead, 1024), 43u);  // 0, 192, ..., 8064
    EXPECT_EQ(expected_count(kReferenceHead, 192, 0, false, kReferenceHead, 1024), 1u);
    EXPECT_EQ(expected_count(0, 192, 0, false, 0, 1024), 1u);
}

TEST(LoadVerify, DescribeNamesEveryField) {
    EXPECT_EQ(describe(by_number(8000, 192, 0, true)), "id 7, by number 8000, 192 headers, skip 0, reverse");
    EXPECT_EQ(describe(by_hash(reference_chain().hashes[0], 1, 63, false)),
              "id 7, by hash 0xd4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3, 1 headers, skip 63, "
              "forward");
}

}  // namespace
}  // namespace headerd::load
