// The attention forward kernel for sm_90a, E4M3 (QGMMA) or BF16 (HGMMA) inputs by its config, in
// FlashAttention-3's structure: warpgroup 0 is the producer (TMA loads, Vᵀ for E4M3), warpgroups
// 1.. are consumers of 64 query rows each (wgmma, softmax, epilogue; on the head-dim split tile of
// FP8 head_dim 256 every-N, two consumers share the 64 rows, each with half of O's columns:
// tile_config.hpp), over a persistent tile scheduler. The same text compiles with nvcc for
// sm_90a and runs on the SIMT emulator (kernels/emu), where it is bit-equal to the CPU engine.
#pragma once

#include <cstdint>

#include "kernels/arch/barrier.hpp"
#include "kernels/arch/mbarrier.hpp"
#include "kernels/arch/platform.hpp"
#include "kernels/arch/registers.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/sm90/attention/fwd_config.hpp"
#include "kernels/sm90/attention/fwd_mainloop.hpp"
#include "kernels/sm90/attention/fwd_params.hpp"
#include "kernels/sm90/attention/fwd_producer.hpp"
#include "kernels/sm90/decode/decode_consumer.hpp"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "the attention forward uses wgmma, TMA and setmaxnreg, which need the sm_90a target (-arch=sm_90a)"
#endif

namespace fp8attn::sm90 {

/// Shared storage plus the telemetry slots, placed after the 1024-byte aligned tiles.
template <class Cfg>
struct FwdKernelStorage {
  FwdSharedStorage<Cfg> tiles;
  FwdTelemetrySlots telemetry;
};

template <class Cfg>
FP8ATTN_KERNEL void FP8ATTN_LAUNCH_BOUNDS(Cfg::kThreads, 1)
    attention_fwd_kernel(const FP8ATTN_GRID_CONSTANT AttentionFwdParams params) {
  static_assert(sizeof(FwdKernelStorage<Cfg>) + kFwdSmemSlack <= 227 * 1024,
                "shared memory above the 227 KB of an sm_90 CTA");
  static_assert(4 * Cfg::kConsumers <= 16, "telemetry slots: one per consumer warp");
  // NOTE: the storage starts on the next 1024-byte boundary of the .shared window, so the
  // swizzled tiles have base offset 0 (the launch asks for kFwdSmemSlack extra bytes).
  unsigned char* base = arch::dynamic_smem();
  const uint32_t misalignment = arch::smem_address(base) % kFwdSmemSlack;
  auto& storage = *reinterpret_cast<FwdKernelStorage<Cfg>*>(base + (misalignment ? kFwdSmemSlack - misalignment : 0));
  FwdSharedStorage<Cfg>& smem = storage.tiles;

  if (arch::thread_rank() == 0) {
    arch::mbarrier_init(&smem.q_full, 1);                      // the producer's arrive.expect_tx
    arch::mbarrier_init(&smem.q_empty, Cfg::kConsumers);      // one arrive per consumer warpgroup
    for (int s = 0; s < Cfg::kStages; ++s) {
      arch::mbarrier_init(&smem.k_full[s], 1);
      arch::mbarrier_init(&smem.v_full[s], 1);
      arch::mbarrier_init(&smem.vt_full[s], 1);                // the producer's Vᵀ (TMA or transpose)
      arch::mbarrier_init(&smem.kv_empty[s], Cfg::kConsumers);
      arch::mbarrier_init(&smem.k_empty[s], Cfg::kConsumers);   // released after Q·Kᵀ, before P·V
      arch::mbarrier_init(&smem.kv_request[s], 1);              // a paged block posted (fwd_paged_kv.hpp)
    }
    // NOTE: a decode launch's split count, read from the lengths once per CTA: the producer's 24
    // registers do not hold a loop over the batch per tile (ptxas spilled).
    if constexpr (Cfg::kDecode) arch::smem_store(&smem.decode_splits, decode_splits<int32_t>(params, Cfg::kBlockN));
    // NOTE: the inits are generic-proxy writes that TMA completes through the async proxy.
    arch::fence_proxy_async_shared_cta();
  }
  arch::syncthreads();

  if (arch::warpgroup_idx() == 0) {  // producer
    arch::setmaxnreg_dec<Cfg::kProducerRegisters>();
    run_producer<Cfg>(params, smem);
  } else {  // consumers
    arch::setmaxnreg_inc<Cfg::kConsumerRegisters>();
    // A decode config's consumers store packed rows (kernels/sm90/decode/decode_consumer.hpp).
    if constexpr (Cfg::kDecode) run_decode_consumer<Cfg>(params, smem);
    else run_consumer<Cfg>(params, smem, storage.telemetry);
  }
}

template <class Cfg>
constexpr size_t attention_fwd_smem_bytes() {
  return sizeof(FwdKernelStorage<Cfg>) + kFwdSmemSlack;
}

}  // namespace fp8attn::sm90
