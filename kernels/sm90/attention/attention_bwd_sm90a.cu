// The sm_90a build of the attention backward: the kernels of the instantiation table
// (bwd_instances.hpp: the main kernel, its preprocessing and dQ kernels per head dim), compiled by
// nvcc, and their launches on a CUDA stream. tools/check_attention_sm90a.sh compiles this file to
// check ptxas statistics and the SASS of each kernel.
#include <cuda_runtime_api.h>

#include <string>

#include "kernels/arch/tma_tensor_map_cuda.hpp"
#include "kernels/sm90/attention/attention_bwd_cuda.hpp"
#include "kernels/sm90/attention/attention_bwd_kernel.hpp"
#include "kernels/sm90/attention/bwd_kernel_shape.hpp"

namespace fp8attn::sm90 {

// NOTE: weak, as fwd_kernel_shape (attention_fwd_sm90a.cu): a program linking both builds takes one.
__attribute__((weak)) BwdKernelShape bwd_kernel_shape(const BwdKernelKey& key) { return bwd_kernel_shape_of(key); }

std::string prepare_attention_bwd_cuda(const BwdKernelKey& key) {
  std::string why = "attention backward: no kernel for head_dim " + std::to_string(key.head_dim);
  with_bwd_config(key, [&](auto cfg) {
    using Cfg = decltype(cfg);
    // NOTE: above 48 KB of dynamic shared memory a kernel must opt in (CUDA Programming Guide).
    const cudaError_t status = cudaFuncSetAttribute(attention_bwd_kernel<Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                    static_cast<int>(attention_bwd_smem_bytes<Cfg>()));
    why = status == cudaSuccess ? std::string() : std::string("cudaFuncSetAttribute: ") + cudaGetErrorString(status);
  });
  return why;
}

std::string launch_attention_bwd_cuda(const BwdLaunch& launch, CUstream_st* stream) {
  AttentionBwdParams params;
  static_cast<BwdArguments&>(params) = launch.args;
  if (std::string why = arch::encode_tensor_map_cuda(launch.q, &params.tma_q); !why.empty()) return why;
  if (std::string why = arch::encode_tensor_map_cuda(launch.k, &params.tma_k); !why.empty()) return why;
  if (std::string why = arch::encode_tensor_map_cuda(launch.v, &params.tma_v); !why.empty()) return why;
  if (std::string why = arch::encode_tensor_map_cuda(launch.dout, &params.tma_do); !why.empty()) return why;
  std::string why = "attention backward: no kernel for head_dim " + std::to_string(launch.key.head_dim);
  with_bwd_config(launch.key, [&](auto cfg) {
    using Cfg = decltype(cfg);
    const dim3 rows(launch.row_grid), row_threads(kBwdRowThreads);
    bwd_preprocess_kernel<Cfg::kHeadDim><<<rows, row_threads, 0, stream>>>(launch.args);
    attention_bwd_kernel<Cfg><<<dim3(launch.grid), dim3(launch.threads), launch.smem_bytes, stream>>>(params);
    bwd_dq_reduce_kernel<Cfg::kHeadDim, Cfg::kBlockM, Cfg::kBlockN><<<rows, row_threads, 0, stream>>>(launch.args);
    const cudaError_t status = cudaGetLastError();
    why = status == cudaSuccess ? std::string() : std::string("attention backward launch: ") + cudaGetErrorString(status);
  });
  return why;
}

}  // namespace fp8attn::sm90
