// Counts heap allocations in the rlpx test binary, for tests that assert a path allocates
// nothing. Kept in its own translation unit so the compiler cannot inline the replaced
// operators into their callers (GCC then misreports new/free pairs as mismatched).

#include <openssl/crypto.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "p2p/rlpx/test_util.hpp"

namespace {

std::atomic<size_t> g_allocations{0};

void* counting_malloc(size_t n, const char*, int) {
    ++g_allocations;
    return std::malloc(n);
}
void* counting_realloc(void* p, size_t n, const char*, int) {
    ++g_allocations;
    return std::realloc(p, n);
}
void counting_free(void* p, const char*, int) { std::free(p); }

// OpenSSL accepts the hooks only before its first allocation; static initialization of the test
// binary runs before any test touches OpenSSL.
const bool g_openssl_hooked = CRYPTO_set_mem_functions(counting_malloc, counting_realloc, counting_free) == 1;

}  // namespace

void* operator new(size_t n) {
    ++g_allocations;
    if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace headerd::rlpx::test {

size_t allocation_count() noexcept { return g_allocations.load(); }
bool openssl_allocations_counted() noexcept { return g_openssl_hooked; }

}  // namespace headerd::rlpx::test
