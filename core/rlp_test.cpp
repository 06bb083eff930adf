#include "core/rlp.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/multiprecision/cpp_int.hpp>

#include "core/hex.hpp"
#include "core/test_hex.hpp"

namespace headerd {
namespace {

using rlp::DecodeError;

// ---- ethereum/tests RLPTests corpus (upstream RLPTests/rlptest.json, invalidRLPTest.json) ------------------

struct ValidCase {
    std::string_view name;
    // The test's "in" value in its JSON notation: "..." raw bytes (\uXXXX escapes), decimal
    // integers, "#decimal" big integers, [...] lists.
    std::string_view in;
    std::string_view out;
};

// rlptest.json, every case except listofbinaries (its "in" holds 0x-strings that the documented
// rules do not turn back into its "out"; see section J).
constexpr ValidCase kValidCases[] = {
    {"emptystring", R"("")", "80"},
    {"bytestring00", R"("\u0000")", "00"},
    {"bytestring01", R"("\u0001")", "01"},
    {"bytestring7F", R"("\u007F")", "7f"},
    {"shortstring", R"("dog")", "83646f67"},
    {"shortstring2", R"("Lorem ipsum dolor sit amet, consectetur adipisicing eli")",
     "b74c6f72656d20697073756d20646f6c6f722073697420616d65742c20636f6e73656374657475722061"
     "64697069736963696e6720656c69"},
    {"longstring", R"("Lorem ipsum dolor sit amet, consectetur adipisicing elit")",
     "b8384c6f72656d20697073756d20646f6c6f722073697420616d65742c20636f6e7365637465747572206164697069736963696e6720656c"
     "6974"},
    {"longstring2",
     "\"Lorem ipsum dolor sit amet, consectetur adipiscing elit. Curabitur mauris magna, suscipit sed ve"
     "hicula non, iaculis faucibus tortor. Proin suscipit ultricies malesuada. Duis tortor elit, dictu"
     "m quis tristique eu, ultrices at risus. Morbi a est imperdiet mi ullamcorper aliquet suscipit ne"
     "c lorem. Aenean quis leo mollis, vulputate elit varius, consequat enim. Nulla ultrices turpis ju"
     "sto, et posuere urna consectetur nec. Proin non convallis metus. Donec tempor ipsum in mauris co"
     "ngue sollicitudin. Vestibulum ante ipsum primis in faucibus orci luctus et ultrices posuere cubi"
     "lia Curae; Suspendisse convallis sem vel massa faucibus, eget lacinia lacus tempor. Nulla quis u"
     "ltricies purus. Proin auctor rhoncus nibh condimentum mollis. Aliquam consequat enim at metus lu"
     "ctus, a eleifend purus egestas. Curabitur at nibh metus. Nam bibendum, neque at auctor tristique"
     ", lorem libero aliquet arcu, non interdum tellus lectus sit amet eros. Cras rhoncus, metus ac or"
     "nare cursus, dolor justo ultrices metus, at ullamcorper volutpat\"",
     "b904004c6f72656d20697073756d20646f6c6f722073697420616d65742c20636f6e73656374657475722061646970697363"
     "696e6720656c69742e20437572616269747572206d6175726973206d61676e612c2073757363697069742073656420766568"
     "6963756c61206e6f6e2c20696163756c697320666175636962757320746f72746f722e2050726f696e207375736369706974"
     "20756c74726963696573206d616c6573756164612e204475697320746f72746f7220656c69742c2064696374756d20717569"
     "73207472697374697175652065752c20756c7472696365732061742072697375732e204d6f72626920612065737420696d70"
     "657264696574206d6920756c6c616d636f7270657220616c6971756574207375736369706974206e6563206c6f72656d2e20"
     "41656e65616e2071756973206c656f206d6f6c6c69732c2076756c70757461746520656c6974207661726975732c20636f6e"
     "73657175617420656e696d2e204e756c6c6120756c74726963657320747572706973206a7573746f2c20657420706f737565"
     "72652075726e6120636f6e7365637465747572206e65632e2050726f696e206e6f6e20636f6e76616c6c6973206d65747573"
     "2e20446f6e65632074656d706f7220697073756d20696e206d617572697320636f6e67756520736f6c6c696369747564696e"
     "2e20566573746962756c756d20616e746520697073756d207072696d697320696e206661756369627573206f726369206c75"
     "6374757320657420756c74726963657320706f737565726520637562696c69612043757261653b2053757370656e64697373"
     "6520636f6e76616c6c69732073656d2076656c206d617373612066617563696275732c2065676574206c6163696e6961206c"
     "616375732074656d706f722e204e756c6c61207175697320756c747269636965732070757275732e2050726f696e20617563"
     "746f722072686f6e637573206e69626820636f6e64696d656e74756d206d6f6c6c69732e20416c697175616d20636f6e7365"
     "7175617420656e696d206174206d65747573206c75637475732c206120656c656966656e6420707572757320656765737461"
     "732e20437572616269747572206174206e696268206d657475732e204e616d20626962656e64756d2c206e65717565206174"
     "20617563746f72207472697374697175652c206c6f72656d206c696265726f20616c697175657420617263752c206e6f6e20"
     "696e74657264756d2074656c6c7573206c65637475732073697420616d65742065726f732e20437261732072686f6e637573"
     "2c206d65747573206163206f726e617265206375727375732c20646f6c6f72206a7573746f20756c747269636573206d6574"
     "75732c20617420756c6c616d636f7270657220766f6c7574706174"},
    {"zero", "0", "80"},
    {"smallint", "1", "01"},
    {"smallint2", "16", "10"},
    {"smallint3", "79", "4f"},
    {"smallint4", "127", "7f"},
    {"mediumint1", "128", "8180"},
    {"mediumint2", "1000", "8203e8"},
    {"mediumint3", "100000", "830186a0"},
    {"mediumint4", R"("#83729609699884896815286331701780722")", "8f102030405060708090a0b0c0d0e0f2"},
    {"mediumint5", R"("#105315505618206987246253880190783558935785933862974822347068935681")",
     "9c0100020003000400050006000700080009000a000b000c000d000e01"},
    {"emptylist", "[]", "c0"},
    {"stringlist", R"(["dog", "god", "cat"])", "cc83646f6783676f6483636174"},
    {"multilist", R"(["zw", [4], 1])", "c6827a77c10401"},
    {"shortListMax1", R"(["asdf", "qwer", "zxcv", "asdf", "qwer", "zxcv", "asdf", "qwer", "zxcv", "asdf", "qwer"])",
     "f784617364668471776572847a78637684617364668471776572847a78637684617364668471776572847a7863768461736466"
     "8471776572"},
    {"longList1", R"([["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"]])",
     "f840cf84617364668471776572847a786376cf84617364668471776572847a786376cf84617364668471776572847a786376"
     "cf84617364668471776572847a786376"},
    {"longList2",
     R"([["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"],)"
     R"( ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"],)"
     R"( ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"],)"
     R"( ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"],)"
     R"( ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"],)"
     R"( ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"],)"
     R"( ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"],)"
     R"( ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"], ["asdf","qwer","zxcv"]])",
     "f90200cf84617364668471776572847a786376cf84617364668471776572847a786376cf84617364668471776572847a7863"
     "76cf84617364668471776572847a786376cf84617364668471776572847a786376cf84617364668471776572847a786376cf"
     "84617364668471776572847a786376cf84617364668471776572847a786376cf84617364668471776572847a786376cf8461"
     "7364668471776572847a786376cf84617364668471776572847a786376cf84617364668471776572847a786376cf84617364"
     "668471776572847a786376cf84617364668471776572847a786376cf84617364668471776572847a786376cf846173646684"
     "71776572847a786376cf84617364668471776572847a786376cf84617364668471776572847a786376cf8461736466847177"
     "6572847a786376cf84617364668471776572847a786376cf84617364668471776572847a786376cf84617364668471776572"
     "847a786376cf84617364668471776572847a786376cf84617364668471776572847a786376cf84617364668471776572847a"
     "786376cf84617364668471776572847a786376cf84617364668471776572847a786376cf84617364668471776572847a7863"
     "76cf84617364668471776572847a786376cf84617364668471776572847a786376cf84617364668471776572847a786376cf"
     "84617364668471776572847a786376"},
    {"listsoflists", "[[[], []], []]", "c4c2c0c0c0"},
    {"listsoflists2", "[[], [[]], [[], [[]]]]", "c7c0c1c0c3c0c1c0"},
    {"dictTest1", R"([["key1", "val1"], ["key2", "val2"], ["key3", "val3"], ["key4", "val4"]])",
     "ecca846b6579318476616c31ca846b6579328476616c32ca846b6579338476616c33ca846b6579348476616c34"},
    {"bigint", R"("#115792089237316195423570985008687907853269984665640564039457584007913129639936")",
     "a1010000000000000000000000000000000000000000000000000000000000000000"},
};

