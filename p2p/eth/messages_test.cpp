#include "p2p/eth/messages.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/block_header.hpp"
#include "core/hex.hpp"
#include "core/rlp.hpp"
#include "core/test_hex.hpp"

namespace headerd::eth {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

using test::hex;

Hash32 hash_of(std::string_view h) { return *hash_from_hex(h); }

const Hash32 kMainnetGenesis = hash_of("d4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3");

template <class M>
std::string encoded(const M& m) {
    Bytes out;
    m.encode(out);
    return to_hex(out);
}

// Every strict prefix of a valid payload must fail to decode.
template <class M>
void expect_truncations_fail(const Bytes& full) {
    for (size_t n = 0; n < full.size(); ++n) {
        EXPECT_FALSE(M::decode(ByteView{full}.first(n))) << "prefix of " << n << " bytes";
    }
}

// Wraps raw RLP items into a list.
Bytes list_of(std::initializer_list<std::string_view> items) {
    Bytes payload;
    for (std::string_view i : items) append(payload, hex(i));
    Bytes out;
    rlp::encode_header(out, {true, payload.size()});
    append(out, payload);
    return out;
}

// ---- test-vectors.md section G: go-ethereum protocol_test.go, request id 1111 -----------------

constexpr std::string_view kGetHeadersByHash =
    "e8820457e4a000000000000000000000000000000000000000000000000000000000deadc0de050580";
constexpr std::string_view kGetHeadersByNumber = "ca820457c682270f050580";
constexpr std::string_view kEmpty1111 = "c4820457c0";
constexpr std::string_view kBlockHeaders1111 =
    "f90202820457f901fcf901f9a0000000000000000000000000000000000000000000000000000000"
    "0000000000a000000000000000000000000000000000000000000000000000000000000000009400"
    "00000000000000000000000000000000000000a00000000000000000000000000000000000000000"
    "000000000000000000000000a0000000000000000000000000000000000000000000000000000000"
    "0000000000a00000000000000000000000000000000000000000000000000000000000000000b901"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000008208ae820d0582115c8215b3821a0a827788a000000000"
    "00000000000000000000000000000000000000000000000000000000880000000000000000";
constexpr std::string_view kStatus68 =
    "f85644018a0c70d815d562d3cfa955a0d4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3a0d4e56740"
    "f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3c68407c9462e80";
constexpr std::string_view kStatus69 =
    "f84d4501a0d4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3c68407c9462e808080a0d4e56740f876aef"
    "8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3";

TEST(GetBlockHeaders, MatchesGethVectors) {
    GetBlockHeadersRequest by_hash;
    by_hash.request_id = 1111;
    by_hash.origin = HashOrNumber::of(hash_of("00000000000000000000000000000000000000000000000000000000deadc0de"));
    by_hash.amount = 5;
    by_hash.skip = 5;
    EXPECT_EQ(encoded(by_hash), kGetHeadersByHash);
    auto d1 = GetBlockHeadersRequest::decode(hex(kGetHeadersByHash));
    ASSERT_TRUE(d1) << d1.error().message();
    EXPECT_EQ(*d1, by_hash);

    GetBlockHeadersRequest by_number{1111, HashOrNumber::of(9999), 5, 5, false};
    EXPECT_EQ(encoded(by_number), kGetHeadersByNumber);
    auto d2 = GetBlockHeadersRequest::decode(hex(kGetHeadersByNumber));
    ASSERT_TRUE(d2);
    EXPECT_EQ(*d2, by_number);

    // Self-derived: rid 1, origin 1000000, limit 192, skip 0, reverse.
    GetBlockHeadersRequest reverse{1, HashOrNumber::of(1000000), 192, 0, true};
    EXPECT_EQ(encoded(reverse), "ca01c8830f424081c08001");
    EXPECT_EQ(*GetBlockHeadersRequest::decode(hex("ca01c8830f424081c08001")), reverse);
}

TEST(GetBlockHeaders, RoundTripsEdgeValues) {
    for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{0x7f}, uint64_t{0x80}, uint64_t{0xffffffff}, kMax}) {
        GetBlockHeadersRequest r{v, HashOrNumber::of(v), v, v, v % 2 == 1};
        Bytes out;
        r.encode(out);
        auto back = GetBlockHeadersRequest::decode(out);
        ASSERT_TRUE(back) << v;
        EXPECT_EQ(*back, r);
    }
}

TEST(GetBlockHeaders, OriginIsHashOnlyAt32BytesAndNumberUpTo8) {
    // 8 bytes: a number.
    auto eight = GetBlockHeadersRequest::decode(list_of({"01",
                                                         "cc"
                                                         "88ffffffffffffffff"
                                                         "01"
                                                         "80"
                                                         "80"}));
    ASSERT_TRUE(eight) << eight.error().message();
    EXPECT_EQ(eight->origin, HashOrNumber::of(kMax));
    std::vector<size_t> sizes;
    for (size_t n = 9; n <= 31; ++n) sizes.push_back(n);
    sizes.insert(sizes.end(), {33, 64, 100});
    for (size_t n : sizes) {
        Bytes origin;
        rlp::encode(origin, ByteView{Bytes(n, 0x11)});
        Bytes query = origin;
        query.insert(query.end(), {0x01, 0x80, 0x80});
        Bytes q;
        rlp::encode_header(q, {true, query.size()});
        append(q, query);
        Bytes payload = {0x01};
        append(payload, q);
        Bytes msg;
        rlp::encode_header(msg, {true, payload.size()});
        append(msg, payload);
        auto r = GetBlockHeadersRequest::decode(msg);
        ASSERT_FALSE(r) << n;
        EXPECT_EQ(r.error(), MessageError::kBadOrigin) << n;
    }
    // A list as origin, and a number with a leading zero.
    EXPECT_EQ(GetBlockHeadersRequest::decode(list_of({"01",
                                                      "c4"
                                                      "c0"
                                                      "01"
                                                      "80"
                                                      "80"}))
                  .error(),
              MessageError::kBadOrigin);
    EXPECT_EQ(GetBlockHeadersRequest::decode(list_of({"01",
                                                      "c6"
                                                      "820001"
                                                      "01"
                                                      "80"
                                                      "80"}))
                  .error(),
              rlp::DecodeError::kLeadingZeroInInteger);
}

