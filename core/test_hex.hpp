#pragma once

// Test vectors as hex: whitespace ignored (vectors are written wrapped and grouped), anything else
// that is not hex throws, so a typo in a vector fails its test loudly. For tests only.

#include <cctype>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/bytes.hpp"
#include "core/hex.hpp"

namespace headerd::test {

inline Bytes hex(std::string_view s) {
    std::string clean;
    for (char c : s) {
        if (!std::isspace(static_cast<unsigned char>(c))) clean.push_back(c);
    }
    auto b = from_hex(clean);
    if (!b) throw std::invalid_argument("bad hex in test vector: " + std::string(s));
    return *b;
}

}  // namespace headerd::test