struct InvalidCase {
    std::string_view name;
    std::string_view out;
    DecodeError error;
};

// invalidRLPTest.json, every case, with the error our strict decoder gives.
constexpr InvalidCase kInvalidCases[] = {
    // Declared length 0x0f00000000000002 fits in size_t but runs far past the input.
    {"int32Overflow", "bf0f000000000000021111", DecodeError::kInputTooShort},
    {"int32Overflow2", "ff0f000000000000021111", DecodeError::kInputTooShort},
    {"wrongSizeList", "f80180", DecodeError::kNonCanonicalSize},
    {"wrongSizeList2", "f80100", DecodeError::kNonCanonicalSize},
    {"incorrectLengthInArray", "b9002100dc2b275d0f74e8a53e6f4ec61b27f24278820be3f82ea2110e582081b0565df0",
     DecodeError::kLeadingZeroInLength},
    // The outer list is fine; the first item of the inner list has a leading zero in its length.
    {"randomRLP",
     "f861f83eb9002100dc2b275d0f74e8a53e6f4ec61b27f24278820be3f82ea2110e582081b0565df027b90015002d5ef8325ae4d034df55d4"
     "b58d0dfba64d61ddd17be00000b9001a00dae30907045a2f66fa36f2bb8aa9029cbb0b8a7b3b5c435ab331",
     DecodeError::kLeadingZeroInLength},
    {"bytesShouldBeSingleByte00", "8100", DecodeError::kNonCanonicalSingleByte},
    {"bytesShouldBeSingleByte01", "8101", DecodeError::kNonCanonicalSingleByte},
    {"bytesShouldBeSingleByte7F", "817F", DecodeError::kNonCanonicalSingleByte},
    {"leadingZerosInLongLengthArray1",
     "b90040000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f3031323334"
     "35363738393a3b3c3d3e3f",
     DecodeError::kLeadingZeroInLength},
    {"leadingZerosInLongLengthArray2", "b800", DecodeError::kLeadingZeroInLength},
    {"leadingZerosInLongLengthList1",
     "fb00000040000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132"
     "333435363738393a3b3c3d3e3f",
     DecodeError::kLeadingZeroInLength},
    {"leadingZerosInLongLengthList2", "f800", DecodeError::kLeadingZeroInLength},
    {"nonOptimalLongLengthArray1", "b81000112233445566778899aabbccddeeff", DecodeError::kNonCanonicalSize},
    {"nonOptimalLongLengthArray2", "b801ff", DecodeError::kNonCanonicalSize},
    {"nonOptimalLongLengthList1", "f810000102030405060708090a0b0c0d0e0f", DecodeError::kNonCanonicalSize},
    {"nonOptimalLongLengthList2", "f803112233", DecodeError::kNonCanonicalSize},
};

