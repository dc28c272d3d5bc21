#include "kernels/sm90/gemm/gemm_host.hpp"

#include <sstream>

#include "kernels/sm90/gemm/gemm_config.hpp"

namespace fp8attn::sm90 {
namespace {

template <class Cfg>
std::string plan_for(const GemmProblem& p, GemmPlan* plan) {
  if (p.a == nullptr || p.b == nullptr || p.c == nullptr) return "gemm: null operand";
  if (p.m < 1 || p.n < 1 || p.k < 1) return "gemm: M, N and K must be positive";
  if (p.lda < p.k || p.ldb < p.k || p.ldc < p.n) return "gemm: a leading dimension is smaller than its row";
  GemmPlan out;
  const auto operand = [](const void* base, int64_t ld, int rows, int k, uint32_t box_rows) {
    arch::TensorMapSpec s;
    s.data_type = Cfg::kType == GemmInput::BF16 ? arch::TmaDataType::BFloat16 : arch::TmaDataType::UInt8;
    s.rank = 2;
    s.global_address = base;
    s.global_dims[0] = static_cast<uint64_t>(k);
    s.global_dims[1] = static_cast<uint64_t>(rows);
    s.global_strides_bytes[0] = static_cast<uint64_t>(ld) * Cfg::kElementBytes;
    s.box_dims[0] = Cfg::kTileK;
    s.box_dims[1] = box_rows;
    s.swizzle = Cfg::kSwizzle;
    return s;
  };
  out.a = operand(p.a, p.lda, p.m, p.k, Cfg::kTileM);
  out.b = operand(p.b, p.ldb, p.n, p.k, Cfg::kTileN);
  for (const auto* s : {&out.a, &out.b})
    if (std::string why = arch::validate_tensor_map_spec(*s); !why.empty()) return "gemm: " + why;
  out.grid_x = static_cast<unsigned>((p.n + Cfg::kTileN - 1) / Cfg::kTileN);
  out.grid_y = static_cast<unsigned>((p.m + Cfg::kTileM - 1) / Cfg::kTileM);
  out.threads = Cfg::kThreads;
  out.smem_bytes = gemm_smem_bytes<Cfg>();
  *plan = out;
  return {};
}

}  // namespace

std::string plan_gemm(const GemmProblem& problem, GemmPlan* plan) {
  return problem.type == GemmInput::BF16 ? plan_for<GemmConfig<GemmInput::BF16>>(problem, plan)
                                         : plan_for<GemmConfig<GemmInput::E4M3>>(problem, plan);
}

}  // namespace fp8attn::sm90