TEST(GetBlockHeaders, ReverseMustBe80Or01) {
    for (std::string_view reverse : {"02", "00", "8101", "820001", "c0", "7f"}) {
        const std::string query =
            "c" + std::to_string(3 + reverse.size() / 2) + "0a" + "01" + "80" + std::string(reverse);
        auto r = GetBlockHeadersRequest::decode(list_of({"01", query}));
        ASSERT_FALSE(r) << reverse;
        if (reverse == "8101") {
            EXPECT_EQ(r.error(), rlp::DecodeError::kNonCanonicalSingleByte);
        } else {
            EXPECT_EQ(r.error(), MessageError::kBadReverse) << reverse;
        }
    }
}

TEST(GetBlockHeaders, RejectsWrongFieldCountsBadRlpAndTruncation) {
    // geth's nil query: [1111, []]
    EXPECT_EQ(GetBlockHeadersRequest::decode(hex(kEmpty1111)).error(), MessageError::kTooFewFields);
    EXPECT_EQ(GetBlockHeadersRequest::decode(list_of({"01"})).error(), MessageError::kTooFewFields);
    EXPECT_EQ(GetBlockHeadersRequest::decode(list_of({"01",
                                                      "c3"
                                                      "0a"
                                                      "01"
                                                      "80"}))
                  .error(),
              MessageError::kTooFewFields);
    EXPECT_EQ(GetBlockHeadersRequest::decode(list_of({"01",
                                                      "c5"
                                                      "0a"
                                                      "01"
                                                      "80"
                                                      "80"
                                                      "80"}))
                  .error(),
              MessageError::kTooManyFields);
    EXPECT_EQ(GetBlockHeadersRequest::decode(list_of({"01",
                                                      "c4"
                                                      "0a"
                                                      "01"
                                                      "80"
                                                      "80",
                                                      "80"}))
                  .error(),
              MessageError::kTooManyFields);
    // Request id with a leading zero; long-form list header for a short list; trailing byte.
    EXPECT_EQ(GetBlockHeadersRequest::decode(list_of({"820001",
                                                      "c4"
                                                      "0a"
                                                      "01"
                                                      "80"
                                                      "80"}))
                  .error(),
              rlp::DecodeError::kLeadingZeroInInteger);
    EXPECT_EQ(GetBlockHeadersRequest::decode(hex("f80a820457c682270f050580")).error(),
              rlp::DecodeError::kNonCanonicalSize);
    Bytes trailing = hex(kGetHeadersByNumber);
    trailing.push_back(0x80);
    EXPECT_EQ(GetBlockHeadersRequest::decode(trailing).error(), rlp::DecodeError::kTrailingBytes);
    // A string instead of the query list; a payload that is not a list.
    EXPECT_EQ(GetBlockHeadersRequest::decode(list_of({"01", "80"})).error(), rlp::DecodeError::kUnexpectedString);
    EXPECT_EQ(GetBlockHeadersRequest::decode(hex("820457")).error(), rlp::DecodeError::kUnexpectedString);
    expect_truncations_fail<GetBlockHeadersRequest>(hex(kGetHeadersByHash));
    expect_truncations_fail<GetBlockHeadersRequest>(hex(kGetHeadersByNumber));
}

BlockHeader geth_test_header() {
    BlockHeader h;
    h.difficulty = 2222;
    h.number = 3333;
    h.gas_limit = 4444;
    h.gas_used = 5555;
    h.timestamp = 6666;
    h.extra_data = {0x77, 0x88};
    return h;
}

TEST(BlockHeaders, SplicesStoredRlpToGethVector) {
    Bytes header;
    encode(header, geth_test_header());
    ItemBuffer stored;
    stored.push(header);
    Bytes out;
    encode_block_headers(out, 1111, stored.bytes);
    EXPECT_EQ(to_hex(out), to_hex(hex(kBlockHeaders1111)));
    EXPECT_EQ(out.size(), block_headers_length(1111, stored.bytes.size()));

    auto m = BlockHeadersMessage::decode(out);
    ASSERT_TRUE(m) << m.error().message();
    EXPECT_EQ(m->request_id, 1111u);
    ASSERT_EQ(m->headers.size(), 1u);
    EXPECT_TRUE(std::equal(m->headers[0].begin(), m->headers[0].end(), header.begin(), header.end()));
    auto decoded = decode_block_header(m->headers[0]);
    ASSERT_TRUE(decoded);
    EXPECT_EQ(decoded->number, 3333u);
    EXPECT_EQ(encoded(*m), to_hex(out));

    // Empty reply: [1111, []].
    encode_block_headers(out, 1111, {});
    EXPECT_EQ(to_hex(out), kEmpty1111);
    auto empty = BlockHeadersMessage::decode(out);
    ASSERT_TRUE(empty);
    EXPECT_TRUE(empty->headers.empty());
    expect_truncations_fail<BlockHeadersMessage>(hex(kBlockHeaders1111));
}

