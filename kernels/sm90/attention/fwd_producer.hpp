// The producer warpgroup of the attention forward: one thread issues the TMA loads of Q (once
// per tile) and of each KV block's K and V into a multi-stage mbarrier pipeline. For E4M3 all 128
// threads then transpose the block's V into Vᵀ, because an FP8 wgmma's B operand must be K-major
// (PTX ISA 9.0 §9.7.15.5.2: no transpose for FP8) and P·V runs over the block's keys; BF16 V is
// loaded like K and read N-major by the wgmma, so nothing is transposed.
#pragma once

#include <cstdint>

#include "kernels/arch/barrier.hpp"
#include "kernels/arch/mbarrier.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/tma.hpp"
#include "kernels/arch/warp.hpp"
#include "kernels/sm90/attention/fwd_config.hpp"
#include "kernels/sm90/attention/fwd_params.hpp"
#include "kernels/sm90/attention/fwd_tile_scheduler.hpp"
#include "kernels/sm90/gemm/gemm_pipeline.hpp"

namespace fp8attn::sm90 {

/// Byte offset of Vᵀ(n, k) (n: head-dim index, k: key in the block) in the canonical
/// no-swizzle K-major layout of fwd_config.hpp: 8x16 B core matrices, LBO 128 B, SBO 8·BlockN B.
template <class Cfg>
FP8ATTN_HOST_DEVICE constexpr uint32_t vt_offset(uint32_t n, uint32_t k) {
  return (n >> 3) * Cfg::kVtStrideBytes + (n & 7u) * 16u + (k >> 4) * Cfg::kVtLeadingBytes + (k & 15u);
}

/// Transposes 4 keys x 4 head-dim bytes: rows r[i] hold dims 4d..4d+3 of key 4k+i; column j of
/// the result holds keys 4k..4k+3 of dim 4d+j (two rounds of byte permutes).
FP8ATTN_ARCH_FN void transpose_4x4_bytes(const uint32_t (&r)[4], uint32_t (&c)[4]) {
  const uint32_t t0 = arch::byte_perm(r[0], r[1], 0x5140u), t1 = arch::byte_perm(r[0], r[1], 0x7362u);
  const uint32_t t2 = arch::byte_perm(r[2], r[3], 0x5140u), t3 = arch::byte_perm(r[2], r[3], 0x7362u);
  c[0] = arch::byte_perm(t0, t2, 0x5410u);
  c[1] = arch::byte_perm(t0, t2, 0x7632u);
  c[2] = arch::byte_perm(t1, t3, 0x5410u);
  c[3] = arch::byte_perm(t1, t3, 0x7632u);
}

/// Vᵀ of one stage, by the 128 producer threads; each thread fences its generic-proxy writes for
/// the consumers' wgmma (async proxy), and once all have, one arrives on vt_full.
template <class Cfg>
FP8ATTN_ARCH_FN void transpose_v(const uint8_t* v, uint8_t* vt, uint64_t* vt_full) {
  constexpr uint32_t kDimGroups = Cfg::kHeadDim / 4, kItems = (Cfg::kBlockN / 4) * kDimGroups;
  FP8ATTN_NO_UNROLL
  for (uint32_t item = arch::thread_idx_in_warpgroup(); item < kItems; item += 128) {
    const uint32_t kg = item / kDimGroups, dg = item % kDimGroups;
    uint32_t r[4], c[4];
    FP8ATTN_UNROLL
    for (int i = 0; i < 4; ++i)
      r[i] = arch::smem_load(reinterpret_cast<const uint32_t*>(v + (4 * kg + i) * Cfg::kHeadDim + 4 * dg));
    transpose_4x4_bytes(r, c);
    FP8ATTN_UNROLL
    for (int j = 0; j < 4; ++j) arch::smem_store(reinterpret_cast<uint32_t*>(vt + vt_offset<Cfg>(4 * dg + j, 4 * kg)), c[j]);
  }
  arch::fence_proxy_async_shared_cta();
  arch::named_barrier_sync(barrier_id(FwdBarrier::kProducerVt), 128);
  if (arch::thread_idx_in_warpgroup() == 0) arch::mbarrier_arrive(vt_full);
}

/// The producer warpgroup's loop over the CTA's tiles.
template <class Cfg>
FP8ATTN_ARCH_FN void run_producer(const AttentionFwdParams& p, FwdSharedStorage<Cfg>& smem) {
  const bool leader = arch::thread_idx_in_warpgroup() == 0;
  const int32_t batch_coord_scale = p.cu_seqlens_q != nullptr ? 0 : 1;  // packed inputs: one "batch"
  PipelineState<Cfg::kStages> kv{0, 1};  // the first wait on each empty barrier passes
  uint32_t q_empty_phase = 1;
  for (int64_t index = arch::block_idx().x; index < p.num_tiles; index += arch::grid_dim().x) {
    const FwdTile tile = fwd_tile(p, index, Cfg::kBlockM, Cfg::kBlockN);
    if (tile.rows == 0) continue;
    const int32_t b = tile.batch * batch_coord_scale;
    if (leader) {
      arch::mbarrier_wait_parity(&smem.q_empty, q_empty_phase);
      // NOTE: the full box bytes, zero-filled rows included (CUTLASS TmaTransactionBytes).
      arch::mbarrier_arrive_expect_tx(&smem.q_full, Cfg::kChunks * Cfg::kQChunkBytes);
      for (int c = 0; c < Cfg::kChunks; ++c)
        arch::tma_load<4>(smem.q[c], p.tma_q, &smem.q_full,
                          {c * Cfg::kChunkElements, tile.head,
                           static_cast<int32_t>(tile.q_offset + tile.row0), b});
    }
    q_empty_phase ^= 1u;
    // NOTE: 32-bit block counts: the producer runs in 32 registers (fwd_config.hpp), and a 64-bit
    // loop counter live across the transpose spilled.
    const int32_t blocks = static_cast<int32_t>(tile.kv.count());
    for (int32_t step = 0; step < blocks; ++step, kv.advance()) {
      const KeyBlock block = tile.kv.at(step);
      const int32_t key = static_cast<int32_t>(tile.k_offset + block.key_begin);
      if (leader) {
        arch::mbarrier_wait_parity(&smem.kv_empty[kv.stage], kv.phase);
        arch::mbarrier_arrive_expect_tx(&smem.k_full[kv.stage], Cfg::kChunks * Cfg::kKChunkBytes);
        for (int c = 0; c < Cfg::kChunks; ++c)
          arch::tma_load<4>(smem.k[kv.stage][c], p.tma_k, &smem.k_full[kv.stage],
                            {c * Cfg::kChunkElements, tile.head_kv, key, b});
        if constexpr (Cfg::kBf16) {
          // BF16 V in K's layout (chunks of 64 dims, 128B swizzle), ready for P·V once loaded.
          arch::mbarrier_arrive_expect_tx(&smem.vt_full[kv.stage], Cfg::kVBytes);
          for (int c = 0; c < Cfg::kChunks; ++c)
            arch::tma_load<4>(smem.v[kv.stage] + c * Cfg::kKChunkBytes, p.tma_v, &smem.vt_full[kv.stage],
                              {c * Cfg::kChunkElements, tile.head_kv, key, b});
        } else if (p.v_transposed) {
          // tma_v is {key, dim, head, batch}: one box of 32 keys x head_dim per slab.
          arch::mbarrier_arrive_expect_tx(&smem.vt_full[kv.stage], Cfg::kVBytes);
          for (int slab = 0; slab < Cfg::kBlockN / 32; ++slab)
            arch::tma_load<4>(smem.vt[kv.stage] + slab * Cfg::kVtSlabBytes, p.tma_v, &smem.vt_full[kv.stage],
                              {key + 32 * slab, 0, tile.head_kv, b});
        } else {
          arch::mbarrier_arrive_expect_tx(&smem.v_full[kv.stage], Cfg::kVBytes);
          arch::tma_load<4>(smem.v[kv.stage], p.tma_v, &smem.v_full[kv.stage], {0, tile.head_kv, key, b});
        }
      }
      if constexpr (!Cfg::kBf16) {
        if (p.v_transposed) continue;
        // The V load of this stage follows the leader's wait on kv_empty, so Vᵀ of the stage is free.
        arch::mbarrier_wait_parity(&smem.v_full[kv.stage], kv.phase ^ 1u);
        transpose_v<Cfg>(smem.v[kv.stage], smem.vt[kv.stage], &smem.vt_full[kv.stage]);
      }
    }
  }
}

}  // namespace fp8attn::sm90
