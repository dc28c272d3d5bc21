// The epilogue of the attention forward: O·v_descale/l (BF16, F32, or E4M3 after the output
// scale) and the LSE of a consumer warpgroup's 64 rows, stored from registers or, for a BF16
// output, through shared memory and TMA stores; and the merge of the telemetry counters and of
// max |O| (amax_o), once per CTA.
#pragma once

#include <cstdint>

#include "kernels/arch/atomic.hpp"
#include "kernels/arch/barrier.hpp"
#include "kernels/arch/cvt.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/tma.hpp"
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

/// Stores one output element at element offset `at` in the output's type.
FP8ATTN_ARCH_FN void store_out_element(const FwdArguments& p, int64_t at, float value) {
  if (p.out_type == FwdOutput::F32)
    static_cast<float*>(p.out)[at] = value;
  else if (p.out_type == FwdOutput::E4M3)  // cuDNN's scale_o: the scale is applied to O, then the saturating cast
    static_cast<uint8_t*>(p.out)[at] = static_cast<uint8_t>(arch::cvt_e4m3x2(value * p.out_scale, 0.0f) & 0xffu);
  else
    static_cast<uint16_t*>(p.out)[at] = static_cast<uint16_t>(arch::cvt_bf16x2(value, 0.0f) & 0xffffu);
}

/// The l and the output factor (v_descale / l) of this thread's two rows, h = 0 and 1.
struct FwdOutRows {
  float l[2], factor[2];
};
FP8ATTN_ARCH_FN FwdOutRows output_rows(const FwdRowState& rows, float v_descale) {
  FwdOutRows r;
  FP8ATTN_UNROLL
  for (int h = 0; h < 2; ++h) {
    r.l[h] = quad_row_sum(rows.partial[h]);
    r.factor[h] = output_factor(r.l[h], v_descale);
  }
  return r;
}

/// The LSE of rows row_lo and row_lo + 8 (those inside the sequence), from thread q = 0 of each
/// quad, when `write_lse` (one warpgroup per row writes it under the head-dim split).
FP8ATTN_ARCH_FN void store_lse(const AttentionFwdParams& p, const FwdRowState& rows, const FwdOutRows& out,
                               int32_t batch, int32_t head, int64_t row_lo, int64_t rows_end, bool write_lse,
                               float scale_log2) {
  if (p.lse == nullptr || arch::thread_idx_in_warpgroup() % 4 != 0 || !write_lse) return;
  FP8ATTN_UNROLL
  for (int h = 0; h < 2; ++h) {
    const int64_t row = row_lo + 8 * h;
    if (row < rows_end)
      p.lse[p.lse_batch_stride * batch + p.lse_seq_stride * row + p.lse_head_stride * head] =
          row_lse(rows.max[h], out.l[h], scale_log2, p.p_scale_log2);
  }
}

/// Stores rows [row_lo, row_lo + 8] of the tile's output, columns [col0, col0 + kHeadDimO), and
/// with `write_lse` their LSE; rows past the sequence are skipped. With kAmaxO, returns this
/// thread's max |O| over the rows it stored (before the output scale, as the engine's amax_o),
/// else 0. NOTE: `a < |O|` keeps the engine's std::max order, so a NaN never becomes the max.
template <int kHeadDimO, bool kAmaxO>
FP8ATTN_ARCH_FN float store_output(const AttentionFwdParams& p, const arch::WgmmaAccF32<kHeadDimO>& o,
                                   const FwdRowState& rows, int32_t batch, int32_t head, int64_t row_lo,
                                   int64_t rows_end, int col0, bool write_lse, float scale_log2, float v_descale) {
  const int q = static_cast<int>(arch::thread_idx_in_warpgroup() % 4);
  float amax = 0.0f;
  const FwdOutRows out = output_rows(rows, v_descale);
  FP8ATTN_UNROLL
  for (int i = 0; i < kHeadDimO / 2; ++i) {
    const int h = (i >> 1) & 1;
    const int64_t row = row_lo + 8 * h;
    if (row >= rows_end) continue;
    const int col = col0 + 8 * (i >> 2) + 2 * q + (i & 1);
    const int64_t at = p.out_batch_stride * batch + p.out_seq_stride * row + p.out_head_stride * head + p.out_dim_stride * col;
    const float value = o[i] * out.factor[h];
    if constexpr (kAmaxO) {
      const float magnitude = value < 0.0f ? -value : value;
      if (amax < magnitude) amax = magnitude;
    }
    store_out_element(p, at, value);
  }
  store_lse(p, rows, out, batch, head, row_lo, rows_end, write_lse, scale_log2);
  return amax;
}

