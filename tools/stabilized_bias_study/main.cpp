// The stabilized-softmax bias study: the mechanism of the bias, reproduced. BF16 rows whose every
// KV block has a tied row maximum, V around a negative mean (tied_max_inputs.hpp). For the
// standard and the stabilized softmax, the CPU engine (the kernel's arithmetic: BF16 P̄, FP32
// accumulators and row sums) is compared with the FP64 oracle on the same BF16 inputs. Per query
// row the signed error e = mean over the head dimension of (O − O_FP64), and the error of
// D = rowsum(dO∘O) with dO ~ N(1, 1): if the arithmetic is unbiased, the mean of e over many rows
// is zero up to sd/√N. Prints the mean, its z-score (mean / (sd/√N)) and the RMSE per variant;
// writes one CSV row per (variant, draw). For comparison, the same rows through an all-BF16
// FlashAttention-2 forward (bf16_flash_reference.hpp), the arithmetic of the paper's experiments.
// With --dq 1 it then follows the bias into dQ through the engine's backward (dq_bias_trials.hpp):
// the projected dQ error and its parts from O (through D) and from the LSE, with z-scores over
// the independent (draw, head) clusters.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "fp8attn/fp8attn.h"
#include "tools/common/progress_line.hpp"
#include "tools/stabilized_bias_study/bias_trials.hpp"
#include "tools/stabilized_bias_study/dq_bias_trials.hpp"

namespace {

using fp8attn::study::BiasStudyOptions;

bool parse(int argc, char** argv, BiasStudyOptions& o, bool& dq) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const char* v = argv[i + 1];
    if (a == "--rows") o.rows = std::atoll(v);
    else if (a == "--keys") o.keys = std::atoll(v);
    else if (a == "--heads") o.heads = std::atoi(v);
    else if (a == "--head-dim") o.head_dim = std::atoi(v);
    else if (a == "--draws") o.draws = std::atoi(v);
    else if (a == "--ties") o.inputs.ties = std::atoi(v);
    else if (a == "--tied-logit") o.inputs.tied_logit = std::strtof(v, nullptr);
    else if (a == "--v-mean") o.inputs.v_mean = std::strtof(v, nullptr);
    else if (a == "--tied-share-v") o.inputs.tied_share_v = std::atoi(v) != 0;
    else if (a == "--bf16-reference") o.bf16_reference = std::atoi(v) != 0;
    else if (a == "--dq") dq = std::atoi(v) != 0;
    else if (a == "--seed") o.seed = std::strtoull(v, nullptr, 10);
    else return false;
  }
  return argc % 2 == 1 && o.rows > 0 && o.keys > 0 && o.heads > 0 && o.draws > 0 && o.inputs.ties >= 1 &&
         (o.head_dim == 64 || o.head_dim == 128 || o.head_dim == 256);
}

