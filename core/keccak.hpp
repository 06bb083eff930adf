#pragma once

// Keccak-256 as Ethereum uses it (original Keccak padding, not FIPS-202 SHA3-256). Our own
// Keccak-f[1600] (core/keccak_f1600.hpp): bench/keccak_benchmark.cpp measured it against Crypto++,
// nettle, OpenSSL and libgcrypt on this project's machine (docs/performance.md, "Keccak"), and
// OpenSSL 3.0 has no Keccak with the original padding. RLPx needs a state that can be copied to
// read the running MAC without finishing it: the state is 200 bytes, copied in place.

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
    KeccakSponge<keccak_f1600_lc> sponge_;
};

}  // namespace headerd