TEST(BlockHeaders, PrefixLengthsAreExactAcrossHeaderSizeBoundaries) {
    // Payload sizes where the RLP list header grows: < 56, 56, 255, 256, 65535, 65536, 2 MiB.
    for (size_t n : {size_t{0}, size_t{1}, size_t{55}, size_t{56}, size_t{255}, size_t{256}, size_t{65535},
                     size_t{65536}, size_t{2} << 20, size_t{1} << 24}) {
        for (uint64_t rid : {uint64_t{0}, uint64_t{0x7f}, uint64_t{0x80}, kMax}) {
            // n bytes made of 1-byte items (0x01 each is a valid RLP item).
            const Bytes items(n, 0x01);
            Bytes out;
            encode_block_headers(out, rid, items);
            ASSERT_EQ(out.size(), block_headers_length(rid, n)) << n << " " << rid;
            // Cross-check against the generic encoder.
            Bytes ref;
            Bytes inner;
            rlp::encode(inner, rid);
            rlp::encode_header(inner, {true, n});
            rlp::encode_header(ref, {true, inner.size() + n});
            append(ref, inner);
            ASSERT_TRUE(std::equal(ref.begin(), ref.end(), out.begin())) << n << " " << rid;
        }
    }
}

TEST(BlockHeaders, DecodeRejectsNonListHeadersAndExtraFields) {
    EXPECT_EQ(BlockHeadersMessage::decode(list_of({"01",
                                                   "c2"
                                                   "c0"
                                                   "80"}))
                  .error(),
              MessageError::kBadHeader);
    EXPECT_EQ(BlockHeadersMessage::decode(list_of({"01", "c0", "c0"})).error(), MessageError::kTooManyFields);
    EXPECT_EQ(BlockHeadersMessage::decode(list_of({"01"})).error(), MessageError::kTooFewFields);
    EXPECT_EQ(BlockHeadersMessage::decode(list_of({"01",
                                                   "c2"
                                                   "c3"}))
                  .error(),
              rlp::DecodeError::kInputTooShort);
}

TEST(ResponseHead, PeeksIdAndItemCountOfEveryResponseWithoutDecodingItems) {
    auto head = ResponseHead::peek(hex(kBlockHeaders1111));
    ASSERT_TRUE(head) << head.error().message();
    EXPECT_EQ(head->request_id, 1111u);
    EXPECT_EQ(head->items, 1u);
    // Items are only delimited: "80" and "c0" are not headers, but a tracker counts them all the same.
    head = ResponseHead::peek(list_of({"8207d0",
                                       "c3"
                                       "80"
                                       "c0"
                                       "01"}));
    ASSERT_TRUE(head);
    EXPECT_EQ(head->request_id, 2000u);
    EXPECT_EQ(head->items, 3u);
    head = ResponseHead::peek(hex(kEmpty1111));
    ASSERT_TRUE(head);
    EXPECT_EQ(head->items, 0u);
    const Bytes full = hex(kBlockHeaders1111);
    for (size_t n = 0; n < full.size(); ++n) EXPECT_FALSE(ResponseHead::peek(ByteView{full}.first(n))) << n;
    EXPECT_EQ(ResponseHead::peek(list_of({"01", "c0", "c0"})).error(), MessageError::kTooManyFields);
    EXPECT_EQ(ResponseHead::peek(list_of({"01"})).error(), MessageError::kTooFewFields);
    EXPECT_FALSE(ResponseHead::peek(list_of({"01",
                                             "c2"
                                             "c3"})));
}

TEST(EmptyReplies, EchoTheRequestIdAsGethEncodesThem) {
    Bytes out;
    encode_empty_reply(out, 1111);
    EXPECT_EQ(to_hex(out), kEmpty1111);
    out.clear();
    encode_empty_reply(out, 0);
    EXPECT_EQ(to_hex(out), "c280c0");
    out.clear();
    encode_empty_reply(out, kMax);
    EXPECT_EQ(to_hex(out), "ca88ffffffffffffffffc0");

    auto none = HashListRequest::decode(hex(kEmpty1111));
    ASSERT_TRUE(none);
    EXPECT_EQ(none->request_id, 1111u);
    EXPECT_EQ(none->count, 0u);
    const std::string h = "a0" + std::string(64, 'a');
    auto two = HashListRequest::decode(list_of({"07", "f842" + h + h}));
    ASSERT_TRUE(two) << two.error().message();
    EXPECT_EQ(two->request_id, 7u);
    EXPECT_EQ(two->count, 2u);
    EXPECT_EQ(HashListRequest::decode(list_of({"07",
                                               "c3"
                                               "820102"}))
                  .error(),
              rlp::DecodeError::kUnexpectedLength);
    EXPECT_EQ(HashListRequest::decode(list_of({"07", "c0", "c0"})).error(), MessageError::kTooManyFields);
}

// ---- Status -------------------------------------------------------------------------------------

TEST(Status, Eth68MatchesVector) {
    StatusMessage68 s;
    s.network_id = 1;
    s.total_difficulty = U256("58750003716598352816469");
    s.head_hash = kMainnetGenesis;
    s.genesis_hash = kMainnetGenesis;
    s.fork_id = ForkId{{0x07, 0xc9, 0x46, 0x2e}, 0};
    EXPECT_EQ(encoded(s), kStatus68);
    auto d = StatusMessage68::decode(hex(kStatus68));
    ASSERT_TRUE(d) << d.error().message();
    EXPECT_EQ(*d, s);
    expect_truncations_fail<StatusMessage68>(hex(kStatus68));
}

TEST(Status, Eth69MatchesVector) {
    StatusMessage69 s;
    s.network_id = 1;
    s.genesis_hash = kMainnetGenesis;
    s.fork_id = ForkId{{0x07, 0xc9, 0x46, 0x2e}, 0};
    s.latest_hash = kMainnetGenesis;
    EXPECT_EQ(encoded(s), kStatus69);
    auto d = StatusMessage69::decode(hex(kStatus69));
    ASSERT_TRUE(d) << d.error().message();
    EXPECT_EQ(*d, s);
    expect_truncations_fail<StatusMessage69>(hex(kStatus69));
}