/// store_output's BF16 output through shared memory and TMA stores (FwdConfig::kTmaOut, with
/// p.tma_out): the warpgroup writes its 64 rows × kHeadDimO columns into `stage` (its
/// FwdConfig::kOBoxes boxes of 64 columns, 128B-swizzled, kOBoxStride apart; in kORounds rounds
/// where the stage holds a part of them), and its leader stores each box at
/// {col0 + 64c, head, wg_row0, batch}; the map's bounds clip the rows past the sequence. Same
/// values and rounding as store_output, so the same bits.
/// NOTE: FlashAttention-3's epilogue: one bulk store per box in place of 2-byte stores scattered
/// over 64 rows. A thread's two adjacent columns go as one 4-byte write; with the 128B swizzle the
/// 8 rows × 4 threads of a warp's write fall in 32 distinct banks. The leader waits until the
/// previous tile's stores have read the stage before anyone writes it, and the stores of the last
/// tile before the warpgroup exits (wait_o_stage_read).
template <class Cfg, bool kAmaxO>
FP8ATTN_ARCH_FN float store_output_tma(const AttentionFwdParams& p, uint8_t* stage, unsigned stage_barrier, bool leader,
                                       const arch::WgmmaAccF32<Cfg::kHeadDimO>& o, const FwdRowState& rows,
                                       int32_t batch, int32_t head, int32_t wg_row0, int64_t row_lo, int64_t rows_end,
                                       int col0, bool write_lse, float scale_log2, float v_descale) {
  const unsigned t = arch::thread_idx_in_warpgroup();
  const uint32_t q = t % 4, stage_row = 16 * (t / 32) + (t % 32) / 4;  // the h = 0 row among the 64
  float amax = 0.0f;
  const FwdOutRows out = output_rows(rows, v_descale);
  constexpr int kRoundRegs = Cfg::kHeadDimO / 2 / Cfg::kORounds, kRoundBoxes = Cfg::kOBoxes / Cfg::kORounds;
  FP8ATTN_UNROLL
  for (int round = 0; round < Cfg::kORounds; ++round) {  // kRoundBoxes boxes of O at a time
    if (leader) arch::tma_store_wait_read<0>();
    arch::named_barrier_sync(stage_barrier, 128);
    FP8ATTN_UNROLL
    // Registers i, i + 1: columns c, c + 1 of row h.
    for (int i = round * kRoundRegs; i < (round + 1) * kRoundRegs; i += 2) {
      const int h = (i >> 1) & 1;
      const float v0 = o[i] * out.factor[h], v1 = o[i + 1] * out.factor[h];
      if constexpr (kAmaxO) {
        if (row_lo + 8 * h < rows_end) {
          const float m0 = v0 < 0.0f ? -v0 : v0, m1 = v1 < 0.0f ? -v1 : v1;
          if (amax < m0) amax = m0;
          if (amax < m1) amax = m1;
        }
      }
      const uint32_t col = 8u * static_cast<uint32_t>(i >> 2) + 2u * q;
      const uint32_t line = (stage_row + 8u * static_cast<uint32_t>(h)) * 128u + (col % 64u) * 2u;
      const uint32_t box = col / 64u - static_cast<uint32_t>(round * kRoundBoxes);
      arch::smem_store(reinterpret_cast<uint32_t*>(stage + box * Cfg::kOBoxStride +
                                                   arch::swizzle_address(line, arch::Swizzle::B128)),
                       arch::cvt_bf16x2(v0, v1));
    }
    // NOTE: the stage's generic-proxy writes are made visible to the TMA (async proxy) before the
    // barrier after which the leader issues the stores.
    arch::fence_proxy_async_shared_cta();
    arch::named_barrier_sync(stage_barrier, 128);
    if (leader) {
      FP8ATTN_UNROLL
      for (int c = 0; c < kRoundBoxes; ++c)
        arch::tma_store<4>(p.tma_o, stage + c * Cfg::kOBoxStride,
                           {col0 + 64 * (round * kRoundBoxes + c), head, wg_row0, batch});
      arch::tma_store_commit_group();
    }
  }
  store_lse(p, rows, out, batch, head, row_lo, rows_end, write_lse, scale_log2);
  return amax;
}

