// fa3_table3: prints FlashAttention-3's Table 3 (RMSE of FP8 attention on outlier inputs)
// reproduced with fp8attn, as markdown; `--out FILE` also writes it to FILE.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "tools/common/progress_line.hpp"
#include "tools/fa3_table3/error_decomposition.hpp"
#include "tools/fa3_table3/table3_study.hpp"

namespace {

void usage() {
  std::fprintf(stderr,
               "usage: fa3_table3 [--heads N] [--seqlen N] [--head-dim N] [--seed N] [--rotation-seed N]\n"
               "                  [--threads N] [--out FILE] [--decompose] [--draws N]\n"
               "defaults: 16 heads, seqlen 4096, head_dim 128 (FlashAttention-3's setup), seeds 1 and 2\n"
               "--decompose also runs the FP64 oracle on inputs of which only Q and K, or only V, were\n"
               "quantized, to show where the FP8 error comes from\n"
               "--draws N repeats the table for input seeds seed .. seed + N - 1 and adds the improvement\n"
               "ratio of each draw\n");
}

}  // namespace

int main(int argc, char** argv) {
  fp8attn::table3::Table3Options o;
  o.input_seed = 1;
  o.rotation_seed = 2;
  std::string out_path;
  bool decompose = false;
  int draws = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage();
      return 0;
    }
    if (arg == "--decompose") {
      decompose = true;
      continue;
    }
    if (i + 1 >= argc) {
      usage();
      return 2;
    }
    const char* value = argv[++i];
    if (arg == "--heads") o.heads = std::atoi(value);
    else if (arg == "--seqlen") o.seqlen = std::atoll(value);
    else if (arg == "--head-dim") o.head_dim = std::atoi(value);
    else if (arg == "--seed") o.input_seed = std::strtoull(value, nullptr, 0);
    else if (arg == "--rotation-seed") o.rotation_seed = std::strtoull(value, nullptr, 0);
    else if (arg == "--threads") o.threads = std::atoi(value);
    else if (arg == "--out") out_path = value;
    else if (arg == "--draws") draws = std::atoi(value);
    else {
      usage();
      return 2;
    }
  }
  if (o.heads < 1 || o.seqlen < 1 || o.head_dim < 1 || draws < 1) {
    usage();
    return 2;
  }
  try {
    fp8attn::workloads::ProgressLine progress("FA3 Table 3 study, " + std::to_string(o.heads) + " heads, seqlen " +
                                              std::to_string(o.seqlen) + ", head_dim " + std::to_string(o.head_dim));
    std::vector<fp8attn::table3::Table3Draw> results;
    for (int i = 0; i < draws; ++i) {
      progress.step("draw " + std::to_string(i + 1) + "/" + std::to_string(draws) +
                    ": FP64 oracle, then each FP8 variant");
      fp8attn::table3::Table3Options draw = o;
      draw.input_seed = o.input_seed + static_cast<uint64_t>(i);
      results.push_back({draw.input_seed, fp8attn::table3::run_table3(draw)});
    }
    std::string md = fp8attn::table3::table3_markdown(results.front().result, o);
    if (draws > 1) {
      md += '\n';
      md += fp8attn::table3::draws_markdown(results, o);
    }
    if (decompose) {
      progress.step("error decomposition");
      md += '\n';
      md += fp8attn::table3::error_sources_markdown(fp8attn::table3::decompose_fp8_error(o));
    }
    std::fputs(md.c_str(), stdout);
    if (!out_path.empty()) {
      std::ofstream f(out_path);
      f << md;
      if (!f) {
        std::fprintf(stderr, "fa3_table3: cannot write %s\n", out_path.c_str());
        return 1;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fa3_table3: %s\n", e.what());
    return 1;
  }
  return 0;
}
