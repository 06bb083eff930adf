#include "core/synthetic.hpp"

#include <algorithm>
#include <cassert>

namespace headerd::synthetic {
namespace {

constexpr uint8_t hex_digit(char c) { return static_cast<uint8_t>(c <= '9' ? c - '0' : c - 'a' + 10); }

constexpr Hash32 hash_from_literal(const char (&hex)[65]) {
    Hash32 h{};
    for (size_t i = 0; i < h.size(); ++i) {
        h[i] = static_cast<uint8_t>(hex_digit(hex[2 * i]) << 4 | hex_digit(hex[2 * i + 1]));
    }
    return h;
}

// keccak256(rlp([])): the ommers hash of a block without uncles (every post-merge block).
constexpr Hash32 kEmptyOmmersHash =
    hash_from_literal("1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347");
// keccak256(rlp("")): root of an empty trie (transactions and receipts of an empty block).
constexpr Hash32 kEmptyTrieRoot = hash_from_literal("56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421");
// sha256(""): EIP-7685 requests hash of a block without execution-layer requests.
constexpr Hash32 kEmptyRequestsHash =
    hash_from_literal("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

constexpr uint64_t kMinDifficulty = 1'000'000'000'000;               // 1e12
constexpr uint64_t kMaxDifficulty = 1'000'000'000'000'000;           // 1e15
constexpr uint64_t kInitialBaseFee = 1'000'000'000;                  // EIP-1559 base fee of the fork block
constexpr uint64_t kLowBaseFee = 5'000'000'000;                      // below: blocks fill up, fee rises
constexpr uint64_t kHighBaseFee = 30'000'000'000;                    // above: blocks empty out, fee falls
constexpr uint64_t kGasLimitBeforeLondon = 15'000'000;               // limits the gas-limit votes drift to
constexpr uint64_t kGasLimitFromLondon = 2 * kGasLimitBeforeLondon;  // London doubled the limit, same target
constexpr uint64_t kGasPerBlob = 131'072;                            // EIP-4844
constexpr size_t kMaxExtraData = 32;
// Largest header RLP this generator can produce: list header, 9 hashes, coinbase, bloom, difficulty
// and base fee at 32 bytes, six 64-bit integers, 32 bytes of extra data, nonce.
constexpr size_t kMaxHeaderLength = 3 + 9 * 33 + 21 + 259 + 2 * 33 + 6 * 9 + 33 + 9;
constexpr uint64_t kEmptyBlockOdds = 64;   // one block in 64 has no transactions
constexpr uint64_t kUncleOdds = 16;        // one pre-merge block in 16 includes uncles
constexpr uint64_t kMaxBloomEntries = 48;  // log addresses and topics; 3 bloom bits each

// EIP-1559 base fee of a block whose parent used `parent_gas_used` of `parent_gas_limit` and paid
// `parent_base_fee`. The generator keeps base fees below ~34 gwei and gas below 2^25, so the
// products stay far below 2^64.
uint64_t next_base_fee(uint64_t parent_base_fee, uint64_t parent_gas_limit, uint64_t parent_gas_used) noexcept {
    const uint64_t target = parent_gas_limit / 2;
    if (parent_gas_used == target || target == 0) return parent_base_fee;
    if (parent_gas_used > target) {
        const uint64_t delta = parent_base_fee * (parent_gas_used - target) / target / 8;
        return parent_base_fee + std::max<uint64_t>(delta, 1);
    }
    return parent_base_fee - parent_base_fee * (target - parent_gas_used) / target / 8;
}

}  // namespace

uint64_t splitmix64(uint64_t& state) noexcept {
    uint64_t z = (state += 0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
    z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
    return z ^ (z >> 31);
}

Rng::Rng(uint64_t seed) noexcept {
    for (uint64_t& s : s_) s = splitmix64(seed);
}

uint64_t Rng::next() noexcept {
    const auto rotl = [](uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
}

void Rng::fill(std::span<uint8_t> out) noexcept {
    size_t i = 0;
    while (i < out.size()) {
        uint64_t v = next();
        for (size_t b = 0; b < 8 && i < out.size(); ++b, ++i) {
            out[i] = static_cast<uint8_t>(v);
            v >>= 8;
        }
    }
}

Generator::Generator(uint64_t count, uint64_t seed)
    // The fork schedule does not depend on the genesis hash: build genesis with it, then hash.
    : count_(count), rng_(seed), config_(synthetic_config(count, Hash32{}, kGenesisTime)) {
    header_.extra_data.reserve(kMaxExtraData);
    for (Address& a : coinbases_) rng_.fill(a);
    build(0);
    Bytes rlp;
    encode(rlp, header_);
    config_ = synthetic_config(count, header_hash(rlp), kGenesisTime);
}

void Generator::build(uint64_t number) noexcept {
    BlockHeader& h = header_;
    const bool genesis = number == 0;
    const uint64_t timestamp = kGenesisTime + kBlockTime * number;
    const size_t layout = config_.expected_field_count(number, timestamp);
    const bool london = layout >= 16;
    const bool merged = layout >= 17;  // this chain merges at Shanghai
    const uint64_t parent_gas_limit = h.gas_limit;
    const uint64_t parent_gas_used = h.gas_used;
    const uint64_t parent_blob_gas = h.blob_gas_used.value_or(0) + h.excess_blob_gas.value_or(0);

    // parent_hash was set by next() when the parent was emitted (zero for genesis).
    h.number = number;
    h.timestamp = timestamp;

    if (genesis) {
        h.gas_limit = london ? kGasLimitFromLondon : kGasLimitBeforeLondon;
    } else if (config_.london_block == number) {
        h.gas_limit = 2 * parent_gas_limit;  // EIP-1559 checks the fork block against 2x the parent
    } else {
        // A small vote within the 1/1024 bound, towards the limit of the era.
        const uint64_t goal = london ? kGasLimitFromLondon : kGasLimitBeforeLondon;
        const uint64_t step = rng_.below((parent_gas_limit / 1024 - 1) / 8 + 1);
        h.gas_limit = parent_gas_limit > goal ? parent_gas_limit - step : parent_gas_limit + step;
    }

    if (london) {
        base_fee_ = genesis || config_.london_block == number
                        ? kInitialBaseFee
                        : next_base_fee(base_fee_, parent_gas_limit, parent_gas_used);
    }

    const bool empty = genesis || rng_.below(kEmptyBlockOdds) == 0;
    if (empty) {
        h.gas_used = 0;
    } else if (!london) {
        h.gas_used = h.gas_limit / 2 + rng_.below(h.gas_limit - h.gas_limit / 2 + 1);  // mostly full, as then
    } else {
        // Demand reacts to the fee, which keeps the base fee between about 4 and 34 gwei.
        const uint64_t target = h.gas_limit / 2;
        if (base_fee_ < kLowBaseFee) {
            h.gas_used = target + rng_.below(h.gas_limit - target + 1);
        } else if (base_fee_ > kHighBaseFee) {
            h.gas_used = rng_.below(target + 1);
        } else {
            h.gas_used = rng_.below(h.gas_limit + 1);
        }
    }

    if (merged) {
        difficulty_ = 0;
    } else if (genesis) {
        difficulty_ = kMinDifficulty + rng_.below(kMaxDifficulty - kMinDifficulty + 1);
    } else {
        const uint64_t step = difficulty_ / 2048;
        switch (rng_.below(3)) {
            case 0:
                difficulty_ = std::max(difficulty_ - step, kMinDifficulty);
                break;
            case 1:
                difficulty_ = std::min(difficulty_ + step, kMaxDifficulty);
                break;
            default:
                break;
        }
    }
    h.difficulty = difficulty_;

    if (merged || genesis || rng_.below(kUncleOdds) != 0) {
        h.ommers_hash = kEmptyOmmersHash;
    } else {
        rng_.fill(h.ommers_hash);
    }
    if (genesis) {
        h.coinbase = Address{};
    } else {
        h.coinbase = coinbases_[rng_.below(coinbases_.size())];
    }
    rng_.fill(h.state_root);
    h.logs_bloom.fill(0);
    if (empty) {
        h.transactions_root = kEmptyTrieRoot;
        h.receipts_root = kEmptyTrieRoot;
    } else {
        rng_.fill(h.transactions_root);
        rng_.fill(h.receipts_root);
        // Each log entry sets three of the 2048 bits, picked by 11-bit slices (as keccak does).
        for (uint64_t n = rng_.below(kMaxBloomEntries + 1); n > 0; --n) {
            uint64_t v = rng_.next();
            for (int k = 0; k < 3; ++k, v >>= 11) {
                const size_t bit = v & 2047;
                uint8_t& byte = h.logs_bloom[255 - bit / 8];
                byte = static_cast<uint8_t>(byte | 1u << (bit % 8));
            }
        }
    }
    h.extra_data.resize(rng_.below(kMaxExtraData + 1));  // within the reserved capacity
    rng_.fill(h.extra_data);
    rng_.fill(h.mix_hash);  // ethash mix digest before the merge, prevrandao after
    if (merged) {
        h.nonce = Nonce{};
    } else {
        rng_.fill(h.nonce);
    }

    if (london) {
        h.base_fee_per_gas = U256{base_fee_};
    } else {
        h.base_fee_per_gas.reset();
    }
    if (layout >= 17) {
        rng_.fill(h.withdrawals_root.emplace());
    } else {
        h.withdrawals_root.reset();
    }
    if (layout >= 20) {
        // EIP-4844 (Cancun: target 3, max 6 blobs), EIP-7691 (Prague: target 6, max 9); the target of
        // the block's own fork applies, and a pre-Cancun parent counts as zero.
        const uint64_t target_blob_gas = (layout >= 21 ? 6 : 3) * kGasPerBlob;
        const uint64_t max_blobs = layout >= 21 ? 9 : 6;
        h.excess_blob_gas = parent_blob_gas < target_blob_gas ? 0 : parent_blob_gas - target_blob_gas;
        h.blob_gas_used = empty ? 0 : rng_.below(max_blobs + 1) * kGasPerBlob;
        rng_.fill(h.parent_beacon_block_root.emplace());
    } else {
        h.blob_gas_used.reset();
        h.excess_blob_gas.reset();
        h.parent_beacon_block_root.reset();
    }
    if (layout >= 21) {
        if (empty || rng_.below(2) == 0) {
            h.requests_hash = kEmptyRequestsHash;
        } else {
            rng_.fill(h.requests_hash.emplace());
        }
    } else {
        h.requests_hash.reset();
    }
}

Generator::Produced Generator::next(Bytes& out) {
    assert(!done());
    if (number_ > 0) build(number_);  // header 0 was built by the constructor
    const size_t start = out.size();
    // Grow geometrically: encode() reserves exactly, which would reallocate on every append. An upper
    // bound instead of encoded_length() saves sizing the header twice.
    if (out.capacity() - start < kMaxHeaderLength) out.reserve(std::max(2 * out.capacity(), start + kMaxHeaderLength));
    encode(out, header_);

    Produced p;
    p.hash = header_hash(ByteView{out}.subspan(start));
    total_difficulty_ += header_.difficulty;
    p.total_difficulty = total_difficulty_;
    p.number = header_.number;
    p.timestamp = header_.timestamp;
    header_.parent_hash = p.hash;
    ++number_;
    return p;
}

}  // namespace headerd::synthetic
