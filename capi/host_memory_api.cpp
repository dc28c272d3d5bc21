// fp8attn_host_alloc and fp8attn_host_free: aligned, zero-filled host memory for hosts whose own
// memory cannot be handed to C (Go without runtime.Pinner: a Go pointer stored in the tensors of
// fp8attn_attention_args breaks cgo's pointer rules).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "capi/abi_guard.hpp"

using fp8attn::capi::guarded;
using fp8attn::require;

namespace {

// NOTE: 64 bytes is a cache line and covers every vector width the CPU engine uses (AVX-512).
constexpr size_t kDefaultAlignment = 64;
// A page: larger alignments are not a host-tensor need, and capping them keeps a typo from
// turning into a huge over-allocation.
constexpr size_t kMaxAlignment = 4096;

}  // namespace

extern "C" {

int32_t fp8attn_host_alloc(size_t bytes, size_t alignment, void** out, fp8attn_error* err) {
  return guarded(err, [&] {
    require(out != nullptr, FP8ATTN_STATUS_NULL_POINTER, "out is NULL");
    const size_t align = alignment == 0 ? kDefaultAlignment : alignment;
    require((align & (align - 1)) == 0 && align <= kMaxAlignment, FP8ATTN_STATUS_INVALID_ARGUMENT,
            "alignment must be 0 or a power of two ≤ 4096, got " + std::to_string(alignment));
    // posix_memalign wants a multiple of sizeof(void*); a zero-byte request still gets a unique
    // pointer, so that a successful call never returns NULL.
    const size_t effective = align < sizeof(void*) ? sizeof(void*) : align;
    const size_t n = bytes == 0 ? 1 : bytes;
    // NOTE: no object may exceed PTRDIFF_MAX bytes (pointer differences inside it would overflow);
    // refusing such sizes here also keeps sanitizer allocators from aborting on them.
    require(n <= static_cast<size_t>(PTRDIFF_MAX), FP8ATTN_STATUS_OUT_OF_MEMORY,
            "host allocation of " + std::to_string(bytes) + " bytes exceeds PTRDIFF_MAX");
    void* p = nullptr;
    require(posix_memalign(&p, effective, n) == 0 && p != nullptr, FP8ATTN_STATUS_OUT_OF_MEMORY,
            "host allocation of " + std::to_string(bytes) + " bytes failed");
    std::memset(p, 0, n);
    *out = p;
  });
}

void fp8attn_host_free(void* ptr) { std::free(ptr); }

}  // extern "C"