// Encodes a value written in the corpus' "in" notation with our encoders.
class InEncoder {
  public:
    explicit InEncoder(std::string_view text) : s_(text) {}

    Bytes encode_all() {
        Bytes out = item();
        skip_space();
        EXPECT_EQ(pos_, s_.size()) << "unparsed input in " << s_;
        return out;
    }

  private:
    void skip_space() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == ',')) ++pos_;
    }

    Bytes item() {
        skip_space();
        Bytes out;
        if (pos_ >= s_.size()) {
            ADD_FAILURE() << "unexpected end of " << s_;
        } else if (s_[pos_] == '[') {
            ++pos_;
            Bytes payload;
            for (skip_space(); pos_ < s_.size() && s_[pos_] != ']'; skip_space()) append(payload, item());
            ++pos_;
            rlp::encode_header(out, {true, payload.size()});
            append(out, payload);
        } else if (s_[pos_] == '"') {
            const std::string text = quoted();
            if (!text.empty() && text[0] == '#') {
                boost::multiprecision::cpp_int big{text.substr(1)};
                Bytes be;
                boost::multiprecision::export_bits(big, std::back_inserter(be), 8);
                rlp::encode(out, ByteView{be});
            } else {
                rlp::encode(out, as_bytes(text));
            }
        } else {
            uint64_t v = 0;
            while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') v = v * 10 + uint64_t(s_[pos_++] - '0');
            rlp::encode(out, v);
        }
        return out;
    }

    std::string quoted() {
        std::string text;
        for (++pos_; pos_ < s_.size() && s_[pos_] != '"'; ++pos_) {
            if (s_[pos_] == '\\' && pos_ + 5 < s_.size() && s_[pos_ + 1] == 'u') {
                auto b = from_hex(s_.substr(pos_ + 2, 4));
                EXPECT_TRUE(b && (*b)[0] == 0) << "only \\u00XX escapes are used";
                if (b) text.push_back(static_cast<char>((*b)[1]));
                pos_ += 5;
            } else {
                text.push_back(s_[pos_]);
            }
        }
        ++pos_;
        return text;
    }

    std::string_view s_;
    size_t pos_{0};
};

