#include "kernels/sm90/kv_append/kv_append_emulated.hpp"

#include <stdexcept>

#include "kernels/sm90/kv_append/kv_append_launch.hpp"

namespace fp8attn::sm90::kv {

void run_kv_append_emulated(const KvAppendParams& p, const emu::LaunchConfig& schedule) {
  if (std::string why = kernel_refusal(p); !why.empty()) throw std::invalid_argument(why);
  if (p.tokens == 0) return;  // an empty grid is not a launch
  emu::LaunchConfig config = schedule;
  config.grid = emu::Dim3{static_cast<unsigned>(p.tokens), 1, 1};
  config.block = emu::Dim3{kAppendThreads, 1, 1};
  config.dynamic_smem_bytes = 0;
  with_kv_append_kernel(p, [&](auto kernel) { emu::launch(config, kernel, p); });
}

}  // namespace fp8attn::sm90::kv
