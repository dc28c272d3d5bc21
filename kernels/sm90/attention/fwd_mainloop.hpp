// A consumer warpgroup of the attention forward: for each tile, the main loop over its KV blocks
// (Q·Kᵀ on the tensor cores, the softmax on fragments, P·V with P from registers), then the
// epilogue. The order of every floating-point step is the CPU engine's.
#pragma once

#include <cstdint>

#include "kernels/arch/barrier.hpp"
#include "kernels/arch/mbarrier.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/wgmma.hpp"
#include "kernels/sm90/attention/fwd_config.hpp"
#include "kernels/sm90/attention/fwd_epilogue.hpp"
#include "kernels/sm90/attention/fwd_params.hpp"
#include "kernels/sm90/attention/fwd_softmax.hpp"
#include "kernels/sm90/attention/fwd_tile_scheduler.hpp"
#include "kernels/sm90/gemm/gemm_pipeline.hpp"

namespace fp8attn::sm90 {

/// S = Q·Kᵀ for the warpgroup's 64 rows: head_dim/32 wgmmas stepping K by 32 bytes, moving to the
/// next 128-byte chunk every four (PTX_FACTS.md §3b: the start advances by the unswizzled offset).
template <class Cfg>
FP8ATTN_ARCH_FN void mm_qk(arch::WgmmaAccF32<Cfg::kBlockN>& s, const uint8_t (&q)[Cfg::kChunks][Cfg::kQChunkBytes],
                           const uint8_t (&k)[Cfg::kChunks][Cfg::kKChunkBytes], unsigned consumer) {
  FP8ATTN_UNROLL
  for (int kb = 0; kb < Cfg::kHeadDim / 32; ++kb) {
    const int chunk = kb * 32 / static_cast<int>(Cfg::kChunkBytes);
    const uint32_t offset = (kb * 32) % Cfg::kChunkBytes;
    const uint64_t da = arch::make_wgmma_descriptor(arch::smem_address(q[chunk] + consumer * 64 * Cfg::kChunkBytes), 0,
                                                    Cfg::kAtomBytes, Cfg::kSwizzle);
    const uint64_t db = arch::make_wgmma_descriptor(arch::smem_address(k[chunk]), 0, Cfg::kAtomBytes, Cfg::kSwizzle);
    arch::wgmma_fp8<Cfg::kBlockN>(s, arch::wgmma_descriptor_advance(da, offset), arch::wgmma_descriptor_advance(db, offset),
                                  kb > 0);
  }
}

/// The descriptor of Vᵀ rows [n0, ..) and keys [32·kb, 32·kb + 32): the producer's transpose
/// (canonical no-swizzle layout) or TMA's 32-key slabs (32B swizzle).
template <class Cfg>
FP8ATTN_ARCH_FN uint64_t vt_descriptor(const uint8_t* vt, int n0, int kb, bool tma_slabs) {
  if (tma_slabs)
    return arch::make_wgmma_descriptor(arch::smem_address(vt + kb * Cfg::kVtSlabBytes + n0 * 32), 0,
                                       Cfg::kVtSlabStrideBytes, arch::Swizzle::B32);
  return arch::make_wgmma_descriptor(arch::smem_address(vt + (n0 / 8) * Cfg::kVtStrideBytes + kb * 2 * Cfg::kVtLeadingBytes),
                                     Cfg::kVtLeadingBytes, Cfg::kVtStrideBytes, arch::Swizzle::None);
}

/// acc (+)= P·V[:, n0 : n0 + N] over the block's keys: BlockN/32 wgmmas with P from registers
/// and Vᵀ K-major; the first overwrites acc unless `accumulate`.
template <class Cfg, int N>
FP8ATTN_ARCH_FN void mma_pv(arch::WgmmaAccF32<N>& acc, const arch::WgmmaAFragment (&p)[Cfg::kBlockN / 32],
                            const uint8_t* vt, int n0, bool accumulate, bool tma_slabs) {
  FP8ATTN_UNROLL
  for (int kb = 0; kb < Cfg::kBlockN / 32; ++kb)
    arch::wgmma_fp8<N>(acc, p[kb], vt_descriptor<Cfg>(vt, n0, kb, tma_slabs), accumulate || kb > 0);
}

template <int N>
FP8ATTN_ARCH_FN void fill(arch::WgmmaAccF32<N>& acc, float value) {
  FP8ATTN_UNROLL
  for (int i = 0; i < N / 2; ++i) acc[i] = value;
}

/// The promotion of two-level accumulation: O[first + i] += part[i] (or part·vb with per-block V
/// descales, fused as the engine does). `first` is the part's first register in O's fragment.
/// NOTE: two-level accumulation (DESIGN §3): the FP32 sum on the CUDA cores bounds how many
/// truncated tensor-core additions an output sees; a per-block V descale promotes each block.
template <int N, int M>
FP8ATTN_ARCH_FN void promote_into(arch::WgmmaAccF32<N>& o, const arch::WgmmaAccF32<M>& part, int first, bool scaled,
                                  float vb) {
  // NOTE: the branch stays outside the loop, so ptxas does not keep both results of all registers.
  if (scaled) {
    FP8ATTN_UNROLL
    for (int i = 0; i < M / 2; ++i) o[first + i] = fmaf(part[i], vb, o[first + i]);
  } else {
    FP8ATTN_UNROLL
    for (int i = 0; i < M / 2; ++i) o[first + i] = o[first + i] + part[i];
  }
}

/// A consumer warpgroup's loop over the CTA's tiles.
template <class Cfg>
FP8ATTN_ARCH_FN void run_consumer(const AttentionFwdParams& p, FwdSharedStorage<Cfg>& smem, FwdTelemetrySlots& slots) {
  const unsigned consumer = arch::warpgroup_idx() - 1;
  const bool wg_leader = arch::thread_idx_in_warpgroup() == 0;
  const unsigned t = arch::thread_idx_in_warpgroup();
  // This thread's h = 0 row in the tile (wgmma_d_coord).
  const int32_t my_row = static_cast<int32_t>(64 * consumer + 16 * (t / 32) + (t % 32) / 4);
  const unsigned my_turn = barrier_id(FwdBarrier::kConsumerTurn0, consumer);
  const unsigned next_turn = barrier_id(FwdBarrier::kConsumerTurn0, (consumer + 1) % Cfg::kConsumers);
  // The last consumer opens the first turn; consumer 0 takes the matching extra turn at the end.
  if (consumer == Cfg::kConsumers - 1) arch::named_barrier_arrive(barrier_id(FwdBarrier::kConsumerTurn0), 256);
  PipelineState<Cfg::kStages> kv{0, 0};
  uint32_t q_phase = 0;
  FwdThreadTelemetry tel;
  for (int64_t index = arch::block_idx().x; index < p.num_tiles; index += arch::grid_dim().x) {
    const FwdTile tile = fwd_tile(p, index, Cfg::kBlockM, Cfg::kBlockN);
    if (tile.rows == 0) continue;
    // Host arguments folded once per tile, as the engine does.
    const float q_descale = p.q_descale.at(tile.batch, tile.head_kv);
    const float k_descale = p.k_descale.at(tile.batch, tile.head_kv);
    const float v_descale = p.v_descale.at(tile.batch, tile.head_kv);
    FwdBlockSoftmax sb{};
    sb.scale_log2 = logit_scale_log2(p.softmax_scale, q_descale, k_descale);
    const float natural_scale = p.softmax_scale * q_descale * k_descale;
    sb.tie_tol_raw = p.stabilized_tie_tol / natural_scale;
    sb.row_lo = tile.row0 + my_row;
    sb.valid[0] = my_row < tile.rows;
    sb.valid[1] = my_row + 8 < tile.rows;
    const float q_block = p.q_block_descale.at(tile.batch, tile.head, tile.m_block);
    sb.apply_block_factor = p.q_block_descale.data != nullptr || p.k_block_descale.data != nullptr;
    const bool v_blocks = p.v_block_descale.data != nullptr;

    constexpr bool kEveryN = Cfg::kPromotion == PvPromotion::EveryN;
    arch::WgmmaAccF32<Cfg::kHeadDim> o;
    fill(o, 0.0f);
    [[maybe_unused]] arch::WgmmaAccF32<kEveryN ? Cfg::kHeadDim : 16> fresh;  // EveryN: lives across blocks
    if constexpr (kEveryN) fill(fresh, 0.0f);
    FwdRowState rows{{kNegInf, kNegInf}, {0.0f, 0.0f}};
    arch::mbarrier_wait_parity(&smem.q_full, q_phase);
    q_phase ^= 1u;

    const int32_t blocks = static_cast<int32_t>(tile.kv.count());
    for (int32_t step = 0; step < blocks; ++step, kv.advance()) {
      const KeyBlock block = tile.kv.at(step);
      sb.key0 = static_cast<int32_t>(block.key_begin);
      sb.keys = static_cast<int32_t>(block.key_end - block.key_begin);
      sb.full = block_fully_visible(tile.mask, tile.row0, tile.row0 + tile.rows, block.key_begin, block.key_end);
      sb.block_factor = q_block * p.k_block_descale.at(tile.batch, tile.head_kv, block.index);

      // S = Q·Kᵀ, on the tensor cores in this consumer's turn (pingpong).
      arch::WgmmaAccF32<Cfg::kBlockN> s;
      // NOTE: scale-d is 0 on the first wgmma, but its asm reads the registers: without this fill
      // ptxas treats last block's P̃ as live into this one and spills O (ptxas -warn-spills).
      fill(s, 0.0f);
      arch::named_barrier_sync(my_turn, 256);
      constexpr uint32_t kPhaseFault = Cfg::kFault == FwdFault::WrongFullPhase ? 1u : 0u;
      arch::mbarrier_wait_parity(&smem.k_full[kv.stage], kv.phase ^ kPhaseFault);
      arch::wgmma_fence();
      mm_qk<Cfg>(s, smem.q, smem.k[kv.stage], consumer);
      arch::wgmma_commit_group();
      if (Cfg::kFault != FwdFault::DropTurnBarrier || consumer != 0) arch::named_barrier_arrive(next_turn, 256);
      arch::wgmma_wait_group<0>();
      arch::wgmma_fence_operand(s);

      float rescale[2];
      uint32_t words[Cfg::kBlockN / 8];
      softmax_block<Cfg::kBlockN, Cfg::kTelemetry>(s, sb, tile.mask, p, rows, rescale, words, tel);
      arch::WgmmaAFragment pf[Cfg::kBlockN / 32];
      FP8ATTN_UNROLL
      for (int kb = 0; kb < Cfg::kBlockN / 32; ++kb) pf[kb] = p_fragment<Cfg::kBlockN>(words, kb);
      FP8ATTN_UNROLL
      for (int i = 0; i < Cfg::kHeadDim / 2; ++i) {
        o[i] *= rescale[(i >> 1) & 1];
        if constexpr (kEveryN) fresh[i] *= rescale[(i >> 1) & 1];
      }
      // NOTE: pins O's rescale here: without it ptxas moved it into the softmax, where S is live,
      // and spilled (the operand fence emits no instruction).
      arch::wgmma_fence_operand(o);

      // O += P·V: into O, into the fresh tile (EveryN), or per column half into a tile that the
      // promotion adds into O at once (EveryBlock; the engine's fresh tile is 0 there).
      arch::mbarrier_wait_parity(&smem.vt_full[kv.stage], kv.phase);
      const float vb = p.v_block_descale.at(tile.batch, tile.head_kv, block.index);
      if constexpr (Cfg::kPromotion == PvPromotion::EveryBlock) {
        FP8ATTN_UNROLL
        for (int n0 = 0; n0 < Cfg::kHeadDim; n0 += Cfg::kPvSplitN) {
          arch::WgmmaAccF32<Cfg::kPvSplitN> part;
          fill(part, 0.0f);  // NOTE: starts the registers' live range here for ptxas (scale-d is 0)
          arch::wgmma_fence();
          mma_pv<Cfg>(part, pf, smem.vt[kv.stage], n0, false, p.v_transposed);
          arch::wgmma_commit_group();
          arch::wgmma_wait_group<0>();
          arch::wgmma_fence_operand(part);
          promote_into(o, part, n0 / 2, v_blocks, vb);
          arch::wgmma_fence_operand(o);
        }
      } else {
        arch::wgmma_fence();
        if constexpr (kEveryN)
          mma_pv<Cfg>(fresh, pf, smem.vt[kv.stage], 0, true, p.v_transposed);
        else
          mma_pv<Cfg>(o, pf, smem.vt[kv.stage], 0, true, p.v_transposed);
        arch::wgmma_commit_group();
        if constexpr (Cfg::kFault == FwdFault::RewritePBeforeWait) pf[0] = p_fragment<Cfg::kBlockN>(words, 1);
        arch::wgmma_wait_group<0>();
        arch::wgmma_fence_operand(o);
        if constexpr (kEveryN) {
          arch::wgmma_fence_operand(fresh);
          if ((step + 1) % p.promote_interval == 0 || step + 1 == blocks) {
            promote_into(o, fresh, 0, false, vb);
            fill(fresh, 0.0f);
          }
        }
      }
      if (wg_leader) arch::mbarrier_arrive(&smem.kv_empty[kv.stage]);  // this stage's K, V, Vᵀ are read
    }
    if (wg_leader) arch::mbarrier_arrive(&smem.q_empty);
    if constexpr (Cfg::kTelemetry) tel.finish_tile(natural_scale);
    store_output<Cfg::kHeadDim>(p, o, rows, tile.batch, tile.head, tile.q_offset + tile.row0 + my_row,
                                tile.q_offset + tile.row0 + tile.rows, sb.scale_log2, v_descale);
  }
  if (consumer == 0) arch::named_barrier_sync(my_turn, 256);
  if constexpr (Cfg::kTelemetry) merge_telemetry<Cfg::kConsumers>(p, tel, slots, barrier_id(FwdBarrier::kTelemetryMerge));
}

}  // namespace fp8attn::sm90
