// fp8attn_cuda_bench: the FP8 attention forward's TFLOP/s on a Hopper GPU over FlashAttention-3's
// grid (arXiv 2407.08608, §4.1): 16k tokens in total (batch = 16384 / seqlen), hidden size 2048
// (heads = 2048 / head_dim), head dims 64, 128 and 256, sequence lengths 512 to 16k, causal and
// not. FLOPs = 4·seqlen²·head_dim·heads·batch, halved for causal. Each figure is also given as a
// ratio to a cuBLASLt FP8 GEMM (E4M3 in, FP32 accumulation, BF16 out) of the same FLOPs,
// measured in the same run, so that clocks and power limits cancel. FA3's own FP8 figures are
// printed as anchors: 1171 TFLOP/s at hd256, 16k, non-causal and 1008 at hd128; with --dtype bf16,
// the BF16 forward beside FA3's BF16 figures (about 650 to 740 TFLOP/s at hd128, 16k, H100).
//
// Usage: fp8attn_cuda_bench [--out FILE] [--reps N] [--dtype e4m3|bf16] [--head-dims 64,128,256]
//                           [--seqlens 512,...,16384] [--causal 0|1|both] [--v-keys-contiguous]
//   (default FILE bench-results/cuda_fa3_grid.md). --v-keys-contiguous passes V with its keys
//   contiguous (seq stride 1), which the E4M3 kernel loads as Vᵀ without transposing: the V
//   transpose's share of the time is the difference to the default run. The filters pick one
//   shape for a profiler (scripts/run-gpu-checks.sh runs Nsight Compute on hd128, 16k).
// Without an sm_90 GPU (or libfp8attn_cuda) it prints why and exits with status 2.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "tools/cuda_bench/cuda_bench_support.hpp"
#include "kernels/numerics/bfloat16.hpp"
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

/// "64,128" -> {64, 128}.
std::vector<int64_t> int_list(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::atoll(item.c_str()));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  fp8attn::cuda_bench::program_name() = "fp8attn_cuda_bench";
  std::string out_path = "bench-results/cuda_fa3_grid.md";
  int reps = 10;
  bool bf16 = false, v_keys_contiguous = false;
  std::vector<int64_t> head_dims{64, 128, 256}, seqlens{512, 1024, 2048, 4096, 8192, 16384}, causals{0, 1};
  const char* usage =
      "usage: fp8attn_cuda_bench [--out FILE] [--reps N] [--dtype e4m3|bf16] [--head-dims 64,128,256] "
      "[--seqlens 512,...] [--causal 0|1|both] [--v-keys-contiguous]";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--out" && has_value) out_path = argv[++i];
    else if (a == "--reps" && has_value) reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--dtype" && has_value) {
      const std::string t = argv[++i];
      if (t != "e4m3" && t != "bf16") fail(usage);
      bf16 = t == "bf16";
    } else if (a == "--head-dims" && has_value) head_dims = int_list(argv[++i]);
    else if (a == "--seqlens" && has_value) seqlens = int_list(argv[++i]);
    else if (a == "--causal" && has_value) {
      const std::string c = argv[++i];
      causals = c == "both" ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{std::atoll(c.c_str()) != 0};
    } else if (a == "--v-keys-contiguous") v_keys_contiguous = true;
    else fail(usage);
  }
  for (int64_t hd : head_dims)
    if (hd != 64 && hd != 128 && hd != 256) fail("head dims are 64, 128 and 256");
  for (int64_t s : seqlens)
    if (s <= 0 || 16384 % s != 0) fail("sequence lengths divide 16384 (batch = 16384 / seqlen)");
  if (bf16 && v_keys_contiguous) fail("V with its keys contiguous is an E4M3 path (BF16 refuses it)");
  const int32_t dtype = bf16 ? FP8ATTN_DTYPE_BF16 : FP8ATTN_DTYPE_E4M3;
  const size_t element = bf16 ? 2 : 1;
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

  // Inputs: N(0,1) cast to E4M3 (or BF16), for the largest problem; every problem reads a prefix.
  const int64_t tokens = 16384, hidden = 2048;
  std::vector<uint8_t> host(static_cast<size_t>(tokens * hidden) * element);
  std::mt19937 rng(1);
  std::normal_distribution<float> n01;
  for (size_t i = 0; i < host.size() / element; ++i) {
    if (bf16) {
      const uint16_t b = fp8attn::num::float_to_bf16(n01(rng));
      std::memcpy(&host[2 * i], &b, 2);
    } else {
      host[i] = fp8attn::num::float_to_e4m3(n01(rng));
    }
  }
  void *q, *k, *v, *out, *ones;
  for (void** p : {&q, &k, &v}) {
    CUDA_OK(cudaMalloc(p, host.size()));
    CUDA_OK(cudaMemcpy(*p, host.data(), host.size(), cudaMemcpyHostToDevice));
  }
  CUDA_OK(cudaMalloc(&out, static_cast<size_t>(tokens * hidden) * 2));
  const std::vector<float> one_host(4096, 1.0f);
  CUDA_OK(cudaMalloc(&ones, one_host.size() * sizeof(float)));
  CUDA_OK(cudaMemcpy(ones, one_host.data(), one_host.size() * sizeof(float), cudaMemcpyHostToDevice));

  std::string table = "| head_dim | seqlen | batch | heads | causal | ms | TFLOP/s | cuBLASLt FP8 GEMM TFLOP/s | ratio |\n"
                      "|---|---|---|---|---|---|---|---|---|\n";
  std::printf("%s", table.c_str());
  for (const int64_t hd_wide : head_dims)
    for (const int64_t s : seqlens)
      for (const int64_t causal : causals) {
        const int hd = static_cast<int>(hd_wide);
        const int64_t batch = tokens / s, heads = hidden / hd;
        fp8attn_attention_desc d{};
        d.struct_size = sizeof d;
        fp8attn_attention_desc_init(&d);
        d.input_dtype = dtype;
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
        a.q = device_tensor(q, dtype, {batch, s, heads, hd});
        a.k = device_tensor(k, dtype, {batch, s, heads, hd});
        a.v = device_tensor(v, dtype, {batch, s, heads, hd});
        if (v_keys_contiguous) {  // [batch, heads, head_dim, seq] in memory: seq stride 1
          a.v.stride[1] = 1;
          a.v.stride[3] = s;
          a.v.stride[2] = s * hd;
          a.v.stride[0] = s * hd * heads;
        }
        a.out = device_tensor(out, FP8ATTN_DTYPE_BF16, {batch, s, heads, hd});
        fp8attn_tensor descale = device_tensor(ones, FP8ATTN_DTYPE_F32, {batch, heads});
        descale.stride[0] = descale.stride[1] = 0;  // per-tensor: one float broadcast
        if (!bf16) a.q_descale = a.k_descale = a.v_descale = descale;
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
  const std::string header =
      std::string(bf16 ? "# fp8attn BF16 forward on FlashAttention-3's grid\n\nDevice: "
                       : "# fp8attn FP8 forward on FlashAttention-3's grid\n\nDevice: ") +
      prop.name +
      (bf16 ? ". FA3's BF16 anchors (H100): about 650 to 740 TFLOP/s at hd128, 16k; the ratio is to the FP8 GEMM.\n\n"
            : ". FA3's FP8 anchors: 1171 TFLOP/s at hd256, 16k, non-causal; 1008 at hd128.\n\n") +
      (v_keys_contiguous ? "V given with its keys contiguous (no V transpose).\n\n" : "");
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
