// One call of the attention backward as the host plan describes it, before any device runtime
// touches it: the kernels' key, the tensor maps of Q, K, V and dO, the arguments and the launch
// geometry of the three kernels (preprocess, main, dQ reduce). The emulator and the CUDA runtime
// each turn it into launches, in that order on one stream.
#pragma once

#include <cstddef>

#include "kernels/ptx/tma_tensor_map_spec.hpp"
#include "kernels/sm90/attention/bwd_instances.hpp"
#include "kernels/sm90/attention/bwd_params.hpp"

namespace fp8attn::sm90 {

struct BwdLaunch {
  BwdKernelKey key{};
  arch::TensorMapSpec q, k, v, dout;
  BwdArguments args;
  unsigned grid = 0;      ///< main kernel: one CTA per (sequence, KV head, key block)
  unsigned row_grid = 0;  ///< preprocess and dQ reduce: one thread per (workspace row, query head)
  unsigned threads = 0;
  size_t smem_bytes = 0;
};

/// Threads and dynamic shared memory of the main kernel with `key` (0, 0 when there is none).
struct BwdKernelShape {
  unsigned threads = 0;
  size_t smem_bytes = 0;
  int block_m = 0, block_n = 0;
};
BwdKernelShape bwd_kernel_shape(const BwdKernelKey& key);

}  // namespace fp8attn::sm90

namespace fp8attn::emu {
struct LaunchConfig;
}

namespace fp8attn::sm90 {
/// Runs the three kernels on the SIMT emulator with the given schedule; throws emu::KernelError for
/// anything the emulator catches, std::invalid_argument for a bad map or key.
void launch_attention_bwd_emulated(const BwdLaunch& launch, const emu::LaunchConfig& schedule);
}  // namespace fp8attn::sm90
