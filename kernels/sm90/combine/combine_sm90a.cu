// The sm_90a build of the combine kernel (kernels/sm90/combine/combine_kernel.hpp).
#include <cuda_runtime_api.h>

#include "kernels/sm90/combine/combine_cuda.hpp"
#include "kernels/sm90/combine/combine_kernel.hpp"
#include "kernels/sm90/combine/combine_launch.hpp"

namespace fp8attn::sm90::combine {

std::string run_combine_cuda(const CombineParams& p, CUstream_st* stream) {
  if (row_count(p) == 0) return "";
  if (std::string why = kernel_refusal(p); !why.empty()) return why;
  combine_kernel<<<combine_ctas(p), kCombineThreads, kCombineSmemBytes, stream>>>(p);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return std::string("combine launch: ") + cudaGetErrorString(status);
  return "";
}

}  // namespace fp8attn::sm90::combine
