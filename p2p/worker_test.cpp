// Worker and WorkerPool: one thread per worker running its own io_context, round-robin placement
// from any thread, worker-owned state used on its own thread, and a release that lets each worker
// finish what it runs before its thread ends.

#include "p2p/worker.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <future>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "tests/test_util.hpp"

namespace headerd::p2p {
namespace {

using namespace std::chrono_literals;

TEST(WorkerPool, SizeAndIndices) {
    EXPECT_GE(WorkerPool::default_size(), 1u);
    WorkerPool automatic(0);
    EXPECT_EQ(automatic.size(), WorkerPool::default_size());
    WorkerPool three(3);
    ASSERT_EQ(three.size(), 3u);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(three[i].index(), i);
}

TEST(WorkerPool, NextIsRoundRobin) {
    WorkerPool pool(3);
    std::vector<size_t> order;
    for (int i = 0; i < 7; ++i) order.push_back(pool.next().index());
    EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 0, 1, 2, 0}));
}

// Connections from many threads at once (the acceptor's and any other) still spread evenly.
TEST(WorkerPool, NextSpreadsEvenlyFromManyThreads) {
    testing::HangGuard guard("NextSpreadsEvenlyFromManyThreads", 60s);
    WorkerPool pool(3);
    constexpr int kThreads = 4;
    constexpr int kCalls = 3000;
    std::vector<std::atomic<int>> picked(3);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < kCalls; ++i) ++picked[pool.next().index()];
        });
    }
    for (auto& th : threads) th.join();
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(picked[i].load(), kThreads * kCalls / 3) << "worker " << i;
}

// Work posted to a worker runs on that worker's own thread (one thread per worker), where its
// buffers may be used; elsewhere it is not "this thread".
TEST(WorkerPool, EachWorkerRunsItsOwnThread) {
    testing::HangGuard guard("EachWorkerRunsItsOwnThread", 60s);
    WorkerPool pool(3);
    pool.start();
    std::vector<std::thread::id> ids(3);
    std::vector<bool> inside(3, false);
    std::vector<bool> others_inside(3, true);
    for (size_t i = 0; i < 3; ++i) {
        std::promise<void> done;
        boost::asio::post(pool[i].io(), [&, i] {
            ids[i] = std::this_thread::get_id();
            inside[i] = pool[i].in_this_thread();
            others_inside[i] = pool[(i + 1) % 3].in_this_thread();
            // Worker-owned state is usable here (asserted in debug builds).
            pool[i].write_buffers().encoded.assign(10, 0xab);
            pool[i].reply().assign(5, 0xcd);
            done.set_value();
        });
        ASSERT_EQ(done.get_future().wait_for(10s), std::future_status::ready) << "worker " << i << " ran nothing";
    }
    EXPECT_EQ(std::set<std::thread::id>(ids.begin(), ids.end()).size(), 3u);
    EXPECT_NE(ids[0], std::this_thread::get_id());
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_TRUE(inside[i]) << i;
        EXPECT_FALSE(others_inside[i]) << i;
        EXPECT_FALSE(pool[i].in_this_thread()) << "the test thread is no worker";
    }
    pool.release();
    pool.join();
}

// A started worker waits for work until released; after release() its thread ends only once the
// coroutines it runs (sessions) are done, so join() never cuts one short.
TEST(WorkerPool, ReleaseLetsRunningWorkFinish) {
    testing::HangGuard guard("ReleaseLetsRunningWorkFinish", 60s);
    WorkerPool pool(2);
    pool.start();
    // Idle but not released: still there, and still takes work.
    std::this_thread::sleep_for(50ms);
    std::atomic<int> finished{0};
    for (size_t i = 0; i < 2; ++i) {
        boost::asio::co_spawn(
            pool[i].io(),
            [&finished, &pool, i]() -> boost::asio::awaitable<void> {
                boost::asio::steady_timer wait(pool[i].io(), 300ms);
                co_await wait.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
                ++finished;
            },
            boost::asio::detached);
    }
    const auto start = std::chrono::steady_clock::now();
    pool.release();
    pool.join();
    EXPECT_EQ(finished.load(), 2) << "join() returned before the workers' coroutines finished";
    EXPECT_GE(std::chrono::steady_clock::now() - start, 250ms);
}

TEST(WorkerPool, ReleasedIdleWorkersJoinAtOnceAndTheDestructorJoins) {
    testing::HangGuard guard("ReleasedIdleWorkersJoinAtOnceAndTheDestructorJoins", 60s);
    {
        WorkerPool pool(4);
        pool.start();
        const auto start = std::chrono::steady_clock::now();
        pool.release();
        pool.join();
        EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    }
    std::atomic<bool> ran{false};
    {
        WorkerPool pool(2);
        pool.start();
        boost::asio::post(pool[1].io(), [&] {
            std::this_thread::sleep_for(100ms);
            ran = true;
        });
        // Destroyed while running: the destructor releases and joins.
    }
    EXPECT_TRUE(ran.load());
}

}  // namespace
}  // namespace headerd::p2p