/// The warpgroup's last stores have read its stage (before the CTA's shared memory goes away).
FP8ATTN_ARCH_FN void wait_o_stage_read(bool leader) {
  if (leader) arch::tma_store_wait_read<0>();
}

/// Shared-memory slots of the telemetry merge: one per consumer warp.
struct FwdTelemetrySlots {
  uint64_t positive[16];
  uint64_t underflow[16];
  float max_abs[16];
  float max_abs_o[16];
};

/// Zeroes this warp's slot before its first tile (lane 0 of each consumer warp owns its slot).
FP8ATTN_ARCH_FN void init_telemetry_slot(FwdTelemetrySlots& slots) {
  const unsigned warp = (arch::thread_rank() - 128) / 32;
  if (arch::lane_idx() == 0) {
    arch::smem_store(&slots.positive[warp], uint64_t{0});
    arch::smem_store(&slots.underflow[warp], uint64_t{0});
    arch::smem_store(&slots.max_abs[warp], 0.0f);
    arch::smem_store(&slots.max_abs_o[warp], 0.0f);
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

/// Folds a thread's max |O| of a stored tile into its warp's slot: a warp butterfly, then lane 0.
/// NOTE: a max is exact in any order, so the CTA's and the grid's merges equal the engine's.
FP8ATTN_ARCH_FN void flush_amax_o(float amax, FwdTelemetrySlots& slots) {
  FP8ATTN_UNROLL
  for (int bit = 1; bit < 32; bit <<= 1) {
    const float other = arch::shfl_xor_sync(0xffffffffu, amax, bit);
    if (amax < other) amax = other;
  }
  const unsigned warp = (arch::thread_rank() - 128) / 32;
  if (arch::lane_idx() == 0 && arch::smem_load(&slots.max_abs_o[warp]) < amax) arch::smem_store(&slots.max_abs_o[warp], amax);
}

/// Merges the consumer warps' slots: once every warp has flushed its last tile, one thread adds
/// the CTA's totals to the device counters with one atomic each.
template <int kConsumers>
FP8ATTN_ARCH_FN void merge_telemetry(const AttentionFwdParams& p, FwdTelemetrySlots& slots, unsigned barrier_id) {
  arch::named_barrier_sync(barrier_id, 128 * kConsumers);
  if (arch::thread_rank() == 128) {
    uint64_t positive = 0, underflow = 0;
    float max_abs = 0.0f, max_abs_o = 0.0f;
    for (int w = 0; w < 4 * kConsumers; ++w) {
      positive += arch::smem_load(&slots.positive[w]);
      underflow += arch::smem_load(&slots.underflow[w]);
      const float m = arch::smem_load(&slots.max_abs[w]);
      if (max_abs < m) max_abs = m;
      const float mo = arch::smem_load(&slots.max_abs_o[w]);
      if (max_abs_o < mo) max_abs_o = mo;
    }
    uint32_t bits, o_bits;
    __builtin_memcpy(&bits, &max_abs, sizeof bits);
    __builtin_memcpy(&o_bits, &max_abs_o, sizeof o_bits);
    arch::atomic_add_u64(&p.telemetry->p_positive, positive);
    arch::atomic_add_u64(&p.telemetry->p_underflow, underflow);
    arch::atomic_max_u32(&p.telemetry->max_abs_scaled_logit_bits, bits);
    arch::atomic_max_u32(&p.telemetry->max_abs_o_bits, o_bits);
  }
}

}  // namespace fp8attn::sm90
