#pragma once

#include <boost/multiprecision/cpp_int.hpp>

namespace headerd {

// Difficulty and total difficulty exceed 64 bits on mainnet (TD is about 5.9e22).
using U256 = boost::multiprecision::uint256_t;

}  // namespace headerd
