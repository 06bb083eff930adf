#include "p2p/wire/base_protocol.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "core/hex.hpp"
#include "core/rlp.hpp"
#include "core/test_hex.hpp"
#include "p2p/eth/messages.hpp"
#include "p2p/wire/snappy_codec.hpp"

namespace headerd::p2p {
namespace {

using test::hex;

// test-vectors.md F1: EIP-8 Hello with p2p version 55 and three trailing elements.
constexpr std::string_view kEip8Hello =
    "f87137916b6e6574682f76302e39312f706c616e39cdc5836574683dc6846d6f726b1682270fb840"
    "fda1cff674c90c9a197539fe3dfb53086ace64f83ed7c6eabec741f7f381cc803e52ab2cd55d5569"
    "bce4347107a310dfd5f88a010cd2ffd1005ca406f1842877c883666f6f836261720304";
constexpr std::string_view kPubA =
    "fda1cff674c90c9a197539fe3dfb53086ace64f83ed7c6eabec741f7f381cc803e52ab2cd55d5569"
    "bce4347107a310dfd5f88a010cd2ffd1005ca406f1842877";

NodeId node_id_of(std::string_view h) {
    NodeId id;
    const Bytes b = hex(h);
    std::copy(b.begin(), b.end(), id.begin());
    return id;
}

Hello our_hello() {
    Hello h;
    h.client_id = "headerd/v0.1.0/linux-amd64/c++20";
    h.capabilities = capabilities_of(kEthOffers);
    h.node_id = node_id_of(kPubA);
    return h;
}

// Encodes [version, client, caps, port, id, extras...] from raw RLP pieces.
Bytes hello_list(std::initializer_list<ByteView> items) {
    Bytes payload;
    for (ByteView i : items) append(payload, i);
    Bytes out;
    rlp::encode_header(out, {true, payload.size()});
    append(out, payload);
    return out;
}

Bytes rlp_string(ByteView s) {
    Bytes out;
    rlp::encode(out, s);
    return out;
}

TEST(Hello, DecodesEip8HelloAndIgnoresTrailingElements) {
    auto h = Hello::decode(hex(kEip8Hello));
    ASSERT_TRUE(h) << h.error().message();
    EXPECT_EQ(h->version, 55u);
    EXPECT_EQ(h->client_id, "kneth/v0.91/plan9");
    ASSERT_EQ(h->capabilities.size(), 2u);
    EXPECT_EQ(h->capabilities[0], (Capability{"eth", 61}));
    EXPECT_EQ(h->capabilities[1], (Capability{"mork", 22}));
    EXPECT_EQ(h->listen_port, 9999u);
    EXPECT_EQ(h->node_id, node_id_of(kPubA));
}

TEST(Hello, RoundTripsAndListsCapabilitiesSorted) {
    const Hello h = our_hello();
    ASSERT_EQ(h.capabilities.size(), 5u);
    for (uint64_t i = 0; i < 5; ++i) EXPECT_EQ(h.capabilities[i], (Capability{"eth", 68 + i}));
    Bytes out;
    h.encode(out);
    // [5, client, [["eth",68],["eth",69],["eth",70],["eth",71],["eth",72]], 0, id]
    const std::string expected = "f88405a0" + to_hex(as_bytes(h.client_id)) +
                                 "dec58365746844c58365746845c58365746846c58365746847c58365746848" + "80b840" +
                                 std::string(kPubA);
    EXPECT_EQ(to_hex(out), expected);
    auto back = Hello::decode(out);
    ASSERT_TRUE(back) << back.error().message();
    EXPECT_EQ(*back, h);
}

TEST(Hello, OffersEthVersionsWithTheirMessageSpaces) {
    ASSERT_EQ(kEthOffers.size(), 5u);
    for (const ProtocolOffer& o : kEthOffers) {
        EXPECT_EQ(o.name, "eth");
        EXPECT_EQ(o.length, eth::message_space(o.version)) << o.version;
    }
    EXPECT_EQ(kEthOffers.front().version, eth::kEth68);
    EXPECT_EQ(kEthOffers.back().version, eth::kEth72);
}

TEST(Hello, LongCapabilityNamesUseLongFormListHeaders) {
    Hello h = our_hello();
    h.capabilities.push_back({std::string(60, 'z'), 1});  // [name(62 bytes), 1]: f8 3f ...
    Bytes out;
    h.encode(out);
    const std::string cap = "f83fb83c" + to_hex(as_bytes(std::string(60, 'z'))) + "01";
    EXPECT_NE(to_hex(out).find(cap), std::string::npos);
    auto back = Hello::decode(out);
    ASSERT_TRUE(back) << back.error().message();
    EXPECT_EQ(*back, h);
}

TEST(Hello, RefusesOversizedPayloadBeforeParsing) {
    Hello h = our_hello();
    h.client_id.assign(kMaxHelloSize, 'x');
    Bytes out;
    h.encode(out);
    EXPECT_EQ(Hello::decode(out).error(), BaseProtocolError::kHelloTooLarge);
    // Exactly at the cap is fine.
    h.client_id.resize(kMaxHelloSize - (out.size() - kMaxHelloSize));
    out.clear();
    h.encode(out);
    ASSERT_EQ(out.size(), kMaxHelloSize);
    EXPECT_TRUE(Hello::decode(out));
}

TEST(Hello, NodeIdMustBe64NonZeroBytes) {
    const Bytes version = {0x05};
    const Bytes client = rlp_string(as_bytes("c"));
    const Bytes caps = hex("c6c58365746844");
    const Bytes port = {0x80};
    const Bytes id = hex(kPubA);
    for (size_t n : {0u, 1u, 33u, 63u, 65u}) {
        Bytes wrong(n, 0x11);
        const Bytes msg = hello_list({version, client, caps, port, rlp_string(wrong)});
        EXPECT_EQ(Hello::decode(msg).error(), BaseProtocolError::kBadNodeIdLength) << n;
    }
    const Bytes zero(64, 0);
    EXPECT_EQ(Hello::decode(hello_list({version, client, caps, port, rlp_string(zero)})).error(),
              BaseProtocolError::kZeroNodeId);
    EXPECT_TRUE(Hello::decode(hello_list({version, client, caps, port, rlp_string(id)})));
}

TEST(Hello, RejectsMissingFieldsBadCapabilitiesAndBadRlp) {
    const Bytes version = {0x05};
    const Bytes client = rlp_string(as_bytes("c"));
    const Bytes caps = hex("c6c58365746844");
    const Bytes port = {0x80};
    const Bytes id = rlp_string(hex(kPubA));
    EXPECT_EQ(Hello::decode(hello_list({})).error(), BaseProtocolError::kMissingField);
    EXPECT_EQ(Hello::decode(hello_list({version, client, caps, port})).error(), BaseProtocolError::kMissingField);
    EXPECT_EQ(Hello::decode(hello_list({version, client, caps})).error(), BaseProtocolError::kMissingField);
    // A capability as a bare string, with a third element, or with only a name.
    EXPECT_EQ(Hello::decode(hello_list({version, client, hex("c483657468"), port, id})).error(),
              BaseProtocolError::kBadCapability);
    EXPECT_EQ(Hello::decode(hello_list({version, client, hex("c7c6836574684401"), port, id})).error(),
              BaseProtocolError::kBadCapability);
    EXPECT_EQ(Hello::decode(hello_list({version, client, hex("c5c483657468"), port, id})).error(),
              BaseProtocolError::kBadCapability);
    // Non-canonical version (leading zero), trailing bytes after the list, a malformed extra element.
    EXPECT_EQ(Hello::decode(hello_list({hex("820005"), client, caps, port, id})).error(),
              rlp::DecodeError::kLeadingZeroInInteger);
    Bytes trailing = hello_list({version, client, caps, port, id});
    trailing.push_back(0x00);
    EXPECT_EQ(Hello::decode(trailing).error(), rlp::DecodeError::kTrailingBytes);
    EXPECT_EQ(Hello::decode(hello_list({version, client, caps, port, id, hex("b8")})).error(),
              rlp::DecodeError::kInputTooShort);
    // The payload must be a list.
    EXPECT_EQ(Hello::decode(hex("83010203")).error(), rlp::DecodeError::kUnexpectedString);
    // Every truncation of a valid Hello fails.
    const Bytes full = hex(kEip8Hello);
    for (size_t n = 0; n < full.size(); ++n) {
        EXPECT_FALSE(Hello::decode(ByteView{full}.first(n))) << n;
    }
}

TEST(MessageId, IsAnRlpInteger) {
    Bytes out;
    encode_message_id(out, 0);
    encode_message_id(out, 0x10);
    encode_message_id(out, 0x7f);
    encode_message_id(out, 0x80);
    EXPECT_EQ(to_hex(out), "80107f8180");
    ByteView in{out};
    EXPECT_EQ(*decode_message_id(in), 0u);
    EXPECT_EQ(*decode_message_id(in), 0x10u);
    EXPECT_EQ(*decode_message_id(in), 0x7fu);
    EXPECT_EQ(*decode_message_id(in), 0x80u);
    EXPECT_TRUE(in.empty());
    const Bytes zero = {0x00, 0xc0};
    ByteView z{zero};
    EXPECT_EQ(decode_message_id(z).error(), rlp::DecodeError::kLeadingZeroInInteger);
    const Bytes list = {0xc0};
    ByteView l{list};
    EXPECT_EQ(decode_message_id(l).error(), rlp::DecodeError::kUnexpectedList);
}

Hello remote_with(std::vector<Capability> caps, uint64_t version = 5) {
    Hello h = our_hello();
    h.version = version;
    h.capabilities = std::move(caps);
    return h;
}

TEST(Negotiate, PicksHighestCommonEthVersionAtOffset0x10) {
    auto old = negotiate(kEthOffers, remote_with({{"eth", 66}, {"eth", 67}, {"eth", 68}, {"eth", 69}, {"snap", 1}}));
    ASSERT_TRUE(old);
    ASSERT_EQ(old->size(), 1u);
    EXPECT_EQ((*old)[0], (SharedCapability{"eth", 69, 0x10, 18}));

    auto only68 = negotiate(kEthOffers, remote_with({{"eth", 67}, {"eth", 68}}));
    ASSERT_TRUE(only68);
    EXPECT_EQ((*only68)[0], (SharedCapability{"eth", 68, 0x10, 17}));

    // Peers list caps in any order; geth >= 1.17.1 offers 69..72 only.
    auto geth = negotiate(kEthOffers, remote_with({{"eth", 72}, {"eth", 69}, {"eth", 71}, {"eth", 70}}));
    ASSERT_TRUE(geth);
    EXPECT_EQ((*geth)[0], (SharedCapability{"eth", 72, 0x10, 22}));

    // Each version is its own capability: the highest one both list wins, with its own id space.
    auto up_to71 = negotiate(kEthOffers, remote_with({{"eth", 68}, {"eth", 70}, {"eth", 71}}));
    ASSERT_TRUE(up_to71);
    EXPECT_EQ((*up_to71)[0], (SharedCapability{"eth", 71, 0x10, 20}));
    auto just70 = negotiate(kEthOffers, remote_with({{"eth", 70}, {"eth", 73}}));
    ASSERT_TRUE(just70);
    EXPECT_EQ((*just70)[0], (SharedCapability{"eth", 70, 0x10, 18}));
}

TEST(Negotiate, NothingSharedIsUselessPeerAndOldP2pIsIncompatible) {
    auto none = negotiate(kEthOffers, remote_with({{"eth", 67}, {"ETH", 68}, {"les", 4}}));
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error(), BaseProtocolError::kNoSharedCapability);

