// Replaces the global operator new so that a test can count the heap allocations a call makes on
// its thread (serve_test.cpp). Kept in its own file so the compiler never sees a replaced new and
// the matching free inlined together.

#include <cstddef>
#include <cstdlib>
#include <new>

namespace headerd::testing {
thread_local bool g_counting = false;
thread_local size_t g_allocations = 0;
}  // namespace headerd::testing

void* operator new(size_t n) {
    if (headerd::testing::g_counting) ++headerd::testing::g_allocations;
    if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
