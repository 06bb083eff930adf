#pragma once

// Keccak-256 as Ethereum uses it (original Keccak padding, not FIPS-202 SHA3-256).
// Backed by Crypto++ because OpenSSL 3.0 has no Keccak with the original padding and RLPx needs
// a state that can be copied to read the running MAC without finishing it.

#include <memory>

#include "core/bytes.hpp"

namespace headerd {

Hash32 keccak256(ByteView data) noexcept;

// Incremental hasher. Copyable: a copy continues from the same state.
// Not thread-safe; one instance per user.
class Keccak256 {
  public:
    Keccak256();
    ~Keccak256();
    Keccak256(const Keccak256& other);
    Keccak256& operator=(const Keccak256& other);
    Keccak256(Keccak256&&) noexcept;
    Keccak256& operator=(Keccak256&&) noexcept;

    void update(ByteView data) noexcept;
    // Digest of everything absorbed so far; the state is left as it was.
    Hash32 digest() const noexcept;

  private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace headerd
