// The ceiling every CPU benchmark of tools/bench is measured against, in the same run: OpenBLAS
// sgemm (2·n³ FLOPs, every core), and the reporter that prints each benchmark's rate as a ratio
// to it.
// NOTE: with --benchmark_repetitions=N the table reports each benchmark's median over its N
// repetitions and their spread. Only iteration runs are collected, keyed by the benchmark's name
// without the repetition; Google Benchmark's aggregate rows (mean, median, stddev, cv) are not
// rates of a run and never enter the table.
#pragma once

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace fp8attn::bench {

/// Restarts this process with OPENBLAS_CORETYPE set when OpenBLAS took this CPU for one without
/// AVX2 (and the variable is unset): the ceiling is then OpenBLAS's kernels for this CPU's vectors.
/// NOTE: Debian 12's OpenBLAS does not know an Emerald Rapids Xeon (model 207) and runs its
/// Prescott (SSE3) kernels there: 38 to 64 GFLOP/s on two cores against 220 to 290 with its
/// SkylakeX kernels, which made every ratio of these benches several times too high.
inline void run_openblas_kernels_for_this_cpu(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  const std::string core = openblas_get_corename();
  bool before_avx2 = false;
  for (const char* old : {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Sandybridge", "Katmai",
                          "Coppermine", "Northwood", "Banias", "Athlon", "Opteron", "Barcelona", "Bobcat"})
    before_avx2 = before_avx2 || core == old;
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (!before_avx2 || !avx2) return;
  const char* kernels = avx512 ? "SkylakeX" : "Haswell";
  std::fprintf(stderr, "OpenBLAS took this CPU for a %s; restarting with OPENBLAS_CORETYPE=%s\n", core.c_str(),
               kernels);
  setenv("OPENBLAS_CORETYPE", kernels, 1);
  execv("/proc/self/exe", argv);  // returns only on failure: the run goes on with the old kernels
}

/// benchmark::Initialize with the repetitions of all benchmarks interleaved at random unless the
/// command line says otherwise (--benchmark_enable_random_interleaving=false).
/// NOTE: on a shared machine the load moves by tens of percent within minutes; run one after the
/// other, sgemm's repetitions and the engine's saw different loads (a ratio of 0.87 in one run,
/// 0.53 interleaved a minute later on the same build), so the ceiling is measured among them.
inline void initialize_interleaved(int* argc, char** argv) {
  run_openblas_kernels_for_this_cpu(argv);
  static char interleave[] = "--benchmark_enable_random_interleaving=true";
  static std::vector<char*> args;
  args.assign(argv, argv + *argc);
  bool given = false;
  for (char* a : args) given = given || std::string(a).rfind("--benchmark_enable_random_interleaving", 0) == 0;
  if (!given) args.insert(args.begin() + 1, interleave);
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&n, args.data());
  *argc = n;
}

/// One n × n × n sgemm per iteration; counter "FLOP/s".
inline void BM_sgemm(benchmark::State& state) {
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

/// Console output, then a table of every benchmark whose name starts with one of `prefixes`:
/// median GFLOP/s over the repetitions, their range, and the ratio to sgemm's median.
class SgemmRatioReporter : public benchmark::ConsoleReporter {
 public:
  SgemmRatioReporter(std::vector<std::string> prefixes, std::string legend)
      : prefixes_(std::move(prefixes)), legend_(std::move(legend)) {}

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
      if (name.find("BM_sgemm") != std::string::npos) sgemm = std::max(sgemm, median(rates));
    std::printf("\nCeiling: OpenBLAS sgemm %.2f GFLOP/s on these cores (its %s kernels; same run, median of "
                "repetitions).\n",
                sgemm * 1e-9, openblas_get_corename());
    std::printf("%-36s %5s %12s %12s %10s\n", "benchmark", "reps", "GFLOP/s", "min..max", "/ sgemm");
    for (auto& [name, rates] : rates_) {
      if (!listed(name)) continue;
      const double m = median(rates);
      const auto [lo, hi] = std::minmax_element(rates.begin(), rates.end());
      std::printf("%-36s %5zu %12.2f %5.1f..%-6.1f %10.3f\n", name.c_str(), rates.size(), m * 1e-9, *lo * 1e-9,
                  *hi * 1e-9, m / sgemm);
    }
    std::printf("%s\n", legend_.c_str());
  }

 private:
  bool listed(const std::string& name) const {
    for (const std::string& p : prefixes_)
      if (name.rfind(p, 0) == 0) return true;
    return false;
  }
  static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n == 0 ? 0.0 : (n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
  }

  std::vector<std::string> prefixes_;
  std::string legend_;
  std::map<std::string, std::vector<double>> rates_;
};

}  // namespace fp8attn::bench
