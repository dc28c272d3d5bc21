// Threads and dynamic shared memory of one instantiated kernel, read from its config. Both builds
// define fwd_kernel_shape() (fwd_launch.hpp) with this one body: the sm_90a build for
// libfp8attn_cuda, the emulator build for the core, so the plan sizes launches alike in both.
#pragma once

#include "kernels/sm90/attention/attention_fwd_kernel.hpp"
#include "kernels/sm90/attention/fwd_instances.hpp"
#include "kernels/sm90/attention/fwd_launch.hpp"
#include "kernels/sm90/decode/decode_config.hpp"

namespace fp8attn::sm90 {

inline FwdKernelShape fwd_kernel_shape_of(const FwdKernelKey& key) {
  FwdKernelShape shape;
  auto read = [&](auto cfg) {
    using Cfg = decltype(cfg);
    shape.threads = Cfg::kThreads;
    shape.smem_bytes = attention_fwd_smem_bytes<Cfg>();
    shape.tma_out = Cfg::kTmaOut;
  };
  // NOTE: sizes only: a decode key's kernel is compiled in kernels/sm90/decode, not here.
  if (key.decode) with_decode_config(key.head_dim, key.promotion, key.telemetry, key.input, read);
  else with_fwd_config(key, read);
  return shape;
}

}  // namespace fp8attn::sm90