// Decodes `in` item by item with the typed decoders and re-encodes what they returned.
Bytes reencode(ByteView& in) {
    Bytes out;
    ByteView probe = in;
    auto h = rlp::decode_header(probe);
    if (!h) {
        ADD_FAILURE() << h.error().message();
        in = {};
        return out;
    }
    if (h->list) {
        auto payload = rlp::decode_list(in);
        EXPECT_TRUE(payload);
        Bytes inner;
        for (ByteView items = payload.value(); !items.empty();) append(inner, reencode(items));
        rlp::encode_header(out, {true, inner.size()});
        append(out, inner);
    } else {
        auto s = rlp::decode_string(in);
        EXPECT_TRUE(s);
        rlp::encode(out, s.value());
    }
    return out;
}

TEST(Rlp, CorpusValidEncodesAndDecodes) {
    for (const auto& c : kValidCases) {
        SCOPED_TRACE(c.name);
        const Bytes want = test::hex(c.out);
        EXPECT_EQ(to_hex(InEncoder{c.in}.encode_all()), to_hex(want));
        EXPECT_TRUE(rlp::validate(want));

        ByteView in{want};
        EXPECT_EQ(to_hex(reencode(in)), to_hex(want));
        EXPECT_TRUE(in.empty());

        in = ByteView{want};
        auto item = rlp::next_item(in);
        ASSERT_TRUE(item);
        EXPECT_EQ(item->size(), want.size());
        EXPECT_TRUE(in.empty());
    }
    EXPECT_EQ(std::size(kValidCases), 28u);
}

TEST(Rlp, CorpusInvalidRejectedWithSpecificError) {
    for (const auto& c : kInvalidCases) {
        SCOPED_TRACE(c.name);
        const Bytes bytes = test::hex(c.out);
        auto r = rlp::validate(bytes);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error(), make_error_code(c.error)) << r.error().message();
        EXPECT_EQ(r.error().category().name(), std::string_view{"rlp"});
    }
    EXPECT_EQ(std::size(kInvalidCases), 17u);
}

// ---- integers -----------------------------------------------------------------------------------

