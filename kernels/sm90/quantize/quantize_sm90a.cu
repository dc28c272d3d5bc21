// The sm_90a build of the quantizer kernels (kernels/sm90/quantize/quantize_kernel.hpp).
// tests/quantize/check_quantize_sm90a.sh compiles this file and checks ptxas and SASS.
#include <cuda_runtime_api.h>

#include "kernels/sm90/quantize/quantize_cuda.hpp"
#include "kernels/sm90/quantize/quantize_launch.hpp"

namespace fp8attn::sm90::quant {

std::string run_quantize_cuda(const QuantizeParams& p, CUstream_st* stream) {
  if (std::string why = kernel_refusal(p); !why.empty()) return why;
  const dim3 grid(static_cast<unsigned>(p.units_per_head), static_cast<unsigned>(p.heads), static_cast<unsigned>(p.batch));
  std::string error;
  with_quantize_kernels(p, [&](auto amax_kernel, auto cast_kernel) {
    amax_kernel<<<grid, kQuantizeThreads, kQuantizeSmemBytes, stream>>>(p);
    cast_kernel<<<grid, kQuantizeThreads, kQuantizeSmemBytes, stream>>>(p);
    const cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess) error = std::string("quantizer launch: ") + cudaGetErrorString(status);
  });
  return error;
}

}  // namespace fp8attn::sm90::quant
