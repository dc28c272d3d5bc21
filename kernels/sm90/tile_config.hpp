// Tile sizes of the attention forward, one function per head dimension and input type.
//
// The Hopper kernel, the CPU tile engine and the dispatcher all read these numbers, so the
// engine visits exactly the tiles the kernel visits: same BlockM × BlockN, same block
// boundaries (aligned at key 0), same KV order. Changing a number here changes results bit for
// bit in both, together.
#pragma once

#include <cstdint>

// NOTE: the same definition as kernels/arch/platform.hpp (whichever header comes first defines
// it): host-and-device, and inline, so these headers can be shared by the engine and kernels.
#if !defined(FP8ATTN_HOST_DEVICE)
#if defined(__CUDACC__)
#define FP8ATTN_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define FP8ATTN_HOST_DEVICE inline
#endif
#endif

namespace fp8attn::sm90 {

struct AttentionTile {
  int block_m;        ///< query rows per CTA tile (64 per consumer warpgroup)
  int block_n;        ///< keys per KV block
  int mma_k_qk;       ///< K of one wgmma for S = Q·Kᵀ: 32 for E4M3, 16 for BF16
  int mma_k_pv;       ///< K of one wgmma for O += P·V (runs over the block's keys)
  int consumer_warpgroups;
  int stages;         ///< K/V pipeline depth
};

/// NOTE: the sizes follow FlashAttention-3's sm90 choices for the same head dims (hopper/
/// tile_size.h): larger BlockN for FP8, since its operands are half the bytes. BlockN must be a
/// multiple of mma_k_pv, because the block's keys are the K dimension of the PV wgmma.
/// FP8 departs from them where this project's kernel (kernels/sm90/attention) would spill: its
/// consumers also carry telemetry and per-block descales, so head_dim 64 uses two consumer
/// warpgroups of 232 registers (BlockM 128, not 192 with three of 152), and head_dim 256 a BlockN
/// of 96 (S takes 48 registers, not 64, next to O's 128); ptxas -warn-spills is clean for every
/// instantiated kernel with these sizes (tools/check_sm90_build.sh).
FP8ATTN_HOST_DEVICE constexpr AttentionTile attention_tile(int head_dim, bool fp8) {
  if (fp8) {
    if (head_dim <= 64) return {128, 160, 32, 32, 2, 2};
    if (head_dim <= 128) return {128, 224, 32, 32, 2, 2};
    return {128, 96, 32, 32, 2, 2};
  }
  if (head_dim <= 64) return {192, 128, 16, 16, 3, 2};
  if (head_dim <= 128) return {128, 176, 16, 16, 2, 2};
  return {128, 80, 16, 16, 2, 2};
}

}  // namespace fp8attn::sm90