// test-vectors.md H4: the forkid encodings, as they sit at the end of an eth/68 Status and inside
// an eth/69 one.
TEST(Status, CarriesForkIdEncodings) {
    struct Case {
        ForkId id;
        std::string_view rlp;
    };
    const Case kCases[] = {
        {{{0x00, 0x00, 0x00, 0x00}, 0}, "c6840000000080"},
        {{{0xde, 0xad, 0xbe, 0xef}, 0xBADDCAFE}, "ca84deadbeef84baddcafe"},
        {{{0xff, 0xff, 0xff, 0xff}, kMax}, "ce84ffffffff88ffffffffffffffff"},
        {{{0x07, 0xc9, 0x46, 0x2e}, 0}, "c68407c9462e80"},
    };
    for (const Case& c : kCases) {
        StatusMessage68 s68;
        s68.network_id = 1;
        s68.genesis_hash = kMainnetGenesis;
        s68.fork_id = c.id;
        const std::string e68 = encoded(s68);
        ASSERT_GE(e68.size(), c.rlp.size());
        EXPECT_EQ(e68.substr(e68.size() - c.rlp.size()), c.rlp);
        EXPECT_EQ(StatusMessage68::decode(hex(e68))->fork_id, c.id);

        StatusMessage69 s69;
        s69.network_id = 1;
        s69.genesis_hash = kMainnetGenesis;
        s69.fork_id = c.id;
        s69.latest_hash = kMainnetGenesis;
        const std::string e69 = encoded(s69);
        // [69, 1, genesis, forkid, ...]: the forkid follows the 2+2+66 hex digits of the first fields.
        const size_t at = e69.find("a0" + to_hex(kMainnetGenesis)) + 66;
        EXPECT_EQ(e69.substr(at, c.rlp.size()), c.rlp);
        EXPECT_EQ(StatusMessage69::decode(hex(e69))->fork_id, c.id);
    }
}

TEST(Status, ExactFieldCountAsGeth) {
    // eth/68 with a seventh element; eth/69 with an eighth; both missing the last.
    Bytes extra68 = hex(kStatus68);
    ByteView in{extra68};
    ByteView items = *rlp::decode_list(in);
    Bytes more(items.begin(), items.end());
    more.push_back(0x80);
    Bytes msg;
    rlp::encode_header(msg, {true, more.size()});
    append(msg, more);
    EXPECT_EQ(StatusMessage68::decode(msg).error(), MessageError::kTooManyFields);

    Bytes s69 = hex(kStatus69);
    ByteView in69{s69};
    ByteView items69 = *rlp::decode_list(in69);
    Bytes more69(items69.begin(), items69.end());
    more69.push_back(0x80);
    msg.clear();
    rlp::encode_header(msg, {true, more69.size()});
    append(msg, more69);
    EXPECT_EQ(StatusMessage69::decode(msg).error(), MessageError::kTooManyFields);

    // The last field dropped: 33 bytes fewer.
    Bytes fewer69(items69.begin(), items69.end() - 33);
    msg.clear();
    rlp::encode_header(msg, {true, fewer69.size()});
    append(msg, fewer69);
    EXPECT_EQ(StatusMessage69::decode(msg).error(), MessageError::kTooFewFields);

    // An eth/69 Status read as eth/68 and the reverse fail.
    EXPECT_FALSE(StatusMessage68::decode(hex(kStatus69)));
    EXPECT_FALSE(StatusMessage69::decode(hex(kStatus68)));
}

TEST(Status, RejectsBadFieldsWithSpecificErrors) {
    const std::string genesis = "a0" + to_hex(kMainnetGenesis);
    const std::string fork = "c68407c9462e80";
    // Version above 32 bits (geth decodes it into a uint32).
    EXPECT_EQ(StatusMessage69::decode(list_of({"850100000000", "01", genesis, fork, "80", "80", genesis})).error(),
              MessageError::kVersionOverflow);
    // A 31-byte genesis; a 3-byte fork hash; a TD with a leading zero.
    EXPECT_EQ(
        StatusMessage69::decode(list_of({"45", "01", "9f" + std::string(62, '1'), fork, "80", "80", genesis})).error(),
        rlp::DecodeError::kUnexpectedLength);
    EXPECT_EQ(StatusMessage69::decode(list_of({"45", "01", genesis, "c583c9462e80", "80", "80", genesis})).error(),
              rlp::DecodeError::kUnexpectedLength);
    EXPECT_EQ(StatusMessage68::decode(list_of({"44", "01", "820001", genesis, genesis, fork})).error(),
              rlp::DecodeError::kLeadingZeroInInteger);
    // TD wider than 256 bits.
    EXPECT_EQ(
        StatusMessage68::decode(list_of({"44", "01", "a1" + std::string(66, 'f'), genesis, genesis, fork})).error(),
        rlp::DecodeError::kIntegerOverflow);
}

// ---- BlockRangeUpdate ---------------------------------------------------------------------------

TEST(BlockRangeUpdate, RoundTripsAndValidates) {
    BlockRangeUpdate u{100, 200, kMainnetGenesis};
    const std::string e = encoded(u);
    EXPECT_EQ(e, "e46481c8a0" + to_hex(kMainnetGenesis));
    auto d = BlockRangeUpdate::decode(hex(e));
    ASSERT_TRUE(d);
    EXPECT_EQ(*d, u);
    EXPECT_TRUE(d->validate());
    EXPECT_TRUE((BlockRangeUpdate{200, 200, kMainnetGenesis}.validate()));
    EXPECT_EQ((BlockRangeUpdate{201, 200, kMainnetGenesis}.validate().error()), MessageError::kEarliestAfterLatest);
    EXPECT_EQ((BlockRangeUpdate{0, 0, Hash32{}}.validate().error()), MessageError::kZeroLatestHash);
    expect_truncations_fail<BlockRangeUpdate>(hex(e));
    EXPECT_EQ(BlockRangeUpdate::decode(list_of({"64", "81c8"})).error(), MessageError::kTooFewFields);
    EXPECT_EQ(BlockRangeUpdate::decode(list_of({"64", "81c8", "a0" + to_hex(kMainnetGenesis), "80"})).error(),
              MessageError::kTooManyFields);
}

