#include "p2p/eth/serve.hpp"

#include <gtest/gtest.h>
#include <leveldb/db.h>
#include <leveldb/write_batch.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "core/block_header.hpp"
#include "core/hex.hpp"
#include "core/rlp.hpp"
#include "db/import.hpp"
#include "db/schema.hpp"
#include "p2p/eth/reply_cache.hpp"
#include "p2p/wire/message_codec.hpp"
#include "tests/data_dir.hpp"

// Defined in allocation_counter_test.cpp, which replaces the global operator new.
namespace headerd::testing {
extern thread_local bool g_counting;
extern thread_local size_t g_allocations;
}  // namespace headerd::testing

namespace headerd::eth {
namespace serve_test {

namespace fs = std::filesystem;
using testing::g_allocations;
using testing::g_counting;

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kHead = 8191;
constexpr uint64_t kKeep = 1000;
constexpr uint64_t kAncient = kHead + 1 - kKeep;  // 7192: blocks below are in the freezer

// The reference: tests/data/mainnet-headers-0-8191.rlp split into headers, and .hashes.txt.
struct Reference {
    Bytes file;
    std::vector<ByteView> headers;
    std::vector<Hash32> hashes;

    Reference() {
        const std::string base = headerd::testing::data_dir() + "/mainnet-headers-0-8191";
        std::ifstream in(base + ".rlp", std::ios::binary);
        file.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        for (ByteView rest{file}; !rest.empty();) headers.push_back(*rlp::next_item(rest));
        std::ifstream h(base + ".hashes.txt");
        uint64_t n = 0;
        std::string hash;
        while (h >> n >> hash) {
            EXPECT_EQ(n, hashes.size());
            hashes.push_back(*hash_from_hex(hash));
        }
    }
};

const Reference& ref() {
    static const Reference r;
    return r;
}

fs::path temp_dir(const std::string& name) {
    return fs::temp_directory_path() / ("headerd-eth-" + name + "-" + std::to_string(::getpid()));
}

// Imports the first mainnet era1 epoch (blocks 0..8191) and freezes all but the last 1000, so that
// requests hit the freezer, LevelDB and the boundary between them.
std::unique_ptr<db::ChainDb> build_mainnet_db(const fs::path& dir) {
    fs::remove_all(dir);
    db::ChainDbOptions opts;
    opts.create_if_missing = true;
    auto opened = db::ChainDb::open(dir.string(), opts);
    EXPECT_TRUE(opened) << opened.error().message;
    if (!opened) return nullptr;
    std::unique_ptr<db::ChainDb> chain = std::move(*opened);
    auto imported =
        db::import_file(*chain, mainnet_config(), headerd::testing::data_dir() + "/mainnet-00000-5ec1ffb8.era1");
    EXPECT_TRUE(imported) << imported.error().message;
    db::FreezeOptions freeze;
    freeze.keep = kKeep;
    auto frozen = chain->freeze(freeze);
    EXPECT_TRUE(frozen) << frozen.error().message;
    EXPECT_EQ(chain->ancient_items(), kAncient);
    EXPECT_EQ(chain->head()->number, kHead);
    return chain;
}

// 128-bit arithmetic keeps the model free of the overflow guards the server needs.
__extension__ typedef unsigned __int128 U128;

// What a reply must hold, by the rules of docs/wire.md, computed independently of serve.cpp:
// numbers origin, origin +/- (skip+1), ... that exist, at most min(amount, max_headers), and no
// header that would take the RLP past max_bytes (except the first).
std::vector<uint64_t> expected_numbers(uint64_t origin, uint64_t amount, uint64_t skip, bool reverse,
                                       const ServeLimits& limits = {}) {
    std::vector<uint64_t> out;
    const U128 step = static_cast<U128>(skip) + 1;
    U128 n = origin;
    size_t bytes = 0;
    while (out.size() < std::min(amount, limits.max_headers) && n <= kHead) {
        const size_t size = ref().headers[static_cast<size_t>(n)].size();
        if (!out.empty() && bytes + size > limits.max_bytes) break;
        bytes += size;
        out.push_back(static_cast<uint64_t>(n));
        if (reverse) {
            if (n < step) break;
            n -= step;
        } else {
            n += step;
        }
    }
    return out;
}

// Checks the reply byte for byte: decodes it, compares every header with the reference slice and its
// hash with .hashes.txt, and re-encodes the expected list to compare whole payloads.
void expect_reply(const Bytes& reply, uint64_t request_id, uint64_t amount, const std::vector<uint64_t>& numbers) {
    auto m = BlockHeadersMessage::decode(reply);
    ASSERT_TRUE(m) << m.error().message();
    EXPECT_EQ(m->request_id, request_id);
    EXPECT_LE(m->headers.size(), amount);
    ASSERT_EQ(m->headers.size(), numbers.size());
    Bytes concatenated;
    for (size_t i = 0; i < numbers.size(); ++i) {
        const ByteView want = ref().headers[numbers[i]];
        const ByteView got = m->headers[i];
        ASSERT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end()))
            << "header " << i << " block " << numbers[i];
        ASSERT_EQ(header_hash(got), ref().hashes[numbers[i]]) << "block " << numbers[i];
        append(concatenated, want);
    }
    Bytes expected;
    encode_block_headers(expected, request_id, concatenated);
    EXPECT_TRUE(reply == expected);
}

class ServeTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = new fs::path(temp_dir("serve"));
        db_ = build_mainnet_db(*dir_).release();
    }
    static void TearDownTestSuite() {
        delete db_;
        db_ = nullptr;
        fs::remove_all(*dir_);
        delete dir_;
    }
    void SetUp() override { ASSERT_NE(db_, nullptr); }

    // Serves one request and checks it against the model.
    void check(const GetBlockHeadersRequest& req, const std::vector<uint64_t>& numbers, ServeKind kind,
               const ServeLimits& limits = {}) {
        HeaderServer server(*db_, limits);
        auto r = server.serve(req, scratch_, reply_);
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_EQ(r->kind, kind);
        EXPECT_EQ(r->headers, numbers.size());
        // Canonical headers below kAncient were read from the freezer.
        EXPECT_EQ(r->ancient_headers, std::ranges::count_if(numbers, [](uint64_t n) { return n < kAncient; }));
        expect_reply(reply_, req.request_id, req.amount, numbers);
    }

    static fs::path* dir_;
    static db::ChainDb* db_;
    ItemBuffer scratch_;
    Bytes reply_;
};

fs::path* ServeTest::dir_ = nullptr;
db::ChainDb* ServeTest::db_ = nullptr;

constexpr uint64_t kOrigins[] = {0, 1, 100, 6500, 7000, 7191, 7192, 7193, 8000, 8191, 8192, 1u << 20, kMax};
constexpr uint64_t kSkips[] = {0, 1, 7, 15, 16, 100, 5000, kMax - 1, kMax};
constexpr uint64_t kAmounts[] = {0, 1, 192, 1024, 5000};

// Calls fn(origin, skip, amount, reverse) for every combination of the values above, traced.
template <typename Fn>
void for_each_number_request(Fn fn) {
    for (uint64_t origin : kOrigins) {
        for (uint64_t skip : kSkips) {
            for (uint64_t amount : kAmounts) {
                for (bool reverse : {false, true}) {
                    SCOPED_TRACE("origin " + std::to_string(origin) + " skip " + std::to_string(skip) + " amount " +
                                 std::to_string(amount) + (reverse ? " reverse" : ""));
                    fn(origin, skip, amount, reverse);
                    if (::testing::Test::HasFatalFailure()) return;
                }
            }
        }
    }
}

TEST_F(ServeTest, NumberOriginsEveryDirectionSkipAndAmount) {
    uint64_t request_id = 0;
    for_each_number_request([&](uint64_t origin, uint64_t skip, uint64_t amount, bool reverse) {
        // Request ids cover 0, small, large and 2^64-1.
        request_id = request_id * 6364136223846793005u + 1442695040888963407u;
        const uint64_t rid = amount == 5000 ? kMax : request_id;
        const ServeKind kind = amount == 0 ? ServeKind::kZeroAmount
                               : skip == 0 ? ServeKind::kContiguous
                                           : ServeKind::kSkip;
        check({rid, HashOrNumber::of(origin), amount, skip, reverse}, expected_numbers(origin, amount, skip, reverse),
              kind);
    });
}

TEST_F(ServeTest, CanonicalHashOriginsServeLikeTheirNumbers) {
    for (uint64_t origin : {uint64_t{0}, uint64_t{1}, uint64_t{7000}, uint64_t{7191}, uint64_t{7192}, kHead}) {
        for (uint64_t skip : {uint64_t{0}, uint64_t{1}, uint64_t{7}, uint64_t{100}, kMax}) {
            for (uint64_t amount : {uint64_t{1}, uint64_t{192}, uint64_t{1024}, uint64_t{5000}}) {
                for (bool reverse : {false, true}) {
                    SCOPED_TRACE("hash of " + std::to_string(origin) + " skip " + std::to_string(skip) + " amount " +
                                 std::to_string(amount) + (reverse ? " reverse" : ""));
                    check({origin + 1, HashOrNumber::of(ref().hashes[origin]), amount, skip, reverse},
                          expected_numbers(origin, amount, skip, reverse),
                          skip == 0 ? ServeKind::kContiguous : ServeKind::kSkip);
                }
            }
        }
    }
}

