// The per-layer logit bound L = σ_max·B_X²/√d_h (α = 1): never exceeded by tokens in the ball
// ‖x‖ ≤ B_X, and reached (≥ 0.999) by the top singular vector pair scaled to B_X.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "tests/spectral/spectral_test_support.hpp"

namespace fp8attn::test {
namespace {

constexpr uint64_t kSeed = 5150;

/// q = W_Q,h·x, k = W_K,g·y, logit = qᵀk/√d_h.
double logit(const Matrix& wq, const Matrix& wk, int hq, int hk, int dh, const std::vector<double>& x,
             const std::vector<double>& y) {
  double acc = 0.0;
  for (int i = 0; i < dh; ++i) {
    double q = 0.0, k = 0.0;
    for (int64_t c = 0; c < wq.cols; ++c) {
      q += wq.at(hq * dh + i, c) * x[c];
      k += wk.at(hk * dh + i, c) * y[c];
    }
    acc += q * k;
  }
  return acc / std::sqrt(static_cast<double>(dh));
}

std::vector<double> in_ball(std::mt19937_64& rng, int d, double radius, bool on_sphere) {
  std::normal_distribution<double> n01;
  std::uniform_real_distribution<double> u01;
  std::vector<double> x(d);
  double n2 = 0.0;
  for (auto& v : x) {
    v = n01(rng);
    n2 += v * v;
  }
  const double r = on_sphere ? radius : radius * std::pow(u01(rng), 1.0 / d);
  for (auto& v : x) v *= r / std::sqrt(n2);
  return x;
}

TEST(LogitBound, BallTokensNeverExceedAndTopPairIsTight) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(kSeed));
  const int hq = 4, hkv = 2, dh = 16, d = 64;
  const double bx = 3.5;
  Matrix wq = random_weights(hq * dh, d, kSeed), wk = random_weights(hkv * dh, d, kSeed + 1);
  CpuContext c;
  fp8attn_tensor tq = tensor_view(wq), tk = tensor_view(wk);
  size_t bytes = 0;
  ASSERT_EQ(fp8attn_qk_spectral_norms_workspace_size(c.ctx, hq, hkv, dh, d, &bytes, nullptr), FP8ATTN_OK);
  std::vector<char> ws(bytes);
  std::vector<float> sigma(hq, -1.0f), warm(hq * dh, 0.0f);
  fp8attn_power_iteration_options o{};
  o.struct_size = sizeof o;
  o.warm_start = warm.data();
  ASSERT_EQ(fp8attn_qk_spectral_norms(c.ctx, &tq, &tk, hq, hkv, dh, &o, sigma.data(), ws.data(), ws.size(), nullptr, nullptr),
            FP8ATTN_OK);
  float layer_bound = 0.0f, layer_scale = 0.0f;
  ASSERT_EQ(fp8attn_logit_bound(sigma.data(), hq, dh, static_cast<float>(bx), 1.0f, &layer_bound, &layer_scale, nullptr),
            FP8ATTN_OK);
  EXPECT_NEAR(layer_scale * layer_bound, 448.0, 448.0 * 1e-6);

  std::mt19937_64 rng(kSeed);
  double worst_ratio = 0.0;
  for (int h = 0; h < hq; ++h) {
    const int g = h / (hq / hkv);
    float head_bound = 0.0f;
    ASSERT_EQ(fp8attn_logit_bound(&sigma[h], 1, dh, static_cast<float>(bx), 1.0f, &head_bound, nullptr, nullptr), FP8ATTN_OK);
    // Sampled tokens, half of them on the sphere ‖x‖ = B_X where the bound is hardest.
    for (int s = 0; s < 4000; ++s) {
      const auto x = in_ball(rng, d, bx, s % 2 == 0), y = in_ball(rng, d, bx, s % 2 == 0);
      const double ratio = std::fabs(logit(wq, wk, h, g, dh, x, y)) / head_bound;
      worst_ratio = std::max(worst_ratio, ratio);
      ASSERT_LE(ratio, 1.0 + 1e-5) << "head " << h << " sample " << s;
    }
    // The top singular pair from the converged vector y_h: v = W_Kᵀ·y / ‖·‖, u = M·v / ‖M·v‖.
    std::vector<double> v(d, 0.0), mv(d, 0.0), k(dh, 0.0);
    for (int i = 0; i < dh; ++i)
      for (int col = 0; col < d; ++col) v[col] += wk.at(g * dh + i, col) * warm[h * dh + i];
    double nv = 0.0;
    for (double x : v) nv += x * x;
    for (double& x : v) x /= std::sqrt(nv);
    for (int i = 0; i < dh; ++i)
      for (int col = 0; col < d; ++col) k[i] += wk.at(g * dh + i, col) * v[col];
    for (int i = 0; i < dh; ++i)
      for (int col = 0; col < d; ++col) mv[col] += wq.at(h * dh + i, col) * k[i];
    double nu = 0.0;
    for (double x : mv) nu += x * x;
    std::vector<double> xi(d), xj(d);
    for (int col = 0; col < d; ++col) {
      xi[col] = bx * mv[col] / std::sqrt(nu);
      xj[col] = bx * v[col];
    }
    const double attained = logit(wq, wk, h, g, dh, xi, xj) / head_bound;
    std::printf("head %d: sigma %.6g, bound %.6g, top pair reaches %.6f of it\n", h, sigma[h], head_bound, attained);
    EXPECT_GE(attained, 0.999);
    EXPECT_LE(attained, 1.0 + 1e-5);
  }
  std::printf("largest sampled |S| / bound: %.4f\n", worst_ratio);
}

TEST(LogitBound, RejectsOutOfRangeInputs) {
  const float sigma[2] = {1.0f, 2.0f}, zeros[2] = {0.0f, 0.0f};
  float bound = -3.0f;
  EXPECT_EQ(fp8attn_logit_bound(sigma, 2, 64, 1.0f, 0.0f, &bound, nullptr, nullptr), FP8ATTN_STATUS_BAD_SCALE);
  EXPECT_EQ(fp8attn_logit_bound(sigma, 2, 64, 1.0f, 1.5f, &bound, nullptr, nullptr), FP8ATTN_STATUS_BAD_SCALE);
  EXPECT_EQ(fp8attn_logit_bound(sigma, 2, 64, -1.0f, 1.0f, &bound, nullptr, nullptr), FP8ATTN_STATUS_BAD_SCALE);
  EXPECT_EQ(fp8attn_logit_bound(zeros, 2, 64, 1.0f, 1.0f, &bound, nullptr, nullptr), FP8ATTN_STATUS_BAD_SCALE);
  EXPECT_EQ(fp8attn_logit_bound(sigma, 0, 64, 1.0f, 1.0f, &bound, nullptr, nullptr), FP8ATTN_STATUS_BAD_SHAPE);
  EXPECT_EQ(fp8attn_logit_bound(nullptr, 2, 64, 1.0f, 1.0f, &bound, nullptr, nullptr), FP8ATTN_STATUS_NULL_POINTER);
  EXPECT_EQ(bound, -3.0f);
  ASSERT_EQ(fp8attn_logit_bound(sigma, 2, 64, 2.0f, 0.5f, &bound, nullptr, nullptr), FP8ATTN_OK);
  EXPECT_FLOAT_EQ(bound, 0.5f * 2.0f * 4.0f / 8.0f);  // α·σ_max·B²/√d_h
}

}  // namespace
}  // namespace fp8attn::test