struct UintCase {
    uint64_t value;
    std::string_view rlp;
};

constexpr UintCase kUintCases[] = {
    {0, "80"},
    {1, "01"},
    {0x7f, "7f"},
    {0x80, "8180"},
    {0xff, "81ff"},
    {0x100, "820100"},
    {0xffff, "82ffff"},
    {0x10000, "83010000"},
    {0xffffffff, "84ffffffff"},
    {0x100000000, "850100000000"},
    {0x00ffffffffffffff, "87ffffffffffffff"},
    {0x0100000000000000, "880100000000000000"},
    {std::numeric_limits<uint64_t>::max(), "88ffffffffffffffff"},
};

TEST(Rlp, Uint64RoundTripsAtByteEdges) {
    for (const auto& c : kUintCases) {
        SCOPED_TRACE(c.value);
        Bytes out;
        rlp::encode(out, c.value);
        EXPECT_EQ(to_hex(out), c.rlp);
        EXPECT_EQ(rlp::length(c.value), out.size());

        ByteView in{out};
        auto v = rlp::decode_uint64(in);
        ASSERT_TRUE(v);
        EXPECT_EQ(*v, c.value);
        EXPECT_TRUE(in.empty());
    }
}

struct BadUintCase {
    std::string_view rlp;
    DecodeError error;
};

constexpr BadUintCase kBadUintCases[] = {
    {"00", DecodeError::kLeadingZeroInInteger},  // zero is 0x80, not the byte 0x00
    {"8200ff", DecodeError::kLeadingZeroInInteger},
    {"890100000000000000ff", DecodeError::kIntegerOverflow},
    {"89000000000000000001", DecodeError::kIntegerOverflow},  // width is checked first, as geth does
    {"c0", DecodeError::kUnexpectedList},
    {"8101", DecodeError::kNonCanonicalSingleByte},
    {"82ff", DecodeError::kInputTooShort},
    {"", DecodeError::kInputTooShort},
};

TEST(Rlp, Uint64RejectsNonCanonicalAndOversized) {
    for (const auto& c : kBadUintCases) {
        SCOPED_TRACE(c.rlp);
        const Bytes bytes = test::hex(c.rlp);
        ByteView in{bytes};
        auto v = rlp::decode_uint64(in);
        ASSERT_FALSE(v);
        EXPECT_EQ(v.error(), make_error_code(c.error));
    }
}

TEST(Rlp, U256RoundTrips) {
    const U256 max = std::numeric_limits<U256>::max();
    const std::pair<U256, std::string_view> cases[] = {
        {U256{0}, "80"},
        {U256{0x7f}, "7f"},
        {U256{0x80}, "8180"},
        {U256{17179869184ULL}, "850400000000"},  // mainnet genesis difficulty
        {U256{"83729609699884896815286331701780722"}, "8f102030405060708090a0b0c0d0e0f2"},
        {U256{1} << 255, "a08000000000000000000000000000000000000000000000000000000000000000"},
        {max, "a0ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"},
    };
    for (const auto& [value, hex] : cases) {
        SCOPED_TRACE(hex);
        Bytes out;
        rlp::encode(out, value);
        EXPECT_EQ(to_hex(out), hex);
        EXPECT_EQ(rlp::length(value), out.size());
        ByteView in{out};
        auto v = rlp::decode_u256(in);
        ASSERT_TRUE(v);
        EXPECT_EQ(*v, value);
        EXPECT_TRUE(in.empty());
    }
}

TEST(Rlp, U256RejectsBigintAndLeadingZero) {
    // The corpus' bigint is 2^256: valid RLP, but one byte too wide for a U256.
    Bytes bigint = test::hex("a1010000000000000000000000000000000000000000000000000000000000000000");
    ByteView in{bigint};
    auto v = rlp::decode_u256(in);
    ASSERT_FALSE(v);
    EXPECT_EQ(v.error(), make_error_code(DecodeError::kIntegerOverflow));

    Bytes padded = test::hex("a000ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff");
    in = ByteView{padded};
    v = rlp::decode_u256(in);
    ASSERT_FALSE(v);
    EXPECT_EQ(v.error(), make_error_code(DecodeError::kLeadingZeroInInteger));
}

