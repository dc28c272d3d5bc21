// Speed of the decode path (desc.decode = 1, CPU backend, every core) as a fraction of memcpy
// moving the same bytes on the same cores, measured in the same run (Google Benchmark).
//
// - BM_decode/<batch>/<kv_len>/<accumulator>: one query token per sequence, GQA 32 query heads
//   over 4 KV heads, head_dim 128, an E4M3 paged cache of 16-token pages in shuffled order, BF16
//   output, num_splits 0 (the heuristic), desc.accumulator_model <accumulator> (1: the tensor
//   core's addition, the default; 0: FP32, the engine's fast decode path). Its rate counts the bytes the call must move: K and V of every
//   key once, the block table, Q, and O written once.
// - BM_memcpy/<batch>/<kv_len>: a parallel memcpy, one thread per core, of half that many bytes
//   (memcpy reads and writes each byte), so both rates count the same bytes moved.
// - BM_products/<batch>/<kv_len>: the decode's multiply-adds alone (Q·Kᵀ and P·V: 2 · batch ·
//   kv_len · 32 · 128), on every core, as independent vdpbf16ps (two per FP32 lane) or AVX-512
//   FMAs, whichever does more of them per second here (the FP32 decode's choice too), else AVX2
//   FMAs, from registers; its rate counts the decode's bytes. No decode whose products run on
//   these instructions can read its bytes faster: a bound from arithmetic beside memcpy's.
// The table at the end prints decode / memcpy and decode / products for each shape.
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "kernels/numerics/float8.hpp"
#include "tools/bench/memcpy_ratio.hpp"
#include "tools/common/host_tensor.hpp"

namespace {

using fp8attn::workloads::dense_host_tensor;

constexpr int64_t kHeadsQ = 32, kHeadsKv = 4, kHeadDim = 128, kPage = 16, kQLen = 1;

double decode_bytes(int64_t batch, int64_t kv_len) {
  const double kv = 2.0 * batch * kv_len * kHeadsKv * kHeadDim;  // E4M3 K and V
  const double table = 4.0 * batch * (kv_len / kPage);
  const double q = 1.0 * batch * kQLen * kHeadsQ * kHeadDim;   // E4M3
  const double o = 2.0 * batch * kQLen * kHeadsQ * kHeadDim;   // BF16
  return kv + table + q + o;
}

void BM_memcpy(benchmark::State& state) {
  fp8attn::bench::run_parallel_memcpy(state, decode_bytes(state.range(0), state.range(1)));
}

/// `calls` rounds of independent multiply-adds from registers, summed into sink[0, 16) (which
/// must hold zeros or earlier sums); returns the multiply-adds one round makes.
__attribute__((target("avx512f,avx512bf16"), noinline)) double dot_bf16_run(int64_t calls, float* sink) {
  __m512 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  __m512bh x = reinterpret_cast<__m512bh>(_mm512_set1_epi32(0x3F803F80)), y = x;
  for (int64_t c = 0; c < calls; ++c) {
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], x, y);
    asm volatile("" : "+v"(x));  // NOTE: keeps the loop from being folded
  }
  for (int i = 0; i < 16; ++i) _mm512_storeu_ps(sink, _mm512_add_ps(_mm512_loadu_ps(sink), acc[i]));
  return 16.0 * 32.0;
}
__attribute__((target("avx512f"), noinline)) double fma512_run(int64_t calls, float* sink) {
  __m512 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  __m512 x = _mm512_set1_ps(0.5f), y = x;
  for (int64_t c = 0; c < calls; ++c) {
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
    asm volatile("" : "+v"(x));
  }
  for (int i = 0; i < 16; ++i) _mm512_storeu_ps(sink, _mm512_add_ps(_mm512_loadu_ps(sink), acc[i]));
  return 16.0 * 16.0;
}
__attribute__((target("avx2,fma"), noinline)) double fma256_run(int64_t calls, float* sink) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  __m256 x = _mm256_set1_ps(0.5f), y = x;
  for (int64_t c = 0; c < calls; ++c) {
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
    asm volatile("" : "+x"(x));
  }
  for (int i = 0; i < 12; ++i) _mm256_storeu_ps(sink, _mm256_add_ps(_mm256_loadu_ps(sink), acc[i]));
  return 12.0 * 8.0;
}