    auto old = negotiate(kEthOffers, remote_with({{"eth", 68}}, 4));
    ASSERT_FALSE(old);
    EXPECT_EQ(old.error(), BaseProtocolError::kIncompatibleVersion);
}

TEST(Negotiate, SeveralProtocolsGetConsecutiveRangesSortedByName) {
    constexpr std::array<ProtocolOffer, 4> ours{{{"snap", 1, 8}, {"eth", 68, 17}, {"eth", 69, 18}, {"aaa", 2, 3}}};
    auto shared = negotiate(ours, remote_with({{"snap", 1}, {"eth", 68}, {"eth", 69}, {"aaa", 2}}));
    ASSERT_TRUE(shared);
    ASSERT_EQ(shared->size(), 3u);
    EXPECT_EQ((*shared)[0], (SharedCapability{"aaa", 2, 0x10, 3}));
    EXPECT_EQ((*shared)[1], (SharedCapability{"eth", 69, 0x13, 18}));
    EXPECT_EQ((*shared)[2], (SharedCapability{"snap", 1, 0x25, 8}));
}

// test-vectors.md F2.
TEST(Disconnect, EncodesListFormAndCompressesToVectors) {
    struct Case {
        DisconnectReason reason;
        std::string_view rlp;
        std::string_view snappy;
    };
    constexpr Case kCases[] = {
        {DisconnectReason::kTooManyPeers, "c104", "0204c104"},
        {DisconnectReason::kRequested, "c180", "0204c180"},
        {DisconnectReason::kSubprotocolError, "c110", "0204c110"},
    };
    for (const Case& c : kCases) {
        Bytes out;
        encode_disconnect(out, c.reason);
        EXPECT_EQ(to_hex(out), c.rlp);
        Bytes buf;
        auto z = snappy_compress(out, buf);
        ASSERT_TRUE(z);
        EXPECT_EQ(to_hex(*z), c.snappy);
        EXPECT_EQ(*decode_disconnect(*z), c.reason);
        EXPECT_EQ(*decode_disconnect(out), c.reason);
    }
}

TEST(Disconnect, DecodesEveryLenientForm) {
    struct Case {
        std::string_view payload;
        DisconnectReason reason;
    };
    constexpr Case kCases[] = {
        {"0204c104", DisconnectReason::kTooManyPeers},      // compressed list (the normal form)
        {"c104", DisconnectReason::kTooManyPeers},          // uncompressed list after Hello (Nethermind)
        {"04", DisconnectReason::kTooManyPeers},            // bare integer
        {"010004", DisconnectReason::kTooManyPeers},        // compressed bare integer
        {"80", DisconnectReason::kRequested},               // bare zero
        {"c180", DisconnectReason::kRequested},             // list holding zero
        {"", DisconnectReason::kRequested},                 // nothing at all
        {"c0", DisconnectReason::kRequested},               // empty list
        {"0100c0", DisconnectReason::kRequested},           // compressed empty list
        {"00", DisconnectReason::kRequested},               // compressed empty payload
        {"c110", DisconnectReason::kSubprotocolError},      // subprotocol error, raw
        {"0204c110", DisconnectReason::kSubprotocolError},  // and compressed
        {"c10b", DisconnectReason::kPingTimeout},           // raw
        {"c20480", DisconnectReason::kTooManyPeers},        // extra element ignored
        {"c281ff", static_cast<DisconnectReason>(0xff)},    // unnamed code kept as it is
    };
    for (const Case& c : kCases) {
        auto r = decode_disconnect(hex(c.payload));
        ASSERT_TRUE(r) << c.payload;
        EXPECT_EQ(*r, c.reason) << c.payload;
    }
    // Leading zero, reason above 255, nested list, truncated header, trailing byte, non-canonical
    // single byte, garbage that is neither snappy nor RLP.
    for (std::string_view bad : {"c3820010", "820100", "c2c104", "ff", "c104ff", "b8", "8110", "0104"}) {
        auto r = decode_disconnect(hex(bad));
        ASSERT_FALSE(r) << bad;
        EXPECT_EQ(r.error(), BaseProtocolError::kMalformedDisconnect) << bad;
    }
}

TEST(Disconnect, ReasonsHaveNames) {
    EXPECT_EQ(to_string(DisconnectReason::kUselessPeer), "useless peer");
    EXPECT_EQ(to_string(DisconnectReason::kSubprotocolError), "subprotocol error");
    EXPECT_EQ(to_string(DisconnectReason::kPingTimeout), "ping timeout");
    EXPECT_EQ(to_string(static_cast<DisconnectReason>(0x0c)), "unknown");
}

TEST(PingPong, AreEmptyListsAndCompressToVector) {
    Bytes ping;
    encode_ping(ping);
    Bytes pong;
    encode_pong(pong);
    EXPECT_EQ(to_hex(ping), "c0");
    EXPECT_EQ(to_hex(pong), "c0");
    Bytes buf;
    EXPECT_EQ(to_hex(*snappy_compress(ping, buf)), "0100c0");
}

}  // namespace
}  // namespace headerd::p2p
