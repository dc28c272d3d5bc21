// The SIMT emulator's runtime: runs a kernel function, compiled as host C++, for every thread of
// every CTA of a grid. Each CUDA thread is a fiber; a CTA's fibers share one host thread and the
// CTA's own shared memory; CTAs are spread over host threads. The arch layer (kernels/arch) calls
// the functions declared here and in primitives.hpp; kernel code never calls them directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include "kernels/emu/source_site.hpp"
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernels/ptx/mma_order.hpp"

namespace fp8attn::emu {

struct SmemTraffic;  // bank_conflicts.hpp

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr unsigned volume() const { return x * y * z; }
};

struct LaunchConfig {
  Dim3 grid, block;
  size_t dynamic_smem_bytes = 0;
  // Seeds the schedule (shuffle mode), the poison pattern of fresh shared memory and the
  // random choices of try_wait; the same seed gives the same run.
  uint64_t seed = 0;
  // false: each fiber runs until it blocks, and the next one is taken round-robin.
  // true: at every barrier, wait and yield the next fiber is drawn at random (seeded), and
  // arrive-type operations may also give up the host thread, so other interleavings get tried.
  bool shuffle = false;
  int host_threads = 0;  // 0 = all cores
  // Record every checked shared-memory access and report unordered conflicting ones
  // (race_check.cpp).
  bool race_check = true;
  // With race_check: also report an async-proxy read (wgmma operand, TMA store source) of bytes
  // written through the generic proxy without a later fence.proxy.async by the writer
  // (PTX ISA 9.0 §9.7.15.4). Off by default until every kernel and test fences its operands.
  bool proxy_fence_check = false;
  // Stack of each fiber; 0 = 64 KiB (256 KiB in sanitizer builds, whose frames are larger).
  size_t fiber_stack_bytes = 0;
  // The accumulation of this launch's wgmmas (FP8 and BF16); empty: the process-wide model of
  // set_wgmma_precision_model (wgmma.hpp), by default arch::tensor_core_accumulation(). A backend
  // sets it from its plan, so that concurrent launches can model different accumulators.
  std::optional<arch::MmaPrecisionModel> mma_model;
  // Where the launch adds its shared-memory wavefronts (bank_conflicts.hpp: per warp and path,
  // against their conflict-free minimum); null: nothing is counted (one pointer test per access).
  SmemTraffic* smem_traffic = nullptr;
};

// Raised by launch() for any failure inside the kernel: deadlock, race, out-of-bounds shared
// memory access, misuse of a primitive against the PTX ISA, or an exception thrown by kernel code.
// what() names the CTA, the threads, and the addresses / barrier ids / phases involved.
struct KernelError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The calling fiber's identity. Valid only inside a kernel run by launch().
struct ThreadContext {
  Dim3 thread_idx, block_idx, block_dim, grid_dim;
  unsigned linear_tid = 0;  // threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)
  unsigned warp = 0;        // linear_tid / 32
  unsigned lane = 0;        // linear_tid % 32
  unsigned warpgroup = 0;   // linear_tid / 128 (PTX ISA 9.0 §9.7.15.1: 4 contiguous warps)
  unsigned linear_cta = 0;  // blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)
  class Cta* cta = nullptr;
};
ThreadContext& this_thread();

// Shared memory of the calling thread's CTA: 1024-byte aligned (the period of the 128-byte
// swizzle, PTX ISA 9.0 §5.5.7), filled with a seeded poison pattern at CTA start.
void* dynamic_smem();
size_t dynamic_smem_size();

// Bounds check (KernelError when [addr, addr+bytes) is not inside the CTA's shared memory) and,
// with race_check on, the race-check record of a generic-proxy access by the calling thread.
void check_smem_access(const void* addr, size_t bytes, bool is_write);
// The same for a generic ld.shared / st.shared of the kernel at `site`, also counted as a lane of
// that instruction when the launch counts wavefronts (LaunchConfig::smem_traffic).
void check_smem_access(const void* addr, size_t bytes, bool is_write, const SourceSite& site);

