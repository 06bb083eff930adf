#pragma once

// Heap allocation counting for benchmark programs that link bench/allocation_counter.cpp: every form
// of global operator new is replaced there, and OpenSSL's allocator is hooked
// (CRYPTO_set_mem_functions, before OpenSSL's first allocation), so both C++ and OpenSSL
// allocations made by a thread while it counts are seen. malloc called directly by other C code
// (snappy's C API is not used; LevelDB allocates through operator new) is not counted.

#include <cstdint>

namespace headerd::bench {

// Allocations counted so far (every thread that had counting on).
uint64_t allocation_count() noexcept;
// Turns counting on or off for the calling thread only, so background threads and the benchmark
// library stay out of a figure.
void count_allocations(bool on) noexcept;
// Whether OpenSSL accepted the hooks (it refuses once it has allocated).
bool openssl_allocations_counted() noexcept;

// Counts this thread's allocations while alive; pause() / resume() around untimed work.
class AllocationScope {
  public:
    AllocationScope() noexcept : start_(allocation_count()) { count_allocations(true); }
    ~AllocationScope() { count_allocations(false); }
    AllocationScope(const AllocationScope&) = delete;
    AllocationScope& operator=(const AllocationScope&) = delete;

    void pause() noexcept {
        count_allocations(false);
        paused_at_ = allocation_count();
    }
    void resume() noexcept {
        excluded_ += allocation_count() - paused_at_;  // other threads' counted allocations, if any
        count_allocations(true);
    }
    // Allocations since construction, outside pauses; stops counting.
    uint64_t stop() noexcept {
        count_allocations(false);
        return allocation_count() - start_ - excluded_;
    }

  private:
    uint64_t start_;
    uint64_t paused_at_{0};
    uint64_t excluded_{0};
};

}  // namespace headerd::bench
