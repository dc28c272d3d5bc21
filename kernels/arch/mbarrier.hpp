// mbarrier: the CTA's transaction barriers (PTX ISA 9.0 §9.7.13.15; PTX_FACTS.md §5). The object
// is a uint64_t in dynamic shared memory, 8-byte aligned. A phase completes when its pending
// arrivals and its tx-count are both zero; waiters name the phase by its parity.
#pragma once

#include <cstdint>

#include "kernels/arch/platform.hpp"
#include "kernels/arch/shared_memory.hpp"
#if !FP8ATTN_DEVICE_BUILD
#include "kernels/emu/primitives.hpp"
#endif

namespace fp8attn::arch {

// mbarrier.init: phase 0, expected = pending = arrival_count (1..2^20-1), tx-count 0. Other threads
// may use the barrier only after a barrier (e.g. syncthreads) orders the init before their use.
FP8ATTN_ARCH_FN void mbarrier_init(uint64_t* bar, uint32_t arrival_count) {
#if FP8ATTN_DEVICE_BUILD
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_address(bar)), "r"(arrival_count)
               : "memory");
#else
  emu::mbarrier_init(bar, arrival_count);
#endif
}

// mbarrier.inval: the object may be reused for something else (or initialized again).
FP8ATTN_ARCH_FN void mbarrier_inval(uint64_t* bar) {
#if FP8ATTN_DEVICE_BUILD
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(smem_address(bar)) : "memory");
#else
  emu::mbarrier_inval(bar);
#endif
}

// mbarrier.arrive (release, CTA scope): one arrival. Returns the opaque state (on the emulator:
// the number of phases completed before this arrive).
FP8ATTN_ARCH_FN uint64_t mbarrier_arrive(uint64_t* bar) {
#if FP8ATTN_DEVICE_BUILD
  uint64_t state;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(state) : "r"(smem_address(bar))
               : "memory");
  return state;
#else
  return emu::mbarrier_arrive(bar, 1);
#endif
}

// mbarrier.arrive with a count: `count` arrivals at once (at most the pending count).
FP8ATTN_ARCH_FN uint64_t mbarrier_arrive_count(uint64_t* bar, uint32_t count) {
#if FP8ATTN_DEVICE_BUILD
  uint64_t state;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1], %2;" : "=l"(state)
               : "r"(smem_address(bar)), "r"(count) : "memory");
  return state;
#else
  return emu::mbarrier_arrive(bar, count);
#endif
}

// mbarrier.expect_tx: tx-count += bytes, no arrival.
FP8ATTN_ARCH_FN void mbarrier_expect_tx(uint64_t* bar, uint32_t bytes) {
#if FP8ATTN_DEVICE_BUILD
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(smem_address(bar)),
               "r"(bytes) : "memory");
#else
  emu::mbarrier_expect_tx(bar, bytes);
#endif
}

// mbarrier.arrive.expect_tx: tx-count += bytes, then one arrival (the producer's call before it
// issues TMA loads of `bytes` bytes completing on this barrier).
FP8ATTN_ARCH_FN void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
#if FP8ATTN_DEVICE_BUILD
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_address(bar)),
               "r"(bytes) : "memory");
#else
  emu::mbarrier_arrive_expect_tx(bar, bytes);
#endif
}

// mbarrier.complete_tx: tx-count -= bytes (what an async copy does when its data has landed).
FP8ATTN_ARCH_FN void mbarrier_complete_tx(uint64_t* bar, uint32_t bytes) {
#if FP8ATTN_DEVICE_BUILD
  asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(smem_address(bar)),
               "r"(bytes) : "memory");
#else
  emu::mbarrier_complete_tx(bar, bytes);
#endif
}

// mbarrier.try_wait.parity (acquire, CTA scope): true once the phase with parity `parity` has
// completed, i.e. the current phase's parity differs. May return false after a time limit, so
// callers loop (mbarrier_wait_parity).
FP8ATTN_ARCH_FN bool mbarrier_try_wait_parity(uint64_t* bar, uint32_t parity) {
#if FP8ATTN_DEVICE_BUILD
  uint32_t done;
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(done)
      : "r"(smem_address(bar)), "r"(parity)
      : "memory");
  return done != 0;
#else
  return emu::mbarrier_try_wait_parity(bar, parity);
#endif
}

// mbarrier.test_wait.parity: the same test, never suspending.
FP8ATTN_ARCH_FN bool mbarrier_test_wait_parity(uint64_t* bar, uint32_t parity) {
#if FP8ATTN_DEVICE_BUILD
  uint32_t done;
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(done)
      : "r"(smem_address(bar)), "r"(parity)
      : "memory");
  return done != 0;
#else
  return emu::mbarrier_test_wait_parity(bar, parity);
#endif
}

// Waits until the phase with parity `parity` has completed.
FP8ATTN_ARCH_FN void mbarrier_wait_parity(uint64_t* bar, uint32_t parity) {
  while (!mbarrier_try_wait_parity(bar, parity)) {
  }
}

}  // namespace fp8attn::arch
