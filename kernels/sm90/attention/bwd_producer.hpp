// The producer warpgroup of the attention backward: one thread loads K and V of the CTA's key
// block once (TMA, one mbarrier), then streams Q and dO of every (query head, query block) the
// key block is visited by into a kStages-deep mbarrier pipeline, in the engine's order: heads of
// the group ascending, then query blocks ascending.
#pragma once

#include <cstdint>

#include "kernels/arch/mbarrier.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/tma.hpp"
#include "kernels/sm90/attention/bwd_config.hpp"
#include "kernels/sm90/attention/bwd_params.hpp"
#include "kernels/sm90/gemm/gemm_pipeline.hpp"
#include "kernels/sm90/kv_schedule.hpp"

namespace fp8attn::sm90 {

/// The CTA's work item: one key block of one KV head of one sequence (the engine's KeyBlockCoord).
struct BwdWork {
  int32_t batch = 0, head_kv = 0;
  int32_t block = 0;  ///< key block index n: keys [n·BlockN, (n+1)·BlockN) of the sequence
  BwdSequence seq{};
  MaskParams mask{};
  int32_t key0 = 0;   ///< n·BlockN
  int32_t keys = 0;   ///< keys of the block inside the sequence (0: the CTA has no work)
};

FP8ATTN_HOST_DEVICE BwdWork bwd_work(const BwdArguments& p, unsigned cta, int block_n) {
  BwdWork w;
  w.block = static_cast<int32_t>(cta % static_cast<unsigned>(p.n_blocks));
  const unsigned rest = cta / static_cast<unsigned>(p.n_blocks);
  w.head_kv = static_cast<int32_t>(rest % static_cast<unsigned>(p.heads_kv));
  w.batch = static_cast<int32_t>(rest / static_cast<unsigned>(p.heads_kv));
  w.seq = bwd_sequence(p, w.batch);
  w.mask = bwd_mask(p, w.seq);
  w.key0 = w.block * block_n;
  const int64_t left = w.seq.seqlen_k - w.key0;
  w.keys = static_cast<int32_t>(left <= 0 ? 0 : (left < block_n ? left : block_n));
  return w;
}

/// Calls f(head, row0, rows) for each (query head, query block) that visits the work item's key
/// block, in the engine's order. Producer and consumers walk it alike.
template <class Cfg, class F>
FP8ATTN_ARCH_FN void for_each_visit(const BwdArguments& p, const BwdWork& w, F&& f) {
  const int32_t group = p.heads_q / p.heads_kv;
  const int32_t seqlen_q = static_cast<int32_t>(w.seq.seqlen_q);
  FP8ATTN_NO_UNROLL
  for (int32_t head = w.head_kv * group; head < (w.head_kv + 1) * group; ++head) {
    FP8ATTN_NO_UNROLL
    for (int32_t row0 = 0; row0 < seqlen_q; row0 += Cfg::kBlockM) {
      const int32_t rows = seqlen_q - row0 < Cfg::kBlockM ? seqlen_q - row0 : Cfg::kBlockM;
      if (!backward_visits(w.mask, row0, row0 + rows, Cfg::kBlockN, w.block)) continue;
      f(head, row0, rows);
    }
  }
}

/// The producer warpgroup: its thread 0 issues every load; the others have nothing to do.
template <class Cfg>
FP8ATTN_ARCH_FN void run_bwd_producer(const AttentionBwdParams& p, BwdSharedStorage<Cfg>& smem, const BwdWork& w) {
  if (arch::thread_idx_in_warpgroup() != 0) return;
  const int32_t b = p.cu_seqlens_q != nullptr ? 0 : w.batch;  // packed inputs: one "batch"
  const int32_t key = static_cast<int32_t>(w.seq.k_offset) + w.key0;
  // NOTE: the full box bytes, zero-filled rows included (CUTLASS TmaTransactionBytes).
  arch::mbarrier_arrive_expect_tx(&smem.kv_full, 2 * Cfg::kKBytes);
  for (int c = 0; c < Cfg::kChunks; ++c) {
    arch::tma_load<4>(smem.k[c], p.tma_k, &smem.kv_full, {c * Cfg::kChunkElements, w.head_kv, key, b});
    arch::tma_load<4>(smem.v[c], p.tma_v, &smem.kv_full, {c * Cfg::kChunkElements, w.head_kv, key, b});
  }
  PipelineState<Cfg::kStages> st{0, 1};  // the first wait on each empty barrier passes
  for_each_visit<Cfg>(p, w, [&](int32_t head, int32_t row0, int32_t) {
    arch::mbarrier_wait_parity(&smem.qdo_empty[st.stage], st.phase);
    arch::mbarrier_arrive_expect_tx(&smem.qdo_full[st.stage], 2 * Cfg::kQBytes);
    const int32_t row = static_cast<int32_t>(w.seq.q_offset) + row0;
    for (int c = 0; c < Cfg::kChunks; ++c) {
      arch::tma_load<4>(smem.q[st.stage][c], p.tma_q, &smem.qdo_full[st.stage], {c * Cfg::kChunkElements, head, row, b});
      arch::tma_load<4>(smem.dout[st.stage][c], p.tma_do, &smem.qdo_full[st.stage],
                        {c * Cfg::kChunkElements, head, row, b});
    }
    st.advance();
  });
}

}  // namespace fp8attn::sm90
