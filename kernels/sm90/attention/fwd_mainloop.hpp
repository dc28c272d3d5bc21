// A consumer warpgroup of the attention forward: for each tile, the main loop over its KV blocks
// (Q·Kᵀ on the tensor cores, the softmax on fragments, P·V with P from registers), then the
// epilogue. The order of every floating-point step on O is the CPU engine's.
//
// Two schedules of the same arithmetic (FwdConfig::kIntraWgOverlap):
// - overlapped (FlashAttention-3's intra-warpgroup overlap): issue Q·Kᵀ of block j and P·V of
//   block j − 1, wait for Q·Kᵀ, run the softmax of block j while P·V runs, wait for P·V, rescale
//   O, and only then convert block j's P̃ into the A registers that P·V of block j − 1 read;
// - serial (EveryBlock promotion, and BF16 at head_dim 64 and at 256 with telemetry:
//   fwd_config.hpp): Q·Kᵀ, softmax, P·V and promotion of one block at a time.
// NOTE: both apply to O, per block j, O ← r_j·O, then O += P_j·V_j on the tensor cores, then the
// promotion: the overlapped order only moves "O += P_j·V_j" past the softmax of block j + 1,
// which reads neither O nor P_j, so the engine's bits are unchanged.
#pragma once

#include <cstdint>

#include "kernels/arch/barrier.hpp"
#include "kernels/arch/mbarrier.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/wgmma.hpp"
#include "kernels/sm90/attention/fwd_block_step.hpp"
#include "kernels/sm90/attention/fwd_config.hpp"
#include "kernels/sm90/attention/fwd_epilogue.hpp"
#include "kernels/sm90/attention/fwd_params.hpp"
#include "kernels/sm90/attention/fwd_softmax.hpp"
#include "kernels/sm90/attention/fwd_tile_scheduler.hpp"
#include "kernels/sm90/gemm/gemm_pipeline.hpp"

