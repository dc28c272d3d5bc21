// The P-collapse study: how many non-sink P̃ underflow in the E4M3 cast as the sink strength Δ
// grows, and what that does to the output, for both KV orders, the static P scales S_p = 1, 16,
// 256 (the engine) and 448 (emulated; see cast_point_emulation.hpp), with and without sink
// isolation. Writes one CSV row per (k_sink, Δ, S_p, order, isolation, source).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "tools/common/cli_args.hpp"
#include "tools/common/progress_line.hpp"

#include "fp8attn/fp8attn.h"
#include "tools/p_collapse_study/cast_point_emulation.hpp"
#include "tools/p_collapse_study/p_collapse_point.hpp"

namespace {

using fp8attn::study::PointResult;

struct Options {
  int64_t rows = 512;
  int64_t seqlen_k = 4096;
  int head_dim = 128;
  std::vector<int> k_sinks{1, 4, 16};
  double delta_max = 16.0;
  double delta_step = 0.5;
  uint64_t seed = 20261122;
  int threads = 0;
  std::string out = "p_collapse.csv";
};

void usage() {
  std::printf(
      "usage: p_collapse_study [--rows N] [--seqlen N] [--k-sinks 1,4,16] [--delta-max D] [--delta-step D]\n"
      "                        [--seed N] [--threads N] [--out FILE.csv]\n"
      "Sink-structured E4M3 inputs (k_sink keys with logit delta + z, the others z, z ~ N(0,1)), unit descales,\n"
      "batch 1, one head, head_dim 128. For each delta: the CPU engine at S_p = 1, 16, 256 and the FP64 cast-point\n"
      "emulation at S_p = 1, 16, 256, 448; both KV orders; sink isolation off and on. Error against the FP64 oracle.\n");
}

std::vector<int> to_ints(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!v) return false;
    ++i;
    if (a == "--rows") o.rows = std::atoll(v);
    else if (a == "--seqlen") o.seqlen_k = std::atoll(v);
    else if (a == "--k-sinks") o.k_sinks = to_ints(fp8attn::workloads::parse_int_list(v));
    else if (a == "--delta-max") o.delta_max = std::atof(v);
    else if (a == "--delta-step") o.delta_step = std::atof(v);
    else if (a == "--seed") o.seed = std::strtoull(v, nullptr, 10);
    else if (a == "--threads") o.threads = std::atoi(v);
    else if (a == "--out") o.out = v;
    else return false;
  }
  return o.rows > 0 && o.seqlen_k > 0 && o.delta_step > 0 && !o.k_sinks.empty();
}

void write_row(FILE* f, const fp8attn::study::SinkCase& c, double p_scale, int32_t order, bool isolated,
               const char* source, const PointResult& p) {
  const double n = static_cast<double>(p.underflow.non_sink_positive);
  std::fprintf(f, "%d,%.2f,%.6f,%llu,%lld,%lld,%g,%s,%d,%s,%.7f,%.5f,%.7f,%.7f,%.7f,%.7f,%llu,%llu,%.6e,%.6e\n",
               c.k_sink, c.delta, c.realized_delta, static_cast<unsigned long long>(c.seed),
               static_cast<long long>(c.shape.seqlen_q), static_cast<long long>(c.shape.seqlen_k), p_scale,
               order == FP8ATTN_KV_ORDER_FORWARD ? "forward" : "reverse", isolated ? 1 : 0, source,
               p.underflow.fraction(), p.row_fraction_stddev, p.predicted_leading, p.predicted_expected,
               p.underflow.in_sink_block / n, p.underflow.outside_sink_block / n,
               static_cast<unsigned long long>(p.underflow.in_sink_block),
               static_cast<unsigned long long>(p.underflow.outside_sink_block), p.mse, p.max_abs_err);
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
    std::fprintf(stderr, "p_collapse_study: cannot write %s\n", o.out.c_str());
    return 1;
  }
  std::fprintf(f,
               "k_sink,delta,realized_delta,seed,rows,seqlen_k,p_scale,kv_order,sink_isolation,source,underflow,"
               "underflow_row_stddev,predicted_leading,predicted_expected,underflow_in_sink_block,"
               "underflow_outside_sink_block,count_in_sink_block,count_outside_sink_block,mse,max_abs_err\n");
  fp8attn::workloads::ProgressLine progress("P-collapse study");
  const int steps = static_cast<int>(std::floor(o.delta_max / o.delta_step + 1e-9));
  try {
    for (int k : o.k_sinks)
      for (int step = 0; step <= steps; ++step) {
        const double delta = step * o.delta_step;
        progress.step("k_sink " + std::to_string(k) + ", delta " + std::to_string(delta).substr(0, 5) + " (" +
                      std::to_string(step + 1) + "/" + std::to_string(steps + 1) + "): engine and cast emulation");
        // A fresh, reproducible input draw per (k_sink, Δ).
        const uint64_t seed = o.seed * 1000003ull + static_cast<uint64_t>(k) * 1000ull + static_cast<uint64_t>(step);
        const auto c = fp8attn::study::make_sink_case(o.rows, o.seqlen_k, o.head_dim, k, delta, seed);
        const fp8attn::study::CastPointEmulation emulation(c);
        for (int32_t order : {FP8ATTN_KV_ORDER_FORWARD, FP8ATTN_KV_ORDER_REVERSE})
          for (bool isolated : {false, true}) {
            for (int p_scale_log2 : {0, 4, 8}) {
              const PointResult p = fp8attn::study::run_engine_point(c, {p_scale_log2, order, isolated}, o.threads);
              write_row(f, c, std::ldexp(1.0, p_scale_log2), order, isolated, "engine", p);
            }
            // NOTE: S_p = 448 = 256·1.75 is E4M3's largest finite value, the scale that uses the
            // whole range; the engine's exp2 offset takes only powers of two, so it is emulated.
            for (double p_scale : {1.0, 16.0, 256.0, 448.0})
              write_row(f, c, p_scale, order, isolated, "emulation",
                        emulation.run(p_scale, order, isolated, o.threads > 0 ? o.threads : 2));
          }
        std::fflush(f);
      }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "p_collapse_study: %s\n", e.what());
    std::fclose(f);
    return 1;
  }
  std::fclose(f);
  std::printf("wrote %s (%lld query rows, %lld keys, head_dim %d, seed %llu)\n", o.out.c_str(),
              static_cast<long long>(o.rows), static_cast<long long>(o.seqlen_k), o.head_dim,
              static_cast<unsigned long long>(o.seed));
  return 0;
}
