// Throughput of the CPU tile engine as a ratio to OpenBLAS sgemm on the same cores, measured in
// the same run (Google Benchmark). Attention FLOPs are 4·heads·Sq·Sk·d (QKᵀ and PV, non-causal);
// sgemm FLOPs are 2·M·N·K at M = N = K = 2048. Both use every core: the engine through the
// context's workers (num_threads = 0), OpenBLAS through its own threads.
#include <benchmark/benchmark.h>
#include <cblas.h>

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
  const AttentionShape shape{1, seqlen, seqlen, 2, 2, head_dim};
  const auto q = fp8attn::workloads::quantize(fp8attn::workloads::normal_inputs(shape, 11), dtype,
                                              fp8attn::workloads::ScaleGranularity::PerHead);
  const auto desc = fp8attn::workloads::make_desc(shape, dtype, FP8ATTN_DTYPE_BF16);
  fp8attn::workloads::ForwardSession session(desc, shape, q);
  for (auto _ : state) session.run();
  state.counters["FLOP/s"] = benchmark::Counter(4.0 * shape.heads_q * double(seqlen) * seqlen * head_dim,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

/// Console output plus the ratio table at the end.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      auto it = r.counters.find("FLOP/s");
      if (it != r.counters.end()) rates_[r.benchmark_name()] = it->second.value;
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    double sgemm = 0.0;
    for (const auto& [name, rate] : rates_)
      if (name.rfind("BM_sgemm", 0) == 0) sgemm = std::max(sgemm, rate);
    std::printf("\nCeiling: OpenBLAS sgemm %.2f GFLOP/s on these cores (same run).\n", sgemm * 1e-9);
    std::printf("%-40s %14s %10s\n", "engine benchmark", "GFLOP/s", "/ sgemm");
    for (const auto& [name, rate] : rates_)
      if (name.rfind("BM_engine", 0) == 0) std::printf("%-40s %14.2f %10.3f\n", name.c_str(), rate * 1e-9, rate / sgemm);
    std::printf("(BM_engine/<head_dim>/<seqlen>/<dtype 5=E4M3, 3=BF16>; target ≥ 0.25 of sgemm)\n");
  }

 private:
  std::map<std::string, double> rates_;
};

}  // namespace

BENCHMARK(BM_sgemm)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_engine)
    ->Args({64, 4096, FP8ATTN_DTYPE_E4M3})
    ->Args({128, 4096, FP8ATTN_DTYPE_E4M3})
    ->Args({256, 4096, FP8ATTN_DTYPE_E4M3})
    ->Args({128, 4096, FP8ATTN_DTYPE_BF16})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