// An async-proxy access (TMA write, wgmma read) issued by the calling thread. It is performed by
// the thread's async agent, which is ordered after everything the thread did before issuing it.
// Other threads see it ordered only through the completing mbarrier (its complete_tx releases
// the agent: PTX ISA 9.0 §9.7.9.25.5.2, §9.7.13.15.16) or, with no mbarrier, through
// acquire_async_accesses (the wgmma.wait_group instruction of PTX ISA 9.0).
void record_async_smem_access(const void* addr, size_t bytes, bool is_write,
                              const void* completing_mbarrier /*may be null*/);
// One async-proxy operation over several ranges (a wgmma's operand rows, a swizzled TMA box): the
// agent is ordered after the thread once, and every range is recorded in that one epoch.
// NOTE: one ordering per operation, not per range: ordering copies a vector clock of 2 × threads
// entries, and a wgmma's operands are hundreds of 16-byte ranges.
struct AsyncSmemRange {
  const void* addr;
  size_t bytes;
};
void record_async_smem_accesses(std::span<const AsyncSmemRange> ranges, bool is_write,
                                const void* completing_mbarrier /*may be null*/);
// The calling thread acquires the async agents of every thread of its group: all async accesses
// they recorded so far happen-before the caller's later actions.
enum class Group { Warp, Warpgroup };
void acquire_async_accesses(Group group);
// The calling thread acquires only its own async agent: for completions that are per thread,
// such as cp.async.bulk.wait_group.read after the caller's own TMA stores.
void acquire_own_async_accesses();

// Collective over the calling thread's warp or warpgroup: each member passes a pointer to its own
// data; the caller's fiber waits until all members arrived; the LAST to arrive runs op with all
// members' pointers, ordered by lane (warp) or by thread index in the warpgroup (0..127); then
// all members return. A member that never arrives is a deadlock, reported as such.
void collective(Group group, void* my_data, const std::function<void(std::span<void* const>)>& op);
// The same over the lanes of the caller's warp named in member_mask (the caller must be one of
// them); op sees 32 pointers indexed by lane, null for lanes outside member_mask. Used by the
// *_sync warp operations. Callers with different masks wait for different collectives.
void warp_collective(uint32_t member_mask, void* my_data,
                     const std::function<void(std::span<void* const>)>& op);

// mbarrier transaction completion from the async proxy (used by TMA): tx-count -= bytes, then the
// phase completes if pending arrivals and tx-count are both zero (PTX ISA 9.0 §9.7.13.15.12, .6).
void mbarrier_complete_tx(uint64_t* mbar, uint32_t bytes);

// Raises KernelError naming the CTA and the calling thread, followed by message. For host
// versions of primitives that detect a use the PTX ISA leaves undefined.
[[noreturn]] void fail_in_kernel(const std::string& message);

// setmaxnreg.dec (increase = false) or .inc to `registers` per thread, against the CTA's register
// pool (register_pool.cpp): .inc waits while the pool has too few, and never getting them is a
// deadlock, reported as such.
void setmaxnreg(uint32_t registers, bool increase);

// Lets other fibers run (spin-wait loops). A fiber that keeps yielding while nothing else in the
// CTA changes is part of a deadlock and gets reported as one.
void yield();

namespace detail {
// Runs body() once per thread of every CTA of the grid described by config.
void launch_grid(const LaunchConfig& config, const std::function<void()>& body);
}  // namespace detail

// Runs kernel(args...) for every thread of every CTA. Returns normally on success; throws
// KernelError on any failure inside the kernel (see above). Never hangs. Each thread gets its own
// copy of the arguments, converted to the kernel's parameter types once per launch.
template <class... Params, class... Args>
void launch(const LaunchConfig& config, void (*kernel)(Params...), Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "argument count does not match the kernel");
  static_assert((!std::is_reference_v<Params> && ...), "kernel parameters are passed by value");
  const std::tuple<std::decay_t<Params>...> params(std::forward<Args>(args)...);
  detail::launch_grid(config, [&] { std::apply(kernel, params); });
}

}  // namespace fp8attn::emu
