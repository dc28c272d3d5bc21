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
  /// Consumer warpgroups that share each 64 query rows, each with head_dim / head_dim_split columns
  /// of O (1: every warpgroup owns its own 64 rows and all of head_dim). Per-row arithmetic does
  /// not depend on it, so the CPU engine only reads block_m and block_n.
  int head_dim_split = 1;
};

/// Two-level accumulation of P·V (DESIGN §3), as a kernel compiles it and as the tile sizes see
/// it: Off (pv_promote_interval 0), EveryBlock (1, or per-block V descales: a fresh tile lives only
/// during one block's P·V) and EveryN (N > 1: the fresh tile lives across blocks, next to O).
enum class PvPromotion : int { Off = 0, EveryBlock = 1, EveryN = 2 };

/// The promotion a pv_promote_interval asks for. The tile sizes depend only on this (the engine's
/// config and the plan both call it); per-block V descales promote every block at run time but
/// keep the tile of the interval asked for (the plan refuses a kernel whose tile differs).
FP8ATTN_HOST_DEVICE constexpr PvPromotion pv_promotion_of_interval(int interval) {
  return interval == 0 ? PvPromotion::Off : interval == 1 ? PvPromotion::EveryBlock : PvPromotion::EveryN;
}

/// NOTE: the sizes follow FlashAttention-3's sm90 choices for the same head dims (hopper/
/// tile_size.h): larger BlockN for FP8, since its operands are half the bytes. BlockN must be a
/// multiple of mma_k_pv, because the block's keys are the K dimension of the PV wgmma.
/// FP8 departs from them where this project's kernel (kernels/sm90/attention) would spill: its
/// consumers also carry telemetry and per-block descales. Head_dim 64 has FlashAttention-3's three
/// consumer warpgroups of 160 registers (BlockM 192) with a BlockN of 96: S 48, O 32, the every-N
/// fresh tile 32 and the previous block's P 12 registers fit with the softmax overlapping P·V,
/// where BlockN 160 spilled 28 to 640 bytes and 128 still 4 in the every-N kernel (docs/kernels.md, the
/// limits). Head_dim 256 has FlashAttention-3's 128 × 128 (S 64 + O 128 + the previous block's P
/// 16 registers): the shared memory holds it because E4M3's raw V rows take one buffer, not one
/// per stage (FwdConfig::kVStages), and the kernel with telemetry runs serially (fwd_config.hpp).
/// The decode path keeps 128 × 96 there (decode_attention_tile).
/// NOTE: FP8 head_dim 128 with every-N promotion has its own BlockN of 128: the overlapped
/// consumers hold S (64 registers), the previous block's P (16), O (64) and the fresh tile (64)
/// through the softmax, 208 of 240; at BlockN 224, S alone is 112 and the fresh tile does not fit.
/// Only that kernel and the engine's every-N runs at head_dim 128 change tile, so every other
/// configuration keeps its bits.
/// NOTE: FP8 head_dim 256 with every-N promotion splits the head dim instead: O of 64 rows × 256
/// columns is 128 registers per consumer thread, and O plus a fresh tile (256) cannot fit in 240 at
/// any BlockN. So the CTA takes 64 query rows (BlockM 64) and its two consumer warpgroups share
/// them: each computes the same S = Q·Kᵀ and softmax (redundant Q·Kᵀ, no exchange) and owns half of
/// the head dim for O and the fresh tile: S 48 + P 12 + O 64 + fresh 64 = 188 of 240 at BlockN 96
/// (FlashAttention-3's head_dim-256 backward splits its two MMA warpgroups along N the same way).
/// BlockM 64 also fixes the engine's query tiles (per-block Q descales, causal block skipping, so
/// the promotion points): the engine reads the same tile.
/// ptxas -warn-spills is clean for every instantiated kernel with these sizes
/// (tools/check_attention_sm90a.sh).
FP8ATTN_HOST_DEVICE constexpr AttentionTile attention_tile(int head_dim, bool fp8, PvPromotion promotion) {
  if (fp8) {
    if (head_dim <= 64) return {192, 96, 32, 32, 3, 2};
    if (head_dim <= 128) return promotion == PvPromotion::EveryN ? AttentionTile{128, 128, 32, 32, 2, 2}
                                                                 : AttentionTile{128, 224, 32, 32, 2, 2};
    return promotion == PvPromotion::EveryN ? AttentionTile{64, 96, 32, 32, 2, 2, 2}
                                            : AttentionTile{128, 128, 32, 32, 2, 2};
  }
  if (head_dim <= 64) return {192, 128, 16, 16, 3, 2};
  if (head_dim <= 128) return {128, 176, 16, 16, 2, 2};
  return {128, 80, 16, 16, 2, 2};
}

