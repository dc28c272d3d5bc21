// Warp-specialized TN GEMM for sm_90a: C (F32) = A · Bᵀ with A [M][K] and B [N][K] K-major, in
// FP8 E4M3 or BF16. Warpgroup 0 is the producer: one thread loads A and B tiles with TMA into a
// 2-stage mbarrier pipeline. Warpgroups 1 and 2 are consumers: each issues m64n128 wgmmas for its
// 64 rows of the 128 x 128 CTA tile and writes its part of C. Ragged M, N and K edges need no
// special code: TMA fills out-of-bounds elements with zero, and the epilogue skips them.
// The same text compiles with nvcc for sm_90a and runs on the SIMT emulator.
#pragma once

#include <cstdint>

#include "kernels/arch/barrier.hpp"
#include "kernels/arch/mbarrier.hpp"
#include "kernels/arch/platform.hpp"
#include "kernels/arch/registers.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/tma.hpp"
#include "kernels/arch/wgmma.hpp"
#include "kernels/ptx/tma_tensor_map.hpp"
#include "kernels/sm90/gemm/gemm_config.hpp"
#include "kernels/sm90/gemm/gemm_pipeline.hpp"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "the sm90 GEMM uses wgmma and setmaxnreg, which need the sm_90a target (-arch=sm_90a)"
#endif

