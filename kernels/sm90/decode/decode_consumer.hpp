// A consumer warpgroup of the decode kernels: the forward's main loop (fwd_mainloop.hpp: Q·Kᵀ,
// the softmax on fragments, P·V, in the CPU engine's order) over decode tiles, whose 64 rows per
// warpgroup are packed (token, query head) rows of one KV group (decode_schedule.hpp). What
// differs from the forward's consumer is per row, not per tile: each row's token picks its mask
// bounds and its output row, each row's head its output head.
// NOTE: the per-tile Q block descale of the forward (FwdTileArgs::q_block) is one factor for all
// rows; with packed heads it would differ per row, so the plan refuses per-block Q descales on
// the decode path when a group has more than one head (lib/backend/gpu/decode_plan.cpp).
#pragma once

#include <cstdint>

#include "kernels/arch/barrier.hpp"
#include "kernels/arch/mbarrier.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/sm90/attention/fwd_mainloop.hpp"
#include "kernels/sm90/decode/decode_epilogue.hpp"
#include "kernels/sm90/decode/decode_tile_scheduler.hpp"

namespace fp8attn::sm90 {

template <class Cfg>
FP8ATTN_ARCH_FN void run_decode_consumer(const AttentionFwdParams& p, FwdSharedStorage<Cfg>& smem) {
  static_assert(Cfg::kDecode && !Cfg::kTelemetry && Cfg::kPromotion != PvPromotion::EveryN && Cfg::kHeadDimSplit == 1,
                "decode kernels: promotion Off or every block, no telemetry, a warpgroup owns all of O's columns");
  const FwdConsumerRole role = consumer_role<Cfg>();  // kHeadDimSplit 1: rows = consumer, all columns
  const unsigned t = arch::thread_idx_in_warpgroup();
  const int32_t my_row = static_cast<int32_t>(64 * role.rows + 16 * (t / 32) + (t % 32) / 4);
  if (role.consumer == Cfg::kConsumers - 1) arch::named_barrier_arrive(barrier_id(FwdBarrier::kConsumerTurn0), 256);
  PipelineState<Cfg::kStages> kv{0, 0};
  uint32_t q_phase = 0;
  FwdThreadTelemetry tel;
  const int32_t group = p.decode.group;
  for (int64_t index = arch::block_idx().x; index < p.num_tiles; index += arch::grid_dim().x) {
    const FwdTile tile = cfg_tile<Cfg>(p, index, smem);
    if (tile.rows == 0) continue;
    const int32_t row_begin = tile.m_block * Cfg::kBlockM;
    // Host arguments folded once per tile, as the engine's decode tile does.
    const float q_descale = p.q_descale.at(tile.batch, tile.head_kv);
    const float k_descale = p.k_descale.at(tile.batch, tile.head_kv);
    FwdBlockSoftmax sb{};
    const LogitScales ls = logit_scales(p.softmax_scale, q_descale, k_descale, p.stabilized_tie_tol);
    sb.scale_log2 = ls.scale_log2;
    sb.tie_tol_raw = ls.tie_tol_raw;
    // NOTE: only the mask bounds of the rows' tokens live through the main loop; the rows' tokens
    // and heads are found again for the epilogue (decode_rows_of): registers, as in the forward.
    FP8ATTN_UNROLL
    for (int h = 0; h < 2; ++h) {
      const KeyRange vis = visible_keys(tile.mask, (row_begin + my_row + 8 * h) / group);
      sb.vis_first[h] = static_cast<int32_t>(vis.first);
      sb.vis_last[h] = static_cast<int32_t>(vis.last);
      sb.valid[h] = my_row + 8 * h < tile.rows;
    }
    sb.row_lo = (row_begin + my_row) / group;
    sb.apply_block_factor = p.q_block_descale.data != nullptr || p.k_block_descale.data != nullptr;
    const int64_t token_end = (row_begin + tile.rows - 1) / group + 1;
    const KeyRange all = keys_seen_by_all(tile.mask, tile.row0, token_end);
    // NOTE: q_len ≤ 8 < BlockM: every token lies in the forward's query block 0.
    const FwdTileArgs ta{p.q_block_descale.at(tile.batch, tile.head, 0), tile_v_blocks(p),
                         static_cast<int32_t>(all.first), static_cast<int32_t>(all.last),
                         !p.stabilized && !sb.apply_block_factor && p.paged.k_scale == nullptr};

    arch::WgmmaAccF32<Cfg::kHeadDimO> o;
    fill(o, 0.0f);
    [[maybe_unused]] arch::WgmmaAccF32<16> fresh;
    FwdRowState rows{{kNegInf, kNegInf}, {0.0f, 0.0f}};
    // NOTE: a tile without KV blocks (a split past the sequence's blocks or past the device's
    // split count) has no Q load (run_loads): O = 0, LSE = −inf, which the combine skips.
    if (tile.kv.count() > 0) {
      arch::mbarrier_wait_parity(&smem.q_full, q_phase);
      q_phase ^= 1u;
      if constexpr (Cfg::kIntraWgOverlap) run_blocks_overlapped<Cfg>(p, smem, tile, ta, role, sb, kv, o, fresh, rows, tel);
      else run_blocks_serial<Cfg>(p, smem, tile, ta, role, sb, kv, o, fresh, rows, tel);
      if (role.wg_leader) arch::mbarrier_arrive(&smem.q_empty);
    }
    const float v_descale = p.v_descale.at(tile.batch, tile.head_kv);
    store_decode_output<Cfg::kHeadDimO>(p, o, rows, decode_rows_of(tile, row_begin, my_row, group), tile.batch,
                                        tile.q_offset, decode_coord(p, index).split, sb.scale_log2, v_descale);
  }
  if (role.consumer == 0) arch::named_barrier_sync(role.my_turn, 256);
}

}  // namespace fp8attn::sm90