TEST_F(ServeTest, UnknownHashAndZeroAmountGiveEmptyReplies) {
    Hash32 unknown = ref().hashes[5];
    unknown[0] ^= 0xff;
    check({42, HashOrNumber::of(unknown), 192, 0, false}, {}, ServeKind::kUnknownHash);
    check({43, HashOrNumber::of(Hash32{}), 192, 0, true}, {}, ServeKind::kUnknownHash);
    check({44, HashOrNumber::of(ref().hashes[5]), 0, 0, false}, {}, ServeKind::kZeroAmount);
    EXPECT_EQ(to_hex(reply_), "c22cc0");
}

TEST_F(ServeTest, ContiguousRepliesAreExactlyAsked) {
    // The typical syncing requests: 192 up from a number, across the freezer boundary.
    check({7, HashOrNumber::of(7100), 192, 0, false}, expected_numbers(7100, 192, 0, false), ServeKind::kContiguous);
    ASSERT_EQ(expected_numbers(7100, 192, 0, false).size(), 192u);
    check({8, HashOrNumber::of(7300), 192, 0, true}, expected_numbers(7300, 192, 0, true), ServeKind::kContiguous);
    // 5000 asked: 1024 given.
    check({9, HashOrNumber::of(6000), 5000, 0, false}, expected_numbers(6000, 1024, 0, false), ServeKind::kContiguous);
    EXPECT_EQ(expected_numbers(6000, 5000, 0, false).size(), 1024u);
    // Near the head and genesis: short replies.
    check({10, HashOrNumber::of(8100), 192, 0, false}, expected_numbers(8100, 92, 0, false), ServeKind::kContiguous);
    check({11, HashOrNumber::of(50), 192, 0, true}, expected_numbers(50, 51, 0, true), ServeKind::kContiguous);
}

TEST_F(ServeTest, HugeSkipNeverWrapsOrRepeats) {
    // skip = 2^64-1: skip+1 overflows; only the origin. skip = 2^64-2: the next block is past 2^64.
    for (uint64_t skip : {kMax, kMax - 1}) {
        for (bool reverse : {false, true}) {
            check({1, HashOrNumber::of(5), 10, skip, reverse}, {5}, ServeKind::kSkip);
            check({1, HashOrNumber::of(ref().hashes[8191]), 10, skip, reverse}, {8191}, ServeKind::kSkip);
        }
    }
    // origin 2^64-1 ascending with skip 0 and 1: nothing, and no wrap to block 0.
    check({1, HashOrNumber::of(kMax), 10, 0, false}, {}, ServeKind::kContiguous);
    check({1, HashOrNumber::of(kMax), 10, 1, false}, {}, ServeKind::kSkip);
    check({1, HashOrNumber::of(kMax), 10, 1, true}, {}, ServeKind::kSkip);
    // skip 8190 from 0: blocks 0 and 8191 (the head), then nothing past it.
    check({1, HashOrNumber::of(0), 10, 8190, false}, {0, 8191}, ServeKind::kSkip);
}

TEST_F(ServeTest, ByteLimitCutsRepliesOnHeaderBoundaries) {
    ServeLimits small;
    small.max_bytes = 20000;  // about 37 early mainnet headers
    for (uint64_t origin : {uint64_t{0}, uint64_t{7150}, uint64_t{7250}, kHead}) {
        for (uint64_t skip : {uint64_t{0}, uint64_t{3}, uint64_t{40}}) {
            for (bool reverse : {false, true}) {
                SCOPED_TRACE("origin " + std::to_string(origin) + " skip " + std::to_string(skip));
                const auto numbers = expected_numbers(origin, 1024, skip, reverse, small);
                check({3, HashOrNumber::of(origin), 1024, skip, reverse}, numbers,
                      skip == 0 ? ServeKind::kContiguous : ServeKind::kSkip, small);
                if (origin == 0 && skip == 0 && !reverse) {
                    EXPECT_GT(numbers.size(), 10u);
                    EXPECT_LT(numbers.size(), 100u);
                }
            }
        }
    }
    // A limit below one header still sends that header.
    ServeLimits tiny;
    tiny.max_bytes = 1;
    check({4, HashOrNumber::of(7191), 10, 0, false}, {7191}, ServeKind::kContiguous, tiny);
    check({4, HashOrNumber::of(7191), 10, 5, true}, {7191}, ServeKind::kSkip, tiny);
    // A smaller header cap.
    ServeLimits few;
    few.max_headers = 3;
    check({5, HashOrNumber::of(7190), 10, 0, false}, {7190, 7191, 7192}, ServeKind::kContiguous, few);
    check({5, HashOrNumber::of(7190), 10, 1, true}, {7190, 7188, 7186}, ServeKind::kSkip, few);
}

