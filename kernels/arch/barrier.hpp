// CTA barriers: __syncthreads, named barriers (bar.sync / bar.arrive) and the async-proxy fence.
// Semantics: PTX ISA 9.0 §9.7.13.1 (PTX_FACTS.md §10); host versions in kernels/emu.
#pragma once

#include "kernels/arch/platform.hpp"
#if !FP8ATTN_DEVICE_BUILD
#include "kernels/emu/primitives.hpp"
#endif

namespace fp8attn::arch {

// All threads of the CTA, barrier 0. NOTE: __syncthreads is bar.sync 0 (CUTLASS
// include/cutlass/arch/barrier.h reserves id 0 for it), so named barriers use ids 1..15.
FP8ATTN_ARCH_FN void syncthreads() {
#if FP8ATTN_DEVICE_BUILD
  __syncthreads();
#else
  emu::barrier_sync(0, 0);
#endif
}

// bar.sync id, thread_count: waits until thread_count threads (a multiple of 32) arrived on
// barrier `id`; prior shared memory accesses of all participants are then visible to the caller.
FP8ATTN_ARCH_FN void named_barrier_sync(unsigned id, unsigned thread_count) {
#if FP8ATTN_DEVICE_BUILD
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(thread_count) : "memory");
#else
  emu::barrier_sync(id, thread_count);
#endif
}

// bar.arrive id, thread_count: counts the caller toward the barrier without waiting (the
// producer side of a producer/consumer pair whose consumers use named_barrier_sync).
FP8ATTN_ARCH_FN void named_barrier_arrive(unsigned id, unsigned thread_count) {
#if FP8ATTN_DEVICE_BUILD
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(thread_count) : "memory");
#else
  emu::barrier_arrive(id, thread_count);
#endif
}

// fence.proxy.async.shared::cta: makes the caller's generic-proxy shared memory writes visible
// to its later async-proxy operations (TMA store, wgmma operand reads): the proxy fence of the
// membar/fence instruction, PTX ISA 9.0.
FP8ATTN_ARCH_FN void fence_proxy_async_shared_cta() {
#if FP8ATTN_DEVICE_BUILD
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#else
  emu::fence_proxy_async_shared_cta();
#endif
}

}  // namespace fp8attn::arch