void BM_products(benchmark::State& state) {
  const int64_t batch = state.range(0), kv_len = state.range(1);
  const double macs = 2.0 * batch * kv_len * kHeadsQ * kHeadDim * kQLen;
  __builtin_cpu_init();
  double (*run)(int64_t, float*) = nullptr;
  // NOTE: the faster of vdpbf16ps and FMAs per multiply-add, as the library chooses
  // (lib/cpu_isa/bf16_dot_probe.cpp): on an Intel Xeon the instruction issued at a quarter of the
  // FMAs' rate, half their multiply-adds.
  auto macs_per_second = [](double (*f)(int64_t, float*)) {
    float s[16] = {};
    double best = 0.0;
    for (int t = 0; t < 5; ++t) {
      const auto t0 = std::chrono::steady_clock::now();
      const double m = f(4000, s) * 4000;
      best = std::max(best, m / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  if (__builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512f"))
    run = macs_per_second(dot_bf16_run) >= macs_per_second(fma512_run) ? dot_bf16_run : fma512_run;
  else if (__builtin_cpu_supports("avx512f"))
    run = fma512_run;
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    run = fma256_run;
  if (run == nullptr) {
    state.SkipWithError("no vector FMA on this CPU");
    return;
  }
  float probe[16] = {};
  const double per_call = run(0, probe);
  fp8attn::bench::EveryCore cores;
  const auto calls = static_cast<int64_t>(macs / per_call / cores.size()) + 1;
  std::vector<float> sink(static_cast<size_t>(16 * cores.size()), 0.0f);
  auto products = [&](int t) { run(calls, sink.data() + 16 * t); };
  for (auto _ : state) {
    cores.run(products);
    benchmark::DoNotOptimize(sink.data());
  }
  state.counters["B/s"] =
      benchmark::Counter(decode_bytes(batch, kv_len), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_decode(benchmark::State& state) {
  const int64_t batch = state.range(0), kv_len = state.range(1);
  const auto accumulator = static_cast<uint32_t>(state.range(2));
  const int64_t pages_per_seq = kv_len / kPage, pages = batch * pages_per_seq;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  const size_t cache = static_cast<size_t>(pages * kPage * kHeadsKv * kHeadDim);
  std::vector<uint8_t> k(cache), v(cache), q(static_cast<size_t>(batch * kQLen * kHeadsQ * kHeadDim));
  for (uint8_t& x : k) x = fp8attn::num::float_to_e4m3(normal(rng));
  for (uint8_t& x : v) x = fp8attn::num::float_to_e4m3(normal(rng));
  for (uint8_t& x : q) x = fp8attn::num::float_to_e4m3(normal(rng));
  std::vector<int32_t> table(static_cast<size_t>(pages));
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), rng);
  std::vector<int32_t> used(static_cast<size_t>(batch), static_cast<int32_t>(kv_len));
  std::vector<uint16_t> out(static_cast<size_t>(batch * kQLen * kHeadsQ * kHeadDim));

  fp8attn_error err{sizeof err, 0, {0}};
  fp8attn_context ctx = nullptr;
  fp8attn_context_options co{};
  co.struct_size = sizeof co;
  co.backend = FP8ATTN_BACKEND_CPU;  // num_threads 0: every core
  fp8attn_plan plan = nullptr;
  fp8attn_attention_desc d{};
  d.struct_size = sizeof d;
  fp8attn_attention_desc_init(&d);
  d.head_dim = kHeadDim;
  d.num_heads_q = kHeadsQ;
  d.num_heads_kv = kHeadsKv;
  d.causal = 1;
  d.page_size = kPage;
  d.decode = 1;
  d.accumulator_model = accumulator;
  if (fp8attn_context_create(&co, &ctx, &err) != FP8ATTN_OK || fp8attn_plan_create(ctx, &d, &plan, &err) != FP8ATTN_OK) {
    state.SkipWithError(err.message);
    return;
  }
  fp8attn_paged_kv pkv{};
  pkv.struct_size = sizeof pkv;
  pkv.struct_type = FP8ATTN_STRUCT_TYPE_PAGED_KV;
  pkv.k_cache = dense_host_tensor(k.data(), FP8ATTN_DTYPE_E4M3, {pages, kPage, kHeadsKv, kHeadDim});
  pkv.v_cache = dense_host_tensor(v.data(), FP8ATTN_DTYPE_E4M3, {pages, kPage, kHeadsKv, kHeadDim});
  pkv.block_table = dense_host_tensor(table.data(), FP8ATTN_DTYPE_I32, {batch, pages_per_seq});
  pkv.seqused_k = dense_host_tensor(used.data(), FP8ATTN_DTYPE_I32, {batch});
  pkv.max_seqlen_k = kv_len;
  fp8attn_attention_args a{};
  a.struct_size = sizeof a;
  a.next = &pkv;
  a.q = dense_host_tensor(q.data(), FP8ATTN_DTYPE_E4M3, {batch, kQLen, kHeadsQ, kHeadDim});
  a.out = dense_host_tensor(out.data(), FP8ATTN_DTYPE_BF16, {batch, kQLen, kHeadsQ, kHeadDim});
  size_t ws = 0;
  if (fp8attn_plan_workspace_size(plan, batch, kQLen, kv_len, &ws, &err) != FP8ATTN_OK) state.SkipWithError(err.message);
  std::vector<uint8_t> workspace(ws + 1);
  for (auto _ : state) {
    if (fp8attn_attention_forward(plan, &a, workspace.data(), ws, nullptr, &err) != FP8ATTN_OK) {
      state.SkipWithError(err.message);
      break;
    }
    benchmark::DoNotOptimize(out.data());
  }
  fp8attn_plan_destroy(plan);
  fp8attn_context_destroy(ctx);
  state.counters["B/s"] = benchmark::Counter(decode_bytes(batch, kv_len), benchmark::Counter::kIsIterationInvariantRate);
}

void memcpy_configs(benchmark::internal::Benchmark* b) {
  for (int64_t kv : {4096, 32768})
    for (int64_t batch : {1, 8}) b->Args({batch, kv});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

void decode_configs(benchmark::internal::Benchmark* b) {
  for (int64_t kv : {4096, 32768})
    for (int64_t batch : {1, 8})
      for (int64_t accumulator : {FP8ATTN_ACCUMULATOR_FP32, FP8ATTN_ACCUMULATOR_TENSOR_CORE})
        b->Args({batch, kv, accumulator});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

BENCHMARK(BM_memcpy)->Apply(memcpy_configs);
BENCHMARK(BM_products)->Apply(memcpy_configs);
BENCHMARK(BM_decode)->Apply(decode_configs);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  fp8attn::bench::MemcpyRatioReporter reporter(
      "decode", "(BM_decode/<batch>/<kv_len>/<accumulator 0 FP32, 1 tensor core>: K, V, block table and Q read once, O written once)");
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
