// Thread identity: threadIdx / blockIdx / blockDim / gridDim and the warp, lane and warpgroup
// derived from them. On the emulator build they read the running fiber's context (fibers share a
// host thread, so nothing here is thread_local).
#pragma once

#include "kernels/arch/platform.hpp"

namespace fp8attn::arch {

struct Index3 {
  unsigned x, y, z;
};

inline constexpr unsigned kWarpSize = 32;
// A warpgroup is 4 contiguous warps whose first warp's rank is a multiple of 4 (PTX ISA 9.0
// §9.7.15.1 "Warpgroup").
inline constexpr unsigned kWarpgroupSize = 128;

FP8ATTN_ARCH_FN Index3 thread_idx() {
#if FP8ATTN_DEVICE_BUILD
  return {threadIdx.x, threadIdx.y, threadIdx.z};
#else
  const auto& t = emu::this_thread().thread_idx;
  return {t.x, t.y, t.z};
#endif
}

FP8ATTN_ARCH_FN Index3 block_idx() {
#if FP8ATTN_DEVICE_BUILD
  return {blockIdx.x, blockIdx.y, blockIdx.z};
#else
  const auto& b = emu::this_thread().block_idx;
  return {b.x, b.y, b.z};
#endif
}

FP8ATTN_ARCH_FN Index3 block_dim() {
#if FP8ATTN_DEVICE_BUILD
  return {blockDim.x, blockDim.y, blockDim.z};
#else
  const auto& b = emu::this_thread().block_dim;
  return {b.x, b.y, b.z};
#endif
}

FP8ATTN_ARCH_FN Index3 grid_dim() {
#if FP8ATTN_DEVICE_BUILD
  return {gridDim.x, gridDim.y, gridDim.z};
#else
  const auto& g = emu::this_thread().grid_dim;
  return {g.x, g.y, g.z};
#endif
}

// Linear thread index in the CTA: x fastest, then y, then z (CUDA's thread numbering, which
// also defines warp membership).
FP8ATTN_ARCH_FN unsigned thread_rank() {
#if FP8ATTN_DEVICE_BUILD
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
#else
  return emu::this_thread().linear_tid;
#endif
}

FP8ATTN_ARCH_FN unsigned lane_idx() {
#if FP8ATTN_DEVICE_BUILD
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
#else
  return emu::this_thread().lane;
#endif
}

FP8ATTN_ARCH_FN unsigned warp_idx() { return thread_rank() / kWarpSize; }
FP8ATTN_ARCH_FN unsigned warpgroup_idx() { return thread_rank() / kWarpgroupSize; }
// Warp within its warpgroup, 0..3.
FP8ATTN_ARCH_FN unsigned warp_idx_in_warpgroup() { return warp_idx() % (kWarpgroupSize / kWarpSize); }
// Thread within its warpgroup, 0..127.
FP8ATTN_ARCH_FN unsigned thread_idx_in_warpgroup() { return thread_rank() % kWarpgroupSize; }

}  // namespace fp8attn::arch
