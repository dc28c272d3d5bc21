// Throughput of the CPU tile engine as a ratio to OpenBLAS sgemm on the same cores, measured in
// the same run (Google Benchmark). Attention FLOPs are 4·heads·Sq·Sk·d (QKᵀ and PV), halved for
// causal masks (FlashAttention's convention); sgemm FLOPs are 2·M·N·K at M = N = K = 2048. Both
// use every core: the engine through the context's workers (num_threads = 0), OpenBLAS through
// its own threads. With --benchmark_repetitions=N the table reports each benchmark's median over
// its N repetitions (and the spread), never an aggregate row as a result.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "lib/workloads/forward_runner.hpp"

namespace {

using fp8attn::workloads::AttentionShape;

void BM_sgemm(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<float> a(size_t(n) * n), b(size_t(n) * n), c(size_t(n) * n);
  std::mt19937 rng(7);
  std::normal_distribution<float> dist;
  for (auto* v : {&a, &b})
    for (float& x : *v) x = dist(rng);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
}

/// One engine forward per iteration, through the C API (plan and workspace created outside the
/// timed loop).
void BM_engine(benchmark::State& state) {
  const int head_dim = static_cast<int>(state.range(0));
  const int64_t seqlen = state.range(1);
  const int32_t dtype = static_cast<int32_t>(state.range(2));
  const bool causal = state.range(3) != 0;
  const AttentionShape shape{1, seqlen, seqlen, 4, 4, head_dim};
  const auto q = fp8attn::workloads::quantize(fp8attn::workloads::normal_inputs(shape, 11), dtype,
                                              fp8attn::workloads::ScaleGranularity::PerHead);
  auto desc = fp8attn::workloads::make_desc(shape, dtype, FP8ATTN_DTYPE_BF16);
  desc.causal = causal ? 1 : 0;
  fp8attn::workloads::ForwardSession session(desc, shape, q);
  for (auto _ : state) session.run();
  const double flops = 4.0 * shape.heads_q * double(seqlen) * seqlen * head_dim * (causal ? 0.5 : 1.0);
  state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

/// Console output plus the ratio table at the end.
/// NOTE: only iteration runs are collected (one per repetition), keyed by the benchmark's name
/// without the repetition suffix; aggregate rows (mean, median, stddev, cv) are Google
/// Benchmark's own and are not rates of a run.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.error_occurred) continue;
      auto it = r.counters.find("FLOP/s");
      if (it != r.counters.end()) rates_[r.run_name.str()].push_back(it->second.value);
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    double sgemm = 0.0;
    for (auto& [name, rates] : rates_)
      if (name.rfind("BM_sgemm", 0) == 0) sgemm = std::max(sgemm, median(rates));
    std::printf("\nCeiling: OpenBLAS sgemm %.2f GFLOP/s on these cores (same run, median of repetitions).\n",
                sgemm * 1e-9);
    std::printf("%-36s %5s %12s %12s %10s\n", "engine benchmark", "reps", "GFLOP/s", "min..max", "/ sgemm");
    for (auto& [name, rates] : rates_) {
      if (name.rfind("BM_engine", 0) != 0) continue;
      const double m = median(rates);
      const auto [lo, hi] = std::minmax_element(rates.begin(), rates.end());
      std::printf("%-36s %5zu %12.2f %5.1f..%-6.1f %10.3f\n", name.c_str(), rates.size(), m * 1e-9, *lo * 1e-9,
                  *hi * 1e-9, m / sgemm);
    }
    std::printf("(BM_engine/<head_dim>/<seqlen>/<dtype 5=E4M3, 3=BF16>/<causal>; 4 heads, batch 1)\n");
  }

 private:
  static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n == 0 ? 0.0 : (n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
  }
  std::map<std::string, std::vector<double>> rates_;
};

}  // namespace

BENCHMARK(BM_sgemm)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_engine)
    ->ArgsProduct({{64, 128, 256}, {4096}, {FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
