// The emulator build's launch of one configuration of the attention backward: the kernel text of
// attention_bwd_kernel.hpp and bwd_preprocess.hpp compiled as host C++ and run by emu::launch. The
// library's table (attention_bwd_emulated.cpp) and the seeded-failure test instantiate it.
#pragma once

#include "kernels/emu/runtime.hpp"
#include "kernels/sm90/attention/attention_bwd_kernel.hpp"
#include "kernels/sm90/attention/bwd_launch.hpp"

namespace fp8attn::sm90 {

template <class Cfg>
void run_attention_bwd_emulated(const BwdLaunch& launch, const emu::LaunchConfig& schedule) {
  emu::LaunchConfig rows = schedule;
  rows.grid = emu::Dim3{launch.row_grid, 1, 1};
  rows.block = emu::Dim3{kBwdRowThreads, 1, 1};
  rows.dynamic_smem_bytes = 0;
  emu::launch(rows, &bwd_preprocess_kernel<Cfg::kHeadDim>, launch.args);

  AttentionBwdParams params;
  static_cast<BwdArguments&>(params) = launch.args;
  params.tma_q = arch::make_emulated_tensor_map(launch.q);
  params.tma_k = arch::make_emulated_tensor_map(launch.k);
  params.tma_v = arch::make_emulated_tensor_map(launch.v);
  params.tma_do = arch::make_emulated_tensor_map(launch.dout);
  emu::LaunchConfig config = schedule;
  config.grid = emu::Dim3{launch.grid, 1, 1};
  config.block = emu::Dim3{static_cast<unsigned>(Cfg::kThreads), 1, 1};
  config.dynamic_smem_bytes = attention_bwd_smem_bytes<Cfg>();
  emu::launch(config, &attention_bwd_kernel<Cfg>, params);

  emu::launch(rows, &bwd_dq_reduce_kernel<Cfg::kHeadDim, Cfg::kBlockM, Cfg::kBlockN>, launch.args);
}

}  // namespace fp8attn::sm90
