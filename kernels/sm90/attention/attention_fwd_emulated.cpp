// The emulator build of the attention forward's instantiation table (fwd_instances.hpp).
#include <stdexcept>
#include <string>

#include "kernels/sm90/attention/attention_fwd_emulated.hpp"
#include "kernels/sm90/attention/fwd_kernel_shape.hpp"

namespace fp8attn::sm90 {

FwdKernelShape fwd_kernel_shape(const FwdKernelKey& key) { return fwd_kernel_shape_of(key); }

void launch_attention_fwd_emulated(const FwdLaunch& launch, const emu::LaunchConfig& schedule) {
  const bool found = with_fwd_config(launch.key, [&](auto cfg) { run_attention_fwd_emulated<decltype(cfg)>(launch, schedule); });
  if (!found) throw std::invalid_argument("attention forward: no kernel for head_dim " + std::to_string(launch.key.head_dim));
}

}  // namespace fp8attn::sm90
