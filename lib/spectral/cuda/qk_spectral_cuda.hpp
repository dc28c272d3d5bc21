// The CUDA path of the QK spectral norms (DESIGN §3): head Grams as cuBLASLt FP8 GEMMs
// (E4M3 in, FP32 accumulate and out, strided-batched over heads), the product and its powers
// as FP32 cuBLASLt GEMMs, and a power-iteration kernel per head ending in an FP32 Rayleigh
// quotient on the Grams. Same algorithm as the CPU path (lib/spectral/gram_power_iteration.hpp).
//
// Part of libfp8attn_cuda only; this header includes no CUDA header so the backend's C++ side
// can call it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

struct CUstream_st;

namespace fp8attn::cuda {

/// Every pointer is device memory of the current device unless said otherwise.
struct QkSpectralCudaArgs {
  const void* wq = nullptr;  ///< E4M3 [heads_q·head_dim, d_model], dense rows, 16-byte aligned
  const void* wk = nullptr;  ///< E4M3 [heads_kv·head_dim, d_model], dense rows, 16-byte aligned
  int32_t heads_q = 0;
  int32_t heads_kv = 0;
  int32_t head_dim = 0;  ///< multiple of 16, at most 256
  int64_t d_model = 0;   ///< multiple of 16
  const float* wq_descale = nullptr;  ///< one float: cuBLASLt's A/B scale pointer for W_Q
  const float* wk_descale = nullptr;  ///< one float, for W_K
  int32_t max_iterations = 100;
  float tolerance = 1e-6f;
  uint64_t seed = 0;
  float* warm_start = nullptr;  ///< optional in/out [heads_q·head_dim]
  float* sigma_out = nullptr;   ///< out [heads_q]
  int32_t* iterations_out = nullptr;  ///< optional out [heads_q]
  float* residual_out = nullptr;      ///< optional out [heads_q]
};

/// Device workspace bytes for these sizes (Grams, two power buffers, cuBLASLt's workspace).
size_t qk_spectral_cuda_workspace_size(int32_t heads_q, int32_t heads_kv, int32_t head_dim, int64_t d_model);

/// Enqueues the whole computation on `stream`; never synchronizes. `cublaslt` is a
/// cublasLtHandle_t owned by the caller (the CUDA backend creates one per device). Returns an
/// empty string on success, else what failed (nothing is enqueued past the failure).
std::string run_qk_spectral_cuda(void* cublaslt, const QkSpectralCudaArgs& args, void* workspace,
                                 size_t workspace_bytes, CUstream_st* stream);

}  // namespace fp8attn::cuda
