// The emulator build of the attention forward: the kernel text of attention_fwd_kernel.hpp
// compiled as host C++ and run by emu::launch.
#include <stdexcept>

#include "kernels/emu/runtime.hpp"
#include "kernels/sm90/attention/attention_fwd_kernel.hpp"
#include "kernels/sm90/attention/fwd_launch.hpp"

namespace fp8attn::sm90 {

FwdKernelShape fwd_kernel_shape(const FwdKernelKey& key) {
  FwdKernelShape shape;
  with_fwd_config(key, [&](auto cfg) {
    using Cfg = decltype(cfg);
    shape.threads = Cfg::kThreads;
    shape.smem_bytes = attention_fwd_smem_bytes<Cfg>();
  });
  return shape;
}

void launch_attention_fwd_emulated(const FwdLaunch& launch, const emu::LaunchConfig& schedule) {
  AttentionFwdParams params;
  static_cast<FwdArguments&>(params) = launch.args;
  params.tma_q = arch::make_emulated_tensor_map(launch.q);
  params.tma_k = arch::make_emulated_tensor_map(launch.k);
  params.tma_v = arch::make_emulated_tensor_map(launch.v);
  emu::LaunchConfig config = schedule;
  config.grid = emu::Dim3{launch.grid, 1, 1};
  config.block = emu::Dim3{launch.threads, 1, 1};
  config.dynamic_smem_bytes = launch.smem_bytes;
  const bool found = with_fwd_config(launch.key, [&](auto cfg) {
    emu::launch(config, &attention_fwd_kernel<decltype(cfg)>, params);
  });
  if (!found) throw std::invalid_argument("attention forward: no kernel for head_dim " + std::to_string(launch.key.head_dim));
}

}  // namespace fp8attn::sm90
