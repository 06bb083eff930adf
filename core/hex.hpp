#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/bytes.hpp"

namespace headerd {

// Lower-case hex without a prefix.
std::string to_hex(ByteView b);
// "0x" + to_hex(b).
std::string to_hex0x(ByteView b);
// Accepts an optional "0x"/"0X" prefix; returns nullopt on odd length or a non-hex digit.
std::optional<Bytes> from_hex(std::string_view s);
// Exactly 32 bytes of hex (prefix optional).
std::optional<Hash32> hash_from_hex(std::string_view s);

}  // namespace headerd
