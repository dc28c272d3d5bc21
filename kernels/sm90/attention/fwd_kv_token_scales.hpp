// Per-(token, KV head) descales of a paged KV cache (FP8ATTN_KV_SCALE_PER_TOKEN_HEAD) in the
// attention forward, in the CPU engine's order (lib/attention/engine/query_tile.cpp; the shared
// formulas are kernels/sm90/kv_cache_math.hpp):
//   - the producer's warps 1-3 gather the block's K and V descales of the KV head into the
//     stage's FwdSharedStorage::kv_token_scale, by page as the K and V rows (a bad page clamped
//     to 0 and flagged as there, keys past the sequence 0), before the stage's k_full;
//   - the consumer multiplies each logit by its key's K descale after the per-block factor;
//     after the row sums it takes the block's largest V descale (a max over the quad's columns)
//     and multiplies P̃'s column j by v_j / largest before P's cast; the block's P·V product is
//     promoted with the largest as its V factor (the every-block kernel, run_blocks_serial);
//   - BF16 P (BF16 Q over an E4M3 cache, head_dim up to 128): P̃'s column j times v_j whole just
//     before P's cast (make_p), P·V straight into O (kv_token_v_whole), in both of the BF16
//     kernels' schedules.
// NOTE: the descales are read from shared memory where they are used, one load per S register,
// rather than held: the consumers' registers are S, O and P (fwd_config.hpp).
#pragma once

#include <cstdint>

#include "kernels/arch/atomic.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/warp.hpp"
#include "kernels/arch/wgmma.hpp"
#include "kernels/sm90/attention/fwd_paged_kv.hpp"
#include "kernels/sm90/attention/fwd_params.hpp"
#include "kernels/sm90/kv_cache_math.hpp"

namespace fp8attn::sm90 {

/// Producer warps 1-3 (`thread` in [0, 96)): K's descales of keys [key, key + BlockN) of sequence
/// b into dst[0, BlockN), V's into dst[BlockN, 2·BlockN); 0 past seqlen_k. One key per thread at
/// a time, the page looked up and clamped by paged_kv_page, as gather_paged_rows does.
template <int kBlockN>
FP8ATTN_ARCH_FN void gather_token_scales(const FwdPagedKv& kv, float* dst, uint32_t thread, int32_t b,
                                         int32_t head_kv, int32_t key, int32_t seqlen_k) {
  FP8ATTN_NO_UNROLL
  for (uint32_t row = thread; row < static_cast<uint32_t>(kBlockN); row += 96) {
    const int32_t k = key + static_cast<int32_t>(row);
    float k_scale = 0.0f, v_scale = 0.0f;
    if (k < seqlen_k) {
      const int32_t page = paged_kv_page(kv, b, k);
      const int32_t token = k % kv.page_size;
      k_scale = kv.k_scale[static_cast<int64_t>(page) * kv.k_scale_page_stride + token * kv.k_scale_token_stride +
                           head_kv * kv.k_scale_head_stride];
      v_scale = kv.v_scale[static_cast<int64_t>(page) * kv.v_scale_page_stride + token * kv.v_scale_token_stride +
                           head_kv * kv.v_scale_head_stride];
    }
    arch::smem_store(dst + row, k_scale);
    arch::smem_store(dst + kBlockN + row, v_scale);
  }
}

/// S register i's column for this thread (fragment facts: fwd_softmax.hpp).
FP8ATTN_ARCH_FN int token_column(int i, int q) { return 8 * (i >> 2) + (i & 1) + 2 * q; }

/// s[col] ·= K's descale of key col, for every register (padding columns are masked after).
template <int kBlockN>
FP8ATTN_ARCH_FN void apply_k_token_scales(arch::WgmmaAccF32<kBlockN>& s, const float* scales) {
  const int q = static_cast<int>(arch::thread_idx_in_warpgroup() % 4);
  FP8ATTN_UNROLL
  for (int i = 0; i < kBlockN / 2; ++i) s[i] *= arch::smem_load(scales + token_column(i, q));
}

/// The block's largest V descale over its `keys` keys: each thread's columns (those of its h = 0
/// registers; h = 1 has the same), then the quad's (a row's 4 threads hold all columns).
template <int kBlockN>
FP8ATTN_ARCH_FN float v_token_largest(const float* scales, int32_t keys) {
  const int q = static_cast<int>(arch::thread_idx_in_warpgroup() % 4);
  const float* v = scales + kBlockN;
  float largest = 0.0f;
  FP8ATTN_UNROLL
  for (int i = 0; i < kBlockN / 2; ++i) {
    if ((i >> 1) & 1) continue;
    const int col = token_column(i, q);
    if (col < keys) largest = kv_token_max(largest, arch::smem_load(v + col));
  }
  const float a = arch::shfl_xor_sync(0xffffffffu, largest, 1);
  largest = kv_token_max(largest, a);
  const float c = arch::shfl_xor_sync(0xffffffffu, largest, 2);
  return kv_token_max(largest, c);
}

/// P̃[col] ·= v_col / largest for the block's keys (padding columns hold P̃ = 0 and are left).
template <int kBlockN>
FP8ATTN_ARCH_FN void apply_v_token_ratios(arch::WgmmaAccF32<kBlockN>& s, const float* scales, int32_t keys,
                                          float largest) {
  const int q = static_cast<int>(arch::thread_idx_in_warpgroup() % 4);
  const float* v = scales + kBlockN;
  FP8ATTN_UNROLL
  for (int i = 0; i < kBlockN / 2; ++i) {
    const int col = token_column(i, q);
    if (col < keys) s[i] *= kv_token_v_ratio(arch::smem_load(v + col), largest);
  }
}

/// BF16 P: P̃[col] ·= v_col whole for the block's keys (padding columns hold P̃ = 0 and are left).
template <int kBlockN>
FP8ATTN_ARCH_FN void apply_v_token_whole(arch::WgmmaAccF32<kBlockN>& s, const float* scales, int32_t keys) {
  const int q = static_cast<int>(arch::thread_idx_in_warpgroup() % 4);
  const float* v = scales + kBlockN;
  FP8ATTN_UNROLL
  for (int i = 0; i < kBlockN / 2; ++i) {
    const int col = token_column(i, q);
    if (col < keys) s[i] *= kv_token_v_whole(arch::smem_load(v + col));
  }
}

}  // namespace fp8attn::sm90
