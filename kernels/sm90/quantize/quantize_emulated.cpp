#include "kernels/sm90/quantize/quantize_emulated.hpp"

#include <stdexcept>

#include "kernels/sm90/quantize/quantize_launch.hpp"

namespace fp8attn::sm90::quant {

void run_quantize_emulated(const QuantizeParams& p, const emu::LaunchConfig& schedule) {
  if (std::string why = kernel_refusal(p); !why.empty()) throw std::invalid_argument(why);
  emu::LaunchConfig config = schedule;
  config.grid = emu::Dim3{static_cast<unsigned>(p.units_per_head), static_cast<unsigned>(p.heads),
                          static_cast<unsigned>(p.batch)};
  config.block = emu::Dim3{kQuantizeThreads, 1, 1};
  config.dynamic_smem_bytes = kQuantizeSmemBytes;
  with_quantize_kernels(p, [&](auto amax_kernel, auto cast_kernel) {
    // NOTE: the second launch sees every unit amax of the first, as two launches on one stream do.
    emu::launch(config, amax_kernel, p);
    emu::launch(config, cast_kernel, p);
  });
}

}  // namespace fp8attn::sm90::quant
