// The producer warpgroup of the attention forward: one thread of warp 0 issues the TMA loads of
// Q (once per tile) and of each KV block's K and V into a multi-stage mbarrier pipeline. For E4M3
// warps 1-3 transpose each block's V into Vᵀ, because an FP8 wgmma's B operand must be K-major
// (PTX ISA 9.0 §9.7.15.5.2: no transpose for FP8) and P·V runs over the block's keys; BF16 V is
// loaded like K and read N-major by the wgmma, so nothing is transposed.
// A decode config (kernels/sm90/decode/decode_config.hpp) walks decode tiles (cfg_tile) with the
// same loads: its Q box holds the tile's packed (token, head) rows.
// From a paged cache thread 0 posts each KV block and warps 1-3 load it (fwd_paged_kv.hpp).
// NOTE: two roles, each with only its own state: the producer has 24 registers (fwd_config.hpp),
// and the tile walk plus the transpose in the same threads spilled.
#pragma once

#include <cstdint>

#include "kernels/arch/barrier.hpp"
#include "kernels/arch/mbarrier.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/tma.hpp"
#include "kernels/arch/warp.hpp"
#include "kernels/sm90/attention/fwd_config.hpp"
#include "kernels/sm90/attention/fwd_kv_token_scales.hpp"
#include "kernels/sm90/attention/fwd_paged_kv.hpp"
#include "kernels/sm90/attention/fwd_params.hpp"
#include "kernels/sm90/attention/fwd_tile_scheduler.hpp"
#include "kernels/sm90/attention/fwd_v_transpose.hpp"
#include "kernels/sm90/decode/decode_tile_scheduler.hpp"
#include "kernels/sm90/gemm/gemm_pipeline.hpp"

