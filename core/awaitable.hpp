#pragma once

// The completion token every coroutine here awaits with: `co_await op(..., kTuple)` returns the
// error code (and the result) as a tuple instead of throwing, so a closed or reset socket is an
// ordinary return path.

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace headerd {

inline constexpr auto kTuple = boost::asio::as_tuple(boost::asio::use_awaitable);

}  // namespace headerd
