#pragma once

// Helpers for the rlpx unit tests. Test-only header.

#include <gtest/gtest.h>

#include <cctype>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/bytes.hpp"
#include "core/hex.hpp"
#include "core/test_hex.hpp"
#include "p2p/rlpx/secp256k1.hpp"

namespace headerd::rlpx::test {

using headerd::test::hex;

inline Hash32 hash(std::string_view s) {
    const Bytes b = hex(s);
    if (b.size() != 32) throw std::invalid_argument("test vector is not 32 bytes");
    Hash32 h;
    std::copy(b.begin(), b.end(), h.begin());
    return h;
}

inline PrivateKey private_key(std::string_view s) { return PrivateKey::from_bytes(hex(s)).value(); }
inline PublicKey public_key(std::string_view s) { return PublicKey::from_bytes(hex(s)).value(); }

inline std::string to_hex(ByteView b) { return headerd::to_hex(b); }

// Heap allocations so far in this test binary (operator new, and OpenSSL's allocator when
// openssl_allocations_counted()). Defined in allocation_counter_test.cpp.
size_t allocation_count() noexcept;
bool openssl_allocations_counted() noexcept;

}  // namespace headerd::rlpx::test
