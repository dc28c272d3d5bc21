// Descriptions of the device operations behind the spectral norms, as the seam takes them: a
// strided-batched GEMM with cuBLASLt's conventions, the per-head rescale of the powered
// operator, and the per-head power iteration. The CUDA runtime runs them with cuBLASLt and the
// kernels of libfp8attn_cuda; the emulated runtime with the project's own TN GEMM (FP8) and host
// loops, so the plan that builds them (spectral_plan.cpp) is written once.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fp8attn::gpu {

/// Element type of a GEMM's A and B. Accumulation and D are FP32 in both.
enum class GemmOperand : int32_t { E4M3 = 0, F32 = 1 };

/// D = alpha·op(A)·op(B), column-major as in cuBLASLt, β = 0, `batch` problems at the given
/// element strides (a stride of 0 broadcasts). NOTE: E4M3 takes TN only (trans_a, !trans_b),
/// cuBLASLt's FP8 rule; the descales enter through alpha (a host scalar), so no device scale
/// pointer has to be written by an execute call.
struct BatchedGemmDesc {
  GemmOperand operand = GemmOperand::F32;
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldd = 0;
  int64_t stride_a = 0, stride_b = 0, stride_d = 0;
  int32_t batch = 1;
  float alpha = 1.0f;
  const void* a = nullptr;
  const void* b = nullptr;
  float* d = nullptr;
  void* scratch = nullptr;  ///< the runtime's GEMM scratch, carved from the caller's workspace
  size_t scratch_bytes = 0;
};

/// Divides each of `count` blocks of `block_elems` floats by its largest |entry| (blocks that
/// are all zero or not finite stay as they are), so repeated squaring stays finite.
struct RescaleDesc {
  float* blocks = nullptr;
  int32_t count = 0;
  int64_t block_elems = 0;
};

/// One power iteration per query head on the powered operator P_h (n × n, row-major), stopping
/// on the FP32 Rayleigh quotient λ = (wᵀ·G_Q,h·w)/(vᵀ·w), w = G_K,g·v; σ_h = √λ.
struct PowerIterationDesc {
  const float* power = nullptr;    ///< [heads, n, n]
  const float* grams_q = nullptr;  ///< [heads, n, n]
  const float* grams_k = nullptr;  ///< [heads / group, n, n]
  int32_t heads = 0, n = 0, group = 1;
  int32_t max_iterations = 100;
  float tolerance = 1e-6f;
  uint64_t seed = 0;
  float* warm_start = nullptr;        ///< optional in/out [heads, n]
  float* sigma_out = nullptr;         ///< [heads]
  int32_t* iterations_out = nullptr;  ///< optional [heads]
  float* residual_out = nullptr;      ///< optional [heads]
};

}  // namespace fp8attn::gpu
