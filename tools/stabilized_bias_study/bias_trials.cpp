#include "tools/stabilized_bias_study/bias_trials.hpp"

#include <random>
#include <stdexcept>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "kernels/sm90/tile_config.hpp"
#include "tools/common/forward_runner.hpp"
#include "tools/stabilized_bias_study/bf16_flash_reference.hpp"

namespace fp8attn::study {

using namespace fp8attn::workloads;

BiasStudyResult run_bias_trials(const BiasStudyOptions& o,
                                const std::function<void(int, uint64_t, int, const BiasStatistics&)>& on_draw,
                                const std::function<void(const std::string&)>& on_step) {
  const AttentionShape shape{1, o.rows, o.keys, o.heads, o.heads, o.head_dim};
  BiasStudyResult result;
  result.block_n = sm90::attention_tile(o.head_dim, false, sm90::PvPromotion::Off).block_n;
  for (int draw = 0; draw < o.draws; ++draw) {
    if (on_step) on_step("draw " + std::to_string(draw + 1) + "/" + std::to_string(o.draws));
    const uint64_t seed = o.seed * 1000003ull + static_cast<uint64_t>(draw);
    const AttentionInputs real = tied_max_inputs(shape, result.block_n, o.inputs, seed);
    const QuantizedInputs q = quantize(real, FP8ATTN_DTYPE_BF16, ScaleGranularity::Unit);
    auto desc = make_desc(shape, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_F32);
    ForwardOptions oracle_opts;
    oracle_opts.backend = FP8ATTN_BACKEND_REFERENCE;
    const ForwardResult oracle = run_forward(desc, shape, q, oracle_opts);
    if (oracle.status != FP8ATTN_OK) throw std::runtime_error("the FP64 oracle failed: status " + std::to_string(oracle.status));
    // dO ~ N(1, 1): a mean of one sign, so that a bias of O shows in D = rowsum(dO∘O) too.
    std::mt19937_64 rng(seed ^ 0xd0d0);
    std::normal_distribution<double> n(1.0, 1.0);
    std::vector<double> d_out(oracle.out.size());
    for (double& x : d_out) x = n(rng);
    const int variants = o.bf16_reference ? 4 : 2;
    for (int variant = 0; variant < variants; ++variant) {
      desc.softmax_variant = variant % 2 == 0 ? FP8ATTN_SOFTMAX_STANDARD : FP8ATTN_SOFTMAX_STABILIZED;
      std::vector<float> out;
      if (variant < 2) {
        ForwardResult r = run_forward(desc, shape, q);
        if (r.status != FP8ATTN_OK) throw std::runtime_error("the engine failed: status " + std::to_string(r.status));
        out = std::move(r.out);
      } else {
        out = bf16_flash_forward(shape, dequantize(real, q), result.block_n, variant == kBf16FlashStabilized);
      }
      const BiasStatistics s = row_errors(out, oracle.out, d_out, o.head_dim);
      result.stats[variant].merge(s);
      if (on_draw) on_draw(draw, seed, variant, s);
    }
  }
  return result;
}

}  // namespace fp8attn::study
