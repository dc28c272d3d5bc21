// The tile operations a consumer warpgroup of the attention backward runs in each step, the same
// in both splits of the key block (bwd_mainloop.hpp: key halves; bwd_mainloop_shared_keys.hpp:
// shared keys), which differ only in where their 64 keys and N query columns start:
//   for_each_step:   the consumer's side of the Q/dO pipeline, one step per visit of the block;
//   score_fragments: Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ on the tensor cores, then P and dS on the fragments
//                    (bwd_scores.hpp), cast to BF16 A fragments;
//   dq_part:         dQ = dS·K for one 64-column part of head_dim, stored into the workspace.
// NOTE: each is inlined into its consumer's loop (FP8ATTN_ARCH_FN), so the accumulators are the
// loop's own registers, allocated as when the loop spelled the steps out (setmaxnreg budgets).
#pragma once

#include <cstdint>

#include "kernels/arch/mbarrier.hpp"
#include "kernels/arch/wgmma.hpp"
#include "kernels/sm90/attention/bwd_config.hpp"
#include "kernels/sm90/attention/bwd_epilogue.hpp"
#include "kernels/sm90/attention/bwd_mma.hpp"
#include "kernels/sm90/attention/bwd_params.hpp"
#include "kernels/sm90/attention/bwd_producer.hpp"
#include "kernels/sm90/attention/bwd_scores.hpp"
#include "kernels/sm90/gemm/gemm_pipeline.hpp"
#include "kernels/sm90/softmax_math.hpp"

namespace fp8attn::sm90 {

/// The rows that see the thread's two keys (the block's keys key_lo and key_lo + 8), written once
/// to the thread's slot of shared memory; the consumer's loop reads them there each step.
template <class Cfg>
FP8ATTN_ARCH_FN int32_t* store_consumer_key_rows(const AttentionBwdParams& p, BwdSharedStorage<Cfg>& smem,
                                                 const BwdWork& w, unsigned consumer, unsigned t, int32_t key_lo) {
  int32_t* key_rows = smem.key_rows[128 * consumer + t];
  store_key_rows(w.mask(p), w.key0 + key_lo, key_rows);
  return key_rows;
}

/// Waits for the block's K and V, then calls step(head, row0, rows, stage) for each (query head,
/// query block) that visits it (for_each_visit), once the stage's Q and dO have landed. The step
/// frees the stage (finish_dkv_step).
template <class Cfg, class Step>
FP8ATTN_ARCH_FN void for_each_step(const AttentionBwdParams& p, BwdSharedStorage<Cfg>& smem, const BwdWork& w,
                                   Step&& step) {
  arch::mbarrier_wait_parity(&smem.kv_full, 0);
  PipelineState<Cfg::kStages> st{0, 0};
  for_each_visit<Cfg>(p, w, [&](int32_t head, int32_t row0, int32_t rows) {
    arch::mbarrier_wait_parity(&smem.qdo_full[st.stage], st.phase);
    step(head, row0, rows, st.stage);
    st.advance();
  });
}

/// One step's Pᵀ and dSᵀ (BF16 A fragments) for the 64 keys from row `key_row0` of the block's K
/// and V and the N query columns from `col0` of the stage's Q and dO: rows row0 + col0.. of the
/// sequence, `rows - col0` of them inside it. Past those the columns are padding, outside every
/// key's visible rows, and their LSE and D are not loaded.
template <class Cfg, int N>
FP8ATTN_ARCH_FN void score_fragments(const AttentionBwdParams& p, BwdSharedStorage<Cfg>& smem, uint32_t stage,
                                     const BwdWork& w, const int32_t* key_rows, int32_t key_row0, int32_t col0,
                                     int32_t head, int32_t row0, int32_t rows, float scale_log2,
                                     arch::WgmmaAFragment (&pf)[N / 16], arch::WgmmaAFragment (&dsf)[N / 16]) {
  arch::WgmmaAccF32<N> s, dp;
  // NOTE: scale-d is 0 on the first wgmma, but its asm reads the registers (the forward's note).
  fill_acc(s, 0.0f);
  fill_acc(dp, 0.0f);
  // NOTE: Sᵀ and dPᵀ go out as two groups; P is computed while dPᵀ may still run, and D is
  // loaded only after dPᵀ's wait (the wait is a compiler barrier to loads): with the LSE and D
  // of all 16 columns live next to Sᵀ, dPᵀ, dK and dV, head_dim 128 spilled more.
  arch::wgmma_fence();
  mm_rows_by_rows<Cfg>(s, smem.k, key_row0, smem.q[stage], col0);
  arch::wgmma_commit_group();
  mm_rows_by_rows<Cfg>(dp, smem.v, key_row0, smem.dout[stage], col0);
  arch::wgmma_commit_group();
  const BwdStepMask mask = step_mask(key_rows, row0 + col0);
  const int64_t first_row = w.row(p, row0 + col0) * p.heads_q + head;
  const int32_t valid_rows = rows - col0;
  arch::wgmma_wait_group<1>();
  arch::wgmma_fence_operand(s);
  recompute_p(s, mask, load_row_values(p.lse_log2 + first_row, p.heads_q, valid_rows), scale_log2);
  arch::wgmma_wait_group<0>();
  arch::wgmma_fence_operand(dp);
  grad_scores(s, dp, mask, load_row_values(p.delta + first_row, p.heads_q, valid_rows), pf, dsf);
}

/// Waits for the step's dV and dK products, then frees the stage's Q and dO for the producer.
template <int N>
FP8ATTN_ARCH_FN void finish_dkv_step(arch::WgmmaAccF32<N>& dv, arch::WgmmaAccF32<N>& dk, uint64_t* qdo_empty,
                                     bool leader) {
  arch::wgmma_wait_group<0>();
  arch::wgmma_fence_operand(dv);
  arch::wgmma_fence_operand(dk);
  if (leader) arch::mbarrier_arrive(qdo_empty);  // this stage's Q and dO are read
}

/// dQ[:, dq_n0 : dq_n0 + 64] = dS·K of the step (dS in shared memory, no swizzle), stored as the
/// step's dQ share into the workspace (store_dq_share).
template <class Cfg>
FP8ATTN_ARCH_FN void dq_part(const AttentionBwdParams& p, const BwdWork& w, const uint8_t* ds,
                             const uint8_t (&k)[Cfg::kChunks][Cfg::kKChunkBytes], int32_t head, int32_t row0,
                             int32_t rows, int dq_n0) {
  arch::WgmmaAccF32<Cfg::kDqPartN> dq;
  fill_acc(dq, 0.0f);
  arch::wgmma_fence();
  mm_dq<Cfg>(dq, ds, k, dq_n0);
  arch::wgmma_commit_group();
  arch::wgmma_wait_group<0>();
  arch::wgmma_fence_operand(dq);
  store_dq_share<Cfg>(p, w, dq, head, row0, rows, dq_n0);
}

}  // namespace fp8attn::sm90
