#pragma once

// Deterministic synthetic chains for `headerd generate`, tests and benchmarks.
//
// The same (count, seed) gives the same bytes on every machine and standard library: randomness
// comes from our own xoshiro256** (seeded by splitmix64), never from std:: distributions, whose
// output is implementation-defined. The fork schedule is synthetic_config(count, ...): London at
// block count/5, Shanghai, Cancun and Prague at the times of blocks 2/5, 3/5 and 4/5 of the chain,
// so a chain of count >= 5 shows every header layout (15, 16, 17, 20, 21 fields) in order.

#include <array>
#include <cstdint>
#include <span>

#include "core/block_header.hpp"
#include "core/bytes.hpp"
#include "core/chain_config.hpp"
#include "core/uint256.hpp"

namespace headerd::synthetic {

inline constexpr uint64_t kGenesisTime = 1'600'000'000;
inline constexpr uint64_t kBlockTime = 12;

// splitmix64 step: advances `state` and returns the next output (used to seed Rng).
uint64_t splitmix64(uint64_t& state) noexcept;

// xoshiro256** (Blackman and Vigna). Same sequence on every platform. Not for cryptography.
class Rng {
  public:
    // State from four splitmix64 outputs of `seed`, as the reference implementation recommends.
    explicit Rng(uint64_t seed) noexcept;
    // Raw state (must not be all zero); for the reference test vectors.
    explicit Rng(const std::array<uint64_t, 4>& state) noexcept : s_(state) {}

    uint64_t next() noexcept;
    // Uniform enough in [0, n) for n > 0 (modulo bias below n / 2^64); deterministic.
    uint64_t below(uint64_t n) noexcept { return next() % n; }
    // Fills `out` with bytes of successive outputs, least significant byte first.
    void fill(std::span<uint8_t> out) noexcept;

  private:
    std::array<uint64_t, 4> s_;
};

// Produces a synthetic chain header by header, each header valid against its parent:
// parent hash = keccak of the parent's RLP, numbers 0, 1, ..., timestamps kGenesisTime + 12*i,
// gas_used <= gas_limit and gas limit steps within 1/1024 of the parent, EIP-1559 base fee from
// London on (1 gwei at the fork), pre-merge difficulty between 1e12 and 1e15 with small steps,
// post-merge (from Shanghai on, this chain's merge) difficulty 0, random prevrandao in mix_hash,
// zero nonce and empty ommers; EIP-4844 blob gas from Cancun on. RLP sizes are 510-660 bytes
// (random 0..32 byte extra data, sparse logs bloom), like mainnet's 508-650.
//
// A warm next() makes no heap allocation beyond the growth of `out`: the header is one reused
// member. Not thread-safe; one generator per thread.
class Generator {
  public:
    Generator(uint64_t count, uint64_t seed);

    // synthetic_config(count, genesis hash, kGenesisTime).
    const ChainConfig& config() const noexcept { return config_; }
    uint64_t count() const noexcept { return count_; }
    bool done() const noexcept { return number_ >= count_; }

    struct Produced {
        Hash32 hash;
        U256 total_difficulty;  // sum of the difficulties of headers 0..number
        uint64_t number;
        uint64_t timestamp;
    };
    // Appends the RLP of the next header (number 0, 1, ...) to `out`, a buffer the caller reuses.
    // REQUIRES: !done().
    Produced next(Bytes& out);

  private:
    // Turns header_ (holding the parent, or nothing for number 0) into header `number`.
    void build(uint64_t number) noexcept;

    uint64_t count_;
    uint64_t number_{0};  // of the next header to emit; header_ already holds it when number_ == 0
    Rng rng_;
    ChainConfig config_;
    BlockHeader header_;
    U256 total_difficulty_{0};
    uint64_t difficulty_{0};  // pre-merge difficulty of the last built header
    uint64_t base_fee_{0};    // base fee of the last built header (0 before London)
    std::array<Address, 16> coinbases_{};
};

}  // namespace headerd::synthetic
