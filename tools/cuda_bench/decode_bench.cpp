// fp8attn_decode_cuda_bench: the decode path (desc.decode = 1, kernels/sm90/decode) on a Hopper
// GPU: E4M3 paged K/V, E4M3 Q, BF16 out, one query token per sequence, num_splits 0 (the
// heuristic). Shapes: GQA 32/4 and 64/8 query/KV heads, head_dim 128, batch 1, 8, 64, KV length
// 4k, 32k, 128k, pages of 1, 16 and 64 keys (in shuffled order). Each row reports the bytes the
// call must move (K and V of every used key, the block table, seqused_k, Q read; O written) per
// second, as a fraction of a device-to-device cudaMemcpyAsync of as many bytes timed in the same
// run (read + write: the copy moves 2× its size) and of the spec bandwidth (2 · memory clock ·
// bus width, from the device attributes), and the plain forward (desc.decode = 0, the prefill
// kernel) on the same inputs, whose time the decode should never exceed.
//
// Usage: fp8attn_decode_cuda_bench [--reps N] [--max-gib G]. Rows whose caches exceed G GiB
// (default 40) are skipped with a note. Without an sm_90 GPU (or libfp8attn_cuda) it prints why
// and exits with status 2. Not run yet: no GPU was available when it was written.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "tools/cuda_bench/cuda_bench_support.hpp"

namespace {

using fp8attn::cuda_bench::device_tensor;
using fp8attn::cuda_bench::fail;
using fp8attn::cuda_bench::time_ms;

constexpr int64_t kHeadDim = 128;

/// The spec bandwidth in bytes/s: double data rate × memory clock × bus width.
double spec_bandwidth() {
  int device = 0, clock_khz = 0, bus_bits = 0;
  CUDA_OK(cudaGetDevice(&device));
  CUDA_OK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device));
  CUDA_OK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
  return 2.0 * clock_khz * 1e3 * bus_bits / 8.0;
}

struct Shape {
  int heads_q, heads_kv;
  int64_t batch, seqlen_k, page_size;
};

fp8attn_attention_desc desc_of(const Shape& s, bool decode) {
  fp8attn_attention_desc d{};
  d.struct_size = sizeof d;
  fp8attn_attention_desc_init(&d);
  d.input_dtype = FP8ATTN_DTYPE_E4M3;
  d.output_dtype = FP8ATTN_DTYPE_BF16;
  d.head_dim = kHeadDim;
  d.num_heads_q = s.heads_q;
  d.num_heads_kv = s.heads_kv;
  d.causal = 1;
  d.page_size = static_cast<int32_t>(s.page_size);
  d.decode = decode ? 1u : 0u;
  d.num_splits = 0;
  return d;
}