// ---- ids and roles ------------------------------------------------------------------------------

TEST(MessageIds, SpacesAndMembership) {
    EXPECT_EQ(message_space(67), 0u);
    EXPECT_EQ(message_space(68), 17u);
    EXPECT_EQ(message_space(69), 18u);
    EXPECT_EQ(message_space(70), 18u);
    EXPECT_EQ(message_space(71), 20u);
    EXPECT_EQ(message_space(72), 22u);
    EXPECT_EQ(message_space(73), 0u);
    EXPECT_TRUE(is_message_of(68, 0x03));
    EXPECT_TRUE(is_message_of(68, 0x10));
    EXPECT_FALSE(is_message_of(68, 0x11));
    EXPECT_TRUE(is_message_of(69, 0x11));
    EXPECT_FALSE(is_message_of(69, 0x12));
    EXPECT_FALSE(is_message_of(70, 0x12));
    EXPECT_TRUE(is_message_of(71, 0x13));
    EXPECT_FALSE(is_message_of(71, 0x14));
    EXPECT_TRUE(is_message_of(72, 0x15));
    EXPECT_FALSE(is_message_of(72, 0x16));
    for (uint64_t id = 0x0b; id <= 0x0e; ++id) EXPECT_FALSE(is_message_of(72, id)) << id;
    EXPECT_EQ(message_name(0x03), "GetBlockHeaders");
    EXPECT_EQ(message_name(0x11), "BlockRangeUpdate");
    EXPECT_EQ(message_name(0x12), "GetBlockAccessLists");
    EXPECT_EQ(message_name(0x13), "BlockAccessLists");
    EXPECT_EQ(message_name(0x14), "GetCells");
    EXPECT_EQ(message_name(0x15), "Cells");
    EXPECT_EQ(message_name(0x0d), "unknown");
    EXPECT_EQ(message_name(0x16), "unknown");
    EXPECT_FALSE(has_block_range(68));
    for (uint64_t v = 69; v <= 72; ++v) EXPECT_TRUE(has_block_range(v)) << v;
}

TEST(MessageRoles, EveryIdOfEveryVersion) {
    constexpr MessageRole S = MessageRole::kStatus, H = MessageRole::kHeaderRequest,
                          E = MessageRole::kEmptyAnsweredRequest, R = MessageRole::kResponse, G = MessageRole::kGossip,
                          U = MessageRole::kRangeUpdate, X = MessageRole::kInvalid;
    // Ids 0x00..0x15, from the message list of devp2p caps/eth.md and its change log.
    struct Case {
        uint64_t version;
        std::array<MessageRole, 0x16> roles;
    };
    const Case kCases[] = {
        {68, {S, G, G, H, R, E, R, G, G, E, R, X, X, X, X, E, R, X, X, X, X, X}},
        {69, {S, G, G, H, R, E, R, G, G, E, R, X, X, X, X, E, R, U, X, X, X, X}},
        {70, {S, G, G, H, R, E, R, G, G, E, R, X, X, X, X, E, R, U, X, X, X, X}},
        {71, {S, G, G, H, R, E, R, G, G, E, R, X, X, X, X, E, R, U, E, R, X, X}},
        {72, {S, G, G, H, R, E, R, G, G, E, R, X, X, X, X, E, R, U, E, R, E, R}},
    };
    for (const Case& c : kCases) {
        uint64_t defined = 0;
        for (uint64_t id = 0; id < 0x40; ++id) {
            const MessageRole want = id < c.roles.size() ? c.roles[id] : X;
            EXPECT_EQ(role_of(c.version, id), want) << "eth/" << c.version << " id " << id;
            EXPECT_EQ(is_message_of(c.version, id), want != X) << "eth/" << c.version << " id " << id;
            if (want != X) {
                defined = id + 1;
                EXPECT_NE(message_name(id), "unknown") << id;
            }
        }
        EXPECT_EQ(defined, message_space(c.version)) << c.version;
        EXPECT_EQ(role_of(c.version, kMax), X);
    }
    for (uint64_t version : {uint64_t{0}, uint64_t{66}, uint64_t{67}, uint64_t{73}, kMax}) {
        for (uint64_t id = 0; id < 0x40; ++id) EXPECT_EQ(role_of(version, id), X) << version << " " << id;
    }
    EXPECT_EQ(to_string(MessageRole::kEmptyAnsweredRequest), "empty_answered_request");
    EXPECT_EQ(to_string(MessageRole::kInvalid), "invalid");
}

// ---- answer_empty -------------------------------------------------------------------------------

const std::string kHash = "a0" + std::string(64, 'a');
const std::string kHash31 = "9f" + std::string(62, 'a');
const std::string kHash33 = "a1" + std::string(66, 'a');
constexpr std::string_view kBitmap = "90ffffffffffffffffffffffffffffffff";   // B_16, every cell
constexpr std::string_view kNoCells = "9000000000000000000000000000000000";  // B_16, no cell

// A list of raw items given as one hex string: list_of({...}) for a nested list.
std::string hex_list(std::initializer_list<std::string_view> items) { return to_hex(list_of(items)); }

struct Answer {
    Result<MessageId> id;
    std::string reply;
};

Answer answer(uint64_t version, MessageId request, const Bytes& payload) {
    Bytes out = {0xee};  // replaced on success, kept on error
    auto id = answer_empty(version, request, payload, out);
    return {id, to_hex(out)};
}

