#include "core/chain_config.hpp"

#include <limits>
#include <string>

#include "core/rlp.hpp"

namespace headerd {
namespace {

class ChainConfigCategory final : public std::error_category {
  public:
    const char* name() const noexcept override { return "chain_config"; }
    std::string message(int ev) const override {
        switch (static_cast<ChainConfigError>(ev)) {
            case ChainConfigError::kUnsupportedVersion:
                return "unsupported chain config version";
            case ChainConfigError::kMissingField:
                return "chain config has too few fields";
            case ChainConfigError::kExtraField:
                return "chain config has too many fields";
            case ChainConfigError::kBadOptional:
                return "chain config activation is neither [] nor [value]";
            case ChainConfigError::kForksNotAscending:
                return "chain config fork list not strictly ascending";
        }
        return "unknown chain config error";
    }
};

constexpr Hash32 kMainnetGenesisHash = {
    0xd4, 0xe5, 0x67, 0x40, 0xf8, 0x76, 0xae, 0xf8, 0xc0, 0x10, 0xb8, 0x6a, 0x40, 0xd5, 0xf5, 0x67,
    0x45, 0xa1, 0x18, 0xd0, 0x90, 0x6a, 0x34, 0xe6, 0x9a, 0xec, 0x8c, 0x0d, 0xb1, 0xcb, 0x8f, 0xa3,
};

constexpr Hash32 kSepoliaGenesisHash = {
    0x25, 0xa5, 0xcc, 0x10, 0x6e, 0xea, 0x71, 0x38, 0xac, 0xab, 0x33, 0x23, 0x1d, 0x71, 0x60, 0xd6,
    0x9c, 0xb7, 0x77, 0xee, 0x0c, 0x2c, 0x55, 0x3f, 0xcd, 0xdf, 0x51, 0x38, 0x99, 0x3e, 0x6d, 0xd9,
};

uint64_t saturating_add(uint64_t a, uint64_t b) noexcept {
    return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max() : a + b;
}

uint64_t saturating_mul(uint64_t a, uint64_t b) noexcept {
    if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) return std::numeric_limits<uint64_t>::max();
    return a * b;
}

// floor(count * k / 5) for k <= 5, without overflowing.
uint64_t fifths(uint64_t count, uint64_t k) noexcept { return count / 5 * k + count % 5 * k / 5; }

// ---- RLP helpers ------------------------------------------------------------------------------

size_t forks_payload_length(const std::vector<uint64_t>& forks) noexcept {
    size_t n = 0;
    for (uint64_t f : forks) n += rlp::length(f);
    return n;
}

size_t optional_length(const std::optional<uint64_t>& v) noexcept {
    return rlp::length_of_list(v ? rlp::length(*v) : 0);
}

void encode_forks(Bytes& out, const std::vector<uint64_t>& forks) {
    rlp::encode_header(out, {true, forks_payload_length(forks)});
    for (uint64_t f : forks) rlp::encode(out, f);
}

void encode_optional(Bytes& out, const std::optional<uint64_t>& v) {
    rlp::encode_header(out, {true, v ? rlp::length(*v) : 0});
    if (v) rlp::encode(out, *v);
}

size_t payload_length(const ChainConfig& c) noexcept {
    return rlp::length(kChainConfigVersion) + rlp::length(as_bytes(c.name)) + rlp::length(c.network_id) +
           rlp::length(ByteView{c.genesis_hash}) + rlp::length(c.genesis_time) +
           rlp::length_of_list(forks_payload_length(c.block_forks)) +
           rlp::length_of_list(forks_payload_length(c.time_forks)) + optional_length(c.london_block) +
           optional_length(c.shanghai_time) + optional_length(c.cancun_time) + optional_length(c.prague_time);
}

// Decodes a list of strictly ascending integers; `min_exclusive` bounds the first one from below
// (block forks may not be 0).
std::error_code decode_forks(ByteView& in, std::vector<uint64_t>& out, std::optional<uint64_t> min_exclusive) {
    if (in.empty()) return ChainConfigError::kMissingField;
    auto payload = rlp::decode_list(in);
    if (!payload) return payload.error();
    ByteView items = *payload;
    std::optional<uint64_t> prev = min_exclusive;
    while (!items.empty()) {
        auto v = rlp::decode_uint64(items);
        if (!v) return v.error();
        if (prev && *v <= *prev) return ChainConfigError::kForksNotAscending;
        prev = *v;
        out.push_back(*v);
    }
    return {};
}

std::error_code decode_optional(ByteView& in, std::optional<uint64_t>& out) noexcept {
    if (in.empty()) return ChainConfigError::kMissingField;
    auto payload = rlp::decode_list(in);
    if (!payload) return payload.error();
    ByteView items = *payload;
    if (items.empty()) {
        out.reset();
        return {};
    }
    auto v = rlp::decode_uint64(items);
    if (!v) return v.error();
    if (!items.empty()) return ChainConfigError::kBadOptional;
    out = *v;
    return {};
}

std::error_code decode_u64_field(ByteView& in, uint64_t& out) noexcept {
    if (in.empty()) return ChainConfigError::kMissingField;
    auto v = rlp::decode_uint64(in);
    if (!v) return v.error();
    out = *v;
    return {};
}

}  // namespace

size_t ChainConfig::expected_field_count(uint64_t number, uint64_t timestamp) const noexcept {
    if (prague_time && timestamp >= *prague_time) return 21;
    if (cancun_time && timestamp >= *cancun_time) return 20;
    if (shanghai_time && timestamp >= *shanghai_time) return 17;
    if (london_block && number >= *london_block) return 16;
    return 15;
}

