#include "core/keccak_f1600.hpp"

#include <bit>

namespace headerd {

static_assert(std::endian::native == std::endian::little, "KeccakSponge reads lanes in the machine's byte order");

namespace {

constexpr uint64_t kRound[24] = {
    0x0000000000000001ULL, 0x0000000000008082ULL, 0x800000000000808AULL, 0x8000000080008000ULL, 0x000000000000808BULL,
    0x0000000080000001ULL, 0x8000000080008081ULL, 0x8000000000008009ULL, 0x000000000000008AULL, 0x0000000000000088ULL,
    0x0000000080008009ULL, 0x000000008000000AULL, 0x000000008000808BULL, 0x800000000000008BULL, 0x8000000000008089ULL,
    0x8000000000008003ULL, 0x8000000000008002ULL, 0x8000000000000080ULL, 0x000000000000800AULL, 0x800000008000000AULL,
    0x8000000080008081ULL, 0x8000000000008080ULL, 0x0000000080000001ULL, 0x8000000080008008ULL,
};

inline uint64_t rol(uint64_t x, int n) noexcept { return std::rotl(x, n); }

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define HEADERD_KECCAK_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define HEADERD_KECCAK_CLONES
#endif

// The lanes kept complemented between rounds: with them, each chi row needs at most one NOT.
constexpr int kComplemented[6] = {1, 2, 8, 12, 17, 20};

}  // namespace

// Lane i is A[x, y] with i = x + 5y. Each loop turn is two rounds, a -> e and e -> a: theta's column
// parities (c) and their mix (d); then per output row y, rho and pi (b: the five lanes that pi
// brings to that row, each rotated by its rho offset) and chi with iota. The chi forms follow from
// which of b0..b4 and which outputs are complemented (derived once from the set above). Each is
// built twice, for x86-64 and for x86-64-v3 (BMI1's ANDN makes chi one instruction a lane, BMI2's
// RORX a rotation without a move), and the loader picks the one the CPU runs.
HEADERD_KECCAK_CLONES
void keccak_f1600_lc(KeccakState& s) noexcept {
    for (int i : kComplemented) s[static_cast<size_t>(i)] = ~s[static_cast<size_t>(i)];
    uint64_t a0 = s[0], a1 = s[1], a2 = s[2], a3 = s[3], a4 = s[4], a5 = s[5], a6 = s[6], a7 = s[7], a8 = s[8],
             a9 = s[9], a10 = s[10], a11 = s[11], a12 = s[12], a13 = s[13], a14 = s[14], a15 = s[15], a16 = s[16],
             a17 = s[17], a18 = s[18], a19 = s[19], a20 = s[20], a21 = s[21], a22 = s[22], a23 = s[23], a24 = s[24];
    uint64_t e0, e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11, e12, e13, e14, e15, e16, e17, e18, e19, e20, e21, e22,
        e23, e24;
    uint64_t b0, b1, b2, b3, b4, c0, c1, c2, c3, c4, d0, d1, d2, d3, d4;
    for (int i = 0; i < 24; i += 2) {
        c0 = a0 ^ a5 ^ a10 ^ a15 ^ a20;
        c1 = a1 ^ a6 ^ a11 ^ a16 ^ a21;
        c2 = a2 ^ a7 ^ a12 ^ a17 ^ a22;
        c3 = a3 ^ a8 ^ a13 ^ a18 ^ a23;
        c4 = a4 ^ a9 ^ a14 ^ a19 ^ a24;
        d0 = c4 ^ rol(c1, 1);
        d1 = c0 ^ rol(c2, 1);
        d2 = c1 ^ rol(c3, 1);
        d3 = c2 ^ rol(c4, 1);
        d4 = c3 ^ rol(c0, 1);
        b0 = a0 ^ d0;
        b1 = rol(a6 ^ d1, 44);
        b2 = rol(a12 ^ d2, 43);
        b3 = rol(a18 ^ d3, 21);
        b4 = rol(a24 ^ d4, 14);
        e0 = b0 ^ (b1 | b2) ^ kRound[i];
        e1 = b1 ^ (~b2 | b3);
        e2 = b2 ^ (b3 & b4);
        e3 = b3 ^ (b4 | b0);
        e4 = b4 ^ (b0 & b1);
        b0 = rol(a3 ^ d3, 28);
        b1 = rol(a9 ^ d4, 20);
        b2 = rol(a10 ^ d0, 3);
        b3 = rol(a16 ^ d1, 45);
        b4 = rol(a22 ^ d2, 61);
        e5 = b0 ^ (b1 | b2);
        e6 = b1 ^ (b2 & b3);
        e7 = b2 ^ (b3 | ~b4);
        e8 = b3 ^ (b4 | b0);
        e9 = b4 ^ (b0 & b1);
        b0 = rol(a1 ^ d1, 1);
        b1 = rol(a7 ^ d2, 6);
        b2 = rol(a13 ^ d3, 25);
        b3 = rol(a19 ^ d4, 8);
        b4 = rol(a20 ^ d0, 18);
        e10 = b0 ^ (b1 | b2);
        e11 = b1 ^ (b2 & b3);
        e12 = b2 ^ (~b3 & b4);
        e13 = (~b3) ^ (b4 | b0);
        e14 = b4 ^ (b0 & b1);
        b0 = rol(a4 ^ d4, 27);
        b1 = rol(a5 ^ d0, 36);
        b2 = rol(a11 ^ d1, 10);
        b3 = rol(a17 ^ d2, 15);
        b4 = rol(a23 ^ d3, 56);
        e15 = b0 ^ (b1 & b2);
        e16 = b1 ^ (b2 | b3);
        e17 = b2 ^ (~b3 | b4);
        e18 = (~b3) ^ (b4 & b0);
        e19 = b4 ^ (b0 | b1);
        b0 = rol(a2 ^ d2, 62);
        b1 = rol(a8 ^ d3, 55);
        b2 = rol(a14 ^ d4, 39);
        b3 = rol(a15 ^ d0, 41);
        b4 = rol(a21 ^ d1, 2);
        e20 = b0 ^ (~b1 & b2);
        e21 = (~b1) ^ (b2 | b3);
        e22 = b2 ^ (b3 & b4);
        e23 = b3 ^ (b4 | b0);
        e24 = b4 ^ (b0 & b1);
        c0 = e0 ^ e5 ^ e10 ^ e15 ^ e20;
        c1 = e1 ^ e6 ^ e11 ^ e16 ^ e21;
        c2 = e2 ^ e7 ^ e12 ^ e17 ^ e22;
        c3 = e3 ^ e8 ^ e13 ^ e18 ^ e23;
        c4 = e4 ^ e9 ^ e14 ^ e19 ^ e24;
        d0 = c4 ^ rol(c1, 1);
        d1 = c0 ^ rol(c2, 1);
        d2 = c1 ^ rol(c3, 1);
        d3 = c2 ^ rol(c4, 1);
        d4 = c3 ^ rol(c0, 1);
        b0 = e0 ^ d0;
        b1 = rol(e6 ^ d1, 44);
        b2 = rol(e12 ^ d2, 43);
        b3 = rol(e18 ^ d3, 21);
        b4 = rol(e24 ^ d4, 14);
        a0 = b0 ^ (b1 | b2) ^ kRound[i + 1];
        a1 = b1 ^ (~b2 | b3);
        a2 = b2 ^ (b3 & b4);
        a3 = b3 ^ (b4 | b0);
        a4 = b4 ^ (b0 & b1);
        b0 = rol(e3 ^ d3, 28);
        b1 = rol(e9 ^ d4, 20);
        b2 = rol(e10 ^ d0, 3);
        b3 = rol(e16 ^ d1, 45);
        b4 = rol(e22 ^ d2, 61);
        a5 = b0 ^ (b1 | b2);
        a6 = b1 ^ (b2 & b3);
        a7 = b2 ^ (b3 | ~b4);
        a8 = b3 ^ (b4 | b0);
        a9 = b4 ^ (b0 & b1);
        b0 = rol(e1 ^ d1, 1);
        b1 = rol(e7 ^ d2, 6);
        b2 = rol(e13 ^ d3, 25);
        b3 = rol(e19 ^ d4, 8);
        b4 = rol(e20 ^ d0, 18);
        a10 = b0 ^ (b1 | b2);
        a11 = b1 ^ (b2 & b3);
        a12 = b2 ^ (~b3 & b4);
        a13 = (~b3) ^ (b4 | b0);
        a14 = b4 ^ (b0 & b1);
        b0 = rol(e4 ^ d4, 27);
        b1 = rol(e5 ^ d0, 36);
        b2 = rol(e11 ^ d1, 10);
        b3 = rol(e17 ^ d2, 15);
        b4 = rol(e23 ^ d3, 56);
        a15 = b0 ^ (b1 & b2);
        a16 = b1 ^ (b2 | b3);
        a17 = b2 ^ (~b3 | b4);
        a18 = (~b3) ^ (b4 & b0);
        a19 = b4 ^ (b0 | b1);
        b0 = rol(e2 ^ d2, 62);
        b1 = rol(e8 ^ d3, 55);
        b2 = rol(e14 ^ d4, 39);
        b3 = rol(e15 ^ d0, 41);
        b4 = rol(e21 ^ d1, 2);
        a20 = b0 ^ (~b1 & b2);
        a21 = (~b1) ^ (b2 | b3);
        a22 = b2 ^ (b3 & b4);
        a23 = b3 ^ (b4 | b0);
        a24 = b4 ^ (b0 & b1);
    }
    s = {a0,  a1,  a2,  a3,  a4,  a5,  a6,  a7,  a8,  a9,  a10, a11, a12,
         a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24};
    for (int i : kComplemented) s[static_cast<size_t>(i)] = ~s[static_cast<size_t>(i)];
}

// The same without lane complementing: chi as written in the reference.
HEADERD_KECCAK_CLONES
void keccak_f1600_plain(KeccakState& s) noexcept {
    uint64_t a0 = s[0], a1 = s[1], a2 = s[2], a3 = s[3], a4 = s[4], a5 = s[5], a6 = s[6], a7 = s[7], a8 = s[8],
             a9 = s[9], a10 = s[10], a11 = s[11], a12 = s[12], a13 = s[13], a14 = s[14], a15 = s[15], a16 = s[16],
             a17 = s[17], a18 = s[18], a19 = s[19], a20 = s[20], a21 = s[21], a22 = s[22], a23 = s[23], a24 = s[24];
    uint64_t e0, e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11, e12, e13, e14, e15, e16, e17, e18, e19, e20, e21, e22,
        e23, e24;
    uint64_t b0, b1, b2, b3, b4, c0, c1, c2, c3, c4, d0, d1, d2, d3, d4;
    for (int i = 0; i < 24; i += 2) {
        c0 = a0 ^ a5 ^ a10 ^ a15 ^ a20;
        c1 = a1 ^ a6 ^ a11 ^ a16 ^ a21;
        c2 = a2 ^ a7 ^ a12 ^ a17 ^ a22;
        c3 = a3 ^ a8 ^ a13 ^ a18 ^ a23;
        c4 = a4 ^ a9 ^ a14 ^ a19 ^ a24;
        d0 = c4 ^ rol(c1, 1);
        d1 = c0 ^ rol(c2, 1);
        d2 = c1 ^ rol(c3, 1);
        d3 = c2 ^ rol(c4, 1);
        d4 = c3 ^ rol(c0, 1);
        b0 = a0 ^ d0;
        b1 = rol(a6 ^ d1, 44);
        b2 = rol(a12 ^ d2, 43);
        b3 = rol(a18 ^ d3, 21);
        b4 = rol(a24 ^ d4, 14);
        e0 = b0 ^ (~b1 & b2) ^ kRound[i];
        e1 = b1 ^ (~b2 & b3);
        e2 = b2 ^ (~b3 & b4);
        e3 = b3 ^ (~b4 & b0);
        e4 = b4 ^ (~b0 & b1);
        b0 = rol(a3 ^ d3, 28);
        b1 = rol(a9 ^ d4, 20);
        b2 = rol(a10 ^ d0, 3);
        b3 = rol(a16 ^ d1, 45);
        b4 = rol(a22 ^ d2, 61);
        e5 = b0 ^ (~b1 & b2);
        e6 = b1 ^ (~b2 & b3);
        e7 = b2 ^ (~b3 & b4);
        e8 = b3 ^ (~b4 & b0);
        e9 = b4 ^ (~b0 & b1);
        b0 = rol(a1 ^ d1, 1);
        b1 = rol(a7 ^ d2, 6);
        b2 = rol(a13 ^ d3, 25);
        b3 = rol(a19 ^ d4, 8);
        b4 = rol(a20 ^ d0, 18);
        e10 = b0 ^ (~b1 & b2);
        e11 = b1 ^ (~b2 & b3);
        e12 = b2 ^ (~b3 & b4);
        e13 = b3 ^ (~b4 & b0);
        e14 = b4 ^ (~b0 & b1);
        b0 = rol(a4 ^ d4, 27);
        b1 = rol(a5 ^ d0, 36);
        b2 = rol(a11 ^ d1, 10);
        b3 = rol(a17 ^ d2, 15);
        b4 = rol(a23 ^ d3, 56);
        e15 = b0 ^ (~b1 & b2);
        e16 = b1 ^ (~b2 & b3);
        e17 = b2 ^ (~b3 & b4);
        e18 = b3 ^ (~b4 & b0);
        e19 = b4 ^ (~b0 & b1);
        b0 = rol(a2 ^ d2, 62);
        b1 = rol(a8 ^ d3, 55);
        b2 = rol(a14 ^ d4, 39);
        b3 = rol(a15 ^ d0, 41);
        b4 = rol(a21 ^ d1, 2);
        e20 = b0 ^ (~b1 & b2);
        e21 = b1 ^ (~b2 & b3);
        e22 = b2 ^ (~b3 & b4);
        e23 = b3 ^ (~b4 & b0);
        e24 = b4 ^ (~b0 & b1);
        c0 = e0 ^ e5 ^ e10 ^ e15 ^ e20;
        c1 = e1 ^ e6 ^ e11 ^ e16 ^ e21;
        c2 = e2 ^ e7 ^ e12 ^ e17 ^ e22;
        c3 = e3 ^ e8 ^ e13 ^ e18 ^ e23;
        c4 = e4 ^ e9 ^ e14 ^ e19 ^ e24;
        d0 = c4 ^ rol(c1, 1);
        d1 = c0 ^ rol(c2, 1);
        d2 = c1 ^ rol(c3, 1);
        d3 = c2 ^ rol(c4, 1);
        d4 = c3 ^ rol(c0, 1);
        b0 = e0 ^ d0;
        b1 = rol(e6 ^ d1, 44);
        b2 = rol(e12 ^ d2, 43);
        b3 = rol(e18 ^ d3, 21);
        b4 = rol(e24 ^ d4, 14);
        a0 = b0 ^ (~b1 & b2) ^ kRound[i + 1];
        a1 = b1 ^ (~b2 & b3);
        a2 = b2 ^ (~b3 & b4);
        a3 = b3 ^ (~b4 & b0);
        a4 = b4 ^ (~b0 & b1);
        b0 = rol(e3 ^ d3, 28);
        b1 = rol(e9 ^ d4, 20);
        b2 = rol(e10 ^ d0, 3);
        b3 = rol(e16 ^ d1, 45);
        b4 = rol(e22 ^ d2, 61);
        a5 = b0 ^ (~b1 & b2);
        a6 = b1 ^ (~b2 & b3);
        a7 = b2 ^ (~b3 & b4);
        a8 = b3 ^ (~b4 & b0);
        a9 = b4 ^ (~b0 & b1);
        b0 = rol(e1 ^ d1, 1);
        b1 = rol(e7 ^ d2, 6);
        b2 = rol(e13 ^ d3, 25);
        b3 = rol(e19 ^ d4, 8);
        b4 = rol(e20 ^ d0, 18);
        a10 = b0 ^ (~b1 & b2);
        a11 = b1 ^ (~b2 & b3);
        a12 = b2 ^ (~b3 & b4);
        a13 = b3 ^ (~b4 & b0);
        a14 = b4 ^ (~b0 & b1);
        b0 = rol(e4 ^ d4, 27);
        b1 = rol(e5 ^ d0, 36);
        b2 = rol(e11 ^ d1, 10);
        b3 = rol(e17 ^ d2, 15);
        b4 = rol(e23 ^ d3, 56);
        a15 = b0 ^ (~b1 & b2);
        a16 = b1 ^ (~b2 & b3);
        a17 = b2 ^ (~b3 & b4);
        a18 = b3 ^ (~b4 & b0);
        a19 = b4 ^ (~b0 & b1);
        b0 = rol(e2 ^ d2, 62);
        b1 = rol(e8 ^ d3, 55);
        b2 = rol(e14 ^ d4, 39);
        b3 = rol(e15 ^ d0, 41);
        b4 = rol(e21 ^ d1, 2);
        a20 = b0 ^ (~b1 & b2);
        a21 = b1 ^ (~b2 & b3);
        a22 = b2 ^ (~b3 & b4);
        a23 = b3 ^ (~b4 & b0);
        a24 = b4 ^ (~b0 & b1);
    }
    s = {a0,  a1,  a2,  a3,  a4,  a5,  a6,  a7,  a8,  a9,  a10, a11, a12,
         a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24};
}

}  // namespace headerd
