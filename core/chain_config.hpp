#pragma once

// The chain a database holds: identity (network id, genesis), the fork schedule that forkid
// (EIP-2124) is computed from, and the activations that decide each header's layout.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include "core/bytes.hpp"
#include "core/result.hpp"

namespace headerd {

struct ChainConfig {
    std::string name;  // "mainnet", "synthetic"
    uint64_t network_id{0};
    Hash32 genesis_hash{};
    uint64_t genesis_time{0};
    std::vector<uint64_t> block_forks;  // activation block numbers, ascending, as listed for forkid (0 excluded)
    std::vector<uint64_t> time_forks;   // activation timestamps, ascending
    // Header layout activations (used by generate and by verify to check field counts):
    std::optional<uint64_t> london_block;
    std::optional<uint64_t> shanghai_time;
    std::optional<uint64_t> cancun_time;
    std::optional<uint64_t> prague_time;

    // Field count of the header of block `number` with timestamp `timestamp`: 15, 16 (London),
    // 17 (Shanghai), 20 (Cancun) or 21 (Prague). The latest activated layout wins.
    size_t expected_field_count(uint64_t number, uint64_t timestamp) const noexcept;

    bool operator==(const ChainConfig&) const = default;
};

// Network 1, genesis d4e5...8fa3 with timestamp 0, the block and time forks geth lists for
// mainnet (through BPO2), and the layout activations London 12965000, Shanghai 1681338455,
// Cancun 1710338135, Prague 1746612311.
const ChainConfig& mainnet_config();

// Network 11155111, genesis 25a5...6dd9 with timestamp 1633267481, every block fork through London
// at genesis, MergeNetsplit at block 1735371, and geth's time forks for Sepolia (Shanghai
// 1677557088 through BPO2 1761607008).
const ChainConfig& sepolia_config();

// The config of a public network by name ("mainnet", "sepolia"); nullptr for another name.
const ChainConfig* named_config(std::string_view name) noexcept;

inline constexpr uint64_t kSyntheticNetworkId = 1337803;

// The preset used by `headerd generate`: network id 1337803 (name "synthetic"), and forks switched
// at fixed fractions of a `count`-header chain whose block i has timestamp genesis_time + 12*i:
// London at block count/5, Shanghai at the time of block 2*count/5, Cancun of 3*count/5, Prague of
// 4*count/5. block_forks = {london}, time_forks = {shanghai, cancun, prague}, leaving out forks at
// genesis (block 0, time <= genesis_time) and duplicates, so the lists are what forkid counts.
ChainConfig synthetic_config(uint64_t count, const Hash32& genesis_hash, uint64_t genesis_time);

// Why a stored chain config failed to decode. Malformed RLP is reported with rlp::DecodeError.
enum class ChainConfigError {
    kUnsupportedVersion = 1,  // an encoding version this build does not know
    kMissingField,            // fewer fields than the version has
    kExtraField,              // more fields than the version has
    kBadOptional,             // an optional activation that is not [] or [value]
    kForksNotAscending,       // a fork list not strictly ascending, or a block fork at 0
};

const std::error_category& chain_config_category() noexcept;
std::error_code make_error_code(ChainConfigError e) noexcept;

// Stored in the database's metadata, version 1:
//   [1, name, network_id, genesis_hash, genesis_time, [block_forks...], [time_forks...],
//    london_block?, shanghai_time?, cancun_time?, prague_time?]
// where each optional activation is [] when unset and [value] when set.
inline constexpr uint64_t kChainConfigVersion = 1;
void encode(Bytes& out, const ChainConfig& c);
// Exactly one config list, nothing after it.
Result<ChainConfig> decode_chain_config(ByteView rlp) noexcept;

}  // namespace headerd

template <>
struct std::is_error_code_enum<headerd::ChainConfigError> : std::true_type {};
