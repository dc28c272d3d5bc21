// The recipes of the scale state through the C ABI: delayed (max and most-recent, margin,
// history eviction), current, geometry-aware with auto-α, gradient formats, and argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "tests/scale/scale_test_support.hpp"

namespace fp8attn::test {
namespace {

TEST(ScaleStateRecipes, DelayedMaxOverHistoryWithMarginAndEviction) {
  auto o = default_options();
  o.num_layers = 2;
  o.amax_history_len = 4;
  o.margin = 1.0f;
  StateFixture f(&o);
  EXPECT_EQ(f.scale(0, FP8ATTN_TENSOR_Q), 1.0f);  // no step yet
  const float amax[6] = {2.0f, 8.0f, 1.0f, 0.5f, 0.25f, 0.125f};
  for (int s = 0; s < 6; ++s) {
    ASSERT_EQ(fp8attn_scale_state_report_amax(f.state, 1, FP8ATTN_TENSOR_V, amax[s], nullptr), FP8ATTN_OK);
    ASSERT_EQ(fp8attn_scale_state_step(f.state, nullptr), FP8ATTN_OK);
    // Max over the last 4 steps, this one included.
    float window = 0.0f;
    for (int t = std::max(0, s - 3); t <= s; ++t) window = std::max(window, amax[t]);
    const float expected = 448.0f / window / 2.0f;
    float scale = 0.0f, inv = 0.0f;
    ASSERT_EQ(fp8attn_scale_state_get_scale(f.state, 1, FP8ATTN_TENSOR_V, &scale, &inv, nullptr), FP8ATTN_OK);
    std::printf("step %d: amax %.3f window max %.3f scale %.4f\n", s, amax[s], window, scale);
    EXPECT_FLOAT_EQ(scale, expected);
    EXPECT_FLOAT_EQ(inv, 1.0f / expected);
  }
  // Untouched tensors and layers keep scale 1 (amax 0 keeps the previous scale).
  EXPECT_EQ(f.scale(0, FP8ATTN_TENSOR_V), 1.0f);
  EXPECT_EQ(f.scale(1, FP8ATTN_TENSOR_Q), 1.0f);
}

TEST(ScaleStateRecipes, MostRecentAndSeveralReportsPerStep) {
  auto o = default_options();
  o.amax_algo = FP8ATTN_AMAX_MOST_RECENT;
  StateFixture f(&o);
  ASSERT_EQ(fp8attn_scale_state_report_amax(f.state, 0, FP8ATTN_TENSOR_O, 4.0f, nullptr), FP8ATTN_OK);
  ASSERT_EQ(fp8attn_scale_state_step(f.state, nullptr), FP8ATTN_OK);
  EXPECT_FLOAT_EQ(f.scale(0, FP8ATTN_TENSOR_O), 112.0f);
  for (float a : {1.0f, 3.0f, 2.0f}) ASSERT_EQ(fp8attn_scale_state_report_amax(f.state, 0, FP8ATTN_TENSOR_O, a, nullptr), FP8ATTN_OK);
  ASSERT_EQ(fp8attn_scale_state_step(f.state, nullptr), FP8ATTN_OK);
  EXPECT_FLOAT_EQ(f.scale(0, FP8ATTN_TENSOR_O), 448.0f / 3.0f);  // most recent step's max, not 4
}

TEST(ScaleStateRecipes, CurrentFollowsTheReportAndGradientsUseE5m2) {
  auto o = default_options();
  o.recipe[FP8ATTN_TENSOR_P] = FP8ATTN_RECIPE_CURRENT;
  o.recipe[FP8ATTN_TENSOR_DO] = FP8ATTN_RECIPE_CURRENT;
  StateFixture f(&o);
  ASSERT_EQ(fp8attn_scale_state_report_amax(f.state, 0, FP8ATTN_TENSOR_P, 0.5f, nullptr), FP8ATTN_OK);
  EXPECT_FLOAT_EQ(f.scale(0, FP8ATTN_TENSOR_P), 896.0f);  // no step needed
  ASSERT_EQ(fp8attn_scale_state_report_amax(f.state, 0, FP8ATTN_TENSOR_DO, 2.0f, nullptr), FP8ATTN_OK);
  EXPECT_FLOAT_EQ(f.scale(0, FP8ATTN_TENSOR_DO), 57344.0f / 2.0f);
  ASSERT_EQ(fp8attn_scale_state_step(f.state, nullptr), FP8ATTN_OK);
  ASSERT_EQ(fp8attn_scale_state_report_amax(f.state, 0, FP8ATTN_TENSOR_P, 0.25f, nullptr), FP8ATTN_OK);
  EXPECT_FLOAT_EQ(f.scale(0, FP8ATTN_TENSOR_P), 1792.0f);  // the new step's amax alone
}

TEST(ScaleStateRecipes, GeometryScaleAndAutoAlphaBurnIn) {
  auto o = default_options();
  o.token_norm_bound = 2.0f;
  o.burn_in_steps = 10;
  o.alpha_margin = 0.5f;
  StateFixture f(&o);
  const float sigma[3] = {1.5f, 4.0f, 2.0f};
  const int32_t head_dim = 64;
  ASSERT_EQ(fp8attn_scale_state_set_qk_sigma(f.state, 0, sigma, 3, head_dim, 256, nullptr), FP8ATTN_OK);
  const double unit_bound = 4.0 * 2.0 * 2.0 / 8.0;  // σ_max·B²/√d_h = 2
  EXPECT_FLOAT_EQ(f.scale(0, FP8ATTN_TENSOR_LOGIT), static_cast<float>(448.0 / unit_bound));
  // Burn-in: observed ratios ρ; α = min(1, ρ_max·1.5) after 10 steps.
  const uint64_t seed = 31;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.1, 0.4);
  double rho_max = 0.0;
  for (int s = 0; s < 10; ++s) {
    const double rho = u(rng);
    rho_max = std::max(rho_max, rho);
    ASSERT_EQ(fp8attn_scale_state_report_amax(f.state, 0, FP8ATTN_TENSOR_LOGIT, static_cast<float>(rho * unit_bound), nullptr),
              FP8ATTN_OK);
    if (s < 9) {
      EXPECT_FLOAT_EQ(f.scale(0, FP8ATTN_TENSOR_LOGIT), static_cast<float>(448.0 / unit_bound));
    }
    ASSERT_EQ(fp8attn_scale_state_step(f.state, nullptr), FP8ATTN_OK);
  }
  const double alpha = std::min(1.0, rho_max * 1.5);
  std::printf("rho_max %.4f alpha %.4f logit scale %.4f\n", rho_max, alpha, f.scale(0, FP8ATTN_TENSOR_LOGIT));
  EXPECT_NEAR(f.scale(0, FP8ATTN_TENSOR_LOGIT), 448.0 / (alpha * unit_bound), 1e-3);
  // After burn-in α is fixed: a weight spike (σ ×16) moves the scale by exactly 1/16.
  const float spiked[3] = {24.0f, 64.0f, 32.0f};
  ASSERT_EQ(fp8attn_scale_state_set_qk_sigma(f.state, 0, spiked, 3, head_dim, 256, nullptr), FP8ATTN_OK);
  EXPECT_NEAR(f.scale(0, FP8ATTN_TENSOR_LOGIT), 448.0 / (alpha * unit_bound * 16.0), 1e-4);
}

TEST(ScaleStateRecipes, SetQkWeightsRunsTheSpectralNorms) {
  // W_Q = 3·e₀e₀ᵀ-like rows and W_K = 2·(same): σ = 6 for head 0; head_dim 2, d_model 4.
  float wq[2 * 4] = {3, 0, 0, 0, 0, 1, 0, 0};
  float wk[2 * 4] = {2, 0, 0, 0, 0, 1, 0, 0};
  fp8attn_tensor tq{}, tk{};
  for (auto* t : {&tq, &tk}) {
    t->struct_size = sizeof *t;
    t->dtype = FP8ATTN_DTYPE_F32;
    t->device = FP8ATTN_DEVICE_HOST;
    t->rank = 2;
    t->shape[0] = 2;
    t->shape[1] = 4;
    t->stride[0] = 4;
    t->stride[1] = 1;
  }
  tq.data = wq;
  tk.data = wk;
  auto o = default_options();
  StateFixture f(&o);
  ASSERT_EQ(fp8attn_scale_state_set_qk_weights(f.state, 0, &tq, &tk, 1, 1, 2, nullptr), FP8ATTN_OK);
  // B_X defaults to √d_model = 2: L = 6·4/√2.
  const double bound = 6.0 * 4.0 / std::sqrt(2.0);
  std::printf("logit scale %.6f expected %.6f\n", f.scale(0, FP8ATTN_TENSOR_LOGIT), 448.0 / bound);
  EXPECT_NEAR(f.scale(0, FP8ATTN_TENSOR_LOGIT), 448.0 / bound, 448.0 / bound * 1e-5);
}

TEST(ScaleStateRecipes, RejectsBadOptionsAndArguments) {
  fp8attn_context ctx = nullptr;
  fp8attn_context_options co{};
  co.struct_size = sizeof co;
  co.backend = FP8ATTN_BACKEND_CPU;
  ASSERT_EQ(fp8attn_context_create(&co, &ctx, nullptr), FP8ATTN_OK);
  fp8attn_scale_state state = nullptr;
  auto o = default_options();
  o.recipe[FP8ATTN_TENSOR_Q] = FP8ATTN_RECIPE_GEOMETRY;
  EXPECT_EQ(fp8attn_scale_state_create(ctx, &o, &state, nullptr), FP8ATTN_STATUS_BAD_OPTION);
  o = default_options();
  o.amax_history_len = -1;
  EXPECT_EQ(fp8attn_scale_state_create(ctx, &o, &state, nullptr), FP8ATTN_STATUS_BAD_OPTION);
  o = default_options();
  o.margin = NAN;
  EXPECT_EQ(fp8attn_scale_state_create(ctx, &o, &state, nullptr), FP8ATTN_STATUS_BAD_SCALE);
  o = default_options();
  o.struct_size = 8;
  EXPECT_EQ(fp8attn_scale_state_create(ctx, &o, &state, nullptr), FP8ATTN_STATUS_BAD_STRUCT_SIZE);
  EXPECT_EQ(state, nullptr);
  ASSERT_EQ(fp8attn_scale_state_create(ctx, nullptr, &state, nullptr), FP8ATTN_OK);
  EXPECT_EQ(fp8attn_scale_state_report_amax(state, 1, 0, 1.0f, nullptr), FP8ATTN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(fp8attn_scale_state_report_amax(state, 0, 8, 1.0f, nullptr), FP8ATTN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(fp8attn_scale_state_report_amax(state, 0, 0, -1.0f, nullptr), FP8ATTN_STATUS_BAD_SCALE);
  EXPECT_EQ(fp8attn_scale_state_report_amax(state, 0, 0, INFINITY, nullptr), FP8ATTN_STATUS_BAD_SCALE);
  EXPECT_EQ(fp8attn_scale_state_report_amax(nullptr, 0, 0, 1.0f, nullptr), FP8ATTN_STATUS_BAD_HANDLE);
  float batch[8] = {1, 2, 3, 4, -1, -1, -1, NAN};
  EXPECT_EQ(fp8attn_scale_state_report_amax_batch(state, batch, 8, nullptr), FP8ATTN_STATUS_BAD_SCALE);
  EXPECT_EQ(fp8attn_scale_state_report_amax_batch(state, batch, 7, nullptr), FP8ATTN_STATUS_BAD_SHAPE);
  batch[7] = -1;
  EXPECT_EQ(fp8attn_scale_state_report_amax_batch(state, batch, 8, nullptr), FP8ATTN_OK);
  EXPECT_EQ(fp8attn_scale_state_step(state, nullptr), FP8ATTN_OK);
  float s = 0.0f;
  EXPECT_EQ(fp8attn_scale_state_get_scale(state, 0, FP8ATTN_TENSOR_V, &s, nullptr, nullptr), FP8ATTN_OK);
  EXPECT_FLOAT_EQ(s, 448.0f / 3.0f);
  fp8attn_scale_state_destroy(state);
  fp8attn_scale_state_destroy(nullptr);
  fp8attn_context_destroy(ctx);
}

}  // namespace
}  // namespace fp8attn::test
