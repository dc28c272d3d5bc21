// The BF16 attention backward kernel for sm_90a (HGMMA), FlashAttention-3's structure: one CTA per
// work item of the CPU engine's backward (a key block of one KV head of one sequence); warpgroup 0
// is the producer (TMA loads of K and V once, then Q and dO per visited query block through an
// mbarrier pipeline), warpgroups 1 and 2 are consumers: of 64 keys each at head dims 64 and 128
// (bwd_mainloop.hpp), of the same 64 keys split along N at head dim 256
// (bwd_mainloop_shared_keys.hpp; bwd_config.hpp, BwdSplit). dK and dV stay in accumulators for
// the whole item; dQ shares go into an F32 workspace, summed per key block in ascending order by
// bwd_dq_reduce_kernel (deterministic) or added atomically.
// The same text compiles with nvcc for sm_90a and runs on the SIMT emulator (kernels/emu), where
// in deterministic mode it is bit-equal to the CPU engine.
#pragma once

#include <cstdint>

#include "kernels/arch/barrier.hpp"
#include "kernels/arch/mbarrier.hpp"
#include "kernels/arch/platform.hpp"
#include "kernels/arch/registers.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/sm90/attention/bwd_config.hpp"
#include "kernels/sm90/attention/bwd_mainloop.hpp"
#include "kernels/sm90/attention/bwd_mainloop_shared_keys.hpp"
#include "kernels/sm90/attention/bwd_params.hpp"
#include "kernels/sm90/attention/bwd_preprocess.hpp"
#include "kernels/sm90/attention/bwd_producer.hpp"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "the attention backward uses wgmma, TMA and setmaxnreg, which need the sm_90a target (-arch=sm_90a)"
#endif

namespace fp8attn::sm90 {

template <class Cfg>
FP8ATTN_KERNEL void FP8ATTN_LAUNCH_BOUNDS(Cfg::kThreads, 1)
    attention_bwd_kernel(const FP8ATTN_GRID_CONSTANT AttentionBwdParams params) {
  static_assert(sizeof(BwdSharedStorage<Cfg>) + kBwdSmemSlack <= 227 * 1024,
                "shared memory above the 227 KB of an sm_90 CTA");
  const BwdWork work = bwd_work(params, arch::block_idx().x, Cfg::kBlockN);
  if (work.keys == 0) return;  // a key block past its sequence's end (varlen, or a short sequence)
  // NOTE: the storage starts on the next 1024-byte boundary, so the swizzled tiles have base
  // offset 0 (the launch asks for kBwdSmemSlack extra bytes).
  unsigned char* base = arch::dynamic_smem();
  const uint32_t misalignment = arch::smem_address(base) % kBwdSmemSlack;
  auto& smem = *reinterpret_cast<BwdSharedStorage<Cfg>*>(base + (misalignment ? kBwdSmemSlack - misalignment : 0));

  if (arch::thread_rank() == 0) {
    arch::mbarrier_init(&smem.kv_full, 1);  // the producer's arrive.expect_tx
    for (int s = 0; s < Cfg::kStages; ++s) {
      arch::mbarrier_init(&smem.qdo_full[s], 1);
      arch::mbarrier_init(&smem.qdo_empty[s], Cfg::kConsumers);  // one arrive per consumer warpgroup
    }
    // NOTE: the inits are generic-proxy writes that TMA completes through the async proxy.
    arch::fence_proxy_async_shared_cta();
  }
  arch::syncthreads();

  if (arch::warpgroup_idx() == 0) {
    arch::setmaxnreg_dec<Cfg::kProducerRegisters>();
    run_bwd_producer<Cfg>(params, smem, work);
  } else {
    arch::setmaxnreg_inc<Cfg::kConsumerRegisters>();
    if constexpr (Cfg::kSplit == BwdSplit::KeyHalves) run_bwd_consumer<Cfg>(params, smem, work);
    else run_bwd_consumer_shared_keys<Cfg>(params, smem, work);
  }
}

}  // namespace fp8attn::sm90
