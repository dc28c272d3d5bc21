// Speed of fp8attn_attention_combine (CPU backend, every core) as a fraction of memcpy moving the
// same bytes on the same cores, measured in the same run (Google Benchmark).
//
// - BM_combine/<parts>/<bf16>: merges <parts> partial results of 1024 tokens × 8 heads × 128
//   (F32, or BF16 with /1), with an LSE output. Its rate counts the bytes the call must move:
//   every partial O and LSE read once, out and lse written once.
// - BM_memcpy/<parts>/<bf16>: a parallel memcpy, one thread per core, of half that many bytes
//   (memcpy reads and writes each byte), so both rates count the same bytes moved.
// - BM_read/<parts>/<bf16>: a parallel read of as many bytes, writing nothing: the combine's bytes
//   are mostly reads (all but one part's worth), and on a machine whose read stream is slower than
//   memcpy's read-plus-write, this is the rate it can reach.
// The table at the end prints combine / memcpy and combine / read for each configuration.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "kernels/numerics/bfloat16.hpp"
#include "tools/bench/memcpy_ratio.hpp"
#include "tools/common/host_tensor.hpp"

namespace {

using fp8attn::workloads::dense_host_tensor;

constexpr int64_t kTokens = 1024, kHeads = 8, kHeadDim = 128;
constexpr int64_t kRows = kTokens * kHeads;

/// Bytes one combine call moves at least: partial O and LSE read, out and lse written.
double combine_bytes(int64_t parts, bool bf16) {
  const double o = bf16 ? 2.0 : 4.0;
  return parts * kRows * (kHeadDim * o + 4.0) + kRows * (kHeadDim * o + 4.0);
}

void BM_memcpy(benchmark::State& state) {
  fp8attn::bench::run_parallel_memcpy(state, combine_bytes(state.range(0), state.range(1) != 0));
}

void BM_read(benchmark::State& state) {
  fp8attn::bench::run_parallel_read(state, combine_bytes(state.range(0), state.range(1) != 0));
}

void BM_combine(benchmark::State& state) {
  const int64_t parts = state.range(0);
  const bool bf16 = state.range(1) != 0;
  const size_t n = static_cast<size_t>(parts * kRows * kHeadDim);
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  std::vector<float> o32(bf16 ? 0 : n), lse_in(static_cast<size_t>(parts * kRows)), out32(bf16 ? 0 : kRows * kHeadDim);
  std::vector<uint16_t> o16(bf16 ? n : 0), out16(bf16 ? kRows * kHeadDim : 0);
  for (float& x : o32) x = normal(rng);
  for (uint16_t& x : o16) x = fp8attn::num::float_to_bf16(normal(rng));
  for (float& x : lse_in) x = 3.0f * normal(rng);
  std::vector<float> lse(static_cast<size_t>(kRows));
  fp8attn_context ctx = nullptr;
  fp8attn_context_options co{};
  co.struct_size = sizeof co;
  co.backend = FP8ATTN_BACKEND_CPU;  // num_threads 0: every core
  fp8attn_error err{sizeof err, 0, {0}};
  if (fp8attn_context_create(&co, &ctx, &err) != FP8ATTN_OK) {
    state.SkipWithError(err.message);
    return;
  }
  const int32_t dt = bf16 ? FP8ATTN_DTYPE_BF16 : FP8ATTN_DTYPE_F32;
  fp8attn_combine_args a{};
  a.struct_size = sizeof a;
  a.partial_out = dense_host_tensor(bf16 ? static_cast<void*>(o16.data()) : o32.data(), dt, {parts, kTokens, kHeads, kHeadDim});
  a.partial_lse = dense_host_tensor(lse_in.data(), FP8ATTN_DTYPE_F32, {parts, kTokens, kHeads});
  a.out = dense_host_tensor(bf16 ? static_cast<void*>(out16.data()) : out32.data(), dt, {kTokens, kHeads, kHeadDim});
  a.lse = dense_host_tensor(lse.data(), FP8ATTN_DTYPE_F32, {kTokens, kHeads});
  size_t ws = 0;
  if (fp8attn_attention_combine_workspace_size(ctx, &a, &ws, &err) != FP8ATTN_OK) state.SkipWithError(err.message);
  std::vector<uint8_t> workspace(ws + 1);
  for (auto _ : state) {
    if (fp8attn_attention_combine(ctx, &a, workspace.data(), ws, nullptr, &err) != FP8ATTN_OK) {
      state.SkipWithError(err.message);
      break;
    }
    benchmark::DoNotOptimize(lse.data());
  }
  fp8attn_context_destroy(ctx);
  state.counters["B/s"] = benchmark::Counter(combine_bytes(parts, bf16), benchmark::Counter::kIsIterationInvariantRate);
}

void configs(benchmark::internal::Benchmark* b) {
  for (int64_t parts : {2, 8, 32}) b->Args({parts, 0});
  b->Args({8, 1});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

BENCHMARK(BM_memcpy)->Apply(configs);
BENCHMARK(BM_read)->Apply(configs);
BENCHMARK(BM_combine)->Apply(configs);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  fp8attn::bench::MemcpyRatioReporter reporter(
      "combine", "(BM_combine/<parts>/<1 = BF16>: the partials and LSEs read once, out and lse written once)");
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
