// fp8attn_kv_append_cuda_bench: fp8attn_kv_append_async on a Hopper GPU, in decode steps (one new
// token per sequence: 1 to 256 tokens) and prefill chunks (2048 and 16384 tokens), K and V with
// 8 KV heads of 128, BF16 into an E4M3 cache of 16-token pages in shuffled order, per-(token,
// head) descales, with and without K's rotation. Each figure is bytes moved (input read + cache
// written) per second, and its ratio to a device-to-device cudaMemcpyAsync of the same bytes
// timed in the same run (the bandwidth ceiling of a copy on this GPU and clock).
//
// Usage: fp8attn_kv_append_cuda_bench [--reps N]. Without an sm_90 GPU (or libfp8attn_cuda) it
// prints why and exits with status 2. Not run yet: no GPU was available when it was written.
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

constexpr int64_t kHeads = 8, kHeadDim = 128, kPageSize = 16;

struct Row {
  const char* mode;
  int64_t tokens;
  bool rotate;
};

}  // namespace

int main(int argc, char** argv) {
  fp8attn::cuda_bench::program_name() = "fp8attn_kv_append_cuda_bench";
  int reps = 200;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
  fp8attn_context ctx = nullptr;
  fp8attn_context_options o{};
  o.struct_size = sizeof o;
  o.backend = FP8ATTN_BACKEND_CUDA;
  fp8attn_error err{};
  err.struct_size = sizeof err;
  if (fp8attn_context_create(&o, &ctx, &err) != FP8ATTN_OK) {
    std::fprintf(stderr, "fp8attn_kv_append_cuda_bench: no CUDA backend: %s\n", err.message);
    return 2;
  }
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  const std::vector<Row> rows = {{"decode", 1, false},    {"decode", 32, false},     {"decode", 256, false},
                                 {"decode", 256, true},   {"prefill", 2048, false},  {"prefill", 16384, false},
                                 {"prefill", 16384, true}};
  std::printf("%-8s %7s %6s %10s %10s %12s %9s\n", "mode", "tokens", "rotate", "us/call", "GB/s", "memcpy GB/s", "/ memcpy");
  for (const Row& row : rows) {
    const int64_t pages = (row.tokens + kPageSize - 1) / kPageSize + 64;
    const size_t in_bytes = static_cast<size_t>(row.tokens * kHeads * kHeadDim) * 2;
    const size_t cache_bytes = static_cast<size_t>(pages * kPageSize * kHeads * kHeadDim);
    const size_t scale_bytes = static_cast<size_t>(pages * kPageSize * kHeads) * sizeof(float);
    std::vector<int64_t> page_order(static_cast<size_t>(pages)), slots(static_cast<size_t>(row.tokens));
    std::iota(page_order.begin(), page_order.end(), 0);
    std::shuffle(page_order.begin(), page_order.end(), std::mt19937(7));
    // NOTE: decode puts each token in a different sequence's page (offset 5 of it); prefill fills
    // pages in order.
    for (int64_t t = 0; t < row.tokens; ++t)
      slots[static_cast<size_t>(t)] = row.mode[0] == 'd' ? page_order[static_cast<size_t>(t % pages)] * kPageSize + 5
                                                         : page_order[static_cast<size_t>(t / kPageSize)] * kPageSize + t % kPageSize;
    std::vector<uint16_t> host_in(in_bytes / 2);
    std::mt19937 rng(3);
    for (uint16_t& b : host_in) b = static_cast<uint16_t>(0x3C00 | (rng() & 0x80FF));  // BF16 in ±[0.0078, 0.0156)·2^k
    void *k, *v, *kc, *vc, *kd, *vd, *sm, *copy_src, *copy_dst;
    for (void** p : {&k, &v}) CUDA_OK(cudaMalloc(p, in_bytes));
    for (void** p : {&kc, &vc}) CUDA_OK(cudaMalloc(p, cache_bytes));
    for (void** p : {&kd, &vd}) CUDA_OK(cudaMalloc(p, scale_bytes));
    CUDA_OK(cudaMalloc(&sm, slots.size() * sizeof(int64_t) + 8));
    const size_t moved = 2 * (in_bytes + in_bytes / 2);  // K and V: BF16 read, E4M3 written
    CUDA_OK(cudaMalloc(&copy_src, moved / 2));
    CUDA_OK(cudaMalloc(&copy_dst, moved / 2));
    CUDA_OK(cudaMemcpy(k, host_in.data(), in_bytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(v, host_in.data(), in_bytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(sm, slots.data(), slots.size() * sizeof(int64_t), cudaMemcpyHostToDevice));
    fp8attn_kv_append_args a{};
    a.struct_size = sizeof a;
    a.k = device_tensor(k, FP8ATTN_DTYPE_BF16, {row.tokens, kHeads, kHeadDim});
    a.v = device_tensor(v, FP8ATTN_DTYPE_BF16, {row.tokens, kHeads, kHeadDim});
    a.k_cache = device_tensor(kc, FP8ATTN_DTYPE_E4M3, {pages, kPageSize, kHeads, kHeadDim});
    a.v_cache = device_tensor(vc, FP8ATTN_DTYPE_E4M3, {pages, kPageSize, kHeads, kHeadDim});
    a.slot_mapping = device_tensor(sm, FP8ATTN_DTYPE_I64, {row.tokens});
    a.scale_granularity = FP8ATTN_KV_SCALE_PER_TOKEN_HEAD;
    a.rotate = row.rotate ? 1u : 0u;
    a.seed = 5;
    a.k_descale = device_tensor(kd, FP8ATTN_DTYPE_F32, {pages, kPageSize, kHeads});
    a.v_descale = device_tensor(vd, FP8ATTN_DTYPE_F32, {pages, kPageSize, kHeads});
    const double ms = time_ms(stream, reps, [&] {
      if (fp8attn_kv_append_async(ctx, &a, stream, &err) != FP8ATTN_OK) fail(err.message);
    });
    // The ceiling: one device-to-device copy of half the bytes (it reads and writes each once).
    const double copy_ms =
        time_ms(stream, reps, [&] { CUDA_OK(cudaMemcpyAsync(copy_dst, copy_src, moved / 2, cudaMemcpyDeviceToDevice, stream)); });
    const double gbs = moved / (ms * 1e-3) * 1e-9, copy_gbs = moved / (copy_ms * 1e-3) * 1e-9;
    std::printf("%-8s %7lld %6d %10.2f %10.1f %12.1f %9.3f\n", row.mode, static_cast<long long>(row.tokens), row.rotate ? 1 : 0,
                ms * 1e3, gbs, copy_gbs, gbs / copy_gbs);
    for (void* p : {k, v, kc, vc, kd, vd, sm, copy_src, copy_dst}) cudaFree(p);
  }
  cudaStreamDestroy(stream);
  fp8attn_context_destroy(ctx);
  return 0;
}
