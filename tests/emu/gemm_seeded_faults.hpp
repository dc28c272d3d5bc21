// A copy of the TN GEMM kernel (kernels/sm90/gemm/gemm_kernel.hpp) with one planted bug per
// Fault value, for the seeded-failure tests: the emulator must report each bug rather than
// return a result.
#pragma once

#include <cstdint>

#include "kernels/sm90/gemm/gemm_kernel.hpp"

namespace fp8attn::test {

enum class Fault {
  None,
  MissingEmptyBarrierWait,  // the producer refills a stage without waiting for its consumers
  MissingFullBarrierWait,   // the consumers read a stage without waiting for its TMA load
  WrongFullBarrierPhase,    // the consumers wait on the wrong parity of the "full" barrier
  OutOfBoundsSmemWrite,     // a consumer writes one element past the CTA's shared memory
};

template <class Cfg, Fault kFault>
void faulty_gemm_kernel(const sm90::GemmParams params) {
  using namespace sm90;
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
      arch::mbarrier_init(&smem.full[s], 1);
      arch::mbarrier_init(&smem.empty[s], Cfg::kConsumerWarpgroups);
    }
    arch::fence_proxy_async_shared_cta();
  }
  arch::syncthreads();

  if (warpgroup == 0) {
    if (thread_in_wg == 0) {
      PipelineState<Cfg::kStages> state{0, 1};
      for (int kt = 0; kt < num_k_tiles; ++kt, state.advance()) {
        if constexpr (kFault != Fault::MissingEmptyBarrierWait) arch::mbarrier_wait_parity(&smem.empty[state.stage], state.phase);
        arch::mbarrier_arrive_expect_tx(&smem.full[state.stage], Cfg::kTileABytes + Cfg::kTileBBytes);
        const int32_t k0 = kt * static_cast<int32_t>(Cfg::kTileK);
        arch::tma_load<2>(smem.a[state.stage], params.tma_a, &smem.full[state.stage], {k0, m0});
        arch::tma_load<2>(smem.b[state.stage], params.tma_b, &smem.full[state.stage], {k0, n0});
      }
    }
  } else {
    const unsigned consumer = warpgroup - 1;
    arch::WgmmaAccF32<Cfg::kTileN> acc;
    for (int i = 0; i < arch::WgmmaAccF32<Cfg::kTileN>::kRegisters; ++i) acc[i] = 0.0f;
    PipelineState<Cfg::kStages> state{0, kFault == Fault::WrongFullBarrierPhase ? 1u : 0u};
    for (int kt = 0; kt < num_k_tiles; ++kt, state.advance()) {
      if constexpr (kFault != Fault::MissingFullBarrierWait) arch::mbarrier_wait_parity(&smem.full[state.stage], state.phase);
      arch::wgmma_fence();
      gemm_detail::mma_tile<Cfg>(acc, smem.a[state.stage] + consumer * 64 * Cfg::kTileKBytes, smem.b[state.stage], kt > 0);
      arch::wgmma_commit_group();
      arch::wgmma_wait_group<0>();
      if (thread_in_wg == 0) arch::mbarrier_arrive(&smem.empty[state.stage]);
    }
    if constexpr (kFault == Fault::OutOfBoundsSmemWrite) {
      // An epilogue staging buffer sized one row too small: the last thread's element lands just
      // past the end of the dynamic shared memory.
      float* staging = reinterpret_cast<float*>(smem_base + arch::dynamic_smem_size()) - arch::kWarpgroupSize;
      if (consumer == 1) arch::smem_store(staging + thread_in_wg + 1, acc[0]);
    }
    gemm_detail::store_c<Cfg>(params, acc, m0 + static_cast<int>(consumer) * 64, n0);
  }
}

}  // namespace fp8attn::test