namespace fp8attn::sm90 {

/// The blocks of one tile, overlapped: the softmax of block j runs while the tensor cores do
/// P·V of block j − 1 (the file comment gives the order). `kv` enters at the tile's first block
/// and leaves one past its last.
template <class Cfg, int F>
FP8ATTN_ARCH_FN void run_blocks_overlapped(const AttentionFwdParams& p, FwdSharedStorage<Cfg>& smem,
                                           const FwdTile& tile, const FwdTileArgs& ta, const FwdConsumerRole& role,
                                           FwdBlockSoftmax& sb, PipelineState<Cfg::kStages>& kv,
                                           arch::WgmmaAccF32<Cfg::kHeadDimO>& o, arch::WgmmaAccF32<F>& fresh,
                                           FwdRowState& rows, FwdThreadTelemetry& tel) {
  constexpr bool kEveryN = Cfg::kPromotion == PvPromotion::EveryN;
  const BasicKvSchedule<int32_t> sched = tile.kv.as<int32_t>();  // NOTE: 32-bit: registers
  const int32_t blocks = sched.count();
  if (blocks == 0) return;
  arch::WgmmaAccF32<Cfg::kBlockN> s;
  float rescale[2];
  arch::WgmmaAFragment pf[Cfg::kPFragments];

  // Block 0: Q·Kᵀ and the softmax alone; its P·V goes out with the next block's Q·Kᵀ.
  begin_block(sb, p, tile, sched, 0, ta);
  issue_qk<Cfg>(s, smem, kv, role);
  pass_turn<Cfg>(role);
  arch::wgmma_wait_group<0>();
  release_k<Cfg>(smem, kv, role);
  arch::wgmma_fence_operand(s);
  softmax_block<Cfg::kBlockN, Cfg::kTelemetry, Cfg::kBf16>(s, sb, p, rows, rescale, tel,
                                                           token_scales_of<Cfg>(p, smem, kv.stage));
  rescale_o<Cfg>(o, fresh, rescale);
  make_p<Cfg>(pf, s, sb, tel, token_scales_of<Cfg>(p, smem, kv.stage));

  // NOTE: the plain blocks run in a loop of their own, so that the steady state's body holds only
  // their softmax (no mask, descale or stabilized branch: fewer instructions and shuffles per
  // block, tools/sass_mainloop_counts.py), as FlashAttention-3 runs its unmasked blocks apart
  // from its masking steps. Three loops in the schedule's order: the general step up to the
  // first plain block, the plain step while blocks are plain, the general step for the rest
  // (which a schedule with plain blocks in two runs would also reach). Every block gets the same
  // operations in the same order whichever loop runs it, so the bits do not change. The loops
  // test each block rather than keep the runs' bounds: two more live registers spilled the
  // every-N kernels (ptxas -warn-spills).
  // NOTE: not in the every-N kernels with telemetry: there the plain loop's copy of the step spilled
  // one register (ptxas -warn-spills, 4 bytes at head_dims 64 and 128), so every block takes the
  // general step in one loop, as before the split.
  if constexpr (kEveryN && Cfg::kTelemetry) {
    for (int32_t step = 1; step < blocks; ++step)
      overlapped_step<Cfg, F, false>(p, smem, tile, ta, role, sb, kv, o, fresh, rows, tel, sched, step, s, rescale, pf);
  } else {
    int32_t step = 1;
    for (; step < blocks && !block_is_plain<Cfg::kBlockN>(ta, sched, step); ++step)
      overlapped_step<Cfg, F, false>(p, smem, tile, ta, role, sb, kv, o, fresh, rows, tel, sched, step, s, rescale, pf);
    for (; step < blocks && block_is_plain<Cfg::kBlockN>(ta, sched, step); ++step)
      overlapped_step<Cfg, F, true>(p, smem, tile, ta, role, sb, kv, o, fresh, rows, tel, sched, step, s, rescale, pf);
    for (; step < blocks; ++step)
      overlapped_step<Cfg, F, false>(p, smem, tile, ta, role, sb, kv, o, fresh, rows, tel, sched, step, s, rescale, pf);
  }

  // The last block's P·V, and its promotion (the last block always closes an interval).
  if constexpr (kEveryN) issue_pv<Cfg>(fresh, pf, smem, kv, role.col0, p.v_transposed);
  else issue_pv<Cfg>(o, pf, smem, kv, role.col0, p.v_transposed);
  arch::wgmma_wait_group<0>();
  arch::wgmma_fence_operand(o);
  release_kv<Cfg>(p, smem, kv.stage, role);
  if constexpr (kEveryN) {
    arch::wgmma_fence_operand(fresh);
    promote_into(o, fresh, 0, false, 1.0f);
  }
  kv.advance();
}

/// One block of the serial loop (run_blocks_serial): Q·Kᵀ, softmax, P·V (and its promotion).
/// kPlain: the block is plain (block_is_plain), and its softmax compiles none of the optional passes.
template <class Cfg, int F, bool kPlain>
FP8ATTN_ARCH_FN void serial_step(const AttentionFwdParams& p, FwdSharedStorage<Cfg>& smem, const FwdTile& tile,
                                 const FwdTileArgs& ta, const FwdConsumerRole& role, FwdBlockSoftmax& sb,
                                 PipelineState<Cfg::kStages>& kv, arch::WgmmaAccF32<Cfg::kHeadDimO>& o,
                                 arch::WgmmaAccF32<F>& fresh, FwdRowState& rows, FwdThreadTelemetry& tel,
                                 const BasicKvSchedule<int32_t>& sched, int32_t step) {
  const KeyBlock block = begin_block(sb, p, tile, sched, step, ta);
  arch::WgmmaAccF32<Cfg::kBlockN> s;
  issue_qk<Cfg>(s, smem, kv, role);
  pass_turn<Cfg>(role);
  arch::wgmma_wait_group<0>();
  release_k<Cfg>(smem, kv, role);
  arch::wgmma_fence_operand(s);

  float rescale[2];
  // NOTE: a paged cache's per-token descales: E4M3 promotes every block with the block's largest
  // V descale (fwd_kv_token_scales.hpp); v_largest stays 1 without them and under BF16 P.
  const float* token_scales = token_scales_of<Cfg>(p, smem, kv.stage);
  float v_largest = 1.0f;
  softmax_block<Cfg::kBlockN, Cfg::kTelemetry, Cfg::kBf16, kPlain>(s, sb, p, rows, rescale, tel, token_scales,
                                                                   &v_largest);
  arch::WgmmaAFragment pf[Cfg::kPFragments];
  make_p<Cfg>(pf, s, sb, tel, token_scales);
  rescale_o<Cfg>(o, fresh, rescale);

  if constexpr (Cfg::kPromotion == PvPromotion::Off) {
    issue_pv<Cfg>(o, pf, smem, kv, 0, p.v_transposed);
    if constexpr (Cfg::kFault == FwdFault::RewritePBeforeWait) pf[0] = p_fragment<Cfg::kBlockN>(s, 1);
    arch::wgmma_wait_group<0>();
    arch::wgmma_fence_operand(o);
  } else {
    // The engine's fresh tile is 0 here; scaled by the block's V descale when there are
    // per-block ones.
    arch::mbarrier_wait_parity(&smem.vt_full[kv.stage], kv.phase);
    const float vb = kv_token_pv_factor(p.v_block_descale.at(tile.batch, tile.head_kv, block.index), v_largest);
    FP8ATTN_UNROLL
    for (int n0 = 0; n0 < Cfg::kHeadDimO; n0 += Cfg::kPvSplitN) {
      arch::WgmmaAccF32<Cfg::kPvSplitN> part;
      fill(part, 0.0f);  // NOTE: starts the registers' live range here for ptxas (scale-d is 0)
      arch::wgmma_fence();
      mma_pv<Cfg>(part, pf, pv_operand(smem, kv.stage), n0, false, p.v_transposed);
      arch::wgmma_commit_group();
      if constexpr (Cfg::kFault == FwdFault::RewritePBeforeWait) pf[0] = p_fragment<Cfg::kBlockN>(s, 1);
      arch::wgmma_wait_group<0>();
      arch::wgmma_fence_operand(part);
      promote_into(o, part, n0 / 2, ta.v_blocks, vb);
      arch::wgmma_fence_operand(o);
    }
  }
  release_kv<Cfg>(p, smem, kv.stage, role);  // this stage's V, Vᵀ (and descales) are read
}

/// The blocks of one tile, one at a time: Q·Kᵀ, softmax, P·V (Off runs here for the BF16 kernels
/// that fwd_config.hpp does not overlap, and where a test config forces the serial order,
/// tests/kernels/test_fp8_fwd_emu_checks.cpp). With EveryBlock promotion, per 64-column part of
/// O, a fresh tile that lives only during its P·V is added into O at once.
/// NOTE: EveryBlock is not overlapped: its fresh parts would have to live across the next
/// block's softmax, next to S, O and P (head_dim 128: 112 + 64 + 64 + 28 registers, over 240).
template <class Cfg, int F>
FP8ATTN_ARCH_FN void run_blocks_serial(const AttentionFwdParams& p, FwdSharedStorage<Cfg>& smem, const FwdTile& tile,
                                       const FwdTileArgs& ta, const FwdConsumerRole& role, FwdBlockSoftmax& sb,
                                       PipelineState<Cfg::kStages>& kv, arch::WgmmaAccF32<Cfg::kHeadDimO>& o,
                                       arch::WgmmaAccF32<F>& fresh, FwdRowState& rows, FwdThreadTelemetry& tel) {
  static_assert(Cfg::kPromotion != PvPromotion::EveryN, "EveryN runs overlapped (its fresh tile lives across blocks)");
  static_assert(Cfg::kHeadDimSplit == 1, "a warpgroup owns all of O's columns here");
  const BasicKvSchedule<int32_t> sched = tile.kv.as<int32_t>();  // NOTE: 32-bit: registers
  const int32_t blocks = sched.count();
  // NOTE: plain blocks in a loop of their own, as in run_blocks_overlapped; not in the every-block
  // kernels at head_dims 128 and 256 nor in the serial decode kernel (BF16, head_dim 64), where the
  // plain loop's copy of the step spilled (ptxas -warn-spills: 4 to 44 bytes), so every block
  // takes the general step in one loop there.
  if constexpr ((Cfg::kPromotion == PvPromotion::EveryBlock && Cfg::kHeadDim > 64) || Cfg::kDecode) {
    for (int32_t step = 0; step < blocks; ++step, kv.advance())
      serial_step<Cfg, F, false>(p, smem, tile, ta, role, sb, kv, o, fresh, rows, tel, sched, step);
  } else {
    int32_t step = 0;
    for (; step < blocks && !block_is_plain<Cfg::kBlockN>(ta, sched, step); ++step, kv.advance())
      serial_step<Cfg, F, false>(p, smem, tile, ta, role, sb, kv, o, fresh, rows, tel, sched, step);
    for (; step < blocks && block_is_plain<Cfg::kBlockN>(ta, sched, step); ++step, kv.advance())
      serial_step<Cfg, F, true>(p, smem, tile, ta, role, sb, kv, o, fresh, rows, tel, sched, step);
    for (; step < blocks; ++step, kv.advance())
      serial_step<Cfg, F, false>(p, smem, tile, ta, role, sb, kv, o, fresh, rows, tel, sched, step);
  }
}

/// This warpgroup's O stage (FwdConfig::kTmaOut): its boxes in the stage of its own, or its 64
/// rows of each Q chunk (kOStageInQ; BF16: one box per 128-byte chunk, kOBoxBytes into it per
/// warpgroup, as Q's TMA load placed the rows).
template <class Cfg>
FP8ATTN_ARCH_FN uint8_t* o_stage_of(FwdSharedStorage<Cfg>& smem, const FwdConsumerRole& role) {
  if constexpr (Cfg::kOStageInQ) return &smem.q[0][0] + role.rows * Cfg::kOBoxBytes;
  else return smem.o_stage + role.consumer * (Cfg::kOBoxes / Cfg::kORounds) * Cfg::kOBoxBytes;
}

/// A consumer warpgroup's loop over the CTA's tiles.
template <class Cfg>
FP8ATTN_ARCH_FN void run_consumer(const AttentionFwdParams& p, FwdSharedStorage<Cfg>& smem, FwdTelemetrySlots& slots) {
  const FwdConsumerRole role = consumer_role<Cfg>();
  const unsigned t = arch::thread_idx_in_warpgroup();
  // This thread's h = 0 row in the tile (wgmma_d_coord).
  const int32_t my_row = static_cast<int32_t>(64 * role.rows + 16 * (t / 32) + (t % 32) / 4);
  // The last consumer opens the first turn; consumer 0 takes the matching extra turn at the end.
  if (role.consumer == Cfg::kConsumers - 1) arch::named_barrier_arrive(barrier_id(FwdBarrier::kConsumerTurn0), 256);
  PipelineState<Cfg::kStages> kv{0, 0};
  uint32_t q_phase = 0;
  FwdThreadTelemetry tel;
  if constexpr (Cfg::kTelemetry) init_telemetry_slot(slots);
  for (int64_t index = arch::block_idx().x; index < p.num_tiles; index += arch::grid_dim().x) {
    const FwdTile tile = fwd_tile(p, index, Cfg::kBlockM, Cfg::kBlockN);
    if (tile.rows == 0) continue;
    // Host arguments folded once per tile, as the engine does.
    const float q_descale = p.q_descale.at(tile.batch, tile.head_kv);
    const float k_descale = p.k_descale.at(tile.batch, tile.head_kv);
    FwdBlockSoftmax sb{};
    const LogitScales ls = logit_scales(p.softmax_scale, q_descale, k_descale, p.stabilized_tie_tol);
    sb.scale_log2 = ls.scale_log2;
    sb.tie_tol_raw = ls.tie_tol_raw;
    sb.row_lo = tile.row0 + my_row;
    sb.valid[0] = my_row < tile.rows;
    sb.valid[1] = my_row + 8 < tile.rows;
    sb.apply_block_factor = p.q_block_descale.data != nullptr || p.k_block_descale.data != nullptr;
    FP8ATTN_UNROLL
    for (int h = 0; h < 2; ++h) {
      const KeyRange vis = visible_keys(tile.mask, sb.row_lo + 8 * h);
      sb.vis_first[h] = static_cast<int32_t>(vis.first);
      sb.vis_last[h] = static_cast<int32_t>(vis.last);
    }
    const KeyRange all = keys_seen_by_all(tile.mask, tile.row0, tile.row0 + tile.rows);
    const FwdTileArgs ta{p.q_block_descale.at(tile.batch, tile.head, tile.m_block), tile_v_blocks(p),
                         static_cast<int32_t>(all.first), static_cast<int32_t>(all.last),
                         !p.stabilized && !sb.apply_block_factor && p.paged.k_scale == nullptr};

    constexpr bool kEveryN = Cfg::kPromotion == PvPromotion::EveryN;
    arch::WgmmaAccF32<Cfg::kHeadDimO> o;
    fill(o, 0.0f);
    [[maybe_unused]] arch::WgmmaAccF32<kEveryN ? Cfg::kHeadDimO : 16> fresh;  // EveryN: lives across blocks
    if constexpr (kEveryN) fill(fresh, 0.0f);
    FwdRowState rows{{kNegInf, kNegInf}, {0.0f, 0.0f}};
    // NOTE: a tile without KV blocks has no Q load to wait for (run_loads): O = 0, LSE = −inf.
    // Its O does not go through a stage in Q's buffer (kOStageInQ): the producer may be loading
    // the next tile's Q there.
    const bool stage_o = Cfg::kTmaOut && p.tma_out && (!Cfg::kOStageInQ || tile.kv.count() > 0);
    const bool q_holds_o = Cfg::kOStageInQ && stage_o;  // Q is freed after the stores read O
    if (tile.kv.count() > 0) {
      arch::mbarrier_wait_parity(&smem.q_full, q_phase);
      q_phase ^= 1u;
      if constexpr (Cfg::kIntraWgOverlap) run_blocks_overlapped<Cfg>(p, smem, tile, ta, role, sb, kv, o, fresh, rows, tel);
      else run_blocks_serial<Cfg>(p, smem, tile, ta, role, sb, kv, o, fresh, rows, tel);
      if (role.wg_leader && !q_holds_o) arch::mbarrier_arrive(&smem.q_empty);
    }
    if constexpr (Cfg::kTelemetry) {
      // NOTE: with the head-dim split both warpgroups run the same softmax on the same rows; only
      // the rows' first one counts P̃, so the counts are the engine's (max |logit| is a max).
      if (!role.row_owner) tel.tile_positive = tel.tile_underflow = 0;
      flush_tile_telemetry(tel, ls.natural_scale, slots);
    }
    // NOTE: the telemetry kernels also measure max |O| (amax_o): the same per-CTA merge, and the
    // API runs them whenever a call asks for an amax (capi/forward_api.cpp).
    // NOTE: V's descale is read here, after the blocks, not with Q's and K's: loaded before the
    // loop it held a register through it, which the overlapped head_dim-256 consumer at BlockN 128
    // did not have (ptxas -warn-spills: 4 bytes).
    const float v_descale = p.v_descale.at(tile.batch, tile.head_kv);
    const int64_t row_lo = tile.q_offset + tile.row0 + my_row, rows_end = tile.q_offset + tile.row0 + tile.rows;
    float amax_o;
    if constexpr (Cfg::kTmaOut) {
      amax_o = stage_o ? store_output_tma<Cfg, Cfg::kTelemetry>(
                               p, o_stage_of<Cfg>(smem, role),
                               barrier_id(FwdBarrier::kOStage0, role.consumer), role.wg_leader, o, rows, tile.batch,
                               tile.head, tile.row0 + 64 * static_cast<int32_t>(role.rows), row_lo, rows_end,
                               role.col0, role.row_owner, sb.scale_log2, v_descale)
                         : store_output<Cfg::kHeadDimO, Cfg::kTelemetry>(p, o, rows, tile.batch, tile.head, row_lo,
                                                                         rows_end, role.col0, role.row_owner,
                                                                         sb.scale_log2, v_descale);
    } else {
      amax_o = store_output<Cfg::kHeadDimO, Cfg::kTelemetry>(p, o, rows, tile.batch, tile.head, row_lo, rows_end,
                                                             role.col0, role.row_owner, sb.scale_log2, v_descale);
    }
    if constexpr (Cfg::kOStageInQ) {
      if (q_holds_o) {
        wait_o_stage_read(role.wg_leader);
        if (role.wg_leader) arch::mbarrier_arrive(&smem.q_empty);
      }
    }
    if constexpr (Cfg::kTelemetry) flush_amax_o(amax_o, slots);
  }
  if constexpr (Cfg::kTmaOut) wait_o_stage_read(role.wg_leader);
  if (role.consumer == 0) arch::named_barrier_sync(role.my_turn, 256);
  if constexpr (Cfg::kTelemetry) merge_telemetry<Cfg::kConsumers>(p, slots, barrier_id(FwdBarrier::kTelemetryMerge));
}

}  // namespace fp8attn::sm90
