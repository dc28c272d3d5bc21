// The accumulator study: the error of FP8 attention against the FP64 oracle as the KV loop grows,
// under the tensor core's exact addition (kernels/ptx/mma_order.hpp: per instruction the addends
// aligned to the largest exponent and cut 13 bits below it, the sum cut to 13 fraction bits;
// measured on H100 and H200) against FP32 accumulation, and what two-level accumulation (adding the PV tile into an FP32 O every N blocks) buys back.
// Writes a CSV and prints a Markdown table.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tools/common/cli_args.hpp"

#include "fp8attn/fp8attn.h"
#include "tools/common/forward_runner.hpp"
#include "tools/common/low_precision_reference.hpp"
#include "tools/common/progress_line.hpp"

namespace {

using namespace fp8attn::workloads;

struct Options {
  std::vector<int64_t> seqlens{4096, 16384, 65536, 131072};
  std::vector<int64_t> bits{13};
  std::vector<int64_t> intervals{0, 1, 2, 4, 8, 16, 32, 64};
  int64_t rows = 128;
  int seeds = 3;
  uint64_t seed = 20261122;
  int threads = 0;
  std::string out = "accumulator_study.csv";
  std::string table;  ///< optional: the Markdown table is also written here
};

/// One accumulator configuration: FP32 accumulation, or the tensor core's addition (`bits` = 13,
/// the only width the library accepts: the hardware's).
struct AccumulatorConfig {
  int bits;  ///< 0 = FP32 accumulation
  int promote_interval;
};

void usage() {
  std::printf(
      "usage: accumulator_study [--seqlens 4096,16384,65536,131072] [--bits 13] [--intervals 0,1,2,4,8,16,32,64]\n"
      "                         [--rows N] [--seeds N] [--seed N] [--threads N] [--out FILE.csv] [--table FILE.md]\n"
      "Q, K, V ~ N(0,1) cast to E4M3 with per-head descales; batch 1, one head, head_dim 128, non-causal,\n"
      "reverse KV order, S_p = 256. RMSE of O against the FP64 oracle on the same E4M3 inputs, for the full\n"
      "FP32 accumulation and the tensor core's addition (--bits 13, the only width: the hardware's)\n"
      "with each pv_promote_interval of --intervals (0 = accumulate in O, never promoted).\n");
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return false;
    const char* v = argv[++i];
    if (a == "--seqlens") o.seqlens = fp8attn::workloads::parse_int_list(v);
    else if (a == "--bits") o.bits = fp8attn::workloads::parse_int_list(v);
    else if (a == "--intervals") o.intervals = fp8attn::workloads::parse_int_list(v);
    else if (a == "--rows") o.rows = std::atoll(v);
    else if (a == "--seeds") o.seeds = std::atoi(v);
    else if (a == "--seed") o.seed = std::strtoull(v, nullptr, 10);
    else if (a == "--threads") o.threads = std::atoi(v);
    else if (a == "--out") o.out = v;
    else if (a == "--table") o.table = v;
    else return false;
  }
  for (int64_t b : o.bits)
    if (b != 13) return false;
  for (int64_t n : o.intervals)
    if (n < 0) return false;
  return o.rows > 0 && o.seeds > 0 && !o.seqlens.empty() && !o.bits.empty() && !o.intervals.empty();
}

/// Appends to the Markdown table (stdout, and the --table file when given).
struct TableOut {
  FILE* file = nullptr;
  template <typename... Args>
  void line(const char* format, Args... args) {
    std::printf(format, args...);
    if (file) std::fprintf(file, format, args...);
  }
};