// ---- strings, lists, hashes ---------------------------------------------------------------------

TEST(Rlp, StringHeaderSwitchesToLongFormAt56Bytes) {
    for (size_t size : {0u, 1u, 2u, 55u, 56u, 255u, 256u, 65535u, 65536u}) {
        SCOPED_TRACE(size);
        const Bytes payload(size, 0xaa);
        Bytes out;
        rlp::encode(out, ByteView{payload});
        ASSERT_EQ(out.size(), rlp::length(ByteView{payload}));
        if (size == 1) {
            EXPECT_EQ(to_hex(out), "81aa");  // 0xaa >= 0x80 needs a header
        } else if (size < 56) {
            EXPECT_EQ(out[0], 0x80 + size);
            EXPECT_EQ(out.size(), 1 + size);
        } else {
            const size_t len_len = size < 256 ? 1 : size < 65536 ? 2 : 3;
            EXPECT_EQ(out[0], 0xb7 + len_len);
            EXPECT_EQ(out.size(), 1 + len_len + size);
        }
        ByteView in{out};
        auto s = rlp::decode_string(in);
        ASSERT_TRUE(s);
        EXPECT_TRUE(std::equal(s->begin(), s->end(), payload.begin(), payload.end()));
        EXPECT_TRUE(in.empty());
    }
    Bytes out;
    rlp::encode(out, ByteView{test::hex("7f")});
    EXPECT_EQ(to_hex(out), "7f");  // a single byte below 0x80 is its own encoding
}

TEST(Rlp, ListHeaderSwitchesToLongFormAt56Bytes) {
    Bytes out;
    rlp::encode_header(out, {true, 55});
    EXPECT_EQ(to_hex(out), "f7");
    out.clear();
    rlp::encode_header(out, {true, 56});
    EXPECT_EQ(to_hex(out), "f838");
    out.clear();
    rlp::encode_header(out, {true, 1024});
    EXPECT_EQ(to_hex(out), "f90400");
    EXPECT_EQ(rlp::length_of_list(55), 56u);
    EXPECT_EQ(rlp::length_of_list(56), 58u);
    EXPECT_EQ(rlp::header_length(0), 1u);
    EXPECT_EQ(rlp::header_length(1024), 3u);

    // A list of 56 one-byte items, decoded back.
    Bytes list;
    rlp::encode_header(list, {true, 56});
    for (uint64_t i = 0; i < 56; ++i) rlp::encode(list, i + 1);
    ByteView in{list};
    auto payload = rlp::decode_list(in);
    ASSERT_TRUE(payload);
    EXPECT_TRUE(in.empty());
    ByteView items = *payload;
    for (uint64_t i = 0; i < 56; ++i) {
        auto v = rlp::decode_uint64(items);
        ASSERT_TRUE(v);
        EXPECT_EQ(*v, i + 1);
    }
    EXPECT_TRUE(items.empty());
}

