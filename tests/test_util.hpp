#pragma once

// Helpers shared by the p2p session tests (p2p/*_test.cpp and tests/p2p_session_test.cpp): a hang
// guard that aborts a test which overran, a synchronous runner for one coroutine under a time
// limit, the identity a chainless client presents, and a check of headers against the published
// mainnet headers and hashes of tests/data.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "core/block_header.hpp"
#include "core/bytes.hpp"
#include "core/chain_config.hpp"
#include "db/chain_db.hpp"
#include "p2p/peer.hpp"
#include "p2p/wire/base_protocol.hpp"
#include "tests/reference_chain.hpp"

namespace headerd::testing {

// Aborts the process when not disarmed (destroyed) within `limit`: a hung test must fail loudly
// and at once, not stall CI until its global timeout.
class HangGuard {
  public:
    HangGuard(std::string what, std::chrono::steady_clock::duration limit)
        : thread_([what = std::move(what), limit, this](std::stop_token stop) {
              std::unique_lock lock(mutex_);
              if (cv_.wait_for(lock, stop, limit, [] { return false; }) || stop.stop_requested()) return;
              std::fprintf(stderr, "hang guard: %s overran its %.0f s, aborting\n", what.c_str(),
                           std::chrono::duration<double>(limit).count());
              std::abort();
          }) {}
    HangGuard(const HangGuard&) = delete;
    HangGuard& operator=(const HangGuard&) = delete;
    ~HangGuard() {
        thread_.request_stop();
        thread_.join();
    }

  private:
    std::mutex mutex_;
    std::condition_variable_any cv_;
    std::jthread thread_;  // last: started once the mutex and condition exist
};

// Runs `io` until `task` is done (other coroutines on `io` stay suspended where they are) and
// returns its value or rethrows its exception. Throws std::runtime_error when `limit` passes first.
template <class T>
T run_task(boost::asio::io_context& io, boost::asio::awaitable<T> task,
           std::chrono::steady_clock::duration limit = std::chrono::seconds(20)) {
    std::optional<T> value;
    std::exception_ptr error;
    bool done = false;
    boost::asio::co_spawn(io, std::move(task), [&](std::exception_ptr e, T v) {
        done = true;
        error = e;
        if (!e) value.emplace(std::move(v));
    });
    const auto until = std::chrono::steady_clock::now() + limit;
    io.restart();
    while (!done && std::chrono::steady_clock::now() < until) {
        if (io.run_one_until(until) == 0 && io.stopped()) break;
    }
    if (!done) throw std::runtime_error("task still running after its time limit");
    if (error) std::rethrow_exception(error);
    return std::move(*value);
}

inline void run_task(boost::asio::io_context& io, boost::asio::awaitable<void> task,
                     std::chrono::steady_clock::duration limit = std::chrono::seconds(20)) {
    auto wrapped = [](boost::asio::awaitable<void> t) -> boost::asio::awaitable<bool> {
        co_await std::move(t);
        co_return true;
    };
    run_task<bool>(io, wrapped(std::move(task)), limit);
}

// Runs what is left on `io` (sessions ending, goodbyes) until it runs out of work; false if work
// was still left after `limit`.
inline bool drain(boost::asio::io_context& io, std::chrono::steady_clock::duration limit = std::chrono::seconds(10)) {
    io.restart();
    io.run_for(limit);
    return io.stopped();
}

// Runs `io` until `done()` holds; false if `limit` passed first. `done` may depend on other
// threads (a server's counters): it is checked at least every 10 ms, also when `io` has no work.
template <class Predicate>
bool run_until(boost::asio::io_context& io, Predicate done,
               std::chrono::steady_clock::duration limit = std::chrono::seconds(10)) {
    const auto until = std::chrono::steady_clock::now() + limit;
    for (;;) {
        if (done()) return true;
        const auto now = std::chrono::steady_clock::now();
        if (now >= until) return false;
        if (io.stopped()) io.restart();
        const auto slice = std::min<std::chrono::steady_clock::duration>(until - now, std::chrono::milliseconds(10));
        if (io.run_one_for(slice) == 0 && io.stopped()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

// The mainnet genesis as the head of a node without a chain (what `headerd get` presents).
inline db::Head genesis_head() {
    const ChainConfig& config = mainnet_config();
    return db::Head{0, config.genesis_hash, U256(17'179'869'184u), 0};
}

// A chainless mainnet node with `key` offering `offers`.
inline p2p::LocalNode chainless_node(const rlpx::PrivateKey& key, std::string client_id,
                                     std::span<const p2p::ProtocolOffer> offers = p2p::kEthOffers) {
    p2p::LocalNode local;
    local.key = &key;
    local.client_id = std::move(client_id);
    local.config = &mainnet_config();
    local.head = genesis_head();
    local.offers = offers;
    return local;
}

// Whether `headers` are blocks first, first + step, ... of the reference chain: byte-exact and
// with the published hash (the first mismatch named).
inline ::testing::AssertionResult are_blocks(const std::vector<ByteView>& headers, uint64_t first, uint64_t count,
                                             int64_t step = 1) {
    const ReferenceChain& chain = reference_chain();
    if (headers.size() != count) {
        return ::testing::AssertionFailure() << headers.size() << " headers instead of " << count;
    }
    for (uint64_t i = 0; i < count; ++i) {
        const uint64_t number = first + static_cast<uint64_t>(step * static_cast<int64_t>(i));
        if (number >= chain.headers.size()) return ::testing::AssertionFailure() << "block " << number << " unknown";
        if (header_hash(headers[i]) != chain.hashes[number]) {
            return ::testing::AssertionFailure() << "header " << i << " does not hash to block " << number;
        }
        const ByteView want = chain.headers[number];
        if (!std::equal(headers[i].begin(), headers[i].end(), want.begin(), want.end())) {
            return ::testing::AssertionFailure() << "header " << i << " differs from block " << number << "'s RLP";
        }
    }
    return ::testing::AssertionSuccess();
}

}  // namespace headerd::testing
