// The emulator build of the decode kernels (decode_config.hpp's table).
#include <stdexcept>
#include <string>

#include "kernels/sm90/attention/attention_fwd_emulated.hpp"
#include "kernels/sm90/decode/decode_config.hpp"
#include "kernels/sm90/decode/decode_launch.hpp"

namespace fp8attn::sm90 {

void launch_attention_decode_emulated(const FwdLaunch& launch, const emu::LaunchConfig& schedule) {
  const FwdKernelKey& k = launch.key;
  const bool found = with_decode_config(k.head_dim, k.promotion, k.telemetry, k.input, [&](auto cfg) {
    run_attention_fwd_emulated<decltype(cfg)>(launch, schedule);
  });
  if (!found) throw std::invalid_argument("attention decode: no kernel for head_dim " + std::to_string(k.head_dim));
}

}  // namespace fp8attn::sm90