// The pointer writers are what encode_header and encode(uint64_t) append; they write exactly the
// advertised number of bytes and nothing past them.
TEST(Rlp, PointerWritersMatchEncodersAndLengthsAtEveryWidth) {
    std::vector<uint64_t> values = {0, 1, 0x7f, 0x80, 0xff, 55, 56, std::numeric_limits<uint64_t>::max()};
    for (unsigned bits = 8; bits < 64; bits += 8) {
        values.push_back((uint64_t{1} << bits) - 1);
        values.push_back(uint64_t{1} << bits);
    }
    for (uint64_t v : values) {
        SCOPED_TRACE(v);
        // Room for a header and the list header written after it (at most 2 * 9 bytes), plus a guard byte.
        std::array<uint8_t, 2 * rlp::kMaxHeaderLength + 1> buf;
        buf.fill(0xee);
        const uint8_t* end = rlp::write_uint(buf.data(), v);
        const ByteView written{buf.data(), static_cast<size_t>(end - buf.data())};
        ASSERT_EQ(written.size(), rlp::length(v));
        EXPECT_EQ(buf[written.size()], 0xee);
        Bytes ref;
        rlp::encode(ref, v);
        EXPECT_EQ(to_hex(written), to_hex(ref));
        ByteView in = written;
        EXPECT_EQ(rlp::decode_uint64(in).value(), v);

        for (bool list : {false, true}) {
            const size_t n = static_cast<size_t>(v);
            buf.fill(0xee);
            end = rlp::write_header(buf.data(), {list, n});
            const ByteView header{buf.data(), static_cast<size_t>(end - buf.data())};
            ASSERT_EQ(header.size(), rlp::header_length(n));
            EXPECT_EQ(buf[header.size()], 0xee);
            if (list) {
                uint8_t* list_end = rlp::write_list_header(buf.data() + header.size(), n);
                EXPECT_EQ(to_hex(ByteView{buf.data() + header.size(), list_end}), to_hex(header));
            }
            ref.clear();
            rlp::encode_header(ref, {list, n});
            EXPECT_EQ(to_hex(header), to_hex(ref));
        }
    }
    // Known bytes: the single-byte forms and the widest forms.
    std::array<uint8_t, rlp::kMaxHeaderLength> b;
    EXPECT_EQ(to_hex(ByteView{b.data(), rlp::write_uint(b.data(), 0)}), "80");
    EXPECT_EQ(to_hex(ByteView{b.data(), rlp::write_uint(b.data(), 0x7f)}), "7f");
    EXPECT_EQ(to_hex(ByteView{b.data(), rlp::write_uint(b.data(), 0x80)}), "8180");
    EXPECT_EQ(to_hex(ByteView{b.data(), rlp::write_list_header(b.data(), 55)}), "f7");
    EXPECT_EQ(to_hex(ByteView{b.data(), rlp::write_list_header(b.data(), 56)}), "f838");
    EXPECT_EQ(to_hex(ByteView{b.data(), rlp::write_header(b.data(), {false, 56})}), "b838");
    EXPECT_EQ(to_hex(ByteView{b.data(), rlp::write_list_header(b.data(), std::numeric_limits<size_t>::max())}),
              "ffffffffffffffffff");
}

TEST(Rlp, NestedListsRoundTrip) {
    // [[], [[]], [[], [[]]]] built with encode_header, as listsoflists2.
    Bytes out;
    rlp::encode_header(out, {true, 7});
    rlp::encode_header(out, {true, 0});
    rlp::encode_header(out, {true, 1});
    rlp::encode_header(out, {true, 0});
    rlp::encode_header(out, {true, 3});
    rlp::encode_header(out, {true, 0});
    rlp::encode_header(out, {true, 1});
    rlp::encode_header(out, {true, 0});
    EXPECT_EQ(to_hex(out), "c7c0c1c0c3c0c1c0");

    ByteView in{out};
    auto outer = rlp::decode_list(in);
    ASSERT_TRUE(outer);
    ByteView items = *outer;
    auto a = rlp::decode_list(items);
    auto b = rlp::decode_list(items);
    auto c = rlp::decode_list(items);
    ASSERT_TRUE(a && b && c);
    EXPECT_TRUE(items.empty());
    EXPECT_EQ(a->size(), 0u);
    EXPECT_EQ(to_hex(*b), "c0");
    EXPECT_EQ(to_hex(*c), "c0c1c0");
}

