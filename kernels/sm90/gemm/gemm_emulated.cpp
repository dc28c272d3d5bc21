#include "kernels/sm90/gemm/gemm_emulated.hpp"

#include <stdexcept>

#include "kernels/sm90/gemm/gemm_kernel.hpp"

namespace fp8attn::sm90 {

void run_gemm_emulated(const GemmProblem& problem, const emu::LaunchConfig& schedule) {
  GemmPlan plan;
  if (std::string why = plan_gemm(problem, &plan); !why.empty()) throw std::invalid_argument(why);
  GemmParams params{arch::make_emulated_tensor_map(plan.a), arch::make_emulated_tensor_map(plan.b), problem.c,
                    problem.m, problem.n, problem.k, static_cast<int>(problem.ldc)};
  emu::LaunchConfig config = schedule;
  config.grid = emu::Dim3{plan.grid_x, plan.grid_y, 1};
  config.block = emu::Dim3{plan.threads, 1, 1};
  config.dynamic_smem_bytes = plan.smem_bytes;
  if (problem.type == GemmInput::BF16)
    emu::launch(config, &gemm_tn_kernel<GemmConfig<GemmInput::BF16>>, params);
  else
    emu::launch(config, &gemm_tn_kernel<GemmConfig<GemmInput::E4M3>>, params);
}

}  // namespace fp8attn::sm90
