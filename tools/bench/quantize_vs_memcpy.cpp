// Speed of fp8attn_quantize as a ratio to the memory bandwidth of the same cores, measured in the
// same run (Google Benchmark), and of its fast Walsh–Hadamard rotation against the matmul it
// replaces.
//
// - BM_memcpy: a parallel memcpy of the F32 input on every core: the ceiling. Its rate counts
//   the bytes read and written, 8 per element.
// - BM_quantize/<rotate>/<granularity>: fp8attn_quantize of an F32 [1, 4096, 16, 128] tensor on
//   every core (num_threads = 0). Its rate counts the bytes a one-pass cast must move at least,
//   5 per element (read F32, write E4M3); the quantizer reads the input twice (amax, then cast),
//   so 5/9 of the memcpy rate is its bound.
// - BM_rotation_butterfly / BM_rotation_sgemm: x·H for every 128-wide row of the same tensor on
//   one core: the O(d log d) butterflies (lib/quantize) against OpenBLAS sgemm with the explicit
//   128 × 128 H (O(d²) per row, at BLAS speed).
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "lib/quantize/hadamard_rotation.hpp"
#include "tools/bench/every_core.hpp"
#include "tools/common/host_tensor.hpp"

namespace {

using fp8attn::workloads::dense_host_tensor;

constexpr int64_t kSeqlen = 4096, kHeads = 16, kHeadDim = 128;
constexpr int64_t kElements = kSeqlen * kHeads * kHeadDim;

const std::vector<float>& input() {
  static const std::vector<float> x = [] {
    std::vector<float> v(static_cast<size_t>(kElements));
    std::mt19937 rng(5);
    std::normal_distribution<float> dist;
    for (float& e : v) e = dist(rng);
    return v;
  }();
  return x;
}

void BM_memcpy(benchmark::State& state) {
  const std::vector<float>& x = input();
  std::vector<float> y(x.size());
  fp8attn::bench::EveryCore cores;  // threads started once (tools/bench/every_core.hpp)
  const size_t chunk = (x.size() + cores.size() - 1) / cores.size();
  auto copy = [&](int t) {
    const size_t begin = std::min(x.size(), chunk * t), end = std::min(x.size(), begin + chunk);
    std::memcpy(y.data() + begin, x.data() + begin, (end - begin) * sizeof(float));
  };
  for (auto _ : state) {
    cores.run(copy);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["B/s"] = benchmark::Counter(8.0 * kElements, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_quantize(benchmark::State& state) {
  const bool rotate = state.range(0) != 0;
  const int32_t granularity = static_cast<int32_t>(state.range(1));
  const std::vector<float>& x = input();
  std::vector<uint8_t> out(x.size());
  std::vector<float> descale(static_cast<size_t>(kHeads * kSeqlen));
  fp8attn_context ctx = nullptr;
  fp8attn_context_options co{};
  co.struct_size = sizeof co;
  co.backend = FP8ATTN_BACKEND_CPU;
  fp8attn_error err{sizeof err, 0, {0}};
  if (fp8attn_context_create(&co, &ctx, &err) != FP8ATTN_OK) {
    state.SkipWithError(err.message);
    return;
  }
  fp8attn_quantize_options o{};
  o.struct_size = sizeof o;
  o.granularity = granularity;
  o.block_rows = 128;
  o.rotate = rotate ? 1u : 0u;
  o.seed = 3;
  const fp8attn_tensor in = dense_host_tensor(const_cast<float*>(x.data()), FP8ATTN_DTYPE_F32, {1, kSeqlen, kHeads, kHeadDim});
  const fp8attn_tensor o8 = dense_host_tensor(out.data(), FP8ATTN_DTYPE_E4M3, {1, kSeqlen, kHeads, kHeadDim});
  const int64_t blocks = kSeqlen / o.block_rows;
  const fp8attn_tensor d = granularity == FP8ATTN_QUANT_PER_TENSOR ? dense_host_tensor(descale.data(), FP8ATTN_DTYPE_F32, {1})
                           : granularity == FP8ATTN_QUANT_PER_HEAD ? dense_host_tensor(descale.data(), FP8ATTN_DTYPE_F32, {1, kHeads})
                                                                   : dense_host_tensor(descale.data(), FP8ATTN_DTYPE_F32, {1, kHeads, blocks});
  for (auto _ : state) {
    if (fp8attn_quantize(ctx, &in, nullptr, &o, &o8, &d, nullptr, &err) != FP8ATTN_OK) {
      state.SkipWithError(err.message);
      break;
    }
    benchmark::DoNotOptimize(out.data());
  }
  fp8attn_context_destroy(ctx);
  state.counters["B/s"] = benchmark::Counter(5.0 * kElements, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_rotation_butterfly(benchmark::State& state) {
  std::vector<float> x = input();
  const fp8attn::quant::HadamardRotation rotation(7, 3);
  for (auto _ : state) {
    for (int64_t r = 0; r < kSeqlen * kHeads; ++r) rotation.apply(x.data() + r * kHeadDim);
    benchmark::DoNotOptimize(x.data());
  }
  state.counters["rows/s"] = benchmark::Counter(double(kSeqlen * kHeads), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_rotation_sgemm(benchmark::State& state) {
  const std::vector<float>& x = input();
  std::vector<float> y(x.size()), h(static_cast<size_t>(kHeadDim * kHeadDim));
  for (int i = 0; i < kHeadDim; ++i)  // H[i][j] = (−1)^popcount(i & j) / √d
    for (int j = 0; j < kHeadDim; ++j)
      h[i * kHeadDim + j] = (__builtin_popcount(i & j) % 2 ? -1.0f : 1.0f) / std::sqrt(float(kHeadDim));
  openblas_set_num_threads(1);
  const int rows = static_cast<int>(kSeqlen * kHeads);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, kHeadDim, kHeadDim, 1.0f, x.data(), kHeadDim,
                h.data(), kHeadDim, 0.0f, y.data(), kHeadDim);
    benchmark::DoNotOptimize(y.data());
  }
  openblas_set_num_threads(0);
  state.counters["rows/s"] = benchmark::Counter(double(rows), benchmark::Counter::kIsIterationInvariantRate);
}

/// Console output plus the ratio tables at the end.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs)
      for (const char* counter : {"B/s", "rows/s"})
        if (auto it = r.counters.find(counter); it != r.counters.end()) rates_[r.benchmark_name()] = it->second.value;
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    const double memcpy_rate = rate("BM_memcpy");
    if (memcpy_rate <= 0.0) {
      std::printf("\nNo ratios: BM_memcpy, the ceiling, did not run (see --benchmark_filter).\n");
      return;
    }
    std::printf("\nCeiling: parallel memcpy %.2f GB/s (read + write) on these cores (same run).\n", memcpy_rate * 1e-9);
    std::printf("%-34s %10s %10s %12s\n", "quantizer benchmark", "GB/s", "/ memcpy", "/ 5/9 bound");
    for (const auto& [name, r] : rates_)
      if (name.rfind("BM_quantize", 0) == 0)
        std::printf("%-34s %10.2f %10.3f %12.3f\n", name.c_str(), r * 1e-9, r / memcpy_rate,
                    r / (memcpy_rate * 5.0 / 9.0));
    std::printf("(BM_quantize/<rotate>/<granularity 0=tensor, 1=head, 2=block of 128 rows>)\n");
    const double butterfly = rate("BM_rotation_butterfly"), sgemm = rate("BM_rotation_sgemm");
    std::printf("\nRotation of %lld rows of 128 on one core: butterflies %.3g rows/s, sgemm with H %.3g rows/s: "
                "%.2f× the matmul.\n",
                static_cast<long long>(kSeqlen * kHeads), butterfly, sgemm, sgemm > 0.0 ? butterfly / sgemm : 0.0);
  }

 private:
  double rate(const std::string& prefix) const {
    for (const auto& [name, r] : rates_)
      if (name.rfind(prefix, 0) == 0) return r;
    return 0.0;
  }
  std::map<std::string, double> rates_;
};

}  // namespace

BENCHMARK(BM_memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_quantize)
    ->Args({0, FP8ATTN_QUANT_PER_TENSOR})
    ->Args({0, FP8ATTN_QUANT_PER_BLOCK})
    ->Args({1, FP8ATTN_QUANT_PER_TENSOR})
    ->Args({1, FP8ATTN_QUANT_PER_BLOCK})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_rotation_butterfly)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_rotation_sgemm)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
