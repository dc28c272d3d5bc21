// Stores of a consumer warpgroup of the attention backward, from accumulator fragments
// (wgmma_fragment.hpp: register i of thread t = 32w + 4g + q holds row 16w + g + 8·((i/2)%2),
// column 8·(i/4) + 2q + i%2):
// - dS into shared memory for dQ = dS·K (each step);
// - the step's dQ share into the F32 workspace: a plain store into the key block's own slot
//   (deterministic mode; bwd_dq_reduce_kernel sums the slots in key-block order) or an atomic add
//   into one accumulator (atomic mode);
// - dK·softmax_scale and dV of the block's keys, BF16, once at the end.
#pragma once

#include <cstdint>

#include "kernels/arch/atomic.hpp"
#include "kernels/arch/cvt.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/wgmma.hpp"
#include "kernels/sm90/attention/bwd_config.hpp"
#include "kernels/sm90/attention/bwd_mma.hpp"
#include "kernels/sm90/attention/bwd_params.hpp"
#include "kernels/sm90/attention/bwd_producer.hpp"

namespace fp8attn::sm90 {

/// Writes this thread's part of dS (dSᵀ fragments of the warpgroup's 64 keys, BF16 pairs) into
/// dS[row][key] of shared memory. `key_lo` is the block key of the thread's h = 0 fragment row.
template <class Cfg>
FP8ATTN_ARCH_FN void store_ds(uint8_t* ds, const arch::WgmmaAFragment (&dsf)[Cfg::kBlockM / 16], int key_lo) {
  const int q = static_cast<int>(arch::thread_idx_in_warpgroup() % 4);
  FP8ATTN_UNROLL
  for (int pr = 0; pr < Cfg::kBlockM / 4; ++pr) {  // registers 2pr, 2pr + 1: columns c, c + 1 of row h
    const uint32_t halves = dsf[pr >> 2].reg[pr & 3];
    const uint32_t key = static_cast<uint32_t>(key_lo + 8 * (pr & 1));
    const uint32_t row = static_cast<uint32_t>(8 * (pr >> 1) + 2 * q);
    arch::smem_store(reinterpret_cast<uint16_t*>(ds + ds_offset<Cfg>(row, key)), static_cast<uint16_t>(halves & 0xffffu));
    arch::smem_store(reinterpret_cast<uint16_t*>(ds + ds_offset<Cfg>(row + 1, key)), static_cast<uint16_t>(halves >> 16));
  }
}

/// The step's dQ share (64 query rows × columns [n0, n0 + 64)) into the workspace.
template <class Cfg>
FP8ATTN_ARCH_FN void store_dq_share(const BwdArguments& p, const BwdWork& w, const arch::WgmmaAccF32<Cfg::kDqPartN>& dq,
                                    int32_t head, int32_t row0, int32_t rows, int n0) {
  const int t = static_cast<int>(arch::thread_idx_in_warpgroup());
  float* slot = p.dq_partials + (p.atomic_dq ? 0 : static_cast<int64_t>(w.block) * p.partial_slot_stride);
  FP8ATTN_UNROLL
  for (int i = 0; i < Cfg::kDqPartN / 2; ++i) {
    const arch::FragmentCoord at = arch::wgmma_d_coord(t, i);
    if (at.row >= rows) continue;
    const int64_t row = w.row(p, row0 + at.row);
    float* dst = slot + (row * p.heads_q + head) * Cfg::kHeadDim + n0 + at.col;
    if (p.atomic_dq) arch::atomic_add_f32(dst, dq[i]);
    else *dst = dq[i];
  }
}

/// dK·softmax_scale and dV of the warpgroup's keys inside the sequence, columns [n0, n0 +
/// kDkvCols), as BF16 (the engine stores them so: acc · scale rounded to nearest even).
template <class Cfg>
FP8ATTN_ARCH_FN void store_dk_dv(const BwdArguments& p, const BwdWork& w, const arch::WgmmaAccF32<Cfg::kDkvCols>& dk,
                                 const arch::WgmmaAccF32<Cfg::kDkvCols>& dv, int key_base, int n0 = 0) {
  const int t = static_cast<int>(arch::thread_idx_in_warpgroup());
  FP8ATTN_UNROLL
  for (int i = 0; i < Cfg::kDkvCols / 2; ++i) {
    const arch::FragmentCoord at = arch::wgmma_d_coord(t, i);
    const int32_t key = key_base + at.row;
    if (key >= w.keys) continue;
    const int64_t row = static_cast<int64_t>(w.k_offset) + w.key0 + key;
    const int32_t col = n0 + at.col;
    const int64_t k_at = w.batch * p.dk_batch_stride + row * p.dk_seq_stride + w.head_kv * p.dk_head_stride + col;
    const int64_t v_at = w.batch * p.dv_batch_stride + row * p.dv_seq_stride + w.head_kv * p.dv_head_stride + col;
    p.dk[k_at] = static_cast<uint16_t>(arch::cvt_bf16x2(dk[i] * p.softmax_scale, 0.0f) & 0xffffu);
    p.dv[v_at] = static_cast<uint16_t>(arch::cvt_bf16x2(dv[i] * 1.0f, 0.0f) & 0xffffu);
  }
}

}  // namespace fp8attn::sm90
