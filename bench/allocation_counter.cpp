// Replaced global operator new (every form) and OpenSSL allocator hooks that count the allocations
// of threads that switched counting on (bench/allocation_counter.hpp). In its own translation unit
// so the compiler cannot inline the replaced operators into their callers.

#include "bench/allocation_counter.hpp"

#include <openssl/crypto.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<uint64_t> g_allocations{0};
thread_local bool t_count = false;

void note() noexcept {
    if (t_count) g_allocations.fetch_add(1, std::memory_order_relaxed);
}

void* allocate(std::size_t size) {
    note();
    if (size == 0) size = 1;
    for (;;) {
        if (void* p = std::malloc(size)) return p;
        std::new_handler handler = std::get_new_handler();
        if (handler == nullptr) throw std::bad_alloc();
        handler();
    }
}

void* allocate_aligned(std::size_t size, std::align_val_t align) {
    note();
    if (size == 0) size = 1;
    const std::size_t alignment = std::max(static_cast<std::size_t>(align), sizeof(void*));
    for (;;) {
        void* p = nullptr;
        if (::posix_memalign(&p, alignment, size) == 0) return p;
        std::new_handler handler = std::get_new_handler();
        if (handler == nullptr) throw std::bad_alloc();
        handler();
    }
}

void* openssl_malloc(size_t n, const char*, int) {
    note();
    return std::malloc(n);
}
void* openssl_realloc(void* p, size_t n, const char*, int) {
    note();
    return std::realloc(p, n);
}
void openssl_free(void* p, const char*, int) { std::free(p); }

// OpenSSL accepts the hooks only before its first allocation; static initialization runs before
// main() and before any benchmark touches OpenSSL.
const bool g_openssl_hooked = CRYPTO_set_mem_functions(openssl_malloc, openssl_realloc, openssl_free) == 1;

}  // namespace

namespace headerd::bench {

uint64_t allocation_count() noexcept { return g_allocations.load(std::memory_order_relaxed); }
void count_allocations(bool on) noexcept { t_count = on; }
bool openssl_allocations_counted() noexcept { return g_openssl_hooked; }

}  // namespace headerd::bench

void* operator new(std::size_t size) { return allocate(size); }
void* operator new[](std::size_t size) { return allocate(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    try {
        return allocate(size);
    } catch (...) {
        return nullptr;
    }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
    try {
        return allocate(size);
    } catch (...) {
        return nullptr;
    }
}
void* operator new(std::size_t size, std::align_val_t align) { return allocate_aligned(size, align); }
void* operator new[](std::size_t size, std::align_val_t align) { return allocate_aligned(size, align); }
void* operator new(std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
    try {
        return allocate_aligned(size, align);
    } catch (...) {
        return nullptr;
    }
}
void* operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
    try {
        return allocate_aligned(size, align);
    } catch (...) {
        return nullptr;
    }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
