// The sm_90a build of the TN GEMM: instantiates the kernel for E4M3 and BF16 and launches it.
// tools/check_sm90_build.sh compiles this file to check ptxas and SASS (QGMMA, HGMMA, UTMALDG).
#include <cuda_runtime_api.h>

#include <string>

#include "kernels/arch/tma_tensor_map_cuda.hpp"
#include "kernels/sm90/gemm/gemm_cuda.hpp"
#include "kernels/sm90/gemm/gemm_kernel.hpp"

namespace fp8attn::sm90 {
namespace {

template <class Cfg>
std::string launch(const GemmProblem& problem, const GemmPlan& plan, cudaStream_t stream) {
  GemmParams params{};
  if (std::string why = arch::encode_tensor_map_cuda(plan.a, &params.tma_a); !why.empty()) return why;
  if (std::string why = arch::encode_tensor_map_cuda(plan.b, &params.tma_b); !why.empty()) return why;
  params.c = problem.c;
  params.m = problem.m;
  params.n = problem.n;
  params.k = problem.k;
  params.ldc = static_cast<int>(problem.ldc);
  // NOTE: above 48 KB of dynamic shared memory a kernel must opt in (CUDA Programming Guide,
  // "Shared Memory"); a plan-time query in the library, done here per launch for this test kernel.
  cudaError_t status = cudaFuncSetAttribute(gemm_tn_kernel<Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(plan.smem_bytes));
  if (status != cudaSuccess) return std::string("cudaFuncSetAttribute: ") + cudaGetErrorString(status);
  gemm_tn_kernel<Cfg><<<dim3(plan.grid_x, plan.grid_y, 1), dim3(plan.threads, 1, 1), plan.smem_bytes, stream>>>(params);
  status = cudaGetLastError();
  return status == cudaSuccess ? std::string() : std::string("gemm launch: ") + cudaGetErrorString(status);
}

}  // namespace

std::string run_gemm_cuda(const GemmProblem& problem, CUstream_st* stream) {
  GemmPlan plan;
  if (std::string why = plan_gemm(problem, &plan); !why.empty()) return why;
  return problem.type == GemmInput::BF16 ? launch<GemmConfig<GemmInput::BF16>>(problem, plan, stream)
                                         : launch<GemmConfig<GemmInput::E4M3>>(problem, plan, stream);
}

}  // namespace fp8attn::sm90