TEST_F(ServeTest, SteadyStateServingAllocatesNoMoreThanChainDb) {
    struct Case {
        uint64_t from;
        uint64_t amount;
        bool reverse;
    };
    // Freezer only, LevelDB only, across the boundary each way.
    constexpr Case kCases[] = {
        {1000, 1024, false}, {7500, 192, false}, {7000, 1024, false}, {8191, 1024, true}, {7300, 192, true}};
    HeaderServer server(*db_);
    for (const Case& c : kCases) {
        SCOPED_TRACE("from " + std::to_string(c.from));
        const GetBlockHeadersRequest req{99, HashOrNumber::of(c.from), c.amount, 0, c.reverse};
        const Order order = c.reverse ? Order::kDescending : Order::kAscending;
        // Warm up both paths with this and a bigger request.
        for (int i = 0; i < 2; ++i) {
            ASSERT_TRUE(server.serve(req, scratch_, reply_));
            ASSERT_TRUE(server.serve({99, HashOrNumber::of(0), 1024, 0, false}, scratch_, reply_));
        }
        ItemBuffer range;
        ASSERT_TRUE(db_->header_range(c.from, c.amount, order, range, ServeLimits{}.max_bytes));
        ASSERT_TRUE(db_->header_range(c.from, c.amount, order, range, ServeLimits{}.max_bytes));

        g_allocations = 0;
        g_counting = true;
        auto served = server.serve(req, scratch_, reply_);
        g_counting = false;
        const size_t serve_allocations = g_allocations;
        ASSERT_TRUE(served);

        g_allocations = 0;
        g_counting = true;
        auto read = db_->header_range(c.from, c.amount, order, range, ServeLimits{}.max_bytes);
        g_counting = false;
        const size_t range_allocations = g_allocations;
        ASSERT_TRUE(read);

        EXPECT_EQ(serve_allocations, range_allocations);
        expect_reply(reply_, 99, c.amount, expected_numbers(c.from, c.amount, 0, c.reverse));
    }

    // The skip path collects into the reply itself: 192 headers with skip 3 are one window read of
    // 191*4+1 headers, and nothing else may allocate.
    for (uint64_t from : {uint64_t{1000}, uint64_t{7100}}) {
        SCOPED_TRACE("skip 3 from " + std::to_string(from));
        const GetBlockHeadersRequest req{98, HashOrNumber::of(from), 192, 3, false};
        for (int i = 0; i < 2; ++i) ASSERT_TRUE(server.serve(req, scratch_, reply_));
        ItemBuffer range;
        for (int i = 0; i < 2; ++i) ASSERT_TRUE(db_->header_range(from, 191 * 4 + 1, Order::kAscending, range));
        g_allocations = 0;
        g_counting = true;
        auto served = server.serve(req, scratch_, reply_);
        g_counting = false;
        const size_t serve_allocations = g_allocations;
        ASSERT_TRUE(served);
        g_allocations = 0;
        g_counting = true;
        auto read = db_->header_range(from, 191 * 4 + 1, Order::kAscending, range);
        g_counting = false;
        ASSERT_TRUE(read);
        EXPECT_EQ(serve_allocations, g_allocations);
        expect_reply(reply_, 98, 192, expected_numbers(from, 192, 3, false));
    }
}

TEST_F(ServeTest, ReusedBuffersHoldNothingOfEarlierContents) {
    reply_.assign(100, 0xee);
    scratch_.push(as_bytes("stale"));
    check({77, HashOrNumber::of(3), 2, 0, false}, {3, 4}, ServeKind::kContiguous);
    reply_.assign(100, 0xee);
    check({78, HashOrNumber::of(3), 2, 1, false}, {3, 5}, ServeKind::kSkip);
}

