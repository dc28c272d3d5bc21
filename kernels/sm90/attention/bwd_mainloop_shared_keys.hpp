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
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/wgmma.hpp"
#include "kernels/sm90/attention/bwd_config.hpp"
#include "kernels/sm90/attention/bwd_epilogue.hpp"
#include "kernels/sm90/attention/bwd_exchange.hpp"
#include "kernels/sm90/attention/bwd_mma.hpp"
#include "kernels/sm90/attention/bwd_params.hpp"
#include "kernels/sm90/attention/bwd_producer.hpp"
#include "kernels/sm90/attention/bwd_step.hpp"
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
  const int32_t* key_rows = store_consumer_key_rows(p, smem, w, consumer, t, key_lo);
  arch::WgmmaAccF32<Cfg::kDkvCols> dk, dv;
  fill_acc(dk, 0.0f);
  fill_acc(dv, 0.0f);
  for_each_step<Cfg>(p, smem, w, [&](int32_t head, int32_t row0, int32_t rows, uint32_t stage) {
    // The warpgroup's columns of Sᵀ and dPᵀ are rows row0 + row_base.. of the sequence.
    arch::WgmmaAFragment pf[Cfg::kQueryCols / 16], dsf[Cfg::kQueryCols / 16];
    score_fragments<Cfg, Cfg::kQueryCols>(p, smem, stage, w, key_rows, 0, row_base, head, row0, rows, scale_log2,
                                          pf, dsf);

    // The exchange tiles of the last step may still be read by another warpgroup's dV, dK or dQ
    // wgmma until all pass here.
    arch::named_barrier_sync(barrier_id(BwdBarrier::kDsFree), 128 * Cfg::kConsumers);
    store_exchange<Cfg>(smem.ds, pf, dsf, key_lo, row_base);
    arch::fence_proxy_async_shared_cta();  // generic-proxy writes, read by wgmma (async proxy)
    if (Cfg::kFault != BwdFault::DropDsReadyBarrier || consumer != 1)
      arch::named_barrier_sync(barrier_id(BwdBarrier::kDsReady), 128 * Cfg::kConsumers);

    arch::wgmma_fence();
    mma_over_rows_smem<Cfg>(dv, exchange_tile<Cfg>(smem.ds, BwdExchangeTile::Pt), smem.dout[stage], n0);
    mma_over_rows_smem<Cfg>(dk, exchange_tile<Cfg>(smem.ds, BwdExchangeTile::DsT), smem.q[stage], n0);
    arch::wgmma_commit_group();
    // NOTE: dV and dK complete before dQ is issued: dQ's part (32 registers) is then live next to
    // dK and dV (128) only, as in the key halves.
    finish_dkv_step(dv, dk, &smem.qdo_empty[stage], leader);
    // NOTE: one 64-column part at a time, so that a part's accumulators (32) rather than the
    // half's (64) sit beside dK and dV.
    FP8ATTN_UNROLL
    for (int part = 0; part < Cfg::kDqPartsPerConsumer; ++part) {
      const int dq_n0 = (static_cast<int>(consumer) * Cfg::kDqPartsPerConsumer + part) * Cfg::kDqPartN;
      dq_part<Cfg>(p, w, exchange_tile<Cfg>(smem.ds, BwdExchangeTile::Ds), smem.k, head, row0, rows, dq_n0);
    }
  });
  store_dk_dv<Cfg>(p, w, dk, dv, 0, n0);
}

}  // namespace fp8attn::sm90
