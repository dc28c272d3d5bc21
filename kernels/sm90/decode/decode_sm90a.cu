// The sm_90a build of the decode kernels: the attention forward kernel instantiated with each
// decode config (decode_config.hpp), and its launch on a CUDA stream.
#include <cuda_runtime_api.h>

#include <string>

#include "kernels/arch/tma_tensor_map_cuda.hpp"
#include "kernels/sm90/attention/attention_fwd_kernel.hpp"
#include "kernels/sm90/decode/decode_config.hpp"
#include "kernels/sm90/decode/decode_launch.hpp"

namespace fp8attn::sm90 {

std::string prepare_attention_decode_cuda(const FwdKernelKey& k) {
  std::string why = "attention decode: no kernel for head_dim " + std::to_string(k.head_dim);
  with_decode_config(k.head_dim, k.promotion, k.telemetry, k.input, [&](auto cfg) {
    using Cfg = decltype(cfg);
    const cudaError_t status = cudaFuncSetAttribute(attention_fwd_kernel<Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                    static_cast<int>(attention_fwd_smem_bytes<Cfg>()));
    why = status == cudaSuccess ? std::string() : std::string("cudaFuncSetAttribute: ") + cudaGetErrorString(status);
  });
  return why;
}

std::string launch_attention_decode_cuda(const FwdLaunch& launch, CUstream_st* stream) {
  AttentionFwdParams params;
  static_cast<FwdArguments&>(params) = launch.args;
  if (std::string why = arch::encode_tensor_map_cuda(launch.q, &params.tma_q); !why.empty()) return why;
  if (std::string why = arch::encode_tensor_map_cuda(launch.k, &params.tma_k); !why.empty()) return why;
  if (std::string why = arch::encode_tensor_map_cuda(launch.v, &params.tma_v); !why.empty()) return why;
  const FwdKernelKey& k = launch.key;
  std::string why = "attention decode: no kernel for head_dim " + std::to_string(k.head_dim);
  with_decode_config(k.head_dim, k.promotion, k.telemetry, k.input, [&](auto cfg) {
    attention_fwd_kernel<decltype(cfg)><<<dim3(launch.grid), dim3(launch.threads), launch.smem_bytes, stream>>>(params);
    const cudaError_t status = cudaGetLastError();
    why = status == cudaSuccess ? std::string() : std::string("attention decode launch: ") + cudaGetErrorString(status);
  });
  return why;
}

}  // namespace fp8attn::sm90
