// The combine kernel: one warp per (token, head) row, kCombineWarps rows per CTA and a
// grid-stride loop over the rows. For its row a warp
//   1. reads the LSEs, lane l taking parts l, l + 32, ..., and reduces their maximum m with
//      shuffles (the maximum is exact, so the tree order does not matter);
//   2. writes each part's weight w_p (combine_math.hpp) into the warp's slice of shared memory;
//   3. after a barrier, sums w_0..w_{P−1} in index order on every lane (the CPU's order: the same
//      bits on every lane) and forms the row's scale and LSE;
//   4. merges out element by element, lane l taking elements l, l + 32, ..., each a sum over the
//      parts in index order that skips parts of weight 0 (their O is not read).
// NOTE: the row's scalar work is repeated on every lane rather than broadcast: it is a few
// hundred shared-memory reads per row against P·head_dim global reads, and it keeps the
// order of every FP32 operation identical to the CPU implementation's without a second barrier.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/arch/barrier.hpp"
#include "kernels/arch/cvt.hpp"
#include "kernels/arch/platform.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/warp.hpp"
#include "kernels/sm90/combine/combine_math.hpp"
#include "kernels/sm90/combine/combine_launch.hpp"
#include "kernels/sm90/combine/combine_params.hpp"

namespace fp8attn::sm90::combine {

FP8ATTN_ARCH_FN float load_element(const void* base, bool bf16, int64_t at) {
  if (!bf16) return static_cast<const float*>(base)[at];
  const uint32_t wide = static_cast<uint32_t>(static_cast<const uint16_t*>(base)[at]) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

FP8ATTN_ARCH_FN void store_element(const CombineParams& p, int64_t at, float value) {
  if (p.out_e4m3)  // the decode path's E4M3 output: the forward's epilogue store
    static_cast<uint8_t*>(p.out)[at] = static_cast<uint8_t>(arch::cvt_e4m3x2(value * p.out_scale, 0.0f) & 0xFFu);
  else if (p.out_bf16)
    static_cast<uint16_t*>(p.out)[at] = static_cast<uint16_t>(arch::cvt_bf16x2(value, 0.0f) & 0xFFFFu);
  else
    static_cast<float*>(p.out)[at] = value;
}

FP8ATTN_KERNEL void combine_kernel(const CombineParams p) {
  static_assert(kCombineSmemBytes <= 227 * 1024, "shared memory above the 227 KB of an sm_90 CTA");
  const unsigned warp = arch::warp_idx(), lane = arch::lane_idx();
  float* weights = arch::dynamic_smem<float>() + warp * kMaxParts;
  const int64_t rows = row_count(p);
  const int64_t step = static_cast<int64_t>(arch::grid_dim().x) * kCombineWarps;
  // NOTE: the loop bound is the CTA's first row, the same for all its warps, so every warp meets
  // every barrier; a warp past the last row only skips the work.
  for (int64_t first = static_cast<int64_t>(arch::block_idx().x) * kCombineWarps; first < rows; first += step) {
    const int64_t row = first + warp;
    const int64_t t = row < rows ? row / p.heads : 0, h = row < rows ? row % p.heads : 0;
    // NOTE: the decode path's rows past a sequence's q_len are not merged (row_target).
    const RowTarget target = row < rows ? row_target(p, t, h) : RowTarget{false, 0, 0};
    const bool active = target.merged;
    float m = -INFINITY;
    if (active)
      for (int32_t part = static_cast<int32_t>(lane); part < p.num_parts; part += 32)
        m = max_lse(m, p.partial_lse[partial_lse_offset(p, part, t, h)]);
    for (int lane_mask = 16; lane_mask >= 1; lane_mask >>= 1)
      m = max_lse(m, arch::shfl_xor_sync(arch::kFullWarpMask, m, lane_mask));
    if (active)
      for (int32_t part = static_cast<int32_t>(lane); part < p.num_parts; part += 32)
        arch::smem_store(&weights[part], part_weight(p.partial_lse[partial_lse_offset(p, part, t, h)], m));
    arch::syncthreads();
    if (active) {
      float sum = 0.0f;
      for (int32_t part = 0; part < p.num_parts; ++part) sum = arch::add_rn(sum, arch::smem_load(&weights[part]));
      const RowFactors f = row_factors(m, sum);
      if (lane == 0 && p.lse != nullptr) p.lse[target.lse] = f.lse;
      for (int64_t e = lane; e < p.head_dim; e += 32) {
        float acc = 0.0f;
        for (int32_t part = 0; part < p.num_parts; ++part) {
          const float w = arch::smem_load(&weights[part]);
          if (w == 0.0f) continue;
          const int64_t at = partial_out_offset(p, part, t, h, e);
          acc = accumulate_part(acc, w, f.scale, load_element(p.partial_out, p.partial_out_bf16, at));
        }
        store_element(p, target.out + e * p.out_stride[2], finish_out(acc, f.scale));
      }
    }
    arch::syncthreads();  // the weights are rewritten by the next row
  }
}

}  // namespace fp8attn::sm90::combine
