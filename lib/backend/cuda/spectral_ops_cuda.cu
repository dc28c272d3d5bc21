// cuBLASLt GEMMs and the per-head kernels of the device spectral norms (spectral_ops_cuda.hpp).
#include "lib/backend/cuda/spectral_ops_cuda.hpp"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>

namespace fp8attn::cuda {
namespace {

#define FP8ATTN_LT_CHECK(call)                                                          \
  do {                                                                                  \
    const cublasStatus_t status_ = (call);                                              \
    if (status_ != CUBLAS_STATUS_SUCCESS)                                               \
      return std::string(#call) + " failed: " + cublasLtGetStatusString(status_);      \
  } while (0)

/// Block-wide sum of one float per thread; every thread gets the result.
__device__ float block_sum(float x, float* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < (blockDim.x + 31) / 32; ++w) total += scratch[w];
  return total;
}

/// Divides each head's n × n block by its largest |entry|, so repeated squaring stays finite.
__global__ void rescale_kernel(float* blocks, int64_t block_elems) {
  __shared__ float scratch[32];
  float* m = blocks + blockIdx.x * block_elems;
  float peak = 0.0f;
  for (int64_t i = threadIdx.x; i < block_elems; i += blockDim.x) peak = fmaxf(peak, fabsf(m[i]));
  for (int offset = 16; offset > 0; offset /= 2) peak = fmaxf(peak, __shfl_xor_sync(0xffffffffu, peak, offset));
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = peak;
  __syncthreads();
  float all = 0.0f;
  for (int w = 0; w < (blockDim.x + 31) / 32; ++w) all = fmaxf(all, scratch[w]);
  if (all == 0.0f || !isfinite(all)) return;  // a zero product stays zero; σ comes out 0
  const float inv = 1.0f / all;
  for (int64_t i = threadIdx.x; i < block_elems; i += blockDim.x) m[i] *= inv;
}

/// y_i = Σ_j m[i][j]·x_j for the thread's row i (row-major n × n).
__device__ float row_dot(const float* m, int n, int i, const float* x) {
  float acc = 0.0f;
  for (int j = 0; j < n; ++j) acc += m[static_cast<int64_t>(i) * n + j] * x[j];
  return acc;
}

__device__ float hashed_uniform(uint64_t seed, int head, int i) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(head + 1) * 1000003ull + static_cast<uint64_t>(i));
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * 0x1.0p-23f - 1.0f;  // uniform in [−1, 1)
}

/// One block per query head, one thread per row (blockDim.x = n). Power iteration with the
/// powered operator P, stopping on the FP32 Rayleigh quotient λ = (wᵀ·G_Q·w)/(vᵀ·w), w = G_K·v.
__global__ void power_iteration_kernel(const float* power, const float* grams_q, const float* grams_k, int n, int group,
                                       int max_iterations, float tolerance, uint64_t seed, float* warm_start,
                                       float* sigma_out, int32_t* iterations_out, float* residual_out) {
  extern __shared__ float shared[];
  float* v = shared;
  float* w = v + n;
  float* scratch = w + n;  // 32 floats
  const int h = blockIdx.x, i = threadIdx.x;
  const int64_t square = static_cast<int64_t>(n) * n;
  const float* p = power + h * square;
  const float* gq = grams_q + h * square;
  const float* gk = grams_k + (h / group) * square;

  float vi = warm_start != nullptr ? warm_start[h * n + i] : 0.0f;
  if (block_sum(vi * vi, scratch) == 0.0f) vi = hashed_uniform(seed, h, i);
  vi *= rsqrtf(block_sum(vi * vi, scratch));
  v[i] = vi;
  __syncthreads();

  auto rayleigh = [&](float* zi_out) {
    const float wi = row_dot(gk, n, i, v);
    w[i] = wi;
    __syncthreads();
    const float zi = row_dot(gq, n, i, w);
    *zi_out = zi;
    const float vw = block_sum(v[i] * wi, scratch);
    const float wz = block_sum(wi * zi, scratch);
    return vw > 0.0f ? wz / vw : 0.0f;
  };
  float zi = 0.0f;
  float lambda = rayleigh(&zi);
  int iterations = 0;
  for (int it = 0; it < max_iterations; ++it) {
    const float pv = row_dot(p, n, i, v);
    const float norm2 = block_sum(pv * pv, scratch);
    iterations = it + 1;
    if (norm2 == 0.0f || !isfinite(norm2)) break;
    __syncthreads();
    v[i] = pv * rsqrtf(norm2);
    __syncthreads();
    const float previous = lambda;
    lambda = rayleigh(&zi);
    if (fabsf(lambda - previous) <= tolerance * lambda) break;
  }
  lambda = fmaxf(lambda, 0.0f);
  // Residual in the symmetric frame: ‖S·y − λ·y‖² = rᵀ·G_K·r, r = G_Q·G_K·v − λ·v; ‖y‖² = vᵀ·w.
  const float vw = block_sum(v[i] * w[i], scratch);
  const float ri = zi - lambda * v[i];
  __syncthreads();
  w[i] = ri;
  __syncthreads();
  const float res2 = block_sum(ri * row_dot(gk, n, i, w), scratch);
  if (warm_start != nullptr) warm_start[h * n + i] = v[i];
  if (i == 0) {
    sigma_out[h] = sqrtf(lambda);
    if (iterations_out != nullptr) iterations_out[h] = iterations;
    if (residual_out != nullptr)
      residual_out[h] = (lambda > 0.0f && vw > 0.0f) ? sqrtf(fmaxf(res2, 0.0f)) / (lambda * sqrtf(vw)) : 0.0f;
  }
}

}  // namespace

