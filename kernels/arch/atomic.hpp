// Global-memory atomics of the kernels (PTX ISA 9.0 §9.7.13.5 atom / red): the few a kernel uses
// to merge per-CTA results, such as the attention telemetry counters. Under the emulator CTAs run
// on several host threads, so the host versions are real atomics (std::atomic_ref).
#pragma once

#include <atomic>
#include <cstdint>

#include "kernels/arch/platform.hpp"

namespace fp8attn::arch {

/// red.global.add.u64: *address += value.
FP8ATTN_ARCH_FN void atomic_add_u64(uint64_t* address, uint64_t value) {
#if FP8ATTN_DEVICE_BUILD
  atomicAdd(reinterpret_cast<unsigned long long*>(address), static_cast<unsigned long long>(value));
#else
  std::atomic_ref<uint64_t>(*address).fetch_add(value, std::memory_order_relaxed);
#endif
}

/// red.global.add.f32: *address += value (the backward's dQ in atomic mode). The order of the adds
/// follows the schedule, so the sum's rounding does too: not deterministic.
FP8ATTN_ARCH_FN void atomic_add_f32(float* address, float value) {
#if FP8ATTN_DEVICE_BUILD
  atomicAdd(address, value);
#else
  std::atomic_ref<float>(*address).fetch_add(value, std::memory_order_relaxed);
#endif
}

/// red.global.max.u32: *address = max(*address, value). NOTE: non-negative floats order like
/// their bit patterns, so a max of |x| values travels as u32 (the telemetry's max |logit|).
FP8ATTN_ARCH_FN void atomic_max_u32(uint32_t* address, uint32_t value) {
#if FP8ATTN_DEVICE_BUILD
  atomicMax(address, value);
#else
  std::atomic_ref<uint32_t> ref(*address);
  uint32_t seen = ref.load(std::memory_order_relaxed);
  while (seen < value && !ref.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
#endif
}

}  // namespace fp8attn::arch
