// P-cast underflow on sink inputs (DESIGN §3): k_sink = 4 keys with logit Δ + z, the others z,
// z ~ N(0,1); seqlen_k 4096, 1024 query rows, head_dim 128, unit descales. The engine's
// telemetry counts P̃ > 0 whose E4M3 cast is 0; sinks never underflow, so the non-sink fraction
// is p_underflow / (p_positive − k_sink · rows).
//  - forward order: within ±0.03 of the exact expectation (and the leading order's gap printed);
//  - reverse order at S_p = 256: at most the predicted in-block residue + 0.01.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "kernels/sm90/tile_config.hpp"
#include "tools/common/forward_runner.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::testing {
using namespace fp8attn::workloads;
namespace {

constexpr int kSinks = 4;
const workloads::AttentionShape kShape{1, 1024, 4096, 1, 1, 128};

struct Measured {
  double fraction;
  double leading_order;
  double expected;
};

Measured measure(double delta, int p_scale_log2, int32_t kv_order, uint64_t seed) {
  const float scale = 1.0f / std::sqrt(128.0f);
  const auto sink = workloads::sink_inputs(kShape, seed, kSinks, delta, scale);
  const auto quantized = workloads::quantize(sink.inputs, FP8ATTN_DTYPE_E4M3, workloads::ScaleGranularity::Unit);
  auto desc = make_desc(kShape, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
  desc.p_scale_log2 = p_scale_log2;
  desc.kv_order = kv_order;
  desc.telemetry = 1;
  const ForwardResult r = run_forward(desc, kShape, quantized);
  const double non_sink = static_cast<double>(r.telemetry.p_positive) - kSinks * static_cast<double>(kShape.seqlen_q);
  Measured m{static_cast<double>(r.telemetry.p_underflow) / non_sink, 0, 0};

  fp8attn_sink_model model{};
  model.struct_size = sizeof model;
  model.sink_strength = sink.realized_delta;
  model.k_sink = kSinks;
  model.p_scale = std::ldexp(1.0, p_scale_log2);
  model.kv_order = kv_order;
  model.block_n =
      sm90::attention_tile(128, true, sm90::pv_promotion_of_interval(desc.pv_promote_interval)).block_n;
  model.seqlen_k = kShape.seqlen_k;
  fp8attn_error err{sizeof err, 0, {0}};
  EXPECT_EQ(fp8attn_predict_p_underflow(&model, &m.leading_order, &m.expected, &err), FP8ATTN_OK) << err.message;
  return m;
}


TEST(SinkUnderflow, ForwardOrderMatchesExpectation) {
  for (int p_scale_log2 : {8, 0}) {
    for (double delta = 0.0; delta <= 14.0; delta += 2.0) {
      const uint64_t seed = workloads::fresh_seed();
      const Measured m = measure(delta, p_scale_log2, FP8ATTN_KV_ORDER_FORWARD, seed);
      std::printf("forward S_p=2^%d delta=%4.1f: measured %.4f expected %.4f (gap %+.4f) leading-order %.4f (gap %+.4f)\n",
                  p_scale_log2, delta, m.fraction, m.expected, m.fraction - m.expected, m.leading_order,
                  m.fraction - m.leading_order);
      EXPECT_NEAR(m.fraction, m.expected, 0.03) << "delta " << delta << " S_p 2^" << p_scale_log2 << " seed " << seed;
    }
  }
}

TEST(SinkUnderflow, ReverseOrderOnlyInsideTheSinkBlock) {
  for (double delta = 0.0; delta <= 14.0; delta += 2.0) {
    const uint64_t seed = workloads::fresh_seed();
    const Measured m = measure(delta, 8, FP8ATTN_KV_ORDER_REVERSE, seed);
    std::printf("reverse S_p=256 delta=%4.1f: measured %.5f predicted in-block residue %.5f (bound residue + 0.01)\n",
                delta, m.fraction, m.expected);
    EXPECT_LE(m.fraction, m.expected + 0.01) << "delta " << delta << " seed " << seed;
  }
}

}  // namespace
}  // namespace fp8attn::testing
