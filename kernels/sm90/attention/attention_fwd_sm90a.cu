// The sm_90a build of the attention forward: every kernel of the instantiation table
// (fwd_instances.hpp), compiled by nvcc, and its launch on a CUDA stream. The CUDA device runtime
// (libfp8attn_cuda) calls launch_attention_fwd_cuda; tools/check_sm90_build.sh compiles this file
// to check ptxas statistics and the SASS of each kernel.
#include <cuda_runtime_api.h>

#include <string>

#include "kernels/arch/tma_tensor_map_cuda.hpp"
#include "kernels/sm90/attention/attention_fwd_cuda.hpp"
#include "kernels/sm90/attention/attention_fwd_kernel.hpp"
#include "kernels/sm90/attention/fwd_kernel_shape.hpp"

namespace fp8attn::sm90 {

// NOTE: one body for both builds (fwd_kernel_shape.hpp): the backend's plan (lib/backend/gpu)
// sizes launches through it in libfp8attn_cuda as in the core. Weak, so a program that links both
// builds (the GPU tests link the core too) takes one without a clash; both give the same numbers.
__attribute__((weak)) FwdKernelShape fwd_kernel_shape(const FwdKernelKey& key) { return fwd_kernel_shape_of(key); }

std::string prepare_attention_fwd_cuda(const FwdKernelKey& key) {
  std::string why = "attention forward: no kernel for head_dim " + std::to_string(key.head_dim);
  with_fwd_config(key, [&](auto cfg) {
    using Cfg = decltype(cfg);
    // NOTE: above 48 KB of dynamic shared memory a kernel must opt in (CUDA Programming Guide,
    // "Shared Memory"); the plan does this once per kernel, not per launch.
    const cudaError_t status = cudaFuncSetAttribute(attention_fwd_kernel<Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                    static_cast<int>(attention_fwd_smem_bytes<Cfg>()));
    why = status == cudaSuccess ? std::string() : std::string("cudaFuncSetAttribute: ") + cudaGetErrorString(status);
  });
  return why;
}

std::string launch_attention_fwd_cuda(const FwdLaunch& launch, CUstream_st* stream) {
  AttentionFwdParams params;
  static_cast<FwdArguments&>(params) = launch.args;
  if (std::string why = arch::encode_tensor_map_cuda(launch.q, &params.tma_q); !why.empty()) return why;
  if (std::string why = arch::encode_tensor_map_cuda(launch.k, &params.tma_k); !why.empty()) return why;
  if (std::string why = arch::encode_tensor_map_cuda(launch.v, &params.tma_v); !why.empty()) return why;
  if (launch.args.tma_out)
    if (std::string why = arch::encode_tensor_map_cuda(launch.o, &params.tma_o); !why.empty()) return why;
  std::string why = "attention forward: no kernel for head_dim " + std::to_string(launch.key.head_dim);
  with_fwd_config(launch.key, [&](auto cfg) {
    attention_fwd_kernel<decltype(cfg)><<<dim3(launch.grid), dim3(launch.threads), launch.smem_bytes, stream>>>(params);
    const cudaError_t status = cudaGetLastError();
    why = status == cudaSuccess ? std::string() : std::string("attention forward launch: ") + cudaGetErrorString(status);
  });
  return why;
}

}  // namespace fp8attn::sm90
