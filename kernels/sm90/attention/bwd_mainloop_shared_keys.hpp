// A consumer warpgroup of the attention backward when the consumers share the block's 64 keys
// (BwdSplit::SharedKeys, head_dim 256), for each (query head, query block) that visits the block
// (bwd_producer.hpp, for_each_visit):
//   Sᵀ, dPᵀ of all 64 keys for the warpgroup's kQueryCols query columns; P and dS on the fragments
//   (bwd_scores.hpp); Pᵀ, dSᵀ and dS to shared memory (bwd_exchange.hpp); after a named barrier,
//   dV += Pᵀ·dO and dK += dSᵀ·Q over all BlockM rows for the warpgroup's head-dim half, and
//   dQ = dS·K for its 64-column parts of head_dim, stored into the workspace.
// NOTE: bit-equal to the CPU engine as the key halves are: splitting a product along N (query
// columns of Sᵀ and dPᵀ; head-dim columns of dV, dK and dQ) leaves every element's sum, over K in
// 16-wide chunks ascending, as it was; dV and dK still see the query rows as K, all of them, in
// the engine's order (heads ascending, then query blocks, then 16-row chunks).
#pragma once

#include <cstdint>

#include "kernels/arch/barrier.hpp"
#include "kernels/arch/mbarrier.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/wgmma.hpp"
#include "kernels/sm90/attention/bwd_config.hpp"
#include "kernels/sm90/attention/bwd_epilogue.hpp"
#include "kernels/sm90/attention/bwd_exchange.hpp"
#include "kernels/sm90/attention/bwd_mma.hpp"
#include "kernels/sm90/attention/bwd_params.hpp"
#include "kernels/sm90/attention/bwd_producer.hpp"
#include "kernels/sm90/attention/bwd_scores.hpp"
#include "kernels/sm90/gemm/gemm_pipeline.hpp"
#include "kernels/sm90/mask.hpp"
#include "kernels/sm90/softmax_math.hpp"

