#pragma once

// A worker is one thread running one io_context, plus everything the sessions on that thread share
// without locks: the buffers replies are built and encrypted in, and the log limiter for warnings
// peers cause. A session lives on one worker for its whole life, so nothing it touches needs a
// strand or a mutex; what is shared across workers (the database, admission, metrics) is
// thread-safe by itself. docs/architecture.md, "Threads".

#include <atomic>
#include <cassert>
#include <cstddef>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "core/bytes.hpp"
#include "core/item_buffer.hpp"
#include "p2p/connection.hpp"
#include "p2p/log_limiter.hpp"

namespace headerd::p2p {

class Worker {
  public:
    explicit Worker(size_t index);
    // Joins the thread if it is still running (after release()).
    ~Worker();
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    size_t index() const noexcept { return index_; }
    asio::io_context& io() noexcept { return io_; }
    // Starts the thread; io() runs until release() and then until its work is done.
    void start();
    // Lets io() return once nothing is left to run (sessions ended, timers gone). Any thread.
    void release() noexcept;
    void join();
    bool in_this_thread() const noexcept { return io_.get_executor().running_in_this_thread(); }

    // Worker-owned state. REQUIRES: used only from this worker's thread (asserted in debug builds).
    // Reply building (ServeContext) and encryption (Connection) are done with these buffers before
    // the first suspension of the coroutine using them, so every session of the worker shares them
    // and a served peer keeps no reply-sized buffer of its own.
    WriteBuffers& write_buffers() noexcept {
        assert(in_this_thread());
        return write_buffers_;
    }
    ItemBuffer& scratch() noexcept {
        assert(in_this_thread());
        return scratch_;
    }
    Bytes& reply() noexcept {
        assert(in_this_thread());
        return reply_;
    }
    // Peer-caused warnings: at most one per peer address per 10 s, 10 a second, per worker.
    LogLimiter& limiter() noexcept {
        assert(in_this_thread());
        return limiter_;
    }

  private:
    size_t index_;
    mutable asio::io_context io_;  // mutable: asking which thread runs it changes nothing
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard_;
    std::thread thread_;
    WriteBuffers write_buffers_;
    ItemBuffer scratch_;
    Bytes reply_;
    LogLimiter limiter_;
};

class WorkerPool {
  public:
    // `workers` threads (at least one); 0 means one per core.
    explicit WorkerPool(size_t workers);
    ~WorkerPool();

    size_t size() const noexcept { return workers_.size(); }
    Worker& operator[](size_t i) noexcept { return *workers_[i]; }
    // Round robin; any thread.
    Worker& next() noexcept;
    void start();
    // Worker::release() on every worker.
    void release() noexcept;
    void join();

    // The default worker count: the cores this process may run on (at least 1).
    static size_t default_size() noexcept;

  private:
    std::vector<std::unique_ptr<Worker>> workers_;
    std::atomic<size_t> next_{0};
};

}  // namespace headerd::p2p
