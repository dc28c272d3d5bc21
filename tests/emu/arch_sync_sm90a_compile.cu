// Compile check of the device branch of the synchronization half of kernels/arch: every wrapper
// is instantiated in one __global__ function, built with nvcc for sm_90a (ctest
// arch_sync_sm90a_compile). Nothing here runs; the emulator tests cover the semantics.
#include <cstdint>

#include "kernels/arch/barrier.hpp"
#include "kernels/arch/mbarrier.hpp"
#include "kernels/arch/platform.hpp"
#include "kernels/arch/registers.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/warp.hpp"

namespace arch = fp8attn::arch;

// NOTE: setmaxnreg needs a known register count at entry (ptxas C7508), hence the launch bounds.
FP8ATTN_KERNEL void __launch_bounds__(256, 1) arch_sync_wrappers(uint32_t* out) {
  auto* bar = arch::dynamic_smem<uint64_t>();
  uint32_t* words = arch::dynamic_smem<uint32_t>() + 16;
  const unsigned tid = arch::thread_rank();
  if (tid == 0) arch::mbarrier_init(bar, 1);
  arch::fence_proxy_async_shared_cta();
  arch::syncthreads();
  if (arch::warpgroup_idx() == 0) {
    arch::setmaxnreg_dec<40>();
    if (tid == 0) {
      arch::mbarrier_expect_tx(bar, 16);
      arch::mbarrier_complete_tx(bar, 16);
      arch::mbarrier_arrive_expect_tx(bar, 0);
    }
    arch::named_barrier_arrive(1, 256);
  } else {
    arch::setmaxnreg_inc<232>();
    arch::named_barrier_sync(1, 256);
    arch::mbarrier_wait_parity(bar, 0);
    const bool done = arch::mbarrier_test_wait_parity(bar, 0);
    const uint64_t state = arch::mbarrier_arrive_count(bar, 1) + arch::mbarrier_arrive(bar);
    const auto t = arch::thread_idx();
    const auto b = arch::block_idx();
    const auto bd = arch::block_dim();
    const auto g = arch::grid_dim();
    uint32_t v = t.x + b.y + bd.z + g.x + arch::lane_idx() + arch::warp_idx_in_warpgroup() +
                 arch::thread_idx_in_warpgroup() + static_cast<uint32_t>(state) + done;
    v = arch::shfl_xor_sync(arch::kFullWarpMask, v, 1);
    v += arch::shfl_sync(arch::kFullWarpMask, v, 0, 16);
    const float f = arch::shfl_xor_sync(arch::kFullWarpMask, static_cast<float>(v), 2, 8);
    v = arch::byte_perm(v, static_cast<uint32_t>(f), 0x5410) ^ arch::prmt(v, tid, 0x7531);
    arch::smem_store(&words[tid % 64], v);
    out[tid] = arch::smem_load(&words[(tid + 1) % 64]) + arch::dynamic_smem_size() +
               arch::smem_address(words);
  }
  arch::syncthreads();
  if (tid == 0) arch::mbarrier_inval(bar);
}