namespace fp8attn::sm90 {

/// A consumer warpgroup's whole work item.
template <class Cfg>
FP8ATTN_ARCH_FN void run_bwd_consumer_shared_keys(const AttentionBwdParams& p, BwdSharedStorage<Cfg>& smem,
                                                  const BwdWork& w) {
  static_assert(Cfg::kSplit == BwdSplit::SharedKeys, "the key-halves consumer is bwd_mainloop.hpp");
  const unsigned consumer = arch::warpgroup_idx() - 1;
  const unsigned t = arch::thread_idx_in_warpgroup();
  const bool leader = t == 0;
  const int32_t row_base = static_cast<int32_t>(Cfg::kQueryCols * consumer);  // first query column of Sᵀ, dPᵀ
  const int n0 = Cfg::kDkvCols * static_cast<int>(consumer);                   // first head-dim column of dK, dV
  const int32_t key_lo = static_cast<int32_t>(16 * (t / 32) + (t % 32) / 4);  // h = 0 row's key (of all 64)
  const float scale_log2 = p.softmax_scale * kLog2e;  // the engine's scale_log2
  int32_t* key_rows = smem.key_rows[128 * consumer + t];  // the rows that see the thread's two keys
  store_key_rows(w.mask(p), w.key0 + key_lo, key_rows);
  arch::WgmmaAccF32<Cfg::kDkvCols> dk, dv;
  fill_acc(dk, 0.0f);
  fill_acc(dv, 0.0f);
  arch::mbarrier_wait_parity(&smem.kv_full, 0);
  PipelineState<Cfg::kStages> st{0, 0};
  for_each_visit<Cfg>(p, w, [&](int32_t head, int32_t row0, int32_t rows) {
    arch::mbarrier_wait_parity(&smem.qdo_full[st.stage], st.phase);
    arch::WgmmaAccF32<Cfg::kQueryCols> s, dp;
    // NOTE: scale-d is 0 on the first wgmma, but its asm reads the registers (the forward's note).
    fill_acc(s, 0.0f);
    fill_acc(dp, 0.0f);
    arch::wgmma_fence();
    mm_rows_by_rows<Cfg>(s, smem.k, 0, smem.q[st.stage], row_base);
    arch::wgmma_commit_group();
    mm_rows_by_rows<Cfg>(dp, smem.v, 0, smem.dout[st.stage], row_base);
    arch::wgmma_commit_group();
    // The warpgroup's columns are rows row0 + row_base.. of the sequence; past `rows` they are
    // padding, outside every key's visible rows, and their LSE and D are not loaded.
    const BwdStepMask mask = step_mask(key_rows, row0 + row_base);
    const int64_t first_row = w.row(p, row0 + row_base) * p.heads_q + head;
    const int32_t my_rows = rows - row_base;
    arch::wgmma_wait_group<1>();
    arch::wgmma_fence_operand(s);
    recompute_p(s, mask, load_row_values(p.lse_log2 + first_row, p.heads_q, my_rows), scale_log2);
    arch::wgmma_wait_group<0>();
    arch::wgmma_fence_operand(dp);
    arch::WgmmaAFragment pf[Cfg::kQueryCols / 16], dsf[Cfg::kQueryCols / 16];
    grad_scores(s, dp, mask, load_row_values(p.delta + first_row, p.heads_q, my_rows), pf, dsf);

    // The exchange tiles of the last step may still be read by another warpgroup's dV, dK or dQ
    // wgmma until all pass here.
    arch::named_barrier_sync(barrier_id(BwdBarrier::kDsFree), 128 * Cfg::kConsumers);
    store_exchange<Cfg>(smem.ds, pf, dsf, key_lo, row_base);
    arch::fence_proxy_async_shared_cta();  // generic-proxy writes, read by wgmma (async proxy)
    if (Cfg::kFault != BwdFault::DropDsReadyBarrier || consumer != 1)
      arch::named_barrier_sync(barrier_id(BwdBarrier::kDsReady), 128 * Cfg::kConsumers);

    arch::wgmma_fence();
    mma_over_rows_smem<Cfg>(dv, exchange_tile<Cfg>(smem.ds, BwdExchangeTile::Pt), smem.dout[st.stage], n0);
    mma_over_rows_smem<Cfg>(dk, exchange_tile<Cfg>(smem.ds, BwdExchangeTile::DsT), smem.q[st.stage], n0);
    arch::wgmma_commit_group();
    // NOTE: dV and dK complete before dQ is issued: dQ's part (32 registers) is then live next to
    // dK and dV (128) only, as in the key halves.
    arch::wgmma_wait_group<0>();
    arch::wgmma_fence_operand(dv);
    arch::wgmma_fence_operand(dk);
    if (leader) arch::mbarrier_arrive(&smem.qdo_empty[st.stage]);  // this stage's Q and dO are read
    // NOTE: one 64-column part at a time, so that a part's accumulators (32) rather than the
    // half's (64) sit beside dK and dV.
    FP8ATTN_UNROLL
    for (int part = 0; part < Cfg::kDqPartsPerConsumer; ++part) {
      const int dq_n0 = (static_cast<int>(consumer) * Cfg::kDqPartsPerConsumer + part) * Cfg::kDqPartN;
      arch::WgmmaAccF32<Cfg::kDqPartN> dq;
      fill_acc(dq, 0.0f);
      arch::wgmma_fence();
      mm_dq<Cfg>(dq, exchange_tile<Cfg>(smem.ds, BwdExchangeTile::Ds), smem.k, dq_n0);
      arch::wgmma_commit_group();
      arch::wgmma_wait_group<0>();
      arch::wgmma_fence_operand(dq);
      store_dq_share<Cfg>(p, w, dq, head, row0, rows, dq_n0);
    }
    st.advance();
  });
  store_dk_dv<Cfg>(p, w, dk, dv, 0, n0);
}

}  // namespace fp8attn::sm90