void expect_reply(uint64_t version, MessageId request, const Bytes& payload, MessageId reply_id,
                  std::string_view reply) {
    SCOPED_TRACE(::testing::Message() << "eth/" << version << " " << message_name(static_cast<uint64_t>(request)));
    const Answer a = answer(version, request, payload);
    ASSERT_TRUE(a.id) << a.id.error().message();
    EXPECT_EQ(*a.id, reply_id);
    EXPECT_EQ(a.reply, reply);
    // The reply is a well-formed response of that version, echoing the id, with no item.
    auto head = ResponseHead::peek(version, reply_id, hex(reply));
    ASSERT_TRUE(head) << head.error().message();
    EXPECT_EQ(head->request_id, [&] {
        ByteView in{payload};
        ByteView items = *rlp::decode_list(in);
        return *rlp::decode_uint64(items);
    }());
}

void expect_refused(uint64_t version, MessageId request, const Bytes& payload, std::error_code error) {
    SCOPED_TRACE(::testing::Message() << "eth/" << version << " " << message_name(static_cast<uint64_t>(request)) << " "
                                      << to_hex(payload));
    const Answer a = answer(version, request, payload);
    ASSERT_FALSE(a.id);
    EXPECT_EQ(a.id.error(), error) << a.id.error().message();
    EXPECT_EQ(a.reply, "ee");
}

constexpr uint64_t kAllVersions[] = {68, 69, 70, 71, 72};

TEST(AnswerEmpty, BodiesAndPooledTransactionsAreTheSameInEveryVersion) {
    for (uint64_t v : kAllVersions) {
        for (auto [request, reply] : {std::pair{MessageId::kGetBlockBodies, MessageId::kBlockBodies},
                                      std::pair{MessageId::kGetPooledTransactions, MessageId::kPooledTransactions}}) {
            expect_reply(v, request, list_of({"820457", hex_list({kHash, kHash})}), reply, "c4820457c0");
            expect_reply(v, request, list_of({"820457", "c0"}), reply, "c4820457c0");
            expect_reply(v, request, list_of({"80", hex_list({kHash})}), reply, "c280c0");
            expect_reply(v, request, list_of({"88ffffffffffffffff", hex_list({kHash})}), reply,
                         "ca88ffffffffffffffffc0");
            expect_refused(v, request, list_of({"820457", hex_list({kHash, kHash31})}),
                           rlp::DecodeError::kUnexpectedLength);
            expect_refused(v, request, list_of({"820457", hex_list({kHash33})}), rlp::DecodeError::kUnexpectedLength);
            expect_refused(v, request, list_of({"820457", hex_list({"c0"})}), rlp::DecodeError::kUnexpectedList);
            expect_refused(v, request, list_of({"820457"}), MessageError::kTooFewFields);
            expect_refused(v, request, list_of({"820457", hex_list({kHash}), "80"}), MessageError::kTooManyFields);
            expect_refused(v, request, list_of({"820457", "80"}), rlp::DecodeError::kUnexpectedString);
            expect_refused(v, request, list_of({"89010000000000000000", "c0"}), rlp::DecodeError::kIntegerOverflow);
            Bytes trailing = list_of({"820457", "c0"});
            trailing.push_back(0xc0);
            expect_refused(v, request, trailing, rlp::DecodeError::kTrailingBytes);
        }
    }
}

TEST(AnswerEmpty, ReceiptsOfEth68And69AreIdAndEmptyList) {
    for (uint64_t v : {68, 69}) {
        expect_reply(v, MessageId::kGetReceipts, list_of({"820457", hex_list({kHash, kHash})}), MessageId::kReceipts,
                     "c4820457c0");
        expect_refused(v, MessageId::kGetReceipts, list_of({"820457", hex_list({kHash31})}),
                       rlp::DecodeError::kUnexpectedLength);
        expect_refused(v, MessageId::kGetReceipts, list_of({"820457"}), MessageError::kTooFewFields);
        expect_refused(v, MessageId::kGetReceipts, list_of({"820457", "c0", "c0"}), MessageError::kTooManyFields);
        // The eth/70 layout [id, firstBlockReceiptIndex, [hash...]] is not an eth/68-69 request.
        expect_refused(v, MessageId::kGetReceipts, list_of({"820457", "80", hex_list({kHash})}),
                       rlp::DecodeError::kUnexpectedString);
    }
}

TEST(AnswerEmpty, ReceiptsOfEth70OnAreIdCompleteFlagAndEmptyList) {
    for (uint64_t v : {70, 71, 72}) {
        // [1111, lastBlockIncomplete = 0, []], whatever the first index asked.
        expect_reply(v, MessageId::kGetReceipts, list_of({"820457", "80", hex_list({kHash, kHash})}),
                     MessageId::kReceipts, "c582045780c0");
        expect_reply(v, MessageId::kGetReceipts, list_of({"820457", "05", hex_list({kHash})}), MessageId::kReceipts,
                     "c582045780c0");
        expect_reply(v, MessageId::kGetReceipts, list_of({"80", "88ffffffffffffffff", "c0"}), MessageId::kReceipts,
                     "c38080c0");
        expect_refused(v, MessageId::kGetReceipts, list_of({"820457", "80", hex_list({kHash, kHash31})}),
                       rlp::DecodeError::kUnexpectedLength);
        expect_refused(v, MessageId::kGetReceipts, list_of({"820457", "80"}), MessageError::kTooFewFields);
        expect_refused(v, MessageId::kGetReceipts, list_of({"820457"}), MessageError::kTooFewFields);
        expect_refused(v, MessageId::kGetReceipts, list_of({"820457", "80", "c0", "80"}), MessageError::kTooManyFields);
        expect_refused(v, MessageId::kGetReceipts, list_of({"820457", "00", "c0"}),
                       rlp::DecodeError::kLeadingZeroInInteger);
        expect_refused(v, MessageId::kGetReceipts, list_of({"820457", "89010000000000000000", "c0"}),
                       rlp::DecodeError::kIntegerOverflow);
        // The eth/68-69 layout [id, [hash...]] is not an eth/70 request.
        expect_refused(v, MessageId::kGetReceipts, list_of({"820457", hex_list({kHash})}),
                       rlp::DecodeError::kUnexpectedList);
        expect_refused(v, MessageId::kGetReceipts, list_of({"820457", "c0"}), rlp::DecodeError::kUnexpectedList);
    }
}