double rms(const std::vector<float>& x) {
  double s = 0.0;
  for (float v : x) s += static_cast<double>(v) * v;
  return std::sqrt(s / static_cast<double>(x.size()));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    usage();
    return 2;
  }
  FILE* f = std::fopen(o.out.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "accumulator_study: cannot write %s\n", o.out.c_str());
    return 1;
  }
  std::fprintf(f, "seqlen_k,rows,seed,accumulator_bits,promote_interval,rmse,rmse_over_fp32,max_abs_err,oracle_rms,"
                  "rmse_vs_fp32_accumulator\n");
  // NOTE: the powers of two bracket vLLM's every-4-blocks finding and give the kernel's promotion
  // interval (kDefaultPvPromoteInterval).
  std::vector<AccumulatorConfig> configs{{0, 0}};
  for (int64_t bits : o.bits)
    for (int64_t interval : o.intervals) configs.push_back({static_cast<int>(bits), static_cast<int>(interval)});

  TableOut table;
  if (!o.table.empty() && !(table.file = std::fopen(o.table.c_str(), "w"))) {
    std::fprintf(stderr, "accumulator_study: cannot write %s\n", o.table.c_str());
    return 1;
  }
  ProgressLine progress("accumulator study, " + std::to_string(configs.size()) + " accumulator configurations");
  table.line("| keys | accumulator | promote every | RMSE vs FP64 | ÷ FP32 accumulator | RMSE vs FP32 accumulator |\n"
             "|---:|---|---:|---:|---:|---:|\n");
  for (int64_t seqlen : o.seqlens) {
    std::vector<double> sum_rmse(configs.size(), 0.0), sum_added(configs.size(), 0.0);
    for (int s = 0; s < o.seeds; ++s) {
      progress.step(std::to_string(seqlen) + " keys, draw " + std::to_string(s + 1) + "/" + std::to_string(o.seeds) +
                    ": FP64 oracle, then the engine per configuration");
      const uint64_t seed = o.seed * 1000003ull + static_cast<uint64_t>(seqlen) * 16ull + static_cast<uint64_t>(s);
      const AttentionShape shape{1, o.rows, seqlen, 1, 1, 128};
      const auto q = quantize(normal_inputs(shape, seed), FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerHead);
      auto desc = make_desc(shape, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
      ForwardOptions oracle_opts;
      oracle_opts.backend = FP8ATTN_BACKEND_REFERENCE;
      const ForwardResult oracle = run_forward(desc, shape, q, oracle_opts);
      if (oracle.status != FP8ATTN_OK) {
        std::fprintf(stderr, "accumulator_study: oracle failed with status %d\n", oracle.status);
        return 1;
      }
      const double oracle_rms = rms(oracle.out);
      double fp32 = 0.0;
      std::vector<float> fp32_out;
      for (size_t i = 0; i < configs.size(); ++i) {
        desc.accumulator_model = configs[i].bits > 0 ? FP8ATTN_ACCUMULATOR_TENSOR_CORE : FP8ATTN_ACCUMULATOR_FP32;
        desc.pv_promote_interval = configs[i].promote_interval;
        ForwardOptions opts;
        opts.num_threads = o.threads;
        const ForwardResult r = run_forward(desc, shape, q, opts);
        if (r.status != FP8ATTN_OK) {
          std::fprintf(stderr, "accumulator_study: forward failed with status %d\n", r.status);
          return 1;
        }
        const double e = rmse(r.out, oracle.out);
        if (i == 0) {
          fp32 = e;
          fp32_out = r.out;
        }
        // The error the accumulator adds on its own: the same forward with a full FP32
        // accumulator differs only in the truncation (P casts and block order are the same).
        const double added = rmse(r.out, fp32_out);
        sum_rmse[i] += e;
        sum_added[i] += added;
        std::fprintf(f, "%lld,%lld,%llu,%d,%d,%.6e,%.5f,%.6e,%.6e,%.6e\n", static_cast<long long>(seqlen),
                     static_cast<long long>(o.rows), static_cast<unsigned long long>(seed), configs[i].bits,
                     configs[i].promote_interval, e, e / fp32, max_abs_diff(r.out, oracle.out), oracle_rms, added);
      }
      std::fflush(f);
    }
    for (size_t i = 0; i < configs.size(); ++i) {
      const double mean = sum_rmse[i] / o.seeds;
      char acc[32], every[32];
      std::snprintf(acc, sizeof acc, configs[i].bits ? "%d-bit model" : "FP32", configs[i].bits);
      std::snprintf(every, sizeof every, configs[i].promote_interval ? "%d" : "never", configs[i].promote_interval);
      table.line("| %lld | %s | %s | %.4e | %.3f | %.2e |\n", static_cast<long long>(seqlen), acc, every, mean,
                 mean / (sum_rmse[0] / o.seeds), sum_added[i] / o.seeds);
    }
  }
  std::fclose(f);
  if (table.file) std::fclose(table.file);
  std::printf("\nwrote %s (%lld query rows, %d seed(s) per length, base seed %llu)\n", o.out.c_str(),
              static_cast<long long>(o.rows), o.seeds, static_cast<unsigned long long>(o.seed));
  return 0;
}
