// A 50-step delayed-scaling loop (TransformerEngine's DelayedScaling) through the forward: each
// step draws fresh N(0, σ) inputs with a drifting σ, quantizes Q, K and V with the state's scales
// and reports their amaxes (as a framework does at its casts), runs the forward with the state
// (descales and the E4M3 output scale from it; O and logit amaxes reported by the call), and
// steps. A hand-written reference (amax history window, scale = fp8_max / amax / 2^margin, rules
// of lib/scale/scale_state_data.cpp) runs beside it with plain F32 forward calls; scales,
// outputs and amax_o must agree exactly at every step.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "tests/training/training_test_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::training_test {
namespace {

/// TransformerEngine's delayed recipe for one tensor, written from its description: a window of
/// H per-step amaxes, the current step's slot included in the reduction; scale = fp8_max / amax
/// / 2^margin, kept when the amax is 0; then the window rolls and the new slot starts at 0.
struct ReferenceTensor {
  std::vector<float> window;
  size_t position = 0;
  float scale = 1.0f, scale_inv = 1.0f;
  explicit ReferenceTensor(int h) : window(static_cast<size_t>(h), 0.0f) {}
  void report(float amax) { window[position] = std::max(window[position], amax); }
  void step(float fp8_max, float margin) {
    const float amax = *std::max_element(window.begin(), window.end());
    if (amax > 0.0f) {
      const double s = static_cast<double>(fp8_max) / amax / std::exp2(static_cast<double>(margin));
      scale = static_cast<float>(s);
      scale_inv = static_cast<float>(1.0 / s);
    }
    position = (position + 1) % window.size();
    window[position] = 0.0f;
  }
};

TEST(DelayedRecipeLoop, FiftyStepsMatchAHandWrittenReferenceStepByStep) {
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const Shape s{1, 40, 100, 2, 1, 64};
  constexpr int kHistory = 8, kSteps = 50, kLayers = 3, kLayer = 1;
  constexpr float kMargin = 1.0f;

  fp8attn_context ctx = make_context();
  fp8attn_scale_state_options o{};
  o.struct_size = sizeof o;
  o.num_layers = kLayers;
  o.amax_history_len = kHistory;
  o.margin = kMargin;
  for (int t = 0; t < FP8ATTN_NUM_TENSOR_KINDS; ++t) o.recipe[t] = FP8ATTN_RECIPE_DELAYED;
  o.recipe[FP8ATTN_TENSOR_LOGIT] = FP8ATTN_RECIPE_GEOMETRY;  // no σ: the logit scale stays 1
  fp8attn_scale_state state = nullptr;
  ASSERT_EQ(fp8attn_scale_state_create(ctx, &o, &state, nullptr), FP8ATTN_OK);

  PlanFixture with_state(ctx, make_desc(s, FP8ATTN_DTYPE_E4M3), s);
  PlanFixture reference(ctx, make_desc(s, FP8ATTN_DTYPE_F32, /*telemetry=*/true), s);
  std::array<ReferenceTensor, 4> ref{ReferenceTensor(kHistory), ReferenceTensor(kHistory), ReferenceTensor(kHistory),
                                     ReferenceTensor(kHistory)};  // Q, K, V, O
  auto state_scale = [&](int layer, int kind, float* inv) {
    float sc = -1.0f;
    EXPECT_EQ(fp8attn_scale_state_get_scale(state, layer, kind, &sc, inv, nullptr), FP8ATTN_OK);
    return sc;
  };

  int scale_changes = 0;
  float previous_o_scale = 1.0f;
  for (int step = 0; step < kSteps; ++step) {
    // σ drifts up and down by about e^±1.5, so the window must let old maxima go.
    const float sigma = 0.6f * std::exp(1.5f * std::sin(step / 6.0f));
    std::array<float, 4> scale{}, inv{};
    for (int kind = 0; kind < 4; ++kind) {
      scale[kind] = state_scale(kLayer, kind, &inv[kind]);
      ASSERT_EQ(scale[kind], ref[kind].scale) << "step " << step << " kind " << kind;
      ASSERT_EQ(inv[kind], ref[kind].scale_inv) << "step " << step << " kind " << kind;
    }
    ASSERT_EQ(state_scale(kLayer, FP8ATTN_TENSOR_LOGIT, nullptr), 1.0f);
    scale_changes += scale[FP8ATTN_TENSOR_O] != previous_o_scale;
    previous_o_scale = scale[FP8ATTN_TENSOR_O];

    // The framework's casts of Q, K and V with the state's scales, and their amax reports.
    const Quantized q = draw_e4m3(s.q_elems(), sigma, scale[0], rng);
    const Quantized k = draw_e4m3(s.kv_elems(), sigma, scale[1], rng);
    const Quantized v = draw_e4m3(s.kv_elems(), sigma, scale[2], rng);
    Inputs in{q.bits, k.bits, v.bits};
    const float amax_in[3] = {q.amax, k.amax, v.amax};
    for (int kind = 0; kind < 3; ++kind) {
      ASSERT_EQ(fp8attn_scale_state_report_amax(state, kLayer, kind, amax_in[kind], nullptr), FP8ATTN_OK);
      ref[kind].report(amax_in[kind]);
    }

    // The reference: F32 output with the reference's descales, telemetry for the logit amax.
    std::vector<float> o_ref(static_cast<size_t>(s.q_elems()), std::numeric_limits<float>::quiet_NaN());
    fp8attn_attention_args ra = make_args(s, in, o_ref.data(), FP8ATTN_DTYPE_F32);
    ra.q_descale = broadcast_descale(&ref[0].scale_inv, s);
    ra.k_descale = broadcast_descale(&ref[1].scale_inv, s);
    ra.v_descale = broadcast_descale(&ref[2].scale_inv, s);
    fp8attn_telemetry tele{};
    tele.struct_size = sizeof tele;
    ra.telemetry = &tele;
    ASSERT_EQ(reference.run(ra), FP8ATTN_OK);
    const float amax_o_ref = max_abs(o_ref);
    ref[3].report(amax_o_ref);

    // The forward under test: everything from the state.
    std::vector<uint8_t> out(static_cast<size_t>(s.q_elems()), 0x7F);
    fp8attn_attention_args a = make_args(s, in, out.data(), FP8ATTN_DTYPE_E4M3);
    a.scale_state = state;
    a.scale_state_layer = kLayer;
    float amax_o = -1.0f;
    a.amax_o = &amax_o;
    fp8attn_error err = make_error();
    ASSERT_EQ(with_state.run(a, &err), FP8ATTN_OK) << "step " << step << ": " << err.message;
    ASSERT_EQ(amax_o, amax_o_ref) << "step " << step;
    int64_t mismatches = 0;
    for (size_t i = 0; i < out.size(); ++i) mismatches += out[i] != num::float_to_e4m3(o_ref[i] * ref[3].scale);
    ASSERT_EQ(mismatches, 0) << "step " << step << ": E4M3 outputs differ from round(O_ref · s_O)";
    if (step % 10 == 0)
      std::printf("step %2d σ %.3f: scale Q %.4g K %.4g V %.4g O %.4g; amax_o %.4g, max|scaled logit| %.4g\n", step,
                  sigma, scale[0], scale[1], scale[2], scale[3], amax_o, tele.max_abs_scaled_logit);

    ASSERT_EQ(fp8attn_scale_state_step(state, nullptr), FP8ATTN_OK);
    for (auto& r : ref) r.step(448.0f, kMargin);
  }
  // The other layers saw no report: their scales are still 1.
  for (int layer : {0, 2})
    for (int kind = 0; kind < FP8ATTN_NUM_TENSOR_KINDS; ++kind) EXPECT_EQ(state_scale(layer, kind, nullptr), 1.0f);
  std::printf("the O scale changed at %d of %d steps\n", scale_changes, kSteps);
  EXPECT_GT(scale_changes, 10);  // the loop really followed a drifting amax
  fp8attn_scale_state_destroy(state);
  fp8attn_context_destroy(ctx);
}

}  // namespace
}  // namespace fp8attn::training_test
