#pragma once

// Helpers of the discovery service tests (disc/v4_udp_test.cpp, disc/v5_udp_test.cpp): run an
// io_context until a condition holds or a deadline passes, and run one coroutine to its end.

#include <chrono>
#include <future>
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

namespace headerd::disc::test {

// Runs `io` in slices of `slice` until `done` holds or `deadline` passes; whether it holds.
template <class Pred>
bool run_until(boost::asio::io_context& io, Pred done, std::chrono::milliseconds deadline = std::chrono::seconds(10),
               std::chrono::milliseconds slice = std::chrono::milliseconds(20)) {
    const auto end = std::chrono::steady_clock::now() + deadline;
    while (!done() && std::chrono::steady_clock::now() < end) {
        io.run_for(slice);
        if (io.stopped()) io.restart();
    }
    return done();
}

// Runs `op` on `io` and returns its result (waits at most 10 s for it, then get() throws).
template <class T>
T run(boost::asio::io_context& io, boost::asio::awaitable<T> op) {
    auto f = boost::asio::co_spawn(io, std::move(op), boost::asio::use_future);
    run_until(io, [&] { return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready; });
    return f.get();
}

}  // namespace headerd::disc::test
