// Speed of fp8attn_kv_append_async on the CPU backend as a ratio to the memory bandwidth of the
// same cores, measured in the same run (Google Benchmark).
//
// - BM_memcpy: a parallel memcpy, on every core, of as many bytes as one append moves (its input
//   read plus its cache written): the ceiling. Its rate counts the bytes read and written.
// - BM_kv_append/<input>/<cache>/<granularity>/<rotate>: one append of a prefill chunk, K and V
//   [8192 tokens, 8 heads, 128] into a paged cache of 16-token pages in shuffled order (a block
//   table's layout), every core (num_threads = 0). Its rate counts the same bytes: the input read
//   and the cache written (the slots and scale caches, < 1 % of them, are not counted).
// The printed ratio is append rate / memcpy rate: 1 would be an append at memcpy speed.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
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

constexpr int64_t kTokens = 8192, kHeads = 8, kHeadDim = 128, kPageSize = 16;
constexpr int64_t kPages = kTokens / kPageSize + 64;  // some pages stay free
constexpr int64_t kRowElements = kTokens * kHeads * kHeadDim;  // of K, and of V

size_t dtype_bytes(int32_t dtype) { return dtype == FP8ATTN_DTYPE_F32 ? 4 : dtype == FP8ATTN_DTYPE_BF16 ? 2 : 1; }

/// Input bytes read plus cache bytes written by one append of K and V.
double bytes_moved(int32_t input, int32_t cache) {
  return 2.0 * kRowElements * static_cast<double>(dtype_bytes(input) + dtype_bytes(cache));
}

/// K or V's values in `dtype`, N(0, 1).
std::vector<uint8_t> input_bytes(int32_t dtype, uint32_t seed) {
  std::vector<uint8_t> bytes(static_cast<size_t>(kRowElements) * dtype_bytes(dtype));
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  for (int64_t i = 0; i < kRowElements; ++i) {
    const float v = dist(rng);
    if (dtype == FP8ATTN_DTYPE_F32) std::memcpy(&bytes[static_cast<size_t>(i) * 4], &v, 4);
    else {
      const uint16_t b = fp8attn::num::float_to_bf16(v);
      std::memcpy(&bytes[static_cast<size_t>(i) * 2], &b, 2);
    }
  }
  return bytes;
}

/// Token t goes to a shuffled page, at offset t % page_size.
std::vector<int64_t> slots() {
  std::vector<int64_t> pages(static_cast<size_t>(kPages));
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), std::mt19937(11));
  std::vector<int64_t> s(static_cast<size_t>(kTokens));
  for (int64_t t = 0; t < kTokens; ++t) s[static_cast<size_t>(t)] = pages[static_cast<size_t>(t / kPageSize)] * kPageSize + t % kPageSize;
  return s;
}

void BM_memcpy(benchmark::State& state) {
  fp8attn::bench::run_parallel_memcpy(state, bytes_moved(static_cast<int32_t>(state.range(0)),
                                                         static_cast<int32_t>(state.range(1))));
}

void BM_kv_append(benchmark::State& state) {
  const int32_t input = static_cast<int32_t>(state.range(0)), cache = static_cast<int32_t>(state.range(1));
  const int32_t granularity = static_cast<int32_t>(state.range(2));
  const std::vector<uint8_t> k = input_bytes(input, 1), v = input_bytes(input, 2);
  std::vector<int64_t> slot = slots();
  const size_t cache_elements = static_cast<size_t>(kPages * kPageSize * kHeads * kHeadDim);
  std::vector<uint8_t> k_cache(cache_elements * dtype_bytes(cache)), v_cache(k_cache.size());
  std::vector<float> k_descale(static_cast<size_t>(kPages * kPageSize * kHeads), 1.0f), v_descale(k_descale);
  fp8attn_context ctx = nullptr;
  fp8attn_context_options co{};
  co.struct_size = sizeof co;
  co.backend = FP8ATTN_BACKEND_CPU;
  fp8attn_error err{sizeof err, 0, {0}};
  if (fp8attn_context_create(&co, &ctx, &err) != FP8ATTN_OK) {
    state.SkipWithError(err.message);
    return;
  }
  fp8attn_kv_append_args a{};
  a.struct_size = sizeof a;
  a.k = dense_host_tensor(const_cast<uint8_t*>(k.data()), input, {kTokens, kHeads, kHeadDim});
  a.v = dense_host_tensor(const_cast<uint8_t*>(v.data()), input, {kTokens, kHeads, kHeadDim});
  a.k_cache = dense_host_tensor(k_cache.data(), cache, {kPages, kPageSize, kHeads, kHeadDim});
  a.v_cache = dense_host_tensor(v_cache.data(), cache, {kPages, kPageSize, kHeads, kHeadDim});
  a.slot_mapping = dense_host_tensor(slot.data(), FP8ATTN_DTYPE_I64, {kTokens});
  a.scale_granularity = granularity;
  a.rotate = static_cast<uint32_t>(state.range(3));
  a.seed = 3;
  if (granularity == FP8ATTN_KV_SCALE_PER_HEAD) {
    a.k_descale = dense_host_tensor(k_descale.data(), FP8ATTN_DTYPE_F32, {kHeads});
    a.v_descale = dense_host_tensor(v_descale.data(), FP8ATTN_DTYPE_F32, {kHeads});
  } else if (granularity == FP8ATTN_KV_SCALE_PER_TOKEN_HEAD) {
    a.k_descale = dense_host_tensor(k_descale.data(), FP8ATTN_DTYPE_F32, {kPages, kPageSize, kHeads});
    a.v_descale = dense_host_tensor(v_descale.data(), FP8ATTN_DTYPE_F32, {kPages, kPageSize, kHeads});
  }
  for (auto _ : state) {
    if (fp8attn_kv_append_async(ctx, &a, nullptr, &err) != FP8ATTN_OK) {
      state.SkipWithError(err.message);
      break;
    }
    benchmark::DoNotOptimize(k_cache.data());
  }
  fp8attn_context_destroy(ctx);
  state.counters["B/s"] = benchmark::Counter(bytes_moved(input, cache), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(BM_memcpy)
    ->Args({FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_E4M3})
    ->Args({FP8ATTN_DTYPE_F32, FP8ATTN_DTYPE_E4M3})
    ->Args({FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_BF16})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_kv_append)
    ->Args({FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_E4M3, FP8ATTN_KV_SCALE_NONE, 0})
    ->Args({FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_E4M3, FP8ATTN_KV_SCALE_PER_HEAD, 0})
    ->Args({FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_E4M3, FP8ATTN_KV_SCALE_PER_TOKEN_HEAD, 0})
    ->Args({FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_E4M3, FP8ATTN_KV_SCALE_PER_TOKEN_HEAD, 1})
    ->Args({FP8ATTN_DTYPE_F32, FP8ATTN_DTYPE_E4M3, FP8ATTN_KV_SCALE_PER_TOKEN_HEAD, 0})
    ->Args({FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_BF16, FP8ATTN_KV_SCALE_NONE, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  fp8attn::bench::MemcpyRatioReporter reporter(
      "kv_append", "(BM_kv_append/<input dtype>/<cache dtype>/<granularity 0=none, 1=head, 2=token·head>/<rotate>;\n"
                   " dtypes: 1=F32, 3=BF16, 5=E4M3. Bytes: input read + cache written, the same for its memcpy)");
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
