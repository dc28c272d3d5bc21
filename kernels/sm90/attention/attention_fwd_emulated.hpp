// The emulator build's launch of one configuration of the attention forward: the kernel text of
// attention_fwd_kernel.hpp compiled as host C++ and run by emu::launch. The library's table
// (attention_fwd_emulated.cpp) and the seeded-failure tests instantiate it.
#pragma once

#include "kernels/emu/runtime.hpp"
#include "kernels/sm90/attention/attention_fwd_kernel.hpp"
#include "kernels/sm90/attention/fwd_launch.hpp"

namespace fp8attn::sm90 {

template <class Cfg>
void run_attention_fwd_emulated(const FwdLaunch& launch, const emu::LaunchConfig& schedule) {
  AttentionFwdParams params;
  static_cast<FwdArguments&>(params) = launch.args;
  params.tma_q = arch::make_emulated_tensor_map(launch.q);
  params.tma_k = arch::make_emulated_tensor_map(launch.k);
  params.tma_v = arch::make_emulated_tensor_map(launch.v);
  if (launch.args.tma_out) params.tma_o = arch::make_emulated_tensor_map(launch.o);
  emu::LaunchConfig config = schedule;
  config.grid = emu::Dim3{launch.grid, 1, 1};
  config.block = emu::Dim3{static_cast<unsigned>(Cfg::kThreads), 1, 1};
  config.dynamic_smem_bytes = attention_fwd_smem_bytes<Cfg>();
  emu::launch(config, &attention_fwd_kernel<Cfg>, params);
}

}  // namespace fp8attn::sm90