// The reply is built in place behind room for a prefix sized for a 64 KiB .. 16 MiB header list:
// lists just below and above 64 KiB (whose prefixes are a byte shorter or exactly that long), for
// request ids of every length, each way, in each store and across the boundary.
TEST_F(ServeTest, RepliesAroundThePrefixSizeStepAreExact) {
    for (uint64_t origin : {uint64_t{100}, uint64_t{7100}, uint64_t{7400}}) {
        for (bool reverse : {false, true}) {
            // The number of headers whose RLP first reaches 65,536 bytes from this origin.
            uint64_t count = 0;
            size_t bytes = 0;
            while (bytes < (size_t{1} << 16) && (reverse ? count <= origin : origin + count <= kHead)) {
                bytes += ref().headers[static_cast<size_t>(reverse ? origin - count : origin + count)].size();
                ++count;
            }
            if (bytes < (size_t{1} << 16)) continue;  // genesis comes first (100 down)
            for (uint64_t amount : {count - 1, count, count + 1}) {
                for (uint64_t rid : {uint64_t{0}, uint64_t{0x7f}, uint64_t{0x80}, uint64_t{0x10000}, kMax}) {
                    SCOPED_TRACE("origin " + std::to_string(origin) + " amount " + std::to_string(amount) + " id " +
                                 std::to_string(rid) + (reverse ? " reverse" : ""));
                    check({rid, HashOrNumber::of(origin), amount, 0, reverse},
                          expected_numbers(origin, amount, 0, reverse), ServeKind::kContiguous);
                    check({rid, HashOrNumber::of(origin), amount, 0, reverse},
                          expected_numbers(origin, amount, 0, reverse), ServeKind::kContiguous);  // warm buffers
                    // About the same sizes through the skip path (skip 1 reads a window, keeps every other).
                    check({rid, HashOrNumber::of(origin), amount, 1, reverse},
                          expected_numbers(origin, amount, 1, reverse), ServeKind::kSkip);
                }
            }
        }
    }
}

// append_header_range, which serve() reads into the reply with, leaves the items before it alone
// and counts max_bytes from where it starts.
TEST_F(ServeTest, AppendedRangesFollowTheItemsBeforeThem) {
    struct Case {
        uint64_t from;
        uint64_t count;
        Order order;
        size_t max_bytes;
    };
    constexpr size_t kNoCap = std::numeric_limits<size_t>::max();
    const Case cases[] = {
        {100, 192, Order::kAscending, kNoCap},   {7100, 192, Order::kAscending, kNoCap},
        {7300, 192, Order::kDescending, kNoCap}, {8000, 300, Order::kAscending, kNoCap},
        {7150, 100, Order::kAscending, 20000},   {7250, 100, Order::kDescending, 20000},
        {7191, 10, Order::kAscending, 1},        {9000, 5, Order::kAscending, kNoCap},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE("from " + std::to_string(c.from) + " count " + std::to_string(c.count));
        ItemBuffer alone;
        ASSERT_TRUE(db_->header_range(c.from, c.count, c.order, alone, c.max_bytes));
        ItemBuffer out;
        out.push(as_bytes("first item"));
        out.push(as_bytes("2nd"));
        ASSERT_TRUE(db_->append_header_range(c.from, c.count, c.order, out, c.max_bytes));
        ASSERT_EQ(out.size(), alone.size() + 2);
        EXPECT_EQ(to_hex(out.item(0)), to_hex(as_bytes("first item")));
        EXPECT_EQ(to_hex(out.item(1)), to_hex(as_bytes("2nd")));
        for (size_t i = 0; i < alone.size(); ++i) {
            const ByteView got = out.item(i + 2);
            const ByteView want = alone.item(i);
            ASSERT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end())) << "item " << i;
        }
        EXPECT_EQ(out.bytes.size(), 13 + alone.bytes.size());
    }
}

// ---- side chains --------------------------------------------------------------------------------