/// The dQ table: per variant, each part of the projected dQ error next to its prediction.
/// Also writes one CSV row per (output dtype, variant, draw) to `csv`: each quantity's mean over
/// the draw's rows and the mean of its heads' slopes.
int print_dq_study(const BiasStudyOptions& o, int32_t out_dtype, FILE* csv, fp8attn::workloads::ProgressLine& progress) {
  using fp8attn::study::ClusteredMoments;
  fp8attn::study::DqBiasStudyResult r;
  const char* dtype = out_dtype == FP8ATTN_DTYPE_F32 ? "F32" : "BF16";
  const auto on_draw = [&](int draw, uint64_t seed, int variant, const fp8attn::study::DqBiasStatistics& s) {
    std::fprintf(csv, "%s,%s,%d,%llu,%lld,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e\n", dtype,
                 fp8attn::study::kBiasVariantNames[variant], draw, static_cast<unsigned long long>(seed),
                 static_cast<long long>(s.total.rows.count), s.total.mean(), s.d_error.mean(), s.o_part.mean(),
                 s.o_predicted.mean(), s.o_residual.mean(), s.lse_part.mean(), s.lse_predicted.mean(),
                 s.lse_error.mean(), s.backward_own.mean(), s.o_slope.mean());
  };
  try {
    r = fp8attn::study::run_dq_bias_trials(o, out_dtype, on_draw, [&](const std::string& step) { progress.step(step); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stabilized_bias_study: %s\n", e.what());
    return 1;
  }
  std::printf("\nO stored as %s:\n", dtype);
  std::printf("\n| softmax | quantity | mean | z (rows) | z (clusters) |\n|---|---|---:|---:|---:|\n");
  for (int variant = 0; variant < 2; ++variant) {
    const fp8attn::study::DqBiasStatistics& s = r.stats[variant];
    const std::pair<const char*, const ClusteredMoments*> lines[] = {
        {"dQ, all (pi_A)", &s.total},          {"D's error (vs O_FP64)", &s.d_error},
        {"dQ, O's part", &s.o_part},           {"  predicted: D's error (vs stored O_FP64)", &s.o_predicted},
        {"  residual", &s.o_residual},         {"dQ, LSE's part", &s.lse_part},
        {"  predicted: dL * c", &s.lse_predicted}, {"LSE error dL", &s.lse_error},
        {"dQ, the backward's own", &s.backward_own}};
    for (const auto& [name, m] : lines)
      std::printf("| %s | %s | %.3e | %.1f | %.1f |\n", fp8attn::study::kBiasVariantNames[variant], name, m->mean(),
                  m->rows.z(), m->clustered_z());
    std::printf("| %s | slope of dQ's O part on D's error | %.3f | | +- %.3f (sd/sqrt(clusters)) |\n",
                fp8attn::study::kBiasVariantNames[variant], s.o_slope.mean(),
                s.o_slope.sd() / std::sqrt(static_cast<double>(s.o_slope.count)));
  }
  std::printf("\npi_i = -(dQ_i - dQ_FP64,i).g_i / (scale |g_i|^2), g_i = sum_j P_ij K_j, in D's units; dq stored in\n"
              "F32; clusters: %lld (draw, head) pairs of %lld rows\n",
              static_cast<long long>(r.stats[0].total.clusters.count), static_cast<long long>(o.rows));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  BiasStudyOptions o;
  std::string out = "stabilized_bias_study.csv";
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--out") {
      out = argv[i + 1];
      for (int j = i; j + 2 < argc; ++j) argv[j] = argv[j + 2];
      argc -= 2;
      break;
    }
  bool dq = false;
  if (!parse(argc, argv, o, dq)) {
    std::printf(
        "usage: stabilized_bias_study [--rows 1024] [--keys 512] [--heads 4] [--head-dim 64] [--draws 3]\n"
        "                             [--ties 3] [--tied-logit 6] [--v-mean -0.5] [--tied-share-v 1]\n"
        "                             [--bf16-reference 1] [--dq 0] [--seed N] [--out FILE.csv]\n"
        "BF16 inputs, every KV block with `ties` tied row maxima, V ~ N(v_mean, 1); the engine's standard and\n"
        "stabilized softmax (and an all-BF16 flash forward) against the FP64 oracle: mean signed error of O and\n"
        "of D = rowsum(dO*O), with z-scores. --dq 1: also dQ through the engine's backward, split into the\n"
        "parts from O (through D) and from the LSE.\n");
    return 2;
  }
  FILE* csv = std::fopen(out.c_str(), "w");
  if (!csv) {
    std::fprintf(stderr, "stabilized_bias_study: cannot write %s\n", out.c_str());
    return 1;
  }
  std::fprintf(csv, "variant,draw,seed,rows,mean_error_o,sd_error_o,mean_error_d,sd_error_d,rmse_o\n");
  fp8attn::workloads::ProgressLine progress("stabilized bias study");
  fp8attn::study::BiasStudyResult r;
  try {
    r = fp8attn::study::run_bias_trials(
        o,
        [&](int draw, uint64_t seed, int variant, const fp8attn::study::BiasStatistics& s) {
          std::fprintf(csv, "%s,%d,%llu,%lld,%.6e,%.6e,%.6e,%.6e,%.6e\n", fp8attn::study::kBiasVariantNames[variant],
                       draw, static_cast<unsigned long long>(seed), static_cast<long long>(s.o.count), s.o.mean(),
                       s.o.sd(), s.d.mean(), s.d.sd(), s.rmse_o());
        },
        [&](const std::string& step) { progress.step(step); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stabilized_bias_study: %s\n", e.what());
    return 1;
  }
  std::fclose(csv);
  std::printf("| softmax | rows | mean error of O | z | mean error of D | z | RMSE of O |\n|---|---:|---:|---:|---:|---:|---:|\n");
  for (int variant = 0; variant < (o.bf16_reference ? 4 : 2); ++variant) {
    const fp8attn::study::BiasStatistics& s = r.stats[variant];
    std::printf("| %s | %lld | %.3e | %.1f | %.3e | %.1f | %.3e |\n", fp8attn::study::kBiasVariantNames[variant],
                static_cast<long long>(s.o.count), s.o.mean(), s.o.z(), s.d.mean(), s.d.z(), s.rmse_o());
  }
  std::printf("\nBF16, head_dim %d, %lld keys (BlockN %d, %d tied maxima per block, logit %.1f%s), V ~ N(%.2f, 1),\n"
              "dO ~ N(1, 1); z = mean / (sd / sqrt(rows)); seed %llu; wrote %s\n",
              o.head_dim, static_cast<long long>(o.keys), r.block_n, o.inputs.ties,
              static_cast<double>(o.inputs.tied_logit), o.inputs.tied_share_v ? ", one shared V row" : "",
              static_cast<double>(o.inputs.v_mean), static_cast<unsigned long long>(o.seed), out.c_str());
  if (!dq) return 0;
  // The dQ study's CSV sits beside the other: FILE.csv gives FILE_dq.csv.
  const bool has_suffix = out.size() > 4 && out.compare(out.size() - 4, 4, ".csv") == 0;
  const std::string dq_out = (has_suffix ? out.substr(0, out.size() - 4) : out) + "_dq.csv";
  FILE* dq_csv = std::fopen(dq_out.c_str(), "w");
  if (!dq_csv) {
    std::fprintf(stderr, "stabilized_bias_study: cannot write %s\n", dq_out.c_str());
    return 1;
  }
  std::fprintf(dq_csv, "out_dtype,variant,draw,seed,rows,pi_all,d_error,o_part,o_predicted,o_residual,lse_part,"
                       "lse_predicted,lse_error,backward_own,o_slope\n");
  const int rc = print_dq_study(o, FP8ATTN_DTYPE_F32, dq_csv, progress) ||
                 print_dq_study(o, FP8ATTN_DTYPE_BF16, dq_csv, progress);
  std::fclose(dq_csv);
  if (rc == 0) std::printf("wrote %s\n", dq_out.c_str());
  return rc;
}
