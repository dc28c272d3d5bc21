// A consumer warpgroup of the attention backward: 64 keys of the CTA's key block, for each
// (query head, query block) that visits the block (bwd_producer.hpp, for_each_visit):
//   Sᵀ, dPᵀ on the tensor cores; P = exp2(S·scale·log2e − LSE·log2e) and dS = P∘(dP − D) on the
//   fragments, cast to BF16; dV += Pᵀ·dO and dK += dSᵀ·Q (RS); dS to shared memory; then
//   dQ = dS·K for one 64-column part of head_dim, stored into the workspace.
// Every floating-point step is the CPU engine's (lib/attention/engine/backward_tile.cpp): the
// same products in the emulated wgmma's order, P through sm90::p_tilde (one FMA, then
// arch::ex2_approx), dS as P·(dP − D) in FP32 then rounded to BF16, dV and dK accumulated over
// 16-row chunks of queries in the engine's order (heads ascending, then query blocks).
// NOTE: padding is harmless to the bits: rows past the sequence and keys past the block get
// P = dS = 0, so their products add exact zeros to chunks that start at +0 (mma_order.hpp).
#pragma once

#include <cstdint>

#include "kernels/arch/barrier.hpp"
#include "kernels/arch/cvt.hpp"
#include "kernels/arch/mbarrier.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/wgmma.hpp"
#include "kernels/sm90/attention/bwd_config.hpp"
#include "kernels/sm90/attention/bwd_epilogue.hpp"
#include "kernels/sm90/attention/bwd_mma.hpp"
#include "kernels/sm90/attention/bwd_params.hpp"
#include "kernels/sm90/attention/bwd_producer.hpp"
#include "kernels/sm90/gemm/gemm_pipeline.hpp"
#include "kernels/sm90/mask.hpp"
#include "kernels/sm90/softmax_math.hpp"

