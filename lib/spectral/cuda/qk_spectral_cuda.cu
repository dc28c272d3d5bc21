// cuBLASLt FP8 Grams and the per-head power iteration on the GPU (see qk_spectral_cuda.hpp).
#include "lib/spectral/cuda/qk_spectral_cuda.hpp"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace fp8attn::cuda {
namespace {

// NOTE: the same 2^5-th power of G_Q·G_K as the CPU path (kOperatorSquarings there): trained
// weights have close top eigenvalues, and five batched d_h³ GEMMs are cheap next to the Grams.
constexpr int kSquarings = 5;
constexpr size_t kCublasLtWorkspace = size_t{32} << 20;  // NOTE: cuBLASLt's Hopper recommendation
constexpr size_t kAlign = 256;

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

struct Layout {
  size_t grams_q, grams_k, power, power_tmp, lt_workspace, total;
  Layout(int32_t hq, int32_t hkv, int32_t dh) {
    const size_t square = sizeof(float) * static_cast<size_t>(dh) * dh;
    size_t at = 0;
    grams_q = at;
    at += align_up(square * hq);
    grams_k = at;
    at += align_up(square * hkv);
    power = at;
    at += align_up(square * hq);
    power_tmp = at;
    at += align_up(square * hq);
    lt_workspace = at;
    at += kCublasLtWorkspace;
    total = at;
  }
};

#define FP8ATTN_LT_CHECK(call)                                                          \
  do {                                                                                  \
    const cublasStatus_t status_ = (call);                                              \
    if (status_ != CUBLAS_STATUS_SUCCESS)                                               \
      return std::string(#call) + " failed: " + cublasLtGetStatusString(status_);      \
  } while (0)

/// One strided-batched cuBLASLt matmul D = op(A)·op(B), column-major, β = 0.
struct BatchedGemm {
  cudaDataType_t ab_type;
  cublasOperation_t trans_a, trans_b;
  int64_t m, n, k;
  int64_t lda, ldb, ldd;
  int64_t stride_a, stride_b, stride_d;
  int32_t batch;
  const float* a_scale = nullptr;  // FP8 only
  const float* b_scale = nullptr;
};

std::string run_gemm(cublasLtHandle_t lt, const BatchedGemm& g, const void* a, const void* b, float* d, void* workspace,
                     cudaStream_t stream) {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  std::string error;
  auto body = [&]() -> std::string {
    // NOTE: CUBLAS_COMPUTE_32F (not _FAST_TF32): the FP32 products and powers keep FP32 inputs.
    FP8ATTN_LT_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    FP8ATTN_LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &g.trans_a, sizeof g.trans_a));
    FP8ATTN_LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &g.trans_b, sizeof g.trans_b));
    if (g.a_scale != nullptr)
      FP8ATTN_LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &g.a_scale, sizeof g.a_scale));
    if (g.b_scale != nullptr)
      FP8ATTN_LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &g.b_scale, sizeof g.b_scale));
    const uint64_t a_rows = g.trans_a == CUBLAS_OP_T ? g.k : g.m, a_cols = g.trans_a == CUBLAS_OP_T ? g.m : g.k;
    const uint64_t b_rows = g.trans_b == CUBLAS_OP_T ? g.n : g.k, b_cols = g.trans_b == CUBLAS_OP_T ? g.k : g.n;
    FP8ATTN_LT_CHECK(cublasLtMatrixLayoutCreate(&la, g.ab_type, a_rows, a_cols, g.lda));
    FP8ATTN_LT_CHECK(cublasLtMatrixLayoutCreate(&lb, g.ab_type, b_rows, b_cols, g.ldb));
    FP8ATTN_LT_CHECK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, g.m, g.n, g.ldd));
    for (auto [layout, stride] : {std::pair{la, g.stride_a}, std::pair{lb, g.stride_b}, std::pair{ld, g.stride_d}}) {
      FP8ATTN_LT_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &g.batch, sizeof g.batch));
      FP8ATTN_LT_CHECK(
          cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    }
    FP8ATTN_LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const size_t ws = kCublasLtWorkspace;
    FP8ATTN_LT_CHECK(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    FP8ATTN_LT_CHECK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 1, &heuristic, &found));
    if (found == 0) return "cuBLASLt found no algorithm for a spectral-norm GEMM";
    const float alpha = 1.0f, beta = 0.0f;
    FP8ATTN_LT_CHECK(cublasLtMatmul(lt, op, &alpha, a, la, b, lb, &beta, d, ld, d, ld, &heuristic.algo, workspace, ws,
                                    stream));
    return {};
  };
  error = body();
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (ld) cublasLtMatrixLayoutDestroy(ld);
  if (lb) cublasLtMatrixLayoutDestroy(lb);
  if (la) cublasLtMatrixLayoutDestroy(la);
  if (op) cublasLtMatmulDescDestroy(op);
  return error;
}

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

size_t qk_spectral_cuda_workspace_size(int32_t heads_q, int32_t heads_kv, int32_t head_dim, int64_t d_model) {
  return Layout(heads_q, heads_kv, head_dim).total;
}

std::string run_qk_spectral_cuda(void* cublaslt, const QkSpectralCudaArgs& a, void* workspace, size_t workspace_bytes,
                                 CUstream_st* stream) {
  // cuBLASLt's FP8 rules: TN only, 16-byte aligned pointers and leading dimensions.
  if (a.head_dim % 16 != 0 || a.head_dim > 256) return "head_dim must be a multiple of 16 and at most 256";
  if (a.d_model % 16 != 0) return "d_model must be a multiple of 16 for cuBLASLt FP8";
  if (reinterpret_cast<uintptr_t>(a.wq) % 16 != 0 || reinterpret_cast<uintptr_t>(a.wk) % 16 != 0)
    return "weights must be 16-byte aligned for cuBLASLt FP8";
  if (a.heads_q % a.heads_kv != 0) return "heads_q must be a multiple of heads_kv";
  const Layout layout(a.heads_q, a.heads_kv, a.head_dim);
  if (workspace_bytes < layout.total) return "workspace too small";
  auto* base = static_cast<char*>(workspace);
  auto* grams_q = reinterpret_cast<float*>(base + layout.grams_q);
  auto* grams_k = reinterpret_cast<float*>(base + layout.grams_k);
  auto* power = reinterpret_cast<float*>(base + layout.power);
  auto* power_tmp = reinterpret_cast<float*>(base + layout.power_tmp);
  void* lt_ws = base + layout.lt_workspace;
  auto lt = static_cast<cublasLtHandle_t>(cublaslt);
  const int64_t dh = a.head_dim, d = a.d_model, square = dh * dh;
  const int32_t group = a.heads_q / a.heads_kv;

  // G_h = W_h·W_hᵀ. A row-major d_h × d block is a column-major d × d_h matrix X with ld = d, so
  // the Gram is Xᵀ·X: TN with A = B = X, as FP8 requires. Scales: both operands carry the
  // tensor's descale, so D = descale²·(W_h·W_hᵀ) in FP32.
  BatchedGemm gram{CUDA_R_8F_E4M3, CUBLAS_OP_T, CUBLAS_OP_N, dh, dh, d, d, d, dh, dh * d, dh * d, square, a.heads_q,
                   a.wq_descale, a.wq_descale};
  if (auto e = run_gemm(lt, gram, a.wq, a.wq, grams_q, lt_ws, stream); !e.empty()) return e;
  // NOTE: one Gram per KV group, shared by its query heads: W_K,g is read once.
  gram.batch = a.heads_kv;
  gram.a_scale = gram.b_scale = a.wk_descale;
  if (auto e = run_gemm(lt, gram, a.wk, a.wk, grams_k, lt_ws, stream); !e.empty()) return e;

  // C_h = G_Q,h·G_K,g, row-major. cuBLASLt is column-major and the Grams are symmetric, so the
  // column-major product G_K,g·G_Q,h is exactly row-major C_h. One call per group, G_K,g
  // broadcast over the group's heads (batch stride 0).
  for (int32_t g = 0; g < a.heads_kv; ++g) {
    BatchedGemm product{CUDA_R_32F, CUBLAS_OP_N, CUBLAS_OP_N, dh, dh, dh, dh, dh, dh, 0, square, square, group};
    if (auto e = run_gemm(lt, product, grams_k + g * square, grams_q + g * group * square, power + g * group * square, lt_ws,
                          stream);
        !e.empty())
      return e;
  }
  rescale_kernel<<<a.heads_q, 256, 0, stream>>>(power, square);
  // P ← P·P (row-major P·P is the column-major product of the same buffers, transposed twice).
  BatchedGemm squaring{CUDA_R_32F, CUBLAS_OP_N, CUBLAS_OP_N, dh, dh, dh, dh, dh, dh, square, square, square, a.heads_q};
  for (int s = 0; s < kSquarings; ++s) {
    if (auto e = run_gemm(lt, squaring, power, power, power_tmp, lt_ws, stream); !e.empty()) return e;
    rescale_kernel<<<a.heads_q, 256, 0, stream>>>(power_tmp, square);
    std::swap(power, power_tmp);
  }
  const size_t shared = sizeof(float) * (2 * static_cast<size_t>(dh) + 32);
  power_iteration_kernel<<<a.heads_q, static_cast<unsigned>(dh), shared, stream>>>(
      power, grams_q, grams_k, static_cast<int>(dh), group, a.max_iterations, a.tolerance, a.seed, a.warm_start,
      a.sigma_out, a.iterations_out, a.residual_out);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    return std::string("spectral-norm kernel launch failed: ") + cudaGetErrorString(e);
  return {};
}

}  // namespace fp8attn::cuda
