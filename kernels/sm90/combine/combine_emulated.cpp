#include "kernels/sm90/combine/combine_emulated.hpp"

#include <stdexcept>

#include "kernels/sm90/combine/combine_kernel.hpp"
#include "kernels/sm90/combine/combine_launch.hpp"

namespace fp8attn::sm90::combine {

void run_combine_emulated(const CombineParams& p, const emu::LaunchConfig& schedule) {
  if (row_count(p) == 0) return;
  if (std::string why = kernel_refusal(p); !why.empty()) throw std::invalid_argument(why);
  emu::LaunchConfig config = schedule;
  config.grid = emu::Dim3{combine_ctas(p), 1, 1};
  config.block = emu::Dim3{kCombineThreads, 1, 1};
  config.dynamic_smem_bytes = kCombineSmemBytes;
  emu::launch(config, &combine_kernel, p);
}

}  // namespace fp8attn::sm90::combine
