// One KV block of a consumer warpgroup's main loop (fwd_mainloop.hpp): who the consumer is, the
// per-tile arguments, the pipeline's waits and releases around Q·Kᵀ and P·V, and the two forms
// of a block's step (overlapped_step, serial_step), each compiled for plain blocks and for the
// general case (block_is_plain).
#pragma once

#include <cstdint>

#include "kernels/arch/barrier.hpp"
#include "kernels/arch/mbarrier.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/wgmma.hpp"
#include "kernels/sm90/attention/fwd_config.hpp"
#include "kernels/sm90/attention/fwd_epilogue.hpp"
#include "kernels/sm90/attention/fwd_mma.hpp"
#include "kernels/sm90/attention/fwd_params.hpp"
#include "kernels/sm90/attention/fwd_softmax.hpp"
#include "kernels/sm90/attention/fwd_tile_scheduler.hpp"
#include "kernels/sm90/gemm/gemm_pipeline.hpp"

namespace fp8attn::sm90 {

/// What a consumer warpgroup knows about itself: its rows, its columns of O and its pingpong
/// barriers.
struct FwdConsumerRole {
  unsigned consumer;   ///< 0.. among the consumer warpgroups
  unsigned rows;       ///< which 64 query rows of the tile: consumer / kHeadDimSplit
  int col0;            ///< first column of O it owns: kHeadDimO · (consumer % kHeadDimSplit)
  bool row_owner;      ///< the first warpgroup of its rows: writes the LSE and counts P̃ (telemetry)
  bool wg_leader;      ///< thread 0 of the warpgroup arrives on the pipeline's empty barriers
  unsigned my_turn;    ///< named barrier this warpgroup waits on for the tensor cores
  unsigned next_turn;  ///< the next consumer's
};

/// This thread's consumer warpgroup's role, from its warpgroup index (warpgroup 0 produces).
template <class Cfg>
FP8ATTN_ARCH_FN FwdConsumerRole consumer_role() {
  FwdConsumerRole role;
  role.consumer = arch::warpgroup_idx() - 1;
  role.rows = role.consumer / Cfg::kHeadDimSplit;
  role.col0 = Cfg::kHeadDimO * static_cast<int>(role.consumer % Cfg::kHeadDimSplit);
  role.row_owner = role.consumer % Cfg::kHeadDimSplit == 0;
  role.wg_leader = arch::thread_idx_in_warpgroup() == 0;
  role.my_turn = barrier_id(FwdBarrier::kConsumerTurn0, role.consumer);
  role.next_turn = barrier_id(FwdBarrier::kConsumerTurn0, (role.consumer + 1) % Cfg::kConsumers);
  return role;
}

/// The per-tile arguments of the block loops, folded once per tile as the engine does.
struct FwdTileArgs {
  float q_block;      ///< per-block Q descale of the tile's query block
  bool v_blocks;      ///< per-block (or per-token) V descales: each block's P·V is scaled at promotion
  int32_t all_first;  ///< keys_seen_by_all of the tile's rows: a block inside is fully visible
  int32_t all_last;   ///< (block_fully_visible, with the mask folded once per tile)
  /// The call has none of the stabilized variant, per-block Q or K descales and a paged cache's
  /// per-token descales: its full blocks are plain (block_is_plain).
  bool plain_call;
};

/// A plain block: a call without the softmax's optional passes (FwdTileArgs::plain_call), every key
/// of the block visible to every row of the tile and no padding column. Its softmax is masked and
/// scaled by nothing beyond scale_log2, so the main loop runs such blocks in a loop of their own
/// whose body compiles none of those branches (softmax_block<..., kPlain = true>), as
/// FlashAttention-3 runs its unmasked blocks apart from its masking steps: the steady state of a
/// long sequence.
template <int kBlockN>
FP8ATTN_ARCH_FN bool block_is_plain(const FwdTileArgs& ta, const BasicKvSchedule<int32_t>& blocks, int32_t step) {
  const KeyBlock block = blocks.at(step);
  const int32_t key0 = static_cast<int32_t>(block.key_begin), key_end = static_cast<int32_t>(block.key_end);
  return ta.plain_call && key_end - key0 == kBlockN && keys_inside<int32_t>(ta.all_first, ta.all_last, key0, key_end);
}

/// Per-block V descales, or a paged cache's per-token ones (which the kernel promotes the same
/// way): each block's P·V is scaled at its promotion (FwdTileArgs::v_blocks).
FP8ATTN_ARCH_FN bool tile_v_blocks(const AttentionFwdParams& p) {
  return p.v_block_descale.data != nullptr || p.paged.k_scale != nullptr;
}

/// Points the softmax at the step-th KV block of the tile: its keys, the mask shortcut and the
/// per-block descale factor.
FP8ATTN_ARCH_FN KeyBlock begin_block(FwdBlockSoftmax& sb, const AttentionFwdParams& p, const FwdTile& tile,
                                     const BasicKvSchedule<int32_t>& blocks, int32_t step, const FwdTileArgs& ta) {
  const KeyBlock block = blocks.at(step);
  sb.key0 = static_cast<int32_t>(block.key_begin);
  sb.keys = static_cast<int32_t>(block.key_end - block.key_begin);
  sb.full = keys_inside<int32_t>(ta.all_first, ta.all_last, sb.key0, sb.key0 + sb.keys);
  sb.block_factor = ta.q_block * p.k_block_descale.at(tile.batch, tile.head_kv, block.index);
  return block;
}

/// In this consumer's pingpong turn: waits for the stage's K and issues S = Q·Kᵀ (one commit
/// group, not waited for).
template <class Cfg>
FP8ATTN_ARCH_FN void issue_qk(arch::WgmmaAccF32<Cfg::kBlockN>& s, FwdSharedStorage<Cfg>& smem,
                              const PipelineState<Cfg::kStages>& kv, const FwdConsumerRole& role) {
  // NOTE: scale-d is 0 on the first wgmma, but its asm reads the registers: without this fill
  // ptxas treats last block's P̃ as live into this one and spills O (ptxas -warn-spills).
  fill(s, 0.0f);
  arch::named_barrier_sync(role.my_turn, 256);
  constexpr uint32_t kPhaseFault = Cfg::kFault == FwdFault::WrongFullPhase ? 1u : 0u;
  arch::mbarrier_wait_parity(&smem.k_full[kv.stage], kv.phase ^ kPhaseFault);
  arch::wgmma_fence();
  mm_qk<Cfg>(s, smem.q, smem.k[kv.stage], role.rows);
  arch::wgmma_commit_group();
}

/// Frees the stage's K for the producer once this warpgroup's Q·Kᵀ of it has completed (after the
/// wait that covers it); V and Vᵀ stay until P·V has read them (kv_empty).
template <class Cfg>
FP8ATTN_ARCH_FN void release_k(FwdSharedStorage<Cfg>& smem, const PipelineState<Cfg::kStages>& kv,
                               const FwdConsumerRole& role) {
  if (role.wg_leader) arch::mbarrier_arrive(&smem.k_empty[kv.stage]);
}

/// Hands the tensor cores to the next consumer warpgroup (pingpong).
template <class Cfg>
FP8ATTN_ARCH_FN void pass_turn(const FwdConsumerRole& role) {
  if (Cfg::kFault != FwdFault::DropTurnBarrier || role.consumer != 0) arch::named_barrier_arrive(role.next_turn, 256);
}

/// The stage's per-token descales of a paged cache (fwd_kv_token_scales.hpp), or null: read by
/// the every-block E4M3 kernel and by the BF16 kernels (their whole-V rule, kv_cache_math.hpp).
template <class Cfg>
FP8ATTN_ARCH_FN const float* token_scales_of(const AttentionFwdParams& p, FwdSharedStorage<Cfg>& smem, int stage) {
  if constexpr (FwdSharedStorage<Cfg>::kTokenScales)
    if (p.paged.k_scale != nullptr) return smem.kv_token_scale[stage];
  return nullptr;
}

/// Frees the stage (kv_empty) once this warpgroup's P·V of it has completed.
/// NOTE: every thread read the stage's per-token descales with plain loads; the leader's arrival
/// frees them only once all of its warpgroup has (one named barrier, only with the descales).
template <class Cfg>
FP8ATTN_ARCH_FN void release_kv(const AttentionFwdParams& p, FwdSharedStorage<Cfg>& smem, int stage,
                                const FwdConsumerRole& role) {
  if (token_scales_of<Cfg>(p, smem, stage) != nullptr)
    arch::named_barrier_sync(barrier_id(FwdBarrier::kTokenScalesRead0, role.consumer), 128);
  if (role.wg_leader) arch::mbarrier_arrive(&smem.kv_empty[stage]);
}

/// The stage's B operand of P·V: Vᵀ for E4M3 (transposed by the producer or loaded so), V as
/// loaded for BF16 (read N-major). vt_full signals it in both cases.
template <class Cfg>
FP8ATTN_ARCH_FN const uint8_t* pv_operand(const FwdSharedStorage<Cfg>& smem, int stage) {
  if constexpr (Cfg::kBf16) return smem.v_rows(stage);
  else return smem.vt[stage];
}

/// Waits for the stage's V operand and issues acc += P·V[:, col0 : col0 + N] (one commit group, not
/// waited for): with the head-dim split, the warpgroup's half of Vᵀ's rows.
template <class Cfg, int N>
FP8ATTN_ARCH_FN void issue_pv(arch::WgmmaAccF32<N>& acc, const arch::WgmmaAFragment (&pf)[Cfg::kPFragments],
                              FwdSharedStorage<Cfg>& smem, const PipelineState<Cfg::kStages>& kv, int col0,
                              bool v_transposed) {
  arch::mbarrier_wait_parity(&smem.vt_full[kv.stage], kv.phase);
  arch::wgmma_fence();
  mma_pv<Cfg>(acc, pf, pv_operand(smem, kv.stage), col0, true, v_transposed);
  arch::wgmma_commit_group();
}

/// P's A fragments, cast from the FP32 P̃ left in `s`: E4M3 by cast_p_e4m3 (the accumulator's
/// registers in place: pv_key_order.hpp), BF16 by cast_p_bf16, its columns first times V's
/// per-token descales whole when `token_scales` (kv_cache_math.hpp); both count P's telemetry.
/// Called once no P·V reads `pf` any more.
template <class Cfg>
FP8ATTN_ARCH_FN void make_p(arch::WgmmaAFragment (&pf)[Cfg::kPFragments], arch::WgmmaAccF32<Cfg::kBlockN>& s,
                            const FwdBlockSoftmax& sb, FwdThreadTelemetry& tel, const float* token_scales) {
  if constexpr (Cfg::kBf16) {
    if (token_scales != nullptr) apply_v_token_whole<Cfg::kBlockN>(s, token_scales, sb.keys);
    cast_p_bf16<Cfg::kBlockN, Cfg::kTelemetry>(s, sb, pf, tel);
  } else {
    (void)token_scales;  // E4M3 P took V's ratios in the softmax
    cast_p_e4m3<Cfg::kBlockN, Cfg::kTelemetry>(s, sb, pf, tel);
  }
}

/// O ← r·O per row (and the fresh tile with EveryN, whose P·V has not reached O yet).
template <class Cfg, int F>
FP8ATTN_ARCH_FN void rescale_o(arch::WgmmaAccF32<Cfg::kHeadDimO>& o, arch::WgmmaAccF32<F>& fresh,
                               const float (&rescale)[2]) {
  FP8ATTN_UNROLL
  for (int i = 0; i < Cfg::kHeadDimO / 2; ++i) {
    o[i] *= rescale[(i >> 1) & 1];
    if constexpr (Cfg::kPromotion == PvPromotion::EveryN) fresh[i] *= rescale[(i >> 1) & 1];
  }
  // NOTE: pins O's rescale here: without it ptxas moved it into the softmax, where S is live,
  // and spilled (the operand fence emits no instruction).
  arch::wgmma_fence_operand(o);
  if constexpr (Cfg::kPromotion == PvPromotion::EveryN) arch::wgmma_fence_operand(fresh);
}

/// One block of the overlapped loop (run_blocks_overlapped), block `step` ≥ 1: issue its Q·Kᵀ and
/// the P·V of block step − 1, run its softmax while that P·V runs, then rescale O and cast its P.
/// kPlain: the block is plain (block_is_plain), and its softmax compiles none of the optional passes.
template <class Cfg, int F, bool kPlain>
FP8ATTN_ARCH_FN void overlapped_step(const AttentionFwdParams& p, FwdSharedStorage<Cfg>& smem, const FwdTile& tile,
                                     const FwdTileArgs& ta, const FwdConsumerRole& role, FwdBlockSoftmax& sb,
                                     PipelineState<Cfg::kStages>& kv, arch::WgmmaAccF32<Cfg::kHeadDimO>& o,
                                     arch::WgmmaAccF32<F>& fresh, FwdRowState& rows, FwdThreadTelemetry& tel,
                                     const BasicKvSchedule<int32_t>& sched, int32_t step,
                                     arch::WgmmaAccF32<Cfg::kBlockN>& s, float (&rescale)[2],
                                     arch::WgmmaAFragment (&pf)[Cfg::kPFragments]) {
  constexpr bool kEveryN = Cfg::kPromotion == PvPromotion::EveryN;
  const PipelineState<Cfg::kStages> prev = kv;  // the stage of block step − 1, whose P·V is due
  kv.advance();
  begin_block(sb, p, tile, sched, step, ta);
  issue_qk<Cfg>(s, smem, kv, role);
  if constexpr (kEveryN) issue_pv<Cfg>(fresh, pf, smem, prev, role.col0, p.v_transposed);
  else issue_pv<Cfg>(o, pf, smem, prev, role.col0, p.v_transposed);
  pass_turn<Cfg>(role);
  arch::wgmma_wait_group<1>();  // Q·Kᵀ of this block is done; P·V of the last one may run on
  release_k<Cfg>(smem, kv, role);
  arch::wgmma_fence_operand(s);
  softmax_block<Cfg::kBlockN, Cfg::kTelemetry, Cfg::kBf16, kPlain>(s, sb, p, rows, rescale, tel,
                                                                   token_scales_of<Cfg>(p, smem, kv.stage));
  // The planted bug: P of this block written into the registers P·V of the last one still reads.
  if constexpr (Cfg::kFault == FwdFault::RewritePBeforeWait) pf[0] = p_fragment<Cfg::kBlockN>(s, 0);
  arch::wgmma_wait_group<0>();
  arch::wgmma_fence_operand(o);
  release_kv<Cfg>(p, smem, prev.stage, role);  // V, Vᵀ of block step − 1 read
  if constexpr (kEveryN) {
    arch::wgmma_fence_operand(fresh);
    if (step % p.promote_interval == 0) {  // block step − 1 closes an interval
      promote_into(o, fresh, 0, false, 1.0f);
      fill(fresh, 0.0f);
    }
  }
  rescale_o<Cfg>(o, fresh, rescale);
  // after the wait: P·V of block step − 1 no longer reads pf
  make_p<Cfg>(pf, s, sb, tel, token_scales_of<Cfg>(p, smem, kv.stage));
}

}  // namespace fp8attn::sm90
