// The emulator build of the attention backward's instantiation table (bwd_instances.hpp).
#include <stdexcept>
#include <string>

#include "kernels/sm90/attention/attention_bwd_emulated.hpp"
#include "kernels/sm90/attention/bwd_kernel_shape.hpp"

namespace fp8attn::sm90 {

BwdKernelShape bwd_kernel_shape(const BwdKernelKey& key) { return bwd_kernel_shape_of(key); }

void launch_attention_bwd_emulated(const BwdLaunch& launch, const emu::LaunchConfig& schedule) {
  const bool found =
      with_bwd_config(launch.key, [&](auto cfg) { run_attention_bwd_emulated<decltype(cfg)>(launch, schedule); });
  if (!found)
    throw std::invalid_argument("attention backward: no kernel for head_dim " + std::to_string(launch.key.head_dim));
}

}  // namespace fp8attn::sm90
