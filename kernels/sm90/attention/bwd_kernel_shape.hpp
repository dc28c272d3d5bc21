// Threads and dynamic shared memory of one instantiated backward kernel, read from its config.
// Both builds define bwd_kernel_shape() (bwd_launch.hpp) with this one body.
#pragma once

#include "kernels/sm90/attention/attention_bwd_kernel.hpp"
#include "kernels/sm90/attention/bwd_instances.hpp"
#include "kernels/sm90/attention/bwd_launch.hpp"

namespace fp8attn::sm90 {

inline BwdKernelShape bwd_kernel_shape_of(const BwdKernelKey& key) {
  BwdKernelShape shape;
  with_bwd_config(key, [&](auto cfg) {
    using Cfg = decltype(cfg);
    shape.threads = Cfg::kThreads;
    shape.smem_bytes = attention_bwd_smem_bytes<Cfg>();
    shape.block_m = Cfg::kBlockM;
    shape.block_n = Cfg::kBlockN;
  });
  return shape;
}

}  // namespace fp8attn::sm90