namespace fp8attn::sm90 {

/// Kernel parameters (host arguments become these in gemm_host.cpp).
struct GemmParams {
  arch::TensorMap tma_a;  // A: dims {K, M}, box {kTileK, kTileM}
  arch::TensorMap tma_b;  // B: dims {K, N}, box {kTileK, kTileN}
  float* c;          // C: M x N row-major, leading dimension ldc
  int m, n, k;
  int ldc;
};


namespace gemm_detail {

/// One k-tile of a consumer warpgroup: four wgmmas stepping K by 32 bytes inside the swizzle
/// atom (the descriptor start moves by the unswizzled offset; PTX_FACTS.md §3b).
template <class Cfg>
FP8ATTN_ARCH_FN void mma_tile(arch::WgmmaAccF32<Cfg::kTileN>& acc, const uint8_t* a_tile, const uint8_t* b_tile,
                              bool accumulate) {
  const uint64_t desc_a = arch::make_wgmma_descriptor(arch::smem_address(a_tile), 0, Cfg::kAtomBytes, Cfg::kSwizzle);
  const uint64_t desc_b = arch::make_wgmma_descriptor(arch::smem_address(b_tile), 0, Cfg::kAtomBytes, Cfg::kSwizzle);
  FP8ATTN_UNROLL
  for (uint32_t kb = 0; kb < Cfg::kMmasPerTile; ++kb) {
    const uint64_t da = arch::wgmma_descriptor_advance(desc_a, kb * Cfg::kMmaKBytes);
    const uint64_t db = arch::wgmma_descriptor_advance(desc_b, kb * Cfg::kMmaKBytes);
    if constexpr (Cfg::kType == GemmInput::E4M3)
      arch::wgmma_fp8<Cfg::kTileN>(acc, da, db, accumulate || kb > 0);
    else
      arch::wgmma_bf16<Cfg::kTileN>(acc, da, db, accumulate || kb > 0);
  }
}

/// Writes a consumer warpgroup's 64 x 128 accumulator to C, skipping elements past M or N.
template <class Cfg>
FP8ATTN_ARCH_FN void store_c(const GemmParams& p, const arch::WgmmaAccF32<Cfg::kTileN>& acc, int row0, int col0) {
  const int t = static_cast<int>(arch::thread_idx_in_warpgroup());
  FP8ATTN_UNROLL
  for (int i = 0; i < arch::WgmmaAccF32<Cfg::kTileN>::kRegisters; ++i) {
    const arch::FragmentCoord c = arch::wgmma_d_coord(t, i);
    const int row = row0 + c.row, col = col0 + c.col;
    if (row < p.m && col < p.n) p.c[static_cast<int64_t>(row) * p.ldc + col] = acc[i];
  }
}

}  // namespace gemm_detail

template <class Cfg>
FP8ATTN_KERNEL void FP8ATTN_LAUNCH_BOUNDS(Cfg::kThreads, 1) gemm_tn_kernel(const FP8ATTN_GRID_CONSTANT GemmParams params) {
  static_assert(sizeof(GemmSharedStorage<Cfg>) <= 227 * 1024, "shared memory above the 227 KB of an sm_90 CTA");
  static_assert(Cfg::kTileK * Cfg::kElementBytes == arch::swizzle_span_bytes(Cfg::kSwizzle),
                "a TMA box row must fill the swizzle span");
  // NOTE: the storage starts on the next 1024-byte boundary of the .shared window (the launch
  // asks for kSmemSlack extra bytes), so the swizzled tiles have base offset 0 even if the
  // dynamic shared memory itself starts elsewhere.
  unsigned char* smem_base = arch::dynamic_smem();
  const uint32_t misalignment = arch::smem_address(smem_base) % kSmemSlack;
  auto& smem = *reinterpret_cast<GemmSharedStorage<Cfg>*>(smem_base + (misalignment ? kSmemSlack - misalignment : 0));
  const unsigned warpgroup = arch::warpgroup_idx();
  const unsigned thread_in_wg = arch::thread_idx_in_warpgroup();
  const int num_k_tiles = (params.k + static_cast<int>(Cfg::kTileK) - 1) / static_cast<int>(Cfg::kTileK);
  const int m0 = static_cast<int>(arch::block_idx().y * Cfg::kTileM);
  const int n0 = static_cast<int>(arch::block_idx().x * Cfg::kTileN);

  if (arch::thread_rank() == 0) {
    for (uint32_t s = 0; s < Cfg::kStages; ++s) {
      arch::mbarrier_init(&smem.full[s], 1);                            // the producer's arrive.expect_tx
      arch::mbarrier_init(&smem.empty[s], Cfg::kConsumerWarpgroups);  // one arrive per consumer warpgroup
    }
    // NOTE: the inits are generic-proxy writes and TMA completes on the barriers through the async
    // proxy; DeepGEMM and CUTLASS fence between the two the same way.
    arch::fence_proxy_async_shared_cta();
  }
  arch::syncthreads();

  if (warpgroup == 0) {  // producer
    arch::setmaxnreg_dec<Cfg::kProducerRegisters>();
    if (thread_in_wg == 0) {
      PipelineState<Cfg::kStages> state{0, 1};  // the first wait on each empty barrier passes
      for (int kt = 0; kt < num_k_tiles; ++kt, state.advance()) {
        arch::mbarrier_wait_parity(&smem.empty[state.stage], state.phase);
        // NOTE: the full box bytes, zero-filled elements included (CUTLASS TmaTransactionBytes).
        arch::mbarrier_arrive_expect_tx(&smem.full[state.stage], Cfg::kTileABytes + Cfg::kTileBBytes);
        const int32_t k0 = kt * static_cast<int32_t>(Cfg::kTileK);
        arch::tma_load<2>(smem.a[state.stage], params.tma_a, &smem.full[state.stage], {k0, m0});
        arch::tma_load<2>(smem.b[state.stage], params.tma_b, &smem.full[state.stage], {k0, n0});
      }
    }
  } else {  // consumers
    arch::setmaxnreg_inc<Cfg::kConsumerRegisters>();
    const unsigned consumer = warpgroup - 1;
    arch::WgmmaAccF32<Cfg::kTileN> acc;
    FP8ATTN_UNROLL
    for (int i = 0; i < arch::WgmmaAccF32<Cfg::kTileN>::kRegisters; ++i) acc[i] = 0.0f;
    PipelineState<Cfg::kStages> state{0, 0};
    for (int kt = 0; kt < num_k_tiles; ++kt, state.advance()) {
      arch::mbarrier_wait_parity(&smem.full[state.stage], state.phase);
      arch::wgmma_fence();
      gemm_detail::mma_tile<Cfg>(acc, smem.a[state.stage] + consumer * 64 * Cfg::kTileKBytes, smem.b[state.stage], kt > 0);
      arch::wgmma_commit_group();
      arch::wgmma_wait_group<0>();
      arch::wgmma_fence_operand(acc);
      if (thread_in_wg == 0) arch::mbarrier_arrive(&smem.empty[state.stage]);  // the stage's reads are done
    }
    gemm_detail::store_c<Cfg>(params, acc, m0 + static_cast<int>(consumer) * 64, n0);
  }
}

}  // namespace fp8attn::sm90
