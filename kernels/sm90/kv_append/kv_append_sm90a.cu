// The sm_90a build of the KV append kernel (kernels/sm90/kv_append/kv_append_kernel.hpp).
#include <cuda_runtime_api.h>

#include "kernels/sm90/kv_append/kv_append_cuda.hpp"
#include "kernels/sm90/kv_append/kv_append_launch.hpp"

namespace fp8attn::sm90::kv {

std::string run_kv_append_cuda(const KvAppendParams& p, CUstream_st* stream) {
  if (std::string why = kernel_refusal(p); !why.empty()) return why;
  if (p.tokens == 0) return "";
  const dim3 grid(static_cast<unsigned>(p.tokens), 1, 1);
  std::string error;
  with_kv_append_kernel(p, [&](auto kernel) {
    kernel<<<grid, kAppendThreads, 0, stream>>>(p);
    const cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess) error = std::string("KV append launch: ") + cudaGetErrorString(status);
  });
  return error;
}

}  // namespace fp8attn::sm90::kv