/// Milliseconds per forward call of the plan for `d` on `args`, with its own workspace.
double time_forward(fp8attn_context ctx, const fp8attn_attention_desc& d, const fp8attn_attention_args& args,
                    const Shape& s, cudaStream_t stream, int reps) {
  fp8attn_error err{};
  err.struct_size = sizeof err;
  fp8attn_plan plan = nullptr;
  if (fp8attn_plan_create(ctx, &d, &plan, &err) != FP8ATTN_OK) fail(std::string("plan: ") + err.message);
  size_t bytes = 0;
  if (fp8attn_plan_workspace_size(plan, s.batch, 1, s.seqlen_k, &bytes, &err) != FP8ATTN_OK) fail(err.message);
  void* ws = nullptr;
  if (bytes > 0) CUDA_OK(cudaMalloc(&ws, bytes));
  const double ms = time_ms(stream, reps, [&] {
    if (fp8attn_attention_forward(plan, &args, ws, bytes, stream, &err) != FP8ATTN_OK) fail(err.message);
  });
  cudaFree(ws);
  fp8attn_plan_destroy(plan);
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  fp8attn::cuda_bench::program_name() = "fp8attn_decode_cuda_bench";
  int reps = 50;
  double max_gib = 40.0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--max-gib") == 0 && i + 1 < argc) max_gib = std::atof(argv[++i]);
  }
  fp8attn_context ctx = nullptr;
  fp8attn_context_options o{};
  o.struct_size = sizeof o;
  o.backend = FP8ATTN_BACKEND_CUDA;
  fp8attn_error err{};
  err.struct_size = sizeof err;
  if (fp8attn_context_create(&o, &ctx, &err) != FP8ATTN_OK) {
    std::fprintf(stderr, "fp8attn_decode_cuda_bench: no CUDA backend: %s\n", err.message);
    return 2;
  }
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  const double spec = spec_bandwidth();
  std::printf("spec bandwidth %.1f GB/s\n", spec * 1e-9);
  std::printf("%-6s %5s %7s %5s %10s %9s %12s %9s %7s %11s %9s\n", "heads", "batch", "kv_len", "page", "us/call",
              "GB/s", "memcpy GB/s", "/ memcpy", "/ spec", "prefill us", "speedup");
  std::vector<Shape> shapes;
  for (auto [hq, hkv] : {std::pair{32, 4}, std::pair{64, 8}})
    for (int64_t batch : {1, 8, 64})
      for (int64_t len : {4096, 32768, 131072})
        for (int64_t page : {1, 16, 64}) shapes.push_back({hq, hkv, batch, len, page});
  for (const Shape& s : shapes) {
    const int64_t pages_per_seq = (s.seqlen_k + s.page_size - 1) / s.page_size;
    const int64_t pages = s.batch * pages_per_seq;
    const size_t cache_bytes = static_cast<size_t>(pages * s.page_size * s.heads_kv * kHeadDim);
    if (2.0 * cache_bytes > max_gib * (1ull << 30)) {
      std::printf("%2d/%-3d %5lld %7lld %5lld   skipped: K and V take %.1f GiB (--max-gib)\n", s.heads_q, s.heads_kv,
                  static_cast<long long>(s.batch), static_cast<long long>(s.seqlen_k),
                  static_cast<long long>(s.page_size), 2.0 * cache_bytes / (1ull << 30));
      continue;
    }
    // The table: every sequence's pages in one shuffled order of the pool.
    std::vector<int32_t> table(static_cast<size_t>(pages)), used(static_cast<size_t>(s.batch), static_cast<int32_t>(s.seqlen_k));
    std::iota(table.begin(), table.end(), 0);
    std::shuffle(table.begin(), table.end(), std::mt19937(11));
    const size_t q_bytes = static_cast<size_t>(s.batch * s.heads_q * kHeadDim), o_bytes = 2 * q_bytes;
    void *kc, *vc, *q, *out, *tab, *seq, *copy_src, *copy_dst;
    CUDA_OK(cudaMalloc(&kc, cache_bytes));
    CUDA_OK(cudaMalloc(&vc, cache_bytes));
    CUDA_OK(cudaMalloc(&q, q_bytes));
    CUDA_OK(cudaMalloc(&out, o_bytes));
    CUDA_OK(cudaMalloc(&tab, table.size() * sizeof(int32_t)));
    CUDA_OK(cudaMalloc(&seq, used.size() * sizeof(int32_t)));
    // NOTE: E4M3 0x30 is 0.5 and 0x28 is 0.25: finite codes everywhere (the bandwidth does not
    // depend on the values).
    CUDA_OK(cudaMemset(kc, 0x30, cache_bytes));
    CUDA_OK(cudaMemset(vc, 0x28, cache_bytes));
    CUDA_OK(cudaMemset(q, 0x30, q_bytes));
    CUDA_OK(cudaMemcpy(tab, table.data(), table.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(seq, used.data(), used.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
    fp8attn_attention_args a{};
    a.struct_size = sizeof a;
    a.q = device_tensor(q, FP8ATTN_DTYPE_E4M3, {s.batch, 1, s.heads_q, kHeadDim});
    a.out = device_tensor(out, FP8ATTN_DTYPE_BF16, {s.batch, 1, s.heads_q, kHeadDim});
    fp8attn_paged_kv kv{};
    kv.struct_size = sizeof kv;
    kv.struct_type = FP8ATTN_STRUCT_TYPE_PAGED_KV;
    kv.k_cache = device_tensor(kc, FP8ATTN_DTYPE_E4M3, {pages, s.page_size, s.heads_kv, kHeadDim});
    kv.v_cache = device_tensor(vc, FP8ATTN_DTYPE_E4M3, {pages, s.page_size, s.heads_kv, kHeadDim});
    kv.block_table = device_tensor(tab, FP8ATTN_DTYPE_I32, {s.batch, pages_per_seq});
    kv.seqused_k = device_tensor(seq, FP8ATTN_DTYPE_I32, {s.batch});
    kv.max_seqlen_k = s.seqlen_k;
    a.next = &kv;
    // Bytes the call must move: K and V of every used key, the table and lengths, Q; O written.
    const double moved = 2.0 * static_cast<double>(s.batch * s.seqlen_k * s.heads_kv * kHeadDim) +
                         static_cast<double>(table.size() * sizeof(int32_t) + used.size() * sizeof(int32_t)) +
                         static_cast<double>(q_bytes + o_bytes);
    const double ms = time_forward(ctx, desc_of(s, true), a, s, stream, reps);
    const double prefill_ms = time_forward(ctx, desc_of(s, false), a, s, stream, reps);
    // The ceiling: a device-to-device copy of half the bytes (it reads and writes each once).
    const size_t half = static_cast<size_t>(moved / 2);
    CUDA_OK(cudaMalloc(&copy_src, half));
    CUDA_OK(cudaMalloc(&copy_dst, half));
    const double copy_ms = time_ms(stream, reps, [&] {
      CUDA_OK(cudaMemcpyAsync(copy_dst, copy_src, half, cudaMemcpyDeviceToDevice, stream));
    });
    const double bw = moved / (ms * 1e-3), copy_bw = 2.0 * half / (copy_ms * 1e-3);
    std::printf("%2d/%-3d %5lld %7lld %5lld %10.2f %9.1f %12.1f %9.3f %7.3f %11.2f %9.2f\n", s.heads_q, s.heads_kv,
                static_cast<long long>(s.batch), static_cast<long long>(s.seqlen_k), static_cast<long long>(s.page_size),
                ms * 1e3, bw * 1e-9, copy_bw * 1e-9, bw / copy_bw, bw / spec, prefill_ms * 1e3, prefill_ms / ms);
    for (void* p : {kc, vc, q, out, tab, seq, copy_src, copy_dst}) cudaFree(p);
  }
  cudaStreamDestroy(stream);
  fp8attn_context_destroy(ctx);
  return 0;
}
