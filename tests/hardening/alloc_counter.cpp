// A heap-allocation counter for the hardening tests: every operator new of the process (the
// library's included, through symbol interposition) is counted while counting is on.
#include "tests/hardening/alloc_counter.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<bool> g_counting{false};
std::atomic<uint64_t> g_count{0};
std::atomic<uint64_t> g_bytes{0};

void* counted(size_t n, size_t align) {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_count.fetch_add(1, std::memory_order_relaxed);
    g_bytes.fetch_add(n, std::memory_order_relaxed);
  }
  if (n == 0) n = 1;
  void* p =
      align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align) : std::malloc(n);
  return p;
}
}  // namespace

namespace fp8attn::test {
void start_counting_allocations() {
  g_count = 0;
  g_bytes = 0;
  g_counting = true;
}
AllocationCount stop_counting_allocations() {
  g_counting = false;
  return {g_count.load(), g_bytes.load()};
}
}  // namespace fp8attn::test

void* operator new(size_t n) {
  void* p = counted(n, 0);
  if (!p) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return counted(n, 0); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return counted(n, 0); }
void* operator new(size_t n, std::align_val_t a) {
  void* p = counted(n, static_cast<size_t>(a));
  if (!p) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }
