// fp8attn_cuda_bench: the FP8 attention forward's TFLOP/s on a Hopper GPU over FlashAttention-3's
// grid (arXiv 2407.08608, §4.1): 16k tokens in total (batch = 16384 / seqlen), hidden size 2048
// (heads = 2048 / head_dim), head dims 64, 128 and 256, sequence lengths 512 to 16k, causal and
// not. FLOPs = 4·seqlen²·head_dim·heads·batch, halved for causal. Each figure is also given as a
// ratio to a cuBLASLt FP8 GEMM (E4M3 in, FP32 accumulation, BF16 out) of the same FLOPs,
// measured in the same run, so that clocks and power limits cancel. FA3's own FP8 figures are
// printed as anchors: 1171 TFLOP/s at hd256, 16k, non-causal and 1008 at hd128.
//
// Usage: fp8attn_cuda_bench [--out FILE] [--reps N]   (default FILE bench-results/cuda_fa3_grid.md)
// Without an sm_90 GPU (or libfp8attn_cuda) it prints why and exits with status 2.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "tools/cuda_bench/cuda_bench_support.hpp"
#include "kernels/numerics/float8.hpp"

namespace {

using fp8attn::cuda_bench::device_tensor;
using fp8attn::cuda_bench::fail;
using fp8attn::cuda_bench::time_ms;

#define LT_OK(call)                                                                                    \
  do {                                                                                                 \
    const cublasStatus_t s_ = (call);                                                                  \
    if (s_ != CUBLAS_STATUS_SUCCESS) fail(std::string(#call) + ": " + cublasLtGetStatusString(s_));    \
  } while (0)

/// A cuBLASLt FP8 GEMM of (about) `flops` FLOPs: D[M×N] = Aᵀ·B with M = N = 4096 and K the
/// multiple of 64 nearest flops / (2·M·N). Returns TFLOP/s at its own FLOP count.
double gemm_tflops(cublasLtHandle_t lt, double flops, cudaStream_t stream, int reps, void* scratch, size_t scratch_bytes) {
  const int64_t m = 4096, n = 4096;
  const int64_t k = std::max<int64_t>(64, static_cast<int64_t>(std::llround(flops / (2.0 * m * n) / 64.0)) * 64);
  void *a = nullptr, *b = nullptr, *d = nullptr;
  CUDA_OK(cudaMalloc(&a, static_cast<size_t>(m * k)));
  CUDA_OK(cudaMalloc(&b, static_cast<size_t>(n * k)));
  CUDA_OK(cudaMalloc(&d, static_cast<size_t>(m * n * 2)));
  CUDA_OK(cudaMemset(a, 0x30, static_cast<size_t>(m * k)));  // E4M3 0.5
  CUDA_OK(cudaMemset(b, 0x30, static_cast<size_t>(n * k)));
  cublasLtMatmulDesc_t op;
  LT_OK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t t = CUBLAS_OP_T, nn = CUBLAS_OP_N;
  LT_OK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
  LT_OK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof nn));
  cublasLtMatrixLayout_t la, lb, ld;
  LT_OK(cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, k, m, k));
  LT_OK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, k, n, k));
  LT_OK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, m, n, m));
  cublasLtMatmulPreference_t pref;
  LT_OK(cublasLtMatmulPreferenceCreate(&pref));
  LT_OK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &scratch_bytes,
                                             sizeof scratch_bytes));
  cublasLtMatmulHeuristicResult_t h{};
  int found = 0;
  LT_OK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 1, &h, &found));
  if (found == 0) fail("cuBLASLt has no FP8 GEMM algorithm for the reference GEMM");
  const float alpha = 1.0f, beta = 0.0f;
  const double ms = time_ms(stream, reps, [&] {
    LT_OK(cublasLtMatmul(lt, op, &alpha, a, la, b, lb, &beta, d, ld, d, ld, &h.algo, scratch, scratch_bytes, stream));
  });
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(op);
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
  return 2.0 * m * n * k / (ms * 1e-3) / 1e12;
}

}  // namespace

int main(int argc, char** argv) {
  fp8attn::cuda_bench::program_name() = "fp8attn_cuda_bench";
  std::string out_path = "bench-results/cuda_fa3_grid.md";
  int reps = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) out_path = argv[++i];
    else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else fail("usage: fp8attn_cuda_bench [--out FILE] [--reps N]");
  }
  fp8attn_context_options o{};
  o.struct_size = sizeof o;
  o.backend = FP8ATTN_BACKEND_CUDA;
  fp8attn_context ctx = nullptr;
  fp8attn_error err{};
  err.struct_size = sizeof err;
  if (fp8attn_context_create(&o, &ctx, &err) != FP8ATTN_OK) {
    std::fprintf(stderr, "fp8attn_cuda_bench: needs an sm_90 GPU and libfp8attn_cuda; the CUDA context failed: %s (%s)\n",
                 fp8attn_status_name(err.status), err.message);
    return 2;
  }
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  cublasLtHandle_t lt;
  LT_OK(cublasLtCreate(&lt));
  const size_t scratch_bytes = size_t{32} << 20;
  void* scratch = nullptr;
  CUDA_OK(cudaMalloc(&scratch, scratch_bytes));

  // Inputs: N(0,1) cast to E4M3, for the largest problem; every problem reads a prefix.
  const int64_t tokens = 16384, hidden = 2048;
  std::vector<uint8_t> host(static_cast<size_t>(tokens * hidden));
  std::mt19937 rng(1);
  std::normal_distribution<float> n01;
  for (auto& x : host) x = fp8attn::num::float_to_e4m3(n01(rng));
  void *q, *k, *v, *out, *ones;
  for (void** p : {&q, &k, &v}) {
    CUDA_OK(cudaMalloc(p, host.size()));
    CUDA_OK(cudaMemcpy(*p, host.data(), host.size(), cudaMemcpyHostToDevice));
  }
  CUDA_OK(cudaMalloc(&out, host.size() * 2));
  const std::vector<float> one_host(4096, 1.0f);
  CUDA_OK(cudaMalloc(&ones, one_host.size() * sizeof(float)));
  CUDA_OK(cudaMemcpy(ones, one_host.data(), one_host.size() * sizeof(float), cudaMemcpyHostToDevice));

  std::string table = "| head_dim | seqlen | batch | heads | causal | ms | TFLOP/s | cuBLASLt FP8 GEMM TFLOP/s | ratio |\n"
                      "|---|---|---|---|---|---|---|---|---|\n";
  std::printf("%s", table.c_str());
  for (int hd : {64, 128, 256})
    for (int64_t s : {512, 1024, 2048, 4096, 8192, 16384})
      for (int causal : {0, 1}) {
        const int64_t batch = tokens / s, heads = hidden / hd;
        fp8attn_attention_desc d{};
        d.struct_size = sizeof d;
        fp8attn_attention_desc_init(&d);
        d.input_dtype = FP8ATTN_DTYPE_E4M3;
        d.output_dtype = FP8ATTN_DTYPE_BF16;
        d.num_heads_q = static_cast<int32_t>(heads);
        d.num_heads_kv = static_cast<int32_t>(heads);
        d.head_dim = d.head_dim_v = hd;
        d.softmax_scale = 1.0f / std::sqrt(static_cast<float>(hd));
        d.causal = static_cast<uint32_t>(causal);
        fp8attn_plan plan = nullptr;
        if (fp8attn_plan_create(ctx, &d, &plan, &err) != FP8ATTN_OK) fail(std::string("plan: ") + err.message);
        size_t ws_bytes = 0;
        if (fp8attn_plan_workspace_size(plan, batch, s, s, &ws_bytes, &err) != FP8ATTN_OK) fail(err.message);
        void* ws = nullptr;
        CUDA_OK(cudaMalloc(&ws, ws_bytes + 1));
        fp8attn_attention_args a{};
        a.struct_size = sizeof a;
        a.q = device_tensor(q, FP8ATTN_DTYPE_E4M3, {batch, s, heads, hd});
        a.k = device_tensor(k, FP8ATTN_DTYPE_E4M3, {batch, s, heads, hd});
        a.v = device_tensor(v, FP8ATTN_DTYPE_E4M3, {batch, s, heads, hd});
        a.out = device_tensor(out, FP8ATTN_DTYPE_BF16, {batch, s, heads, hd});
        fp8attn_tensor descale = device_tensor(ones, FP8ATTN_DTYPE_F32, {batch, heads});
        descale.stride[0] = descale.stride[1] = 0;  // per-tensor: one float broadcast
        a.q_descale = a.k_descale = a.v_descale = descale;
        const double ms = time_ms(stream, reps, [&] {
          if (fp8attn_attention_forward(plan, &a, ws, ws_bytes, stream, &err) != FP8ATTN_OK)
            fail(std::string("forward: ") + err.message);
        });
        const double flops = 4.0 * s * s * hd * heads * batch / (causal ? 2.0 : 1.0);
        const double tflops = flops / (ms * 1e-3) / 1e12;
        const double gemm = gemm_tflops(lt, flops, stream, reps, scratch, scratch_bytes);
        char row[256];
        std::snprintf(row, sizeof row, "| %d | %lld | %lld | %lld | %s | %.3f | %.1f | %.1f | %.3f |\n", hd,
                      static_cast<long long>(s), static_cast<long long>(batch), static_cast<long long>(heads),
                      causal ? "yes" : "no", ms, tflops, gemm, tflops / gemm);
        std::printf("%s", row);
        std::fflush(stdout);
        table += row;
        cudaFree(ws);
        fp8attn_plan_destroy(plan);
      }
  const std::string header = std::string("# fp8attn FP8 forward on FlashAttention-3's grid\n\nDevice: ") + prop.name +
                             ". FA3's FP8 anchors: 1171 TFLOP/s at hd256, 16k, non-causal; 1008 at hd128.\n\n";
  const auto slash = out_path.rfind('/');
  if (slash != std::string::npos) std::system(("mkdir -p '" + out_path.substr(0, slash) + "'").c_str());
  std::ofstream(out_path) << header << table;
  std::printf("results: %s\n", out_path.c_str());
  cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(out), cudaFree(ones), cudaFree(scratch);
  cublasLtDestroy(lt);
  cudaStreamDestroy(stream);
  fp8attn_context_destroy(ctx);
  return 0;
}