TEST(AnswerEmpty, BlockAccessListsAnswerEveryHashUnavailable) {
    for (uint64_t v : {71, 72}) {
        expect_reply(v, MessageId::kGetBlockAccessLists, list_of({"820457", hex_list({kHash, kHash, kHash})}),
                     MessageId::kBlockAccessLists, "c7820457c3808080");
        expect_reply(v, MessageId::kGetBlockAccessLists, list_of({"820457", "c0"}), MessageId::kBlockAccessLists,
                     "c4820457c0");
        expect_refused(v, MessageId::kGetBlockAccessLists, list_of({"820457", hex_list({kHash, kHash31})}),
                       rlp::DecodeError::kUnexpectedLength);
        expect_refused(v, MessageId::kGetBlockAccessLists, list_of({"820457"}), MessageError::kTooFewFields);
        expect_refused(v, MessageId::kGetBlockAccessLists, list_of({"820457", "c0", "80"}),
                       MessageError::kTooManyFields);

        // 56 hashes: the entries need a long-form list header; 1025: only the first 1024 are answered.
        for (size_t n : {size_t{56}, size_t{1024}, size_t{1025}, size_t{3000}}) {
            Bytes hashes;
            for (size_t i = 0; i < n; ++i) append(hashes, hex(kHash));
            Bytes list;
            rlp::encode_header(list, {true, hashes.size()});
            append(list, hashes);
            const Bytes payload = list_of({"820457", to_hex(list)});
            const size_t entries = std::min(n, kMaxBlockAccessListsServed);
            Bytes want;
            rlp::encode_header(want, {true, 3 + rlp::length_of_list(entries)});
            append(want, hex("820457"));
            rlp::encode_header(want, {true, entries});
            want.insert(want.end(), entries, 0x80);
            expect_reply(v, MessageId::kGetBlockAccessLists, payload, MessageId::kBlockAccessLists, to_hex(want));
            auto head = ResponseHead::peek(v, MessageId::kBlockAccessLists, want);
            ASSERT_TRUE(head);
            EXPECT_EQ(head->items, entries);
        }
    }
}

TEST(AnswerEmpty, CellsAnswerNothingWithTheEmptyBitmap) {
    const std::string want = "d6820457c0c0" + std::string(kNoCells);
    expect_reply(72, MessageId::kGetCells, list_of({"820457", hex_list({kHash, kHash}), kBitmap}), MessageId::kCells,
                 want);
    expect_reply(72, MessageId::kGetCells, list_of({"820457", "c0", kNoCells}), MessageId::kCells, want);
    expect_reply(72, MessageId::kGetCells, list_of({"88ffffffffffffffff", hex_list({kHash}), kBitmap}),
                 MessageId::kCells, "dc88ffffffffffffffffc0c0" + std::string(kNoCells));
    // The bitmap is exactly 16 bytes.
    expect_refused(72, MessageId::kGetCells, list_of({"820457", hex_list({kHash}), "8f" + std::string(30, 'f')}),
                   rlp::DecodeError::kUnexpectedLength);
    expect_refused(72, MessageId::kGetCells, list_of({"820457", hex_list({kHash}), "91" + std::string(34, 'f')}),
                   rlp::DecodeError::kUnexpectedLength);
    expect_refused(72, MessageId::kGetCells, list_of({"820457", hex_list({kHash}), "80"}),
                   rlp::DecodeError::kUnexpectedLength);
    expect_refused(72, MessageId::kGetCells, list_of({"820457", hex_list({kHash}), "c0"}),
                   rlp::DecodeError::kUnexpectedList);
    expect_refused(72, MessageId::kGetCells, list_of({"820457", hex_list({kHash31}), kBitmap}),
                   rlp::DecodeError::kUnexpectedLength);
    expect_refused(72, MessageId::kGetCells, list_of({"820457", hex_list({kHash})}), MessageError::kTooFewFields);
    expect_refused(72, MessageId::kGetCells, list_of({"820457", hex_list({kHash}), kBitmap, "80"}),
                   MessageError::kTooManyFields);
    // Bitmap and hashes swapped.
    expect_refused(72, MessageId::kGetCells, list_of({"820457", kBitmap, hex_list({kHash})}),
                   rlp::DecodeError::kUnexpectedString);
}

TEST(AnswerEmpty, OnlyRequestsOfTheVersionAnsweredEmpty) {
    const Bytes hashes = list_of({"820457", hex_list({kHash})});
    for (uint64_t v : {68, 69, 70}) {
        expect_refused(v, MessageId::kGetBlockAccessLists, hashes, MessageError::kWrongMessage);
    }
    for (uint64_t v : {68, 69, 70, 71}) {
        expect_refused(v, MessageId::kGetCells, list_of({"820457", hex_list({kHash}), kBitmap}),
                       MessageError::kWrongMessage);
    }
    for (uint64_t v : kAllVersions) {
        for (MessageId id : {MessageId::kStatus, MessageId::kGetBlockHeaders, MessageId::kBlockBodies,
                             MessageId::kReceipts, MessageId::kTransactions, MessageId::kBlockRangeUpdate}) {
            expect_refused(v, id, hashes, MessageError::kWrongMessage);
        }
    }
    expect_refused(67, MessageId::kGetBlockBodies, hashes, MessageError::kWrongMessage);
    expect_refused(73, MessageId::kGetBlockBodies, hashes, MessageError::kWrongMessage);
}

