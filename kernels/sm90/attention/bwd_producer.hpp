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
/// NOTE: 32-bit fields, the mask rebuilt from them where needed: 64-bit sequence offsets and a
/// MaskParams live across the consumers' loop cost 18 registers, and head_dim 128 spilled
/// (ptxas -warn-spills). Rows and keys fit TMA's 32-bit coordinates anyway.
struct BwdWork {
  int32_t batch = 0, head_kv = 0;
  int32_t block = 0;  ///< key block index n: keys [n·BlockN, (n+1)·BlockN) of the sequence
  int32_t q_offset = 0, k_offset = 0, seqlen_q = 0, seqlen_k = 0;
  int32_t key0 = 0;   ///< n·BlockN
  int32_t keys = 0;   ///< keys of the block inside the sequence (0: the CTA has no work)

  FP8ATTN_HOST_DEVICE MaskParams mask(const BwdArguments& p) const {
    return MaskParams{p.causal, p.window_left, p.window_right, seqlen_q, seqlen_k};
  }
  /// The workspace row of row r of the sequence (bwd_row).
  FP8ATTN_HOST_DEVICE int64_t row(const BwdArguments& p, int32_t r) const {
    return p.cu_seqlens_q != nullptr ? static_cast<int64_t>(q_offset) + r : static_cast<int64_t>(batch) * p.seqlen_q + r;
  }
};

FP8ATTN_HOST_DEVICE BwdWork bwd_work(const BwdArguments& p, unsigned cta, int block_n) {
  BwdWork w;
  w.block = static_cast<int32_t>(cta % static_cast<unsigned>(p.n_blocks));
  const unsigned rest = cta / static_cast<unsigned>(p.n_blocks);
  w.head_kv = static_cast<int32_t>(rest % static_cast<unsigned>(p.heads_kv));
  w.batch = static_cast<int32_t>(rest / static_cast<unsigned>(p.heads_kv));
  const BwdSequence seq = bwd_sequence(p, w.batch);
  w.q_offset = static_cast<int32_t>(seq.q_offset);
  w.k_offset = static_cast<int32_t>(seq.k_offset);
  w.seqlen_q = static_cast<int32_t>(seq.seqlen_q);
  w.seqlen_k = static_cast<int32_t>(seq.seqlen_k);
  w.key0 = w.block * block_n;
  const int32_t left = w.seqlen_k - w.key0;
  w.keys = left <= 0 ? 0 : (left < block_n ? left : block_n);
  return w;
}

/// Calls f(head, row0, rows) for each (query head, query block) that visits the work item's key
/// block, in the engine's order. Producer and consumers walk it alike.
template <class Cfg, class F>
FP8ATTN_ARCH_FN void for_each_visit(const BwdArguments& p, const BwdWork& w, F&& f) {
  const int32_t group = p.heads_q / p.heads_kv;
  const int32_t seqlen_q = w.seqlen_q;
  FP8ATTN_NO_UNROLL
  for (int32_t head = w.head_kv * group; head < (w.head_kv + 1) * group; ++head) {
    FP8ATTN_NO_UNROLL
    for (int32_t row0 = 0; row0 < seqlen_q; row0 += Cfg::kBlockM) {
      const int32_t rows = seqlen_q - row0 < Cfg::kBlockM ? seqlen_q - row0 : Cfg::kBlockM;
      if (!backward_visits(w.mask(p), row0, row0 + rows, Cfg::kBlockN, w.block)) continue;
      f(head, row0, rows);
    }
  }
}

/// The producer warpgroup: its thread 0 issues every load; the others have nothing to do.
template <class Cfg>
FP8ATTN_ARCH_FN void run_bwd_producer(const AttentionBwdParams& p, BwdSharedStorage<Cfg>& smem, const BwdWork& w) {
  if (arch::thread_idx_in_warpgroup() != 0) return;
  const int32_t b = p.cu_seqlens_q != nullptr ? 0 : w.batch;  // packed inputs: one "batch"
  const int32_t key = w.k_offset + w.key0;
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
    const int32_t row = w.q_offset + row0;
    for (int c = 0; c < Cfg::kChunks; ++c) {
      arch::tma_load<4>(smem.q[st.stage][c], p.tma_q, &smem.qdo_full[st.stage], {c * Cfg::kChunkElements, head, row, b});
      arch::tma_load<4>(smem.dout[st.stage][c], p.tma_do, &smem.qdo_full[st.stage],
                        {c * Cfg::kChunkElements, head, row, b});
    }
    st.advance();
  });
}

}  // namespace fp8attn::sm90