// A side chain forking off block 7999: blocks 8000', 8001', 8002' (LevelDB range), plus a side
// header at 100' (freezer range) whose number entry exists but whose body the freezer does not
// hold. They are written straight into LevelDB with the geth keys, as a reorg would leave them.
// The cache of compressed replies (reply_cache.hpp): the range a request names is the range serve
// reads, for every origin, skip, amount and direction the model above covers; a header list kept
// and sent again behind another request's prefix is that request's reply byte for byte.
TEST_F(ServeTest, ReplyCacheKeysNameWhatServeReadsAndSplicedRepliesAreExact) {
    HeaderServer server(*db_);
    ReplyCache cache(size_t{64} << 20);
    Bytes frame_buf;
    Bytes decoded;
    size_t keyed = 0;
    for_each_number_request([&](uint64_t origin, uint64_t skip, uint64_t amount, bool reverse) {
        const GetBlockHeadersRequest req{7, HashOrNumber::of(origin), amount, skip, reverse};
        const auto numbers = expected_numbers(origin, amount, skip, reverse);
        const auto key = range_key(req, server.limits().max_headers, *db_);
        if (!key) {
            // Nothing to keep: amount 0, past the head, or a step that overflows (whose
            // only header is the origin: served, never kept).
            EXPECT_TRUE(numbers.empty() || skip == kMax) << numbers.size();
            return;
        }
        ++keyed;
        EXPECT_EQ(key->count, numbers.size());
        EXPECT_EQ(ancient_headers(*key, key->count, kAncient),
                  static_cast<uint64_t>(std::ranges::count_if(numbers, [](uint64_t n) { return n < kAncient; })));
        auto served = server.serve(req, scratch_, reply_);
        ASSERT_TRUE(served) << served.error().message;
        ASSERT_EQ(served->headers, key->count);
        const ByteView header_bytes(reply_.data() + reply_.size() - served->header_bytes, served->header_bytes);
        ReplyCache::Change change;
        ASSERT_NE(cache.insert(*key, header_bytes, served->headers, change), nullptr);
        // Asked again, with another request id: the kept list behind the new prefix.
        const GetBlockHeadersRequest again{kMax - origin, req.origin, amount, skip, reverse};
        ASSERT_EQ(range_key(again, server.limits().max_headers, *db_), key);
        const ReplyCache::Entry* entry = cache.find(*key);
        ASSERT_NE(entry, nullptr);
        EXPECT_EQ(entry->headers, numbers.size());
        std::array<uint8_t, kMaxBlockHeadersPrefix> prefix;
        const size_t n = encode_block_headers_prefix(again.request_id, entry->length, prefix);
        auto frame = p2p::encode_spliced_frame_data(0x14, ByteView(prefix.data(), n), entry->body(), frame_buf);
        ASSERT_TRUE(frame);
        auto message = p2p::decode_frame_data(*frame, true, decoded);
        ASSERT_TRUE(message) << message.error().message();
        const Bytes spliced(message->payload.begin(), message->payload.end());
        expect_reply(spliced, again.request_id, amount, numbers);
    });
    EXPECT_GT(keyed, 300u);
    // A hash origin is never keyed (its number needs a lookup), nor a zero amount.
    EXPECT_FALSE(range_key({1, HashOrNumber::of(ref().hashes[100]), 10, 0, false}, 1024, *db_));
    EXPECT_FALSE(range_key({1, HashOrNumber::of(100), 0, 0, false}, 1024, *db_));
}

// Least recently used out first, within the byte budget; an entry above the whole budget is
// compressed and returned but not kept; a key of another generation is another range.
TEST_F(ServeTest, ReplyCacheKeepsTheRecentlyUsedWithinItsBudget) {
    HeaderServer server(*db_);
    auto header_bytes = [&](uint64_t from) {
        auto r = server.serve({1, HashOrNumber::of(from), 192, 0, false}, scratch_, reply_);
        EXPECT_TRUE(r);
        return Bytes(reply_.end() - static_cast<std::ptrdiff_t>(r->header_bytes), reply_.end());
    };
    const Bytes first = header_bytes(0);
    ReplyCache::Change change;
    ReplyCache probe(size_t{64} << 20);
    probe.insert({0, 192, 1, false, 0}, first, 192, change);
    const size_t one = static_cast<size_t>(change.bytes);
    EXPECT_EQ(change.entries, 1);
    EXPECT_EQ(probe.bytes(), one);
    EXPECT_LT(one, first.size());  // compressed

    ReplyCache cache(3 * one + one / 2);  // room for three such entries
    for (uint64_t i = 0; i < 3; ++i) {
        cache.insert({i * 192, 192, 1, false, 0}, header_bytes(i * 192), 192, change);
        EXPECT_EQ(change.evicted, 0u);
    }
    ASSERT_NE(cache.find({0, 192, 1, false, 0}), nullptr);  // 0 is now the most recent; 192 the least
    cache.insert({576, 192, 1, false, 0}, header_bytes(576), 192, change);
    EXPECT_EQ(change.evicted, 1u);
    EXPECT_EQ(change.entries, 0);
    EXPECT_EQ(cache.entries(), 3u);
    EXPECT_LE(cache.bytes(), cache.max_bytes());
    EXPECT_EQ(cache.find({192, 192, 1, false, 0}), nullptr);
    EXPECT_NE(cache.find({0, 192, 1, false, 0}), nullptr);
    EXPECT_NE(cache.find({384, 192, 1, false, 0}), nullptr);
    EXPECT_EQ(cache.find({0, 192, 1, false, 1}), nullptr);  // the chain changed since
    EXPECT_EQ(cache.find({0, 191, 1, false, 0}), nullptr);  // the head cut it shorter then

    ReplyCache small(one / 2);
    const ReplyCache::Entry* kept = small.insert({0, 192, 1, false, 0}, first, 192, change);
    ASSERT_NE(kept, nullptr);
    EXPECT_EQ(kept->length, first.size());
    EXPECT_EQ(change.bytes, 0);
    EXPECT_EQ(small.entries(), 0u);
    EXPECT_EQ(small.find({0, 192, 1, false, 0}), nullptr);
}

class SideChainTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = new fs::path(temp_dir("side"));
        { build_mainnet_db(*dir_); }
        side_ = new std::vector<Bytes>();
        side_hashes_ = new std::vector<Hash32>();

        leveldb::DB* raw = nullptr;
        leveldb::Options opts;
        ASSERT_TRUE(leveldb::DB::Open(opts, (*dir_ / "chaindata").string(), &raw).ok());
        std::unique_ptr<leveldb::DB> ldb(raw);
        leveldb::WriteBatch batch;
        auto put = [&](uint64_t number, const Hash32& parent) {
            BlockHeader h = *decode_block_header(ref().headers[number]);
            h.parent_hash = parent;
            h.extra_data = {'s', 'i', 'd', 'e'};
            Bytes rlp;
            encode(rlp, h);
            const Hash32 hash = header_hash(rlp);
            const auto hk = db::schema::header_key(number, hash);
            const auto nk = db::schema::number_key(hash);
            uint8_t be[8];
            store_be64(be, number);
            batch.Put(leveldb::Slice(reinterpret_cast<const char*>(hk.data()), hk.size()),
                      leveldb::Slice(reinterpret_cast<const char*>(rlp.data()), rlp.size()));
            batch.Put(leveldb::Slice(reinterpret_cast<const char*>(nk.data()), nk.size()),
                      leveldb::Slice(reinterpret_cast<const char*>(be), 8));
            side_->push_back(std::move(rlp));
            side_hashes_->push_back(hash);
            return hash;
        };
        Hash32 parent = ref().hashes[7999];
        for (uint64_t n = 8000; n <= 8002; ++n) parent = put(n, parent);
        put(100, ref().hashes[99]);
        // A damaged store: 8001'' whose parent's stored header is not a header.
        Hash32 broken;
        broken.fill(0xab);
        put(8001, broken);
        const auto hk = db::schema::header_key(8000, broken);
        const auto nk = db::schema::number_key(broken);
        uint8_t be[8];
        store_be64(be, 8000);
        batch.Put(leveldb::Slice(reinterpret_cast<const char*>(hk.data()), hk.size()),
                  "\x83"
                  "bad");
        batch.Put(leveldb::Slice(reinterpret_cast<const char*>(nk.data()), nk.size()),
                  leveldb::Slice(reinterpret_cast<const char*>(be), 8));
        leveldb::WriteOptions wo;
        wo.sync = true;
        ASSERT_TRUE(ldb->Write(wo, &batch).ok());
        ldb.reset();

        auto reopened = db::ChainDb::open(dir_->string());
        ASSERT_TRUE(reopened) << reopened.error().message;
        db_ = reopened->release();
    }
    static void TearDownTestSuite() {
        delete db_;
        db_ = nullptr;
        fs::remove_all(*dir_);
        delete dir_;
        delete side_;
        delete side_hashes_;
    }
    void SetUp() override { ASSERT_NE(db_, nullptr); }

    // side header i: 0 -> 8000', 1 -> 8001', 2 -> 8002', 3 -> 100', 4 -> 8001'' (broken parent)
    static ByteView side(size_t i) { return (*side_)[i]; }
    static const Hash32& side_hash(size_t i) { return (*side_hashes_)[i]; }

    // Expects the reply to hold exactly `want`: side headers by index (negative numbers -1..-4 for
    // side 0..3) and canonical ones by block number.
    void check(const GetBlockHeadersRequest& req, const std::vector<int64_t>& want, ServeKind kind,
               const ServeLimits& limits = {}) {
        HeaderServer server(*db_, limits);
        auto r = server.serve(req, scratch_, reply_);
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_EQ(r->kind, kind);
        auto m = BlockHeadersMessage::decode(reply_);
        ASSERT_TRUE(m);
        EXPECT_EQ(m->request_id, req.request_id);
        ASSERT_EQ(m->headers.size(), want.size());
        for (size_t i = 0; i < want.size(); ++i) {
            const ByteView expected =
                want[i] < 0 ? side(static_cast<size_t>(-want[i] - 1)) : ref().headers[static_cast<size_t>(want[i])];
            EXPECT_TRUE(std::equal(m->headers[i].begin(), m->headers[i].end(), expected.begin(), expected.end()))
                << "item " << i;
        }
    }

    static fs::path* dir_;
    static db::ChainDb* db_;
    static std::vector<Bytes>* side_;
    static std::vector<Hash32>* side_hashes_;
    ItemBuffer scratch_;
    Bytes reply_;
};

