// One launch of the attention forward as the host plan describes it, before any device runtime
// touches it: the kernel's key, the tensor-map parameters of Q, K and V, the arguments and the
// launch geometry. The emulator and the CUDA runtime each turn it into a launch.
#pragma once

#include <cstddef>
#include <string>

#include "kernels/ptx/mma_order.hpp"
#include "kernels/ptx/tma_tensor_map_spec.hpp"
#include "kernels/sm90/attention/fwd_instances.hpp"
#include "kernels/sm90/attention/fwd_params.hpp"
#include "kernels/sm90/combine/combine_params.hpp"

struct CUstream_st;

namespace fp8attn::sm90 {

struct FwdLaunch {
  FwdKernelKey key{};
  arch::TensorMapSpec q, k, v;
  arch::TensorMapSpec o;  ///< the output's map when args.tma_out
  FwdArguments args;
  unsigned grid = 0;     ///< persistent CTAs: min(tiles, SMs)
  unsigned threads = 0;
  size_t smem_bytes = 0;
  /// The accumulation the emulator applies to this launch's wgmmas. NOTE: the GPU's tensor core
  /// adds as it does whatever this says; the default models exactly that.
  arch::MmaPrecisionModel mma_model = arch::tensor_core_accumulation();
  /// A decode launch with more than one split (key.decode, args.decode.part_o): the combine of
  /// its partials into the output, enqueued right after it (lib/backend/gpu/decode_plan.cpp).
  bool merge = false;
  combine::CombineParams merge_params;
};

/// Threads and dynamic shared memory of the kernel with `key` (0, 0 when there is none).
struct FwdKernelShape {
  unsigned threads = 0;
  size_t smem_bytes = 0;
  bool tma_out = false;  ///< it can store a BF16 O through TMA (FwdConfig::kTmaOut)
};
FwdKernelShape fwd_kernel_shape(const FwdKernelKey& key);

}  // namespace fp8attn::sm90

namespace fp8attn::emu {
struct LaunchConfig;
}

namespace fp8attn::sm90 {
/// Runs the launch on the SIMT emulator with the given schedule (seed, shuffle, host threads);
/// throws emu::KernelError for anything the emulator catches, std::invalid_argument for a bad map.
void launch_attention_fwd_emulated(const FwdLaunch& launch, const emu::LaunchConfig& schedule);
}  // namespace fp8attn::sm90
