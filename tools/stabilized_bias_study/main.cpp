// The stabilized-softmax bias study (issue: "the mechanism, reproduced"). BF16 rows whose every
// KV block has a tied row maximum, V around a negative mean (tied_max_inputs.hpp). For the
// standard and the stabilized softmax, the CPU engine (the kernel's arithmetic: BF16 P̄, FP32
// accumulators and row sums) is compared with the FP64 oracle on the same BF16 inputs. Per query
// row the signed error e = mean over the head dimension of (O − O_FP64), and the error of
// D = rowsum(dO∘O) with dO ~ N(1, 1): if the arithmetic is unbiased, the mean of e over many rows
// is zero up to sd/√N. Prints the mean, its z-score (mean / (sd/√N)) and the RMSE per variant;
// writes one CSV row per (variant, draw). For comparison, the same rows through an all-BF16
// FlashAttention-2 forward (bf16_flash_reference.hpp), the arithmetic of the paper's experiments.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "lib/workloads/progress_line.hpp"
#include "tools/stabilized_bias_study/bias_trials.hpp"

namespace {

using fp8attn::study::BiasStudyOptions;

bool parse(int argc, char** argv, BiasStudyOptions& o) {
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
    else if (a == "--seed") o.seed = std::strtoull(v, nullptr, 10);
    else return false;
  }
  return argc % 2 == 1 && o.rows > 0 && o.keys > 0 && o.heads > 0 && o.draws > 0 && o.inputs.ties >= 1 &&
         (o.head_dim == 64 || o.head_dim == 128 || o.head_dim == 256);
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
  if (!parse(argc, argv, o)) {
    std::printf(
        "usage: stabilized_bias_study [--rows 1024] [--keys 512] [--heads 4] [--head-dim 64] [--draws 3]\n"
        "                             [--ties 3] [--tied-logit 6] [--v-mean -0.5] [--tied-share-v 1]\n"
        "                             [--bf16-reference 1] [--seed N] [--out FILE.csv]\n"
        "BF16 inputs, every KV block with `ties` tied row maxima, V ~ N(v_mean, 1); the engine's standard and\n"
        "stabilized softmax (and an all-BF16 flash forward) against the FP64 oracle: mean signed error of O and\n"
        "of D = rowsum(dO*O), with z-scores.\n");
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
  return 0;
}