TEST(AnswerEmpty, EveryTruncationIsRefused) {
    struct Case {
        uint64_t version;
        MessageId id;
        Bytes payload;
    };
    const Case kCases[] = {
        {68, MessageId::kGetReceipts, list_of({"820457", hex_list({kHash, kHash})})},
        {70, MessageId::kGetReceipts, list_of({"820457", "05", hex_list({kHash, kHash})})},
        {71, MessageId::kGetBlockAccessLists, list_of({"820457", hex_list({kHash})})},
        {72, MessageId::kGetCells, list_of({"820457", hex_list({kHash}), kBitmap})},
        {72, MessageId::kGetPooledTransactions, list_of({"820457", hex_list({kHash})})},
    };
    for (const Case& c : kCases) {
        Bytes out;
        ASSERT_TRUE(answer_empty(c.version, c.id, c.payload, out));
        for (size_t n = 0; n < c.payload.size(); ++n) {
            EXPECT_FALSE(answer_empty(c.version, c.id, ByteView{c.payload}.first(n), out)) << c.version << " " << n;
        }
    }
}

TEST(EmptyReplies, EncodersOfEachVersionsEmptyReply) {
    Bytes out;
    encode_empty_receipts70(out, 1111);
    EXPECT_EQ(to_hex(out), "c582045780c0");
    out.clear();
    encode_empty_receipts70(out, kMax);
    EXPECT_EQ(to_hex(out), "cb88ffffffffffffffff80c0");
    out.clear();
    encode_unavailable_block_access_lists(out, 0, 2);
    EXPECT_EQ(to_hex(out), "c480c28080");
    out.clear();
    encode_unavailable_block_access_lists(out, 1111, 0);
    EXPECT_EQ(to_hex(out), kEmpty1111);
    out.clear();
    encode_empty_cells(out, 0);
    EXPECT_EQ(to_hex(out), "d480c0c0" + std::string(kNoCells));
    // Encoders append, like every other encoder.
    out = {0x01};
    encode_empty_reply(out, 1111);
    EXPECT_EQ(to_hex(out), "01c4820457c0");
}

// ---- responses of each version ------------------------------------------------------------------

TEST(ResponseHead, PeeksTheEnvelopeOfEachVersionsResponses) {
    for (uint64_t v : {68, 69}) {
        auto head = ResponseHead::peek(v, MessageId::kReceipts, list_of({"820457", "c2c0c0"}));
        ASSERT_TRUE(head) << head.error().message();
        EXPECT_EQ(head->items, 2u);
        EXPECT_FALSE(ResponseHead::peek(v, MessageId::kReceipts, list_of({"820457", "80", "c2c0c0"})));
    }
    for (uint64_t v : {70, 71, 72}) {
        auto head = ResponseHead::peek(v, MessageId::kReceipts, list_of({"820457", "01", "c2c0c0"}));
        ASSERT_TRUE(head) << head.error().message();
        EXPECT_EQ(head->request_id, 1111u);
        EXPECT_EQ(head->items, 2u);
        EXPECT_EQ(ResponseHead::peek(v, MessageId::kReceipts, list_of({"820457", "02", "c0"})).error(),
                  MessageError::kBadFlag);
        EXPECT_EQ(ResponseHead::peek(v, MessageId::kReceipts, list_of({"820457", "00", "c0"})).error(),
                  MessageError::kBadFlag);
        EXPECT_EQ(ResponseHead::peek(v, MessageId::kReceipts, list_of({"820457", "c2c0c0"})).error(),
                  MessageError::kBadFlag);
        EXPECT_EQ(ResponseHead::peek(v, MessageId::kReceipts, list_of({"820457", "80", "c0", "c0"})).error(),
                  MessageError::kTooManyFields);
        head = ResponseHead::peek(v, MessageId::kBlockHeaders, hex(kBlockHeaders1111));
        ASSERT_TRUE(head);
        EXPECT_EQ(head->items, 1u);
    }
    auto bals = ResponseHead::peek(71, MessageId::kBlockAccessLists, list_of({"820457", "c380c080"}));
    ASSERT_TRUE(bals);
    EXPECT_EQ(bals->items, 3u);

    // Cells: the groups are counted; hashes must be 32 bytes and the bitmap 16.
    auto cells =
        ResponseHead::peek(72, MessageId::kCells, list_of({"820457", hex_list({kHash, kHash}), "c2c0c0", kBitmap}));
    ASSERT_TRUE(cells) << cells.error().message();
    EXPECT_EQ(cells->items, 2u);
    EXPECT_EQ(
        ResponseHead::peek(72, MessageId::kCells, list_of({"820457", hex_list({kHash31}), "c1c0", kBitmap})).error(),
        rlp::DecodeError::kUnexpectedLength);
    EXPECT_EQ(ResponseHead::peek(72, MessageId::kCells, list_of({"820457", "c0", "c0", "80"})).error(),
              rlp::DecodeError::kUnexpectedLength);
    EXPECT_EQ(ResponseHead::peek(72, MessageId::kCells, list_of({"820457", "c0", "c0"})).error(),
              MessageError::kTooFewFields);

    EXPECT_EQ(ResponseHead::peek(70, MessageId::kBlockAccessLists, list_of({"820457", "c0"})).error(),
              MessageError::kWrongMessage);
    EXPECT_EQ(ResponseHead::peek(71, MessageId::kCells, list_of({"820457", "c0", "c0", kNoCells})).error(),
              MessageError::kWrongMessage);
    EXPECT_EQ(ResponseHead::peek(72, MessageId::kGetBlockBodies, list_of({"820457", "c0"})).error(),
              MessageError::kWrongMessage);
}

}  // namespace
}  // namespace headerd::eth