namespace fp8attn::sm90 {

/// The KV blocks that the CTA's tiles visit, in all: the transposing warps' whole loop.
template <class Cfg>
FP8ATTN_ARCH_FN int32_t cta_kv_blocks(const AttentionFwdParams& p, const FwdSharedStorage<Cfg>& smem) {
  int32_t blocks = 0;
  for (int32_t index = arch::block_idx().x; index < p.num_tiles; index += arch::grid_dim().x) {
    const BasicFwdTile<int32_t> tile = cfg_tile<Cfg, int32_t>(p, index, smem);
    if (tile.rows > 0) blocks += tile.kv.count();
  }
  return blocks;
}

/// Warps 1-3: Vᵀ of each stage once its V has landed, in the loads' order (the loads of a stage
/// follow the consumers' release of it, so its Vᵀ buffer is free by then): transposed from V, or,
/// for V given keys-contiguous, TMA's Vᵀ put into the P·V key order (pv_key_order.hpp).
template <class Cfg>
FP8ATTN_ARCH_FN void run_v_transposer(const AttentionFwdParams& p, FwdSharedStorage<Cfg>& smem) {
  const uint32_t thread = arch::thread_idx_in_warpgroup() - 32;
  const int32_t blocks = cta_kv_blocks<Cfg>(p, smem);
  PipelineState<Cfg::kStages> kv{0, 0};
  for (int32_t block = 0; block < blocks; ++block, kv.advance()) {
    arch::mbarrier_wait_parity(&smem.v_full[kv.stage], kv.phase);
    if (p.v_transposed) {
      order_vt_slabs<Cfg>(thread, smem.vt[kv.stage], &smem.vt_full[kv.stage]);
    } else {
      // NOTE: the loads wait for the raw V buffer only (run_loads), so the consumers' P·V of the
      // stage's last block may still read its Vᵀ: its release comes first.
      arch::mbarrier_wait_parity(&smem.kv_empty[kv.stage], kv.phase ^ 1u);
      transpose_v<Cfg>(thread, smem.v_rows(kv.stage), smem.vt[kv.stage], &smem.vt_full[kv.stage]);
    }
  }
}

/// Sets FwdPagedFaults::seqused_out_of_range when a sequence of the CTA's tiles has a seqused_k
/// outside [0, max_seqlen_k] (fwd_tile clamped it).
template <class Cfg>
FP8ATTN_ARCH_FN void flag_seqused_k(const AttentionFwdParams& p, const FwdSharedStorage<Cfg>& smem) {
  for (int32_t index = arch::block_idx().x; index < p.num_tiles; index += arch::grid_dim().x) {
    const int32_t b = cfg_tile<Cfg, int32_t>(p, index, smem).batch;
    const int32_t used = p.paged.seqused_k[b * p.paged.seqused_stride];
    if (used < 0 || used > p.seqlen_k) arch::atomic_max_u32(&p.paged.faults->seqused_out_of_range, 1u);
  }
}

/// Warps 1-3 on a paged cache (fwd_paged_kv.hpp): each block that the loading thread posted, in
/// its order. TMA path: the first of them issues the K and V boxes; once V has landed, its rows
/// past the block's keys become zeros (E4M3 in the transpose, BF16 in place) before vt_full.
/// Gather path: all 96 copy K and V, then E4M3 V is transposed.
/// NOTE: the block's coordinates come through shared memory (kv_block), not from a tile walk of
/// their own: the producer's 24 registers did not hold the walk next to the copy (ptxas spilled).
template <class Cfg>
FP8ATTN_ARCH_FN void run_paged_kv(const AttentionFwdParams& p, FwdSharedStorage<Cfg>& smem) {
  // NOTE: one counter for the stage and phase, the thread index read where it is used, and no tile
  // walk (the loading thread posts a block with b = −1 after its last): the loop state is one
  // register next to the copies (fwd_paged_kv.hpp).
  for (uint32_t loaded = 0;; ++loaded) {
    const uint32_t stage = loaded % Cfg::kStages, phase = (loaded / Cfg::kStages) & 1u;
    arch::mbarrier_wait_parity(&smem.kv_request[stage], phase);
    if (arch::smem_load(&smem.kv_block[stage][0]) < 0) break;  // the end (run_loads)
    const PagedBlock at = read_paged_block(p, smem.kv_block[stage]);
    // NOTE: the TMA path's k_full completes on the loading thread's expect_tx and its boxes: the
    // barrier orders the other warps' descale stores before that arrival. The gather path's
    // barrier before its arrival on k_full does so there.
    if constexpr (FwdSharedStorage<Cfg>::kTokenScales)
      if (p.paged.k_scale != nullptr) {
        gather_token_scales<Cfg::kBlockN>(p.paged, smem.kv_token_scale[stage], arch::thread_idx_in_warpgroup() - 32,
                                          at.b, at.head_kv, at.key, at.seqlen_k);
        if (p.paged.box_rows != 0) arch::named_barrier_sync(barrier_id(FwdBarrier::kProducerVt), kTransposeThreads);
      }
    if (p.paged.box_rows == 0) {
      gather_paged_block<Cfg>(p, arch::thread_idx_in_warpgroup() - 32, smem, stage, at);
      if constexpr (!Cfg::kBf16)
        transpose_v<Cfg>(arch::thread_idx_in_warpgroup() - 32, smem.v_rows(stage), smem.vt[stage],
                         &smem.vt_full[stage]);
      continue;
    }
    if (arch::thread_idx_in_warpgroup() == 32) load_paged_block<Cfg>(p, smem, stage, at);
    arch::mbarrier_wait_parity(&smem.v_full[stage], phase);
    constexpr int32_t kBlockN = Cfg::kBlockN;  // NOTE: a prvalue (nvcc: no static member in device code)
    const uint32_t keys = static_cast<uint32_t>(at.seqlen_k - at.key < kBlockN ? at.seqlen_k - at.key : kBlockN);
    const uint32_t thread = arch::thread_idx_in_warpgroup() - 32;
    if constexpr (Cfg::kBf16) {
      zero_paged_v_tail<Cfg>(thread, smem.v_rows(stage), keys, static_cast<uint32_t>(p.paged.box_rows));
      arch::fence_proxy_async_shared_cta();
      arch::named_barrier_sync(barrier_id(FwdBarrier::kProducerVt), kTransposeThreads);
      if (thread == 0) arch::mbarrier_arrive(&smem.vt_full[stage]);
    } else {
      transpose_v<Cfg>(thread, smem.v_rows(stage), smem.vt[stage], &smem.vt_full[stage], keys);
    }
  }
  if (arch::thread_idx_in_warpgroup() == 32) flag_seqused_k<Cfg>(p, smem);  // NOTE: after the loop: registers
}

/// The first thread of warp 0: the loads of the CTA's tiles.
template <class Cfg>
FP8ATTN_ARCH_FN void run_loads(const AttentionFwdParams& p, FwdSharedStorage<Cfg>& smem) {
  // NOTE: one counter of the blocks loaded instead of a PipelineState (stage and phase): one
  // register fewer, which the 24 of the producer need.
  uint32_t loaded = 0;
  uint32_t q_empty_phase = 1;
  for (int32_t index = arch::block_idx().x; index < p.num_tiles; index += arch::grid_dim().x) {
    const BasicFwdTile<int32_t> tile = cfg_tile<Cfg, int32_t>(p, index, smem);
    if (tile.rows == 0) continue;
    // NOTE: 32-bit block walk (fwd_tile<int32_t>): the producer runs in 24 registers.
    const int32_t blocks = tile.kv.count();
    // NOTE: a tile that visits no KV block (no keys, or a mask that hides them all) loads no Q:
    // its consumers read none, so their leader's release of Q would let the next tile's load
    // complete q_full's next phase before a lagging warp of theirs waited on this one (a parity
    // wait cannot tell the two apart). They skip the Q barriers too (run_consumer).
    if (blocks == 0) continue;
    const int32_t b = p.cu_seqlens_q != nullptr ? 0 : tile.batch;  // packed inputs: one "batch"
    arch::mbarrier_wait_parity(&smem.q_empty, q_empty_phase);
    // NOTE: the full box bytes, zero-filled rows included (CUTLASS TmaTransactionBytes).
    arch::mbarrier_arrive_expect_tx(&smem.q_full, Cfg::kChunks * Cfg::kQChunkBytes);
    // NOTE: Q is read by this tile alone: evict-first, as K and V's evict-last (kKvEvict).
    for (int c = 0; c < Cfg::kChunks; ++c)
      arch::tma_load<4, arch::L2Evict::First>(smem.q[c], p.tma_q, &smem.q_full,
                        {c * Cfg::kChunkElements, tile.head, static_cast<int32_t>(tile.q_offset + tile.row0), b});
    q_empty_phase ^= 1u;
    for (int32_t step = 0; step < blocks; ++step, ++loaded) {
      const KeyBlock block = tile.kv.at(step);
      const int32_t key = static_cast<int32_t>(tile.k_offset + block.key_begin);
      // The first wait on each empty barrier passes (parity 1 of a fresh barrier).
      const PipelineState<Cfg::kStages> kv{loaded % Cfg::kStages, ((loaded / Cfg::kStages) & 1u) ^ 1u};
      if (p.paged.block_table != nullptr) {  // warps 1-3 load it (run_paged_kv)
        // NOTE: the whole stage, K and V: both are loaded by warps 1-3 in one go. The wait on
        // k_empty also observes each of its phases before the consumers' next arrival.
        arch::mbarrier_wait_parity(&smem.k_empty[kv.stage], kv.phase);
        arch::mbarrier_wait_parity(&smem.kv_empty[kv.stage], kv.phase);
        post_paged_block(smem.kv_block[kv.stage], &smem.kv_request[kv.stage], {tile.batch, tile.head_kv, key});
        continue;
      }
      // NOTE: K and V have their own empty barriers (FlashAttention-3's pipeline_k / pipeline_v):
      // the consumers free K once their Q·Kᵀ completes, so K of block j + kStages lands while P·V
      // of block j still reads V, instead of after it.
      arch::mbarrier_wait_parity(&smem.k_empty[kv.stage], kv.phase);
      arch::mbarrier_arrive_expect_tx(&smem.k_full[kv.stage], Cfg::kChunks * Cfg::kKChunkBytes);
      for (int c = 0; c < Cfg::kChunks; ++c)
        arch::tma_load<4, kKvEvict<Cfg>>(smem.k[kv.stage][c], p.tma_k, &smem.k_full[kv.stage],
                          {c * Cfg::kChunkElements, tile.head_kv, key, b});
      if constexpr (Cfg::kBf16) {
        arch::mbarrier_wait_parity(&smem.kv_empty[kv.stage], kv.phase);  // V read by P·V
        // BF16 V in K's layout (chunks of 64 dims, 128B swizzle), ready for P·V once loaded.
        arch::mbarrier_arrive_expect_tx(&smem.vt_full[kv.stage], Cfg::kVBytes);
        for (int c = 0; c < Cfg::kChunks; ++c)
          arch::tma_load<4, kKvEvict<Cfg>>(smem.v_rows(kv.stage) + c * Cfg::kKChunkBytes, p.tma_v,
                                           &smem.vt_full[kv.stage], {c * Cfg::kChunkElements, tile.head_kv, key, b});
      } else if (p.v_transposed) {
        arch::mbarrier_wait_parity(&smem.kv_empty[kv.stage], kv.phase);  // Vᵀ read by P·V
        // tma_v is {key, dim, head, batch}: one box of 32 keys x head_dim per slab, into Vᵀ, which
        // warps 1-3 then put into the P·V key order (run_v_transposer).
        arch::mbarrier_arrive_expect_tx(&smem.v_full[kv.stage], Cfg::kVBytes);
        for (int slab = 0; slab < Cfg::kBlockN / 32; ++slab)
          arch::tma_load<4, kKvEvict<Cfg>>(smem.vt[kv.stage] + slab * Cfg::kVtSlabBytes, p.tma_v, &smem.v_full[kv.stage],
                            {key + 32 * slab, 0, tile.head_kv, b});
      } else {
        // NOTE: E4M3 V lands in the one raw buffer (FwdConfig::kVStages) once warps 1-3 have
        // transposed the last block out of it: its Vᵀ is complete (vt_full, which they arrive on
        // after all of them have read V). They wait for the stage's Vᵀ to be free themselves
        // (run_v_transposer). vt_full's next phase needs this load, so the wait cannot pass a
        // later phase.
        if (loaded != 0) {
          const uint32_t last = loaded - 1;
          arch::mbarrier_wait_parity(&smem.vt_full[last % Cfg::kStages], (last / Cfg::kStages) & 1u);
        }
        arch::mbarrier_arrive_expect_tx(&smem.v_full[kv.stage], Cfg::kVBytes);
        arch::tma_load<4, kKvEvict<Cfg>>(smem.v_rows(kv.stage), p.tma_v, &smem.v_full[kv.stage],
                                         {0, tile.head_kv, key, b});
      }
    }
  }
  if (p.paged.block_table != nullptr) {  // the end of the blocks, for warps 1-3 (run_paged_kv)
    const PipelineState<Cfg::kStages> kv{loaded % Cfg::kStages, ((loaded / Cfg::kStages) & 1u) ^ 1u};
    arch::mbarrier_wait_parity(&smem.kv_empty[kv.stage], kv.phase);
    post_paged_block(smem.kv_block[kv.stage], &smem.kv_request[kv.stage], {-1, 0, 0});
  }
}

/// The producer warpgroup: the loads, and for E4M3 Vᵀ in the P·V key order; on a paged cache
/// thread 0 loads Q and posts each KV block, which warps 1-3 load (run_paged_kv).
template <class Cfg>
FP8ATTN_ARCH_FN void run_producer(const AttentionFwdParams& p, FwdSharedStorage<Cfg>& smem) {
  if (arch::thread_idx_in_warpgroup() == 0) {
    run_loads<Cfg>(p, smem);
  } else if (arch::warp_idx_in_warpgroup() == 0) {
    return;  // the rest of warp 0
  } else if (p.paged.block_table != nullptr) {
    run_paged_kv<Cfg>(p, smem);
  } else if constexpr (!Cfg::kBf16) {
    run_v_transposer<Cfg>(p, smem);
  }
}

}  // namespace fp8attn::sm90