fs::path* SideChainTest::dir_ = nullptr;
db::ChainDb* SideChainTest::db_ = nullptr;
std::vector<Bytes>* SideChainTest::side_ = nullptr;
std::vector<Hash32>* SideChainTest::side_hashes_ = nullptr;

constexpr int64_t kSide8000 = -1;
constexpr int64_t kSide8001 = -2;
constexpr int64_t kSide8002 = -3;

TEST_F(SideChainTest, AscendingFromASideHeaderGivesOnlyThatHeader) {
    check({1, HashOrNumber::of(side_hash(0)), 5, 0, false}, {kSide8000}, ServeKind::kNonCanonical);
    check({2, HashOrNumber::of(side_hash(2)), 192, 3, false}, {kSide8002}, ServeKind::kNonCanonical);
    check({3, HashOrNumber::of(side_hash(1)), 1, 0, true}, {kSide8001}, ServeKind::kNonCanonical);
}

TEST_F(SideChainTest, DescendingFollowsParentsThenTheCanonicalChain) {
    check({1, HashOrNumber::of(side_hash(2)), 6, 0, true}, {kSide8002, kSide8001, kSide8000, 7999, 7998, 7997},
          ServeKind::kNonCanonical);
    check({2, HashOrNumber::of(side_hash(2)), 4, 1, true}, {kSide8002, kSide8000, 7998, 7996},
          ServeKind::kNonCanonical);
    check({3, HashOrNumber::of(side_hash(2)), 3, 2, true}, {kSide8002, 7999, 7996}, ServeKind::kNonCanonical);
    // Into the freezer and down to genesis.
    check({4, HashOrNumber::of(side_hash(2)), 5, 2000, true}, {kSide8002, 6001, 4000, 1999}, ServeKind::kNonCanonical);
    // skip+1 overflow: the origin only.
    check({5, HashOrNumber::of(side_hash(2)), 5, kMax, true}, {kSide8002}, ServeKind::kNonCanonical);
}

TEST_F(SideChainTest, WalkStopsAtItsLookupBudget) {
    ServeLimits budget;
    budget.max_lookups = 2;  // the origin, then one canonical check
    check({1, HashOrNumber::of(side_hash(2)), 5, 0, true}, {kSide8002}, ServeKind::kNonCanonical, budget);
    budget.max_lookups = 3;  // ... and one parent read
    check({1, HashOrNumber::of(side_hash(2)), 5, 0, true}, {kSide8002, kSide8001}, ServeKind::kNonCanonical, budget);
}

TEST_F(SideChainTest, SideHeaderBelowTheFreezerIsUnknown) {
    check({1, HashOrNumber::of(side_hash(3)), 5, 0, true}, {}, ServeKind::kUnknownHash);
}

TEST_F(SideChainTest, DamagedStoreIsAnErrorWithAnEmptyReplyForTheRequest) {
    HeaderServer server(*db_);
    reply_.assign(50, 0xee);
    auto r = server.serve({4242, HashOrNumber::of(side_hash(4)), 3, 0, true}, scratch_, reply_);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("0xabababab"), std::string::npos) << r.error().message;
    auto m = BlockHeadersMessage::decode(reply_);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->request_id, 4242u);
    EXPECT_TRUE(m->headers.empty());
    // Ascending it never reads the parent: the origin alone.
    check({4243, HashOrNumber::of(side_hash(4)), 3, 0, false}, {-5}, ServeKind::kNonCanonical);
}

TEST_F(SideChainTest, CanonicalChainIsUnaffected) {
    check({1, HashOrNumber::of(7998), 5, 0, false}, {7998, 7999, 8000, 8001, 8002}, ServeKind::kContiguous);
    check({1, HashOrNumber::of(ref().hashes[8002]), 3, 0, true}, {8002, 8001, 8000}, ServeKind::kContiguous);
}

}  // namespace serve_test
}  // namespace headerd::eth
