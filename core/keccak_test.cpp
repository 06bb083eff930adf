#include "core/keccak.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include <cryptopp/keccak.h>

#include "core/hex.hpp"

namespace headerd {
namespace {

struct Vector {
    std::string input;
    const char* digest;
};

// Published keccak-256 vectors (go-ethereum crypto tests, EIP-8 era tooling) and self-derived edge cases.
TEST(Keccak, Vectors) {
    const Vector vectors[] = {
        {"", "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"},
        {"abc", "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"},
        {"The quick brown fox jumps over the lazy dog",
         "4d741b6f1eb29cb2a9b9911c82f56fa8d73b04959d3d9d222895df6c0b28aa15"},
        {std::string(135, '\0'), "29e3704feeca7fb9ba229f0fa04d9b36449cf3ad6e1d85d9cfff3a10df9abc3e"},
        {std::string(136, '\0'), "3a5912a7c5faa06ee4fe906253e339467a9ce87d533c65be3c15cb231cdb25f9"},
        {std::string(137, '\0'), "bee7fbb405cb0d91a8775e338c4a5e4b5d6b2d051f687fa942043cffdc73bd28"},
        {"foo", "41b1a0649752af1b28b3dc29a1556eee781e4a4c3a1f7f53f90fa834de098c4d"},
        {"\xc0", "1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347"},
        {"\x80", "56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421"},
    };
    for (const auto& v : vectors) {
        EXPECT_EQ(to_hex(keccak256(as_bytes(v.input))), v.digest) << "input size " << v.input.size();
    }
}

TEST(Keccak, IncrementalMatchesOneShotAndCopyContinues) {
    const std::string text = "The quick brown fox jumps over the lazy dog";
    Keccak256 h;
    h.update(as_bytes(text.substr(0, 10)));
    Keccak256 copy = h;
    h.update(as_bytes(text.substr(10)));
    EXPECT_EQ(h.digest(), keccak256(as_bytes(text)));
    // digest() does not disturb the state.
    EXPECT_EQ(h.digest(), keccak256(as_bytes(text)));
    copy.update(as_bytes(text.substr(10)));
    EXPECT_EQ(copy.digest(), keccak256(as_bytes(text)));
}

// Our permutation (both forms) against Crypto++'s, an independent implementation: every input
// length from 0 to 600 bytes (all rate boundaries up to four blocks), fed in two parts split at a
// random point, and the Keccak team's one-byte vector (ShortMsgKAT_256, Len = 8).
TEST(Keccak, OursMatchesCryptoppAtEveryLength) {
    std::mt19937_64 rng(7);
    for (size_t len = 0; len <= 600; ++len) {
        Bytes msg(len);
        for (auto& b : msg) b = static_cast<uint8_t>(rng());
        Hash32 want;
        CryptoPP::Keccak_256().CalculateDigest(want.data(), msg.data(), msg.size());
        const size_t cut = len == 0 ? 0 : rng() % len;
        Keccak256 ours;  // the plain form
        KeccakSponge<keccak_f1600_lc> lc;
        for (ByteView part : {ByteView(msg).first(cut), ByteView(msg).subspan(cut)}) {
            ours.update(part);
            lc.update(part);
        }
        ASSERT_EQ(ours.digest(), want) << "length " << len;
        ASSERT_EQ(lc.digest(), want) << "length " << len;
        ASSERT_EQ(keccak256(msg), want) << "length " << len;
    }
    const Bytes cc{0xcc};
    EXPECT_EQ(to_hex(keccak256(cc)), "eead6dbfc7340a56caedc044696a168870549a6a7f6f56961e84a54bd9970b8a");
}

}  // namespace
}  // namespace headerd
