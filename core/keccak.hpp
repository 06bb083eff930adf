#pragma once

// Keccak-256 as Ethereum uses it (original Keccak padding, not FIPS-202 SHA3-256), on our own
// Keccak-f[1600] (core/keccak_f1600.hpp), the plain form: bench/keccak_benchmark.cpp measured it
// against Crypto++ (used before), nettle, our lane-complementing form, and OpenSSL's and libgcrypt's
// SHA3-256 (docs/performance.md, "Keccak"); built for x86-64-v3 too, where ANDN makes chi one
// instruction a lane and lane complementing no longer pays. OpenSSL 3.0 and libgcrypt have no
// Keccak with the original padding. RLPx needs a state that can be copied to read the running MAC
// without finishing it: the state is 200 bytes, copied in place.

#include "core/bytes.hpp"
#include "core/keccak_f1600.hpp"

namespace headerd {

Hash32 keccak256(ByteView data) noexcept;

// Incremental hasher. Copyable: a copy continues from the same state.
// Not thread-safe; one instance per user.
class Keccak256 {
  public:
    void update(ByteView data) noexcept { sponge_.update(data); }
    // Digest of everything absorbed so far; the state is left as it was.
    Hash32 digest() const noexcept { return sponge_.digest(); }

  private:
    KeccakSponge<keccak_f1600_plain> sponge_;
};

}  // namespace headerd
