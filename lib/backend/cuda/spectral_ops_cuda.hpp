// libfp8attn_cuda's side of the spectral-norm operations (lib/backend/gpu/device_ops.hpp):
// cuBLASLt strided-batched GEMMs and the two per-head kernels. Includes no CUDA header, so the
// runtime's C++ side can call it. Each returns "" on success, else the failing call and its
// error string.
#pragma once

#include <cstddef>
#include <string>

#include "lib/backend/gpu/device_ops.hpp"

struct CUstream_st;

namespace fp8attn::cuda {

/// cuBLASLt's workspace per GEMM call. NOTE: 32 MiB is cuBLASLt's recommendation for Hopper.
inline constexpr size_t kCublasLtScratchBytes = size_t{32} << 20;

/// `lt` is a cublasLtHandle_t.
std::string run_gemm_cublaslt(void* lt, const gpu::BatchedGemmDesc& desc, CUstream_st* stream);
std::string launch_rescale_cuda(const gpu::RescaleDesc& desc, CUstream_st* stream);
std::string launch_power_iteration_cuda(const gpu::PowerIterationDesc& desc, CUstream_st* stream);

}  // namespace fp8attn::cuda