const ChainConfig& mainnet_config() {
    static const ChainConfig config = [] {
        ChainConfig c;
        c.name = "mainnet";
        c.network_id = 1;
        c.genesis_hash = kMainnetGenesisHash;
        c.genesis_time = 0;
        // Every activation geth's forkid counts (spec/rlpx-eth-notes.md 9.2), including forks that
        // changed no header field.
        c.block_forks = {
            1150000,   // Homestead
            1920000,   // DAO
            2463000,   // Tangerine Whistle (EIP-150)
            2675000,   // Spurious Dragon (EIP-155, EIP-158)
            4370000,   // Byzantium
            7280000,   // Constantinople and Petersburg
            9069000,   // Istanbul
            9200000,   // Muir Glacier
            12244000,  // Berlin
            12965000,  // London
            13773000,  // Arrow Glacier
            15050000,  // Gray Glacier
        };
        c.time_forks = {
            1681338455,  // Shanghai
            1710338135,  // Cancun
            1746612311,  // Prague
            1764798551,  // Osaka
            1765290071,  // BPO1
            1767747671,  // BPO2
        };
        c.london_block = 12965000;
        c.shanghai_time = 1681338455;
        c.cancun_time = 1710338135;
        c.prague_time = 1746612311;
        return c;
    }();
    return config;
}

const ChainConfig& sepolia_config() {
    static const ChainConfig config = [] {
        ChainConfig c;
        c.name = "sepolia";
        c.network_id = 11155111;
        c.genesis_hash = kSepoliaGenesisHash;
        c.genesis_time = 1633267481;
        // Every block fork up to London is at genesis; forkid counts none of them.
        c.block_forks = {1735371};  // MergeNetsplit
        c.time_forks = {
            1677557088,  // Shanghai
            1706655072,  // Cancun
            1741159776,  // Prague
            1760427360,  // Osaka
            1761017184,  // BPO1
            1761607008,  // BPO2
        };
        c.london_block = 0;
        c.shanghai_time = 1677557088;
        c.cancun_time = 1706655072;
        c.prague_time = 1741159776;
        return c;
    }();
    return config;
}

const ChainConfig* named_config(std::string_view name) noexcept {
    if (name == "mainnet") return &mainnet_config();
    if (name == "sepolia") return &sepolia_config();
    return nullptr;
}

ChainConfig synthetic_config(uint64_t count, const Hash32& genesis_hash, uint64_t genesis_time) {
    ChainConfig c;
    c.name = "synthetic";
    c.network_id = kSyntheticNetworkId;
    c.genesis_hash = genesis_hash;
    c.genesis_time = genesis_time;
    const auto time_of = [&](uint64_t block) { return saturating_add(genesis_time, saturating_mul(12, block)); };
    c.london_block = fifths(count, 1);
    c.shanghai_time = time_of(fifths(count, 2));
    c.cancun_time = time_of(fifths(count, 3));
    c.prague_time = time_of(fifths(count, 4));
    if (*c.london_block > 0) c.block_forks.push_back(*c.london_block);
    for (uint64_t t : {*c.shanghai_time, *c.cancun_time, *c.prague_time}) {
        const uint64_t last = c.time_forks.empty() ? genesis_time : c.time_forks.back();
        if (t > last) c.time_forks.push_back(t);
    }
    return c;
}

const std::error_category& chain_config_category() noexcept {
    static const ChainConfigCategory category;
    return category;
}

std::error_code make_error_code(ChainConfigError e) noexcept { return {static_cast<int>(e), chain_config_category()}; }

void encode(Bytes& out, const ChainConfig& c) {
    const size_t payload = payload_length(c);
    out.reserve(out.size() + rlp::length_of_list(payload));
    rlp::encode_header(out, {true, payload});
    rlp::encode(out, kChainConfigVersion);
    rlp::encode(out, as_bytes(c.name));
    rlp::encode(out, c.network_id);
    rlp::encode(out, c.genesis_hash);
    rlp::encode(out, c.genesis_time);
    encode_forks(out, c.block_forks);
    encode_forks(out, c.time_forks);
    encode_optional(out, c.london_block);
    encode_optional(out, c.shanghai_time);
    encode_optional(out, c.cancun_time);
    encode_optional(out, c.prague_time);
}

Result<ChainConfig> decode_chain_config(ByteView rlp) noexcept {
    auto payload = rlp::decode_list(rlp);
    if (!payload) return payload.error();
    if (!rlp.empty()) return rlp::DecodeError::kTrailingBytes;
    ByteView in = *payload;

    uint64_t version = 0;
    if (auto ec = decode_u64_field(in, version)) return ec;
    if (version != kChainConfigVersion) return ChainConfigError::kUnsupportedVersion;

    ChainConfig c;
    if (in.empty()) return ChainConfigError::kMissingField;
    auto name = rlp::decode_string(in);
    if (!name) return name.error();
    c.name.assign(as_chars(*name));
    if (auto ec = decode_u64_field(in, c.network_id)) return ec;
    if (in.empty()) return ChainConfigError::kMissingField;
    auto genesis = rlp::decode_hash(in);
    if (!genesis) return genesis.error();
    c.genesis_hash = *genesis;
    if (auto ec = decode_u64_field(in, c.genesis_time)) return ec;
    if (auto ec = decode_forks(in, c.block_forks, uint64_t{0})) return ec;
    if (auto ec = decode_forks(in, c.time_forks, std::nullopt)) return ec;
    if (auto ec = decode_optional(in, c.london_block)) return ec;
    if (auto ec = decode_optional(in, c.shanghai_time)) return ec;
    if (auto ec = decode_optional(in, c.cancun_time)) return ec;
    if (auto ec = decode_optional(in, c.prague_time)) return ec;
    if (!in.empty()) return ChainConfigError::kExtraField;
    return c;
}

}  // namespace headerd