namespace fp8attn::sm90 {

/// Turns Sᵀ (raw logits) into Pᵀ and dPᵀ into dSᵀ in place, for query rows [row0, row0 + rows)
/// of `head` and the thread's keys; then packs both into A fragments (BF16 pairs; the layout of
/// the forward's cast_p_bf16).
template <class Cfg>
FP8ATTN_ARCH_FN void softmax_grad(arch::WgmmaAccF32<Cfg::kBlockM>& s, arch::WgmmaAccF32<Cfg::kBlockM>& dp,
                                  const BwdArguments& p, const BwdWork& w, int32_t head, int32_t row0, int32_t rows,
                                  int32_t key_lo, float scale_log2, arch::WgmmaAFragment (&pf)[Cfg::kBlockM / 16],
                                  arch::WgmmaAFragment (&dsf)[Cfg::kBlockM / 16]) {
  const int q = static_cast<int>(arch::thread_idx_in_warpgroup() % 4);
  FP8ATTN_UNROLL
  for (int i = 0; i < Cfg::kBlockM / 2; ++i) {
    const int32_t col = 8 * (i >> 2) + 2 * q + (i & 1);  // the query row in the block
    const int32_t key = w.key0 + key_lo + 8 * ((i >> 1) & 1);
    float pv = 0.0f, dsv = 0.0f;
    if (col < rows) {
      const int64_t row = bwd_row(p, w.batch, w.seq, row0 + col);
      const KeyRange vis = visible_keys(w.mask, row0 + col);  // empty past the sequence's keys
      if (key >= vis.first && key <= vis.last) {
        pv = p_tilde(s[i], scale_log2, p.lse_log2[row * p.heads_q + head]);
        dsv = pv * (dp[i] - p.delta[row * p.heads_q + head]);
      }
    }
    s[i] = pv;
    dp[i] = dsv;
  }
  FP8ATTN_UNROLL
  for (int pr = 0; pr < Cfg::kBlockM / 4; ++pr) {  // pair pr = 2c + h
    pf[pr >> 2].reg[pr & 3] = arch::cvt_bf16x2(s[2 * pr], s[2 * pr + 1]);
    dsf[pr >> 2].reg[pr & 3] = arch::cvt_bf16x2(dp[2 * pr], dp[2 * pr + 1]);
  }
}

/// A consumer warpgroup's whole work item.
template <class Cfg>
FP8ATTN_ARCH_FN void run_bwd_consumer(const AttentionBwdParams& p, BwdSharedStorage<Cfg>& smem, const BwdWork& w) {
  const unsigned consumer = arch::warpgroup_idx() - 1;
  const unsigned t = arch::thread_idx_in_warpgroup();
  const bool leader = t == 0;
  const int32_t key_base = static_cast<int32_t>(64 * consumer);  // the warpgroup's first key in the block
  const int32_t key_lo = key_base + static_cast<int32_t>(16 * (t / 32) + (t % 32) / 4);  // h = 0 row's key
  const bool has_dq_part = static_cast<int>(consumer) < Cfg::kDqParts;
  const int dq_n0 = static_cast<int>(consumer) * Cfg::kDqPartN;
  const float scale_log2 = p.softmax_scale * kLog2e;  // the engine's scale_log2

  arch::WgmmaAccF32<Cfg::kHeadDim> dk, dv;
  fill_acc(dk, 0.0f);
  fill_acc(dv, 0.0f);
  arch::mbarrier_wait_parity(&smem.kv_full, 0);
  PipelineState<Cfg::kStages> st{0, 0};
  for_each_visit<Cfg>(p, w, [&](int32_t head, int32_t row0, int32_t rows) {
    arch::mbarrier_wait_parity(&smem.qdo_full[st.stage], st.phase);
    arch::WgmmaAccF32<Cfg::kBlockM> s, dp;
    // NOTE: scale-d is 0 on the first wgmma, but its asm reads the registers (the forward's note).
    fill_acc(s, 0.0f);
    fill_acc(dp, 0.0f);
    arch::wgmma_fence();
    mm_rows_by_rows<Cfg>(s, smem.k, key_base, smem.q[st.stage]);
    mm_rows_by_rows<Cfg>(dp, smem.v, key_base, smem.dout[st.stage]);
    arch::wgmma_commit_group();
    arch::wgmma_wait_group<0>();
    arch::wgmma_fence_operand(s);
    arch::wgmma_fence_operand(dp);

    arch::WgmmaAFragment pf[Cfg::kBlockM / 16], dsf[Cfg::kBlockM / 16];
    softmax_grad<Cfg>(s, dp, p, w, head, row0, rows, key_lo, scale_log2, pf, dsf);

    // dS of the last step may still be read by another warpgroup's dQ wgmma until all pass here.
    arch::named_barrier_sync(barrier_id(BwdBarrier::kDsFree), 128 * Cfg::kConsumers);
    store_ds<Cfg>(smem.ds, dsf, key_lo);
    arch::fence_proxy_async_shared_cta();  // generic-proxy writes, read by wgmma (async proxy)

    arch::wgmma_fence();
    mma_over_rows<Cfg>(dv, pf, smem.dout[st.stage]);
    mma_over_rows<Cfg>(dk, dsf, smem.q[st.stage]);
    arch::wgmma_commit_group();

    if (Cfg::kFault != BwdFault::DropDsReadyBarrier || consumer != 1)
      arch::named_barrier_sync(barrier_id(BwdBarrier::kDsReady), 128 * Cfg::kConsumers);
    arch::WgmmaAccF32<Cfg::kDqPartN> dq;
    if (has_dq_part) {
      fill_acc(dq, 0.0f);
      arch::wgmma_fence();
      mm_dq<Cfg>(dq, smem.ds, smem.k, dq_n0);
      arch::wgmma_commit_group();
    }
    arch::wgmma_wait_group<0>();
    arch::wgmma_fence_operand(dv);
    arch::wgmma_fence_operand(dk);
    if (leader) arch::mbarrier_arrive(&smem.qdo_empty[st.stage]);  // this stage's Q and dO are read
    if (has_dq_part) {
      arch::wgmma_fence_operand(dq);
      store_dq_share<Cfg>(p, w, dq, head, row0, rows, dq_n0);
    }
    st.advance();
  });
  store_dk_dv<Cfg>(p, w, dk, dv, key_base);
}

}  // namespace fp8attn::sm90
