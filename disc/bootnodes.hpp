#pragma once

// The public bootnodes and DNS node lists of the networks geth knows, as data. They are used only
// when a user names a network (`--bootnodes mainnet`); no default, test or script reaches them
// (docs/discovery.md, "Safety").

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace headerd::disc {

// geth's enode lists for "mainnet", "sepolia", "holesky" or "hoodi"; nullopt for another name.
std::optional<std::span<const std::string_view>> known_bootnodes(std::string_view network) noexcept;
// The EIP-1459 tree geth uses for that network's eth nodes (enrtree://...@all.<network>.ethdisco.net).
std::optional<std::string> known_dns_tree(std::string_view network);

}  // namespace headerd::disc
