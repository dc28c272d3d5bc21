// A consumer warpgroup of the attention backward when each owns 64 keys of the CTA's key block
// (BwdSplit::KeyHalves, head dims 64 and 128; head_dim 256 is bwd_mainloop_shared_keys.hpp),
// for each (query head, query block) that visits the block (bwd_producer.hpp, for_each_visit):
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
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/wgmma.hpp"
#include "kernels/sm90/attention/bwd_config.hpp"
#include "kernels/sm90/attention/bwd_epilogue.hpp"
#include "kernels/sm90/attention/bwd_mma.hpp"
#include "kernels/sm90/attention/bwd_params.hpp"
#include "kernels/sm90/attention/bwd_producer.hpp"
#include "kernels/sm90/attention/bwd_step.hpp"
#include "kernels/sm90/softmax_math.hpp"

namespace fp8attn::sm90 {

/// A consumer warpgroup's whole work item.
template <class Cfg>
FP8ATTN_ARCH_FN void run_bwd_consumer(const AttentionBwdParams& p, BwdSharedStorage<Cfg>& smem, const BwdWork& w) {
  static_assert(Cfg::kSplit == BwdSplit::KeyHalves, "the shared-keys consumer is bwd_mainloop_shared_keys.hpp");
  const unsigned consumer = arch::warpgroup_idx() - 1;
  const unsigned t = arch::thread_idx_in_warpgroup();
  const bool leader = t == 0;
  const int32_t key_base = static_cast<int32_t>(64 * consumer);  // the warpgroup's first key in the block
  const int32_t key_lo = key_base + static_cast<int32_t>(16 * (t / 32) + (t % 32) / 4);  // h = 0 row's key
  const bool has_dq_part = static_cast<int>(consumer) < Cfg::kDqParts;
  const int dq_n0 = static_cast<int>(consumer) * Cfg::kDqPartN;
  const float scale_log2 = p.softmax_scale * kLog2e;  // the engine's scale_log2
  const int32_t* key_rows = store_consumer_key_rows(p, smem, w, consumer, t, key_lo);
  arch::WgmmaAccF32<Cfg::kHeadDim> dk, dv;
  fill_acc(dk, 0.0f);
  fill_acc(dv, 0.0f);
  for_each_step<Cfg>(p, smem, w, [&](int32_t head, int32_t row0, int32_t rows, uint32_t stage) {
    arch::WgmmaAFragment pf[Cfg::kBlockM / 16], dsf[Cfg::kBlockM / 16];
    score_fragments<Cfg, Cfg::kBlockM>(p, smem, stage, w, key_rows, key_base, 0, head, row0, rows, scale_log2, pf,
                                       dsf);

    // dS of the last step may still be read by another warpgroup's dQ wgmma until all pass here.
    arch::named_barrier_sync(barrier_id(BwdBarrier::kDsFree), 128 * Cfg::kConsumers);
    store_ds<Cfg>(smem.ds[0], dsf, key_lo);
    arch::fence_proxy_async_shared_cta();  // generic-proxy writes, read by wgmma (async proxy)

    arch::wgmma_fence();
    mma_over_rows<Cfg>(dv, pf, smem.dout[stage]);
    mma_over_rows<Cfg>(dk, dsf, smem.q[stage]);
    arch::wgmma_commit_group();

    if (Cfg::kFault != BwdFault::DropDsReadyBarrier || consumer != 1)
      arch::named_barrier_sync(barrier_id(BwdBarrier::kDsReady), 128 * Cfg::kConsumers);
    // NOTE: dV and dK complete before dQ is issued, so Pᵀ and dSᵀ (32 registers) are dead while
    // dQ's 32 live: with the three in flight at once the head_dim 128 consumers spilled.
    finish_dkv_step(dv, dk, &smem.qdo_empty[stage], leader);
    if (has_dq_part) dq_part<Cfg>(p, w, smem.ds[0], smem.k, head, row0, rows, dq_n0);
  });
  store_dk_dv<Cfg>(p, w, dk, dv, key_base);
}

}  // namespace fp8attn::sm90
