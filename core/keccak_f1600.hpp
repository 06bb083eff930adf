#pragma once

// The Keccak-f[1600] permutation and the Keccak-256 sponge (rate 136 bytes, Keccak's own padding
// 0x01 .. 0x80, not FIPS-202's 0x06) over any permutation, so that bench/keccak_benchmark.cpp can
// compare implementations behind one sponge and core/keccak.cpp can use the fastest.
//
// Both permutations here are ours, written from the Keccak reference ("The Keccak reference", 3.0,
// and "Keccak implementation overview", 3.2): two rounds per loop turn with the state in 25 + 25
// locals, rho and pi folded into the indexing. keccak_f1600_lc keeps six lanes complemented (1, 2,
// 8, 12, 17, 20; overview, section 2.2), which turns all but one NOT of each chi row into AND or
// OR; keccak_f1600_plain writes chi as the reference does. Each is built for x86-64 and for
// x86-64-v3, where BMI1's ANDN does ~a & b in one instruction: there the plain form is the faster
// (bench/keccak_benchmark.cpp), and core/keccak.hpp uses it.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/bytes.hpp"

namespace headerd {

using KeccakState = std::array<uint64_t, 25>;
using KeccakPermutation = void (*)(KeccakState&) noexcept;

// Our Keccak-f[1600] (24 rounds), lane-complementing and plain.
void keccak_f1600_lc(KeccakState& a) noexcept;
void keccak_f1600_plain(KeccakState& a) noexcept;

// The Keccak-256 sponge over `permute` (lanes little-endian, as x86-64 and the spec's byte order).
template <KeccakPermutation permute>
class KeccakSponge {
  public:
    static constexpr size_t kRate = 136;

    void update(ByteView data) noexcept {
        const uint8_t* p = data.data();
        size_t n = data.size();
        if (fill_ > 0) {
            const size_t take = std::min(n, kRate - fill_);
            absorb_bytes(p, take, fill_);
            fill_ += take;
            p += take;
            n -= take;
            if (fill_ < kRate) return;
            permute(state_);
            fill_ = 0;
        }
        for (; n >= kRate; p += kRate, n -= kRate) {
            for (size_t i = 0; i < kRate / 8; ++i) {
                uint64_t lane;
                std::memcpy(&lane, p + 8 * i, 8);
                state_[i] ^= lane;
            }
            permute(state_);
        }
        if (n > 0) {
            absorb_bytes(p, n, 0);
            fill_ = n;
        }
    }

    // The digest of everything absorbed; the sponge itself is left as it was.
    Hash32 digest() const noexcept {
        KeccakState s = state_;
        xor_byte(s, fill_, 0x01);
        xor_byte(s, kRate - 1, 0x80);
        permute(s);
        Hash32 out;
        std::memcpy(out.data(), s.data(), out.size());
        return out;
    }

  private:
    static void xor_byte(KeccakState& s, size_t at, uint8_t b) noexcept {
        s[at / 8] ^= static_cast<uint64_t>(b) << (8 * (at % 8));
    }
    void absorb_bytes(const uint8_t* p, size_t n, size_t at) noexcept {
        for (size_t i = 0; i < n; ++i) xor_byte(state_, at + i, p[i]);
    }

    KeccakState state_{};
    size_t fill_ = 0;
};

}  // namespace headerd