std::string run_gemm_cublaslt(void* handle, const gpu::BatchedGemmDesc& g, CUstream_st* stream) {
  auto lt = static_cast<cublasLtHandle_t>(handle);
  const cudaDataType_t ab_type = g.operand == gpu::GemmOperand::E4M3 ? CUDA_R_8F_E4M3 : CUDA_R_32F;
  const cublasOperation_t trans_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, trans_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  auto body = [&]() -> std::string {
    // NOTE: CUBLAS_COMPUTE_32F (not _FAST_TF32): the FP32 products and powers keep FP32 inputs,
    // and FP8 inputs accumulate in FP32. The descales come in alpha (host pointer mode).
    FP8ATTN_LT_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    FP8ATTN_LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a));
    FP8ATTN_LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b));
    const uint64_t a_rows = g.trans_a ? g.k : g.m, a_cols = g.trans_a ? g.m : g.k;
    const uint64_t b_rows = g.trans_b ? g.n : g.k, b_cols = g.trans_b ? g.k : g.n;
    FP8ATTN_LT_CHECK(cublasLtMatrixLayoutCreate(&la, ab_type, a_rows, a_cols, g.lda));
    FP8ATTN_LT_CHECK(cublasLtMatrixLayoutCreate(&lb, ab_type, b_rows, b_cols, g.ldb));
    FP8ATTN_LT_CHECK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, g.m, g.n, g.ldd));
    for (auto [layout, stride] : {std::pair{la, g.stride_a}, std::pair{lb, g.stride_b}, std::pair{ld, g.stride_d}}) {
      FP8ATTN_LT_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &g.batch, sizeof g.batch));
      FP8ATTN_LT_CHECK(
          cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    }
    FP8ATTN_LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    FP8ATTN_LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                          &g.scratch_bytes, sizeof g.scratch_bytes));
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    FP8ATTN_LT_CHECK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 1, &heuristic, &found));
    if (found == 0) return "cublasLtMatmulAlgoGetHeuristic found no algorithm for a spectral-norm GEMM";
    const float beta = 0.0f;
    FP8ATTN_LT_CHECK(cublasLtMatmul(lt, op, &g.alpha, g.a, la, g.b, lb, &beta, g.d, ld, g.d, ld, &heuristic.algo,
                                    g.scratch, g.scratch_bytes, stream));
    return {};
  };
  const std::string error = body();
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (ld) cublasLtMatrixLayoutDestroy(ld);
  if (lb) cublasLtMatrixLayoutDestroy(lb);
  if (la) cublasLtMatrixLayoutDestroy(la);
  if (op) cublasLtMatmulDescDestroy(op);
  return error;
}

std::string launch_rescale_cuda(const gpu::RescaleDesc& r, CUstream_st* stream) {
  rescale_kernel<<<r.count, 256, 0, stream>>>(r.blocks, r.block_elems);
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? std::string() : std::string("rescale_kernel launch: ") + cudaGetErrorString(e);
}

std::string launch_power_iteration_cuda(const gpu::PowerIterationDesc& d, CUstream_st* stream) {
  const size_t shared = sizeof(float) * (2 * static_cast<size_t>(d.n) + 32);
  power_iteration_kernel<<<d.heads, static_cast<unsigned>(d.n), shared, stream>>>(
      d.power, d.grams_q, d.grams_k, d.n, d.group, d.max_iterations, d.tolerance, d.seed, d.warm_start, d.sigma_out,
      d.iterations_out, d.residual_out);
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? std::string() : std::string("power_iteration_kernel launch: ") + cudaGetErrorString(e);
}

}  // namespace fp8attn::cuda
