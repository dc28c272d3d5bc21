// The epilogue of the attention forward: O·v_descale/l and the LSE of a consumer warpgroup's 64
// rows, stored from registers; and the merge of the telemetry counters, once per CTA.
#pragma once

#include <cstdint>

#include "kernels/arch/atomic.hpp"
#include "kernels/arch/barrier.hpp"
#include "kernels/arch/cvt.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/warp.hpp"
#include "kernels/arch/wgmma.hpp"
#include "kernels/sm90/attention/fwd_params.hpp"
#include "kernels/sm90/attention/fwd_softmax.hpp"
#include "kernels/sm90/softmax_math.hpp"

namespace fp8attn::sm90 {

/// The quad's row sum l from each thread's partial: (p0 + p2) + (p1 + p3), the order of
/// sm90::quad_sum, by a butterfly over lane bits 2 then 1 (every thread gets the same value).
FP8ATTN_ARCH_FN float quad_row_sum(float partial) {
  const float pair = partial + arch::shfl_xor_sync(0xffffffffu, partial, 2);
  return pair + arch::shfl_xor_sync(0xffffffffu, pair, 1);
}

/// Stores rows [row_lo, row_lo + 8] of the tile's output and LSE; rows past the sequence are skipped.
template <int kHeadDim>
FP8ATTN_ARCH_FN void store_output(const AttentionFwdParams& p, const arch::WgmmaAccF32<kHeadDim>& o,
                                  const FwdRowState& rows, int32_t batch, int32_t head, int64_t row_lo,
                                  int64_t rows_end, float scale_log2, float v_descale) {
  const int q = static_cast<int>(arch::thread_idx_in_warpgroup() % 4);
  float factor[2], l[2];
  FP8ATTN_UNROLL
  for (int h = 0; h < 2; ++h) {
    l[h] = quad_row_sum(rows.partial[h]);
    factor[h] = output_factor(l[h], v_descale);
  }
  FP8ATTN_UNROLL
  for (int i = 0; i < kHeadDim / 2; ++i) {
    const int h = (i >> 1) & 1;
    const int64_t row = row_lo + 8 * h;
    if (row >= rows_end) continue;
    const int col = 8 * (i >> 2) + 2 * q + (i & 1);
    const int64_t at = p.out_batch_stride * batch + p.out_seq_stride * row + p.out_head_stride * head + p.out_dim_stride * col;
    const float value = o[i] * factor[h];
    if (p.out_type == FwdOutput::F32)
      static_cast<float*>(p.out)[at] = value;
    else
      static_cast<uint16_t*>(p.out)[at] = static_cast<uint16_t>(arch::cvt_bf16x2(value, 0.0f) & 0xffffu);
  }
  if (p.lse != nullptr && q == 0)
    FP8ATTN_UNROLL
    for (int h = 0; h < 2; ++h) {
      const int64_t row = row_lo + 8 * h;
      if (row < rows_end)
        p.lse[p.lse_batch_stride * batch + p.lse_seq_stride * row + p.lse_head_stride * head] =
            row_lse(rows.max[h], l[h], scale_log2, p.p_scale_log2);
    }
}

/// Shared-memory slots of the telemetry merge: one per consumer warp.
struct FwdTelemetrySlots {
  uint64_t positive[16];
  uint64_t underflow[16];
  float max_abs[16];
};

/// Zeroes this warp's slot before its first tile (lane 0 of each consumer warp owns its slot).
FP8ATTN_ARCH_FN void init_telemetry_slot(FwdTelemetrySlots& slots) {
  const unsigned warp = (arch::thread_rank() - 128) / 32;
  if (arch::lane_idx() == 0) {
    arch::smem_store(&slots.positive[warp], uint64_t{0});
    arch::smem_store(&slots.underflow[warp], uint64_t{0});
    arch::smem_store(&slots.max_abs[warp], 0.0f);
  }
}

/// Folds the warp's telemetry of a finished tile into its slot: warp butterflies, then lane 0.
/// The tile's raw max goes into natural-log units with the tile's scale, as the engine does once
/// per tile (fl(max·s) = max fl(x·s) for s > 0). Resets `tel` for the next tile.
FP8ATTN_ARCH_FN void flush_tile_telemetry(FwdThreadTelemetry& tel, float natural_scale, FwdTelemetrySlots& slots) {
  FP8ATTN_UNROLL
  for (int bit = 1; bit < 32; bit <<= 1) {
    tel.tile_positive += arch::shfl_xor_sync(0xffffffffu, tel.tile_positive, bit);
    tel.tile_underflow += arch::shfl_xor_sync(0xffffffffu, tel.tile_underflow, bit);
    const float other = arch::shfl_xor_sync(0xffffffffu, tel.tile_max_abs_raw, bit);
    if (tel.tile_max_abs_raw < other) tel.tile_max_abs_raw = other;
  }
  const unsigned warp = (arch::thread_rank() - 128) / 32;
  if (arch::lane_idx() == 0) {
    arch::smem_store(&slots.positive[warp], arch::smem_load(&slots.positive[warp]) + tel.tile_positive);
    arch::smem_store(&slots.underflow[warp], arch::smem_load(&slots.underflow[warp]) + tel.tile_underflow);
    const float scaled = tel.tile_max_abs_raw * natural_scale;
    if (arch::smem_load(&slots.max_abs[warp]) < scaled) arch::smem_store(&slots.max_abs[warp], scaled);
  }
  tel = FwdThreadTelemetry{};
}

/// Merges the consumer warps' slots: once every warp has flushed its last tile, one thread adds
/// the CTA's totals to the device counters with one atomic each.
template <int kConsumers>
FP8ATTN_ARCH_FN void merge_telemetry(const AttentionFwdParams& p, FwdTelemetrySlots& slots, unsigned barrier_id) {
  arch::named_barrier_sync(barrier_id, 128 * kConsumers);
  if (arch::thread_rank() == 128) {
    uint64_t positive = 0, underflow = 0;
    float max_abs = 0.0f;
    for (int w = 0; w < 4 * kConsumers; ++w) {
      positive += arch::smem_load(&slots.positive[w]);
      underflow += arch::smem_load(&slots.underflow[w]);
      const float m = arch::smem_load(&slots.max_abs[w]);
      if (max_abs < m) max_abs = m;
    }
    uint32_t bits;
    __builtin_memcpy(&bits, &max_abs, sizeof bits);
    arch::atomic_add_u64(&p.telemetry->p_positive, positive);
    arch::atomic_add_u64(&p.telemetry->p_underflow, underflow);
    arch::atomic_max_u32(&p.telemetry->max_abs_scaled_logit_bits, bits);
  }
}

}  // namespace fp8attn::sm90
