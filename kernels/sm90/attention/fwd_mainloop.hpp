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
};

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
  if constexpr (Cfg::kBf16) return smem.v[stage];
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

  for (int32_t step = 1; step < blocks; ++step) {
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
    softmax_block<Cfg::kBlockN, Cfg::kTelemetry, Cfg::kBf16>(s, sb, p, rows, rescale, tel,
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
  for (int32_t step = 0; step < blocks; ++step, kv.advance()) {
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
    softmax_block<Cfg::kBlockN, Cfg::kTelemetry, Cfg::kBf16>(s, sb, p, rows, rescale, tel, token_scales,
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
    const float v_descale = p.v_descale.at(tile.batch, tile.head_kv);
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
                         static_cast<int32_t>(all.first), static_cast<int32_t>(all.last)};

    constexpr bool kEveryN = Cfg::kPromotion == PvPromotion::EveryN;
    arch::WgmmaAccF32<Cfg::kHeadDimO> o;
    fill(o, 0.0f);
    [[maybe_unused]] arch::WgmmaAccF32<kEveryN ? Cfg::kHeadDimO : 16> fresh;  // EveryN: lives across blocks
    if constexpr (kEveryN) fill(fresh, 0.0f);
    FwdRowState rows{{kNegInf, kNegInf}, {0.0f, 0.0f}};
    // NOTE: a tile without KV blocks has no Q load to wait for (run_loads): O = 0, LSE = −inf.
    if (tile.kv.count() > 0) {
      arch::mbarrier_wait_parity(&smem.q_full, q_phase);
      q_phase ^= 1u;
      if constexpr (Cfg::kIntraWgOverlap) run_blocks_overlapped<Cfg>(p, smem, tile, ta, role, sb, kv, o, fresh, rows, tel);
      else run_blocks_serial<Cfg>(p, smem, tile, ta, role, sb, kv, o, fresh, rows, tel);
      if (role.wg_leader) arch::mbarrier_arrive(&smem.q_empty);
    }
    if constexpr (Cfg::kTelemetry) {
      // NOTE: with the head-dim split both warpgroups run the same softmax on the same rows; only
      // the rows' first one counts P̃, so the counts are the engine's (max |logit| is a max).
      if (!role.row_owner) tel.tile_positive = tel.tile_underflow = 0;
      flush_tile_telemetry(tel, ls.natural_scale, slots);
    }
    // NOTE: the telemetry kernels also measure max |O| (amax_o): the same per-CTA merge, and the
    // API runs them whenever a call asks for an amax (capi/forward_api.cpp).
    const float amax_o = store_output<Cfg::kHeadDimO, Cfg::kTelemetry>(
        p, o, rows, tile.batch, tile.head, tile.q_offset + tile.row0 + my_row, tile.q_offset + tile.row0 + tile.rows,
        role.col0, role.row_owner, sb.scale_log2, v_descale);
    if constexpr (Cfg::kTelemetry) flush_amax_o(amax_o, slots);
  }
  if (role.consumer == 0) arch::named_barrier_sync(role.my_turn, 256);
  if constexpr (Cfg::kTelemetry) merge_telemetry<Cfg::kConsumers>(p, slots, barrier_id(FwdBarrier::kTelemetryMerge));
}

}  // namespace fp8attn::sm90
