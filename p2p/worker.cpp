#include "p2p/worker.hpp"

#include <sched.h>

#include <spdlog/spdlog.h>

namespace headerd::p2p {

Worker::Worker(size_t index) : index_(index), io_(1) {}

Worker::~Worker() {
    release();
    join();
}

void Worker::start() {
    guard_.emplace(io_.get_executor());
    thread_ = std::thread([this] {
        try {
            io_.run();
        } catch (const std::exception& e) {
            // Every coroutine catches its own errors; reaching this is a bug worth a loud line.
            spdlog::critical("Worker stopped by an exception            worker={} err=\"{}\"", index_, e.what());
        }
    });
}

void Worker::release() noexcept {
    if (guard_) guard_->reset();
}

void Worker::join() {
    if (thread_.joinable()) thread_.join();
}

WorkerPool::WorkerPool(size_t workers) {
    if (workers == 0) workers = default_size();
    workers_.reserve(workers);
    for (size_t i = 0; i < workers; ++i) workers_.push_back(std::make_unique<Worker>(i));
}

WorkerPool::~WorkerPool() {
    release();
    join();
}

Worker& WorkerPool::next() noexcept {
    return *workers_[next_.fetch_add(1, std::memory_order_relaxed) % workers_.size()];
}

void WorkerPool::start() {
    for (auto& w : workers_) w->start();
}

void WorkerPool::release() noexcept {
    for (auto& w : workers_) w->release();
}

void WorkerPool::join() {
    for (auto& w : workers_) w->join();
}

size_t WorkerPool::default_size() noexcept {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) return static_cast<size_t>(n);
    }
    const unsigned n = std::thread::hardware_concurrency();
    return n > 0 ? n : 1;
}

}  // namespace headerd::p2p