TEST(Rlp, TypeMismatchesAndHashLength) {
    Bytes list = test::hex("c0");
    ByteView in{list};
    auto s = rlp::decode_string(in);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error(), make_error_code(DecodeError::kUnexpectedList));

    Bytes str = test::hex("83646f67");
    in = ByteView{str};
    auto l = rlp::decode_list(in);
    ASSERT_FALSE(l);
    EXPECT_EQ(l.error(), make_error_code(DecodeError::kUnexpectedString));

    Hash32 h;
    for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint8_t>(i);
    Bytes enc;
    rlp::encode(enc, h);
    EXPECT_EQ(enc.size(), 33u);
    EXPECT_EQ(enc[0], 0xa0);
    in = ByteView{enc};
    auto back = rlp::decode_hash(in);
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, h);

    for (size_t size : {0u, 20u, 31u, 33u}) {
        Bytes bad;
        rlp::encode(bad, ByteView{Bytes(size, 1)});
        in = ByteView{bad};
        auto r = rlp::decode_hash(in);
        ASSERT_FALSE(r) << size;
        EXPECT_EQ(r.error(), make_error_code(DecodeError::kUnexpectedLength));
    }
}

// ---- validate / next_item -----------------------------------------------------------------------

Bytes nested_lists(size_t depth) {
    Bytes out = test::hex("c0");
    for (size_t i = 1; i < depth; ++i) {
        Bytes wrapped;
        rlp::encode_header(wrapped, {true, out.size()});
        append(wrapped, out);
        out = std::move(wrapped);
    }
    return out;
}

TEST(Rlp, ValidateDepthLimit) {
    EXPECT_TRUE(rlp::validate(nested_lists(1)));
    EXPECT_TRUE(rlp::validate(nested_lists(rlp::kMaxDepth)));
    auto r = rlp::validate(nested_lists(rlp::kMaxDepth + 1));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), make_error_code(DecodeError::kTooDeep));
}

TEST(Rlp, ValidateRejectsTrailingBytesAndDeepErrors) {
    auto r = rlp::validate(test::hex("c0c0"));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), make_error_code(DecodeError::kTrailingBytes));

    r = rlp::validate(test::hex("c3c28101"));  // non-canonical byte two levels down
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), make_error_code(DecodeError::kNonCanonicalSingleByte));

    r = rlp::validate(test::hex("c3c28300"));  // inner string runs past its enclosing list
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), make_error_code(DecodeError::kInputTooShort));

    r = rlp::validate({});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), make_error_code(DecodeError::kInputTooShort));
}

TEST(Rlp, NextItemSplitsConcatenatedItems) {
    const Bytes stream = test::hex(
        "0183646f67c0c6827a77c10401b8384c6f72656d20697073756d20646f6c6f722073697420616d65742c20636f6e"
        "7365637465747572206164697069736963696e6720656c6974");
    ByteView in{stream};
    std::vector<std::string> items;
    while (!in.empty()) {
        auto item = rlp::next_item(in);
        ASSERT_TRUE(item);
        items.push_back(to_hex(*item));
    }
    ASSERT_EQ(items.size(), 5u);
    EXPECT_EQ(items[0], "01");
    EXPECT_EQ(items[1], "83646f67");
    EXPECT_EQ(items[2], "c0");
    EXPECT_EQ(items[3], "c6827a77c10401");
    EXPECT_EQ(items[4].size(), 2 * 58u);

    const Bytes truncated = test::hex("c6827a77c104");
    in = ByteView{truncated};
    auto item = rlp::next_item(in);
    ASSERT_FALSE(item);
    EXPECT_EQ(item.error(), make_error_code(DecodeError::kInputTooShort));
}

TEST(Rlp, DecodeHeaderLeavesSingleBytesInPlace) {
    const Bytes b = test::hex("7f");
    ByteView in{b};
    auto h = rlp::decode_header(in);
    ASSERT_TRUE(h);
    EXPECT_FALSE(h->list);
    EXPECT_EQ(h->payload_length, 1u);
    EXPECT_EQ(in.size(), 1u);
}

TEST(Rlp, ErrorCategoryNamesEveryCode) {
    EXPECT_STREQ(rlp::decode_category().name(), "rlp");
    for (int e = static_cast<int>(DecodeError::kInputTooShort); e <= static_cast<int>(DecodeError::kTooDeep); ++e) {
        EXPECT_NE(make_error_code(static_cast<DecodeError>(e)).message(), "unknown rlp error") << e;
    }
}

}  // namespace
}  // namespace headerd