/// The decode path's tile (desc.decode: kernels/sm90/decode, the engine's decode tile): the
/// forward's, except E4M3 head_dim 256 without every-N promotion, which keeps 128 × 96.
/// NOTE: the decode consumers have 232 registers (kernels/sm90/decode/decode_config.hpp) and a
/// decode tile's state; at BlockN 128 the every-block kernel, which a paged cache's per-token
/// descales also take, spilled 160 bytes next to S (64) and O (128), and 100 with P·V in
/// 32-column parts. Off shares the tile, since per-block descales promote on Off's tile.
FP8ATTN_HOST_DEVICE constexpr AttentionTile decode_attention_tile(int head_dim, bool fp8, PvPromotion promotion) {
  if (fp8 && head_dim > 128 && promotion != PvPromotion::EveryN) return {128, 96, 32, 32, 2, 2};
  return attention_tile(head_dim, fp8, promotion);
}

/// The tile of a call on the decode path (desc.decode) or the forward's: what the engine's config,
/// the plans and the kernels' configs all read.
FP8ATTN_HOST_DEVICE constexpr AttentionTile path_tile(int head_dim, bool fp8, PvPromotion promotion, bool decode) {
  return decode ? decode_attention_tile(head_dim, fp8, promotion) : attention_tile(head_dim, fp8, promotion);
}

/// Tile sizes of the BF16 attention backward (the CPU engine's and the sm_90a kernel's,
/// kernels/sm90/attention/attention_bwd_kernel.hpp): block_m query rows per step of a key block's
/// loop, block_n keys per work item (a CTA), consumer_warpgroups MMA warpgroups.
/// NOTE: FlashAttention-3's sm90 backward uses BlockM 64 (hopper/tile_size.h, bwd) and BlockN 128
/// for head dims 64 and 128, with each MMA warpgroup owning 64 of the block's keys so that Pᵀ and
/// dSᵀ come out of the wgmma in the A-fragment layout of dV += Pᵀ·dO and dK += dSᵀ·Q. block_n
/// fixes the order of dQ's sums (one partial per key block), so the engine and the kernel must
/// share it; block_m only decides which (query block, key block) pairs are skipped, and the two
/// share it too. Head dim 256 takes BlockM 64 and BlockN 64 with two MMA warpgroups that share the
/// block's 64 keys and split the work along N (queries for Sᵀ and dPᵀ, head-dim halves for dK, dV
/// and dQ), as FlashAttention-3's hdim-256 backward splits its two MMA warpgroups: 64 keys × 256
/// dims of dK and dV would take 256 registers per thread in one warpgroup, half of them 128.
FP8ATTN_HOST_DEVICE constexpr AttentionTile attention_bwd_tile(int head_dim) {
  if (head_dim <= 128) return {64, 128, 16, 16, 2, 2};
  return {64, 64, 16, 16, 2, 2};
}

/// The promotion interval the FP8 kernel uses for two-level PV accumulation: every this many KV
/// blocks the fresh PV tile is added into the FP32 O.
/// NOTE: chosen by the accumulator study (docs/accumulator_study.md) under a former model of the
/// tensor core's addition, since replaced by the measured rule (kernels/ptx/mma_order.hpp); its
/// figures are withdrawn and the interval is to be decided again from a re-run. What holds without
/// them: past N = 1 the cost is the extra tile's registers plus 1/N of a tile of FADDs per block,
/// so 8, 16 or 32 differ by at most a few FADDs per block per thread.
/// The C API's default pv_promote_interval is still 0 (accumulate in O); the study argues for
/// promotion at long KV loops.
inline constexpr int kDefaultPvPromoteInterval = 16;

}  // namespace fp8attn::sm90
