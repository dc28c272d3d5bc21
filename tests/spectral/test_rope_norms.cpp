// RoPE logit norms: the safe bound holds for every sampled rotated logit, the exact maximum over
// offsets matches the formed product's norm at each offset, and a constructed head whose
// rotated norm far exceeds the un-rotated σ_h.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "tests/spectral/spectral_test_support.hpp"

namespace fp8attn::test {
namespace {

constexpr uint64_t kSeed = 777;
constexpr double kBase = 10000.0;

/// Applies the half-split rotation of position `pos` to a head vector in place.
void rope_rotate(std::vector<double>& v, int64_t pos) {
  const int dh = static_cast<int>(v.size());
  for (int p = 0; p < dh / 2; ++p) {
    const double phi = static_cast<double>(pos) * std::pow(kBase, -2.0 * p / dh);
    const double a = v[p], b = v[p + dh / 2];
    v[p] = a * std::cos(phi) - b * std::sin(phi);
    v[p + dh / 2] = a * std::sin(phi) + b * std::cos(phi);
  }
}

/// The d_h × d_h matrix R_Δ (half-split pairs).
std::vector<double> rope_matrix(int dh, int64_t delta) {
  std::vector<double> r(dh * dh, 0.0);
  for (int p = 0; p < dh / 2; ++p) {
    const double phi = static_cast<double>(delta) * std::pow(kBase, -2.0 * p / dh);
    const int a = p, b = p + dh / 2;
    r[a * dh + a] = std::cos(phi);
    r[a * dh + b] = -std::sin(phi);
    r[b * dh + a] = std::sin(phi);
    r[b * dh + b] = std::cos(phi);
  }
  return r;
}

std::vector<double> project(const Matrix& w, int head, int dh, const std::vector<double>& x) {
  std::vector<double> out(dh, 0.0);
  for (int i = 0; i < dh; ++i)
    for (int64_t c = 0; c < w.cols; ++c) out[i] += w.at(head * dh + i, c) * x[c];
  return out;
}

struct Norms {
  std::vector<float> safe, exact, sigma;
};

Norms compute(fp8attn_context ctx, Matrix& wq, Matrix& wk, int hq, int hkv, int dh, int64_t lo, int64_t hi) {
  fp8attn_tensor tq = tensor_view(wq), tk = tensor_view(wk);
  fp8attn_rope_options r{};
  r.struct_size = sizeof r;
  r.theta_base = static_cast<float>(kBase);
  r.layout = FP8ATTN_ROPE_HALF_SPLIT;
  r.min_offset = lo;
  r.max_offset = hi;
  Norms n{std::vector<float>(hq, -1.0f), std::vector<float>(hq, -1.0f), std::vector<float>(hq, -1.0f)};
  EXPECT_EQ(fp8attn_qk_rope_norms(ctx, &tq, &tk, hq, hkv, dh, &r, n.safe.data(), n.exact.data(), nullptr), FP8ATTN_OK);
  size_t bytes = 0;
  EXPECT_EQ(fp8attn_qk_spectral_norms_workspace_size(ctx, hq, hkv, dh, wq.cols, &bytes, nullptr), FP8ATTN_OK);
  std::vector<char> ws(bytes);
  EXPECT_EQ(fp8attn_qk_spectral_norms(ctx, &tq, &tk, hq, hkv, dh, nullptr, n.sigma.data(), ws.data(), ws.size(), nullptr,
                                      nullptr),
            FP8ATTN_OK);
  return n;
}

TEST(RopeNorms, SampledRotatedLogitsNeverExceedTheSafeBound) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(kSeed));
  const int hq = 4, hkv = 2, dh = 16, d = 32;
  const int64_t max_offset = 48;
  const double bx = 2.0;
  Matrix wq = random_weights(hq * dh, d, kSeed), wk = random_weights(hkv * dh, d, kSeed + 1);
  CpuContext c;
  const Norms n = compute(c.ctx, wq, wk, hq, hkv, dh, 0, max_offset);
  std::mt19937_64 rng(kSeed);
  std::normal_distribution<double> n01;
  std::uniform_int_distribution<int64_t> pos(0, 4096), off(0, max_offset);
  double worst_safe = 0.0, worst_exact = 0.0;
  for (int h = 0; h < hq; ++h) {
    std::printf("head %d: sigma %.5g exact max over 0..%lld %.5g safe %.5g\n", h, n.sigma[h],
                static_cast<long long>(max_offset), n.exact[h], n.safe[h]);
    EXPECT_LE(n.exact[h], n.safe[h] * (1.0f + 1e-5f));
    EXPECT_GE(n.exact[h], n.sigma[h] * (1.0f - 1e-4f));  // Δ = 0 is in the range
    for (int s = 0; s < 3000; ++s) {
      std::vector<double> x(d), y(d);
      double nx = 0.0, ny = 0.0;
      for (int i = 0; i < d; ++i) {
        x[i] = n01(rng);
        y[i] = n01(rng);
        nx += x[i] * x[i];
        ny += y[i] * y[i];
      }
      for (int i = 0; i < d; ++i) {
        x[i] *= bx / std::sqrt(nx);
        y[i] *= bx / std::sqrt(ny);
      }
      const int64_t i_pos = pos(rng), j_pos = i_pos + off(rng);
      auto q = project(wq, h, dh, x), k = project(wk, h / (hq / hkv), dh, y);
      rope_rotate(q, i_pos);
      rope_rotate(k, j_pos);
      double s_ij = 0.0;
      for (int i = 0; i < dh; ++i) s_ij += q[i] * k[i];
      const double unit = bx * bx / std::sqrt(static_cast<double>(dh));
      worst_safe = std::max(worst_safe, std::fabs(s_ij) / (n.safe[h] * unit));
      worst_exact = std::max(worst_exact, std::fabs(s_ij) / (n.exact[h] * unit));
      ASSERT_LE(std::fabs(s_ij), n.safe[h] * unit * (1.0 + 1e-6)) << "head " << h << " sample " << s;
      ASSERT_LE(std::fabs(s_ij), n.exact[h] * unit * (1.0 + 1e-4)) << "head " << h << " sample " << s;
    }
  }
  std::printf("largest sampled |S| over the safe bound %.4f, over the exact maximum %.4f\n", worst_safe, worst_exact);
}

TEST(RopeNorms, ExactMaximumMatchesTheFormedProductPerOffset) {
  const int hq = 2, hkv = 1, dh = 8, d = 24;
  const int64_t max_offset = 12;
  Matrix wq = random_weights(hq * dh, d, kSeed + 5), wk = random_weights(hkv * dh, d, kSeed + 6);
  CpuContext c;
  const Norms n = compute(c.ctx, wq, wk, hq, hkv, dh, 0, max_offset);
  for (int h = 0; h < hq; ++h) {
    double best = 0.0;
    for (int64_t delta = 0; delta <= max_offset; ++delta)
      best = std::max(best, reference_sigma(head_rows(wq, h, dh), head_rows(wk, 0, dh), dh, d, rope_matrix(dh, delta)));
    const double rel = std::fabs(n.exact[h] - best) / best;
    std::printf("head %d: exact %.7g reference max %.7g rel %.2e\n", h, n.exact[h], best, rel);
    EXPECT_LE(rel, 1e-4);
  }
}

TEST(RopeNorms, RotationCanExceedTheUnrotatedSigma) {
  // Two frequency pairs whose un-rotated contributions cancel: W_K's pair-1 rows are minus
  // W_Q's (plus a little noise) and its pair-0 rows equal W_Q's, so W_Qᵀ·W_K = A₀ − A₁ ≈ small.
  // At Δ ≈ π/θ₁ (θ₁ = 10000^(−1/2) = 0.01, Δ ≈ 314) pair 1 turns by π and the terms add up.
  const int dh = 4, d = 8;
  Matrix wq = random_weights(dh, d, kSeed + 9, 100.0);
  Matrix wk = wq;
  std::mt19937_64 rng(kSeed + 10);
  std::normal_distribution<double> noise(0.0, 1e-3);
  for (int i = 0; i < dh; ++i)
    for (int col = 0; col < d; ++col) {
      const bool pair0 = (i == 0 || i == 2);  // half split: pair 0 = (0, 2), pair 1 = (1, 3)
      const float q = wq.at(i, col);
      wk.at(i, col) = static_cast<float>((pair0 ? q : -q) + noise(rng));
    }
  // Make pair 1 of W_Q equal pair 0, so A₀ ≈ A₁ and the un-rotated product nearly cancels.
  for (int col = 0; col < d; ++col) {
    wq.at(1, col) = wq.at(0, col);
    wq.at(3, col) = wq.at(2, col);
    wk.at(1, col) = static_cast<float>(-wq.at(0, col) + noise(rng));
    wk.at(3, col) = static_cast<float>(-wq.at(2, col) + noise(rng));
  }
  CpuContext c;
  const Norms n = compute(c.ctx, wq, wk, 1, 1, dh, 0, 400);
  std::printf("un-rotated sigma %.5g, exact max over 0..400 %.5g, safe bound %.5g\n", n.sigma[0], n.exact[0], n.safe[0]);
  EXPECT_GT(n.exact[0], 10.0f * n.sigma[0]);
  EXPECT_LE(n.exact[0], n.safe[0] * (1.0f + 1e-5f));
  // A concrete token pair at Δ = 314 whose rotated logit exceeds the un-rotated bound σ_h·B²/√d_h.
  const double ref314 = reference_sigma(head_rows(wq, 0, dh), head_rows(wk, 0, dh), dh, d, rope_matrix(dh, 314));
  std::printf("formed-product norm at offset 314: %.5g (%.1f× sigma)\n", ref314, ref314 / n.sigma[0]);
  EXPECT_GT(ref314, 10.0 * n.sigma[0]);
  EXPECT_LE(ref314, n.exact[0] * (1.0 + 1e-4));
}

TEST(RopeNorms, RejectsBadOptions) {
  Matrix wq = random_weights(8, 16, 1), wk = random_weights(8, 16, 2);
  fp8attn_tensor tq = tensor_view(wq), tk = tensor_view(wk);
  CpuContext c;
  fp8attn_rope_options r{};
  r.struct_size = sizeof r;
  r.min_offset = 5;
  r.max_offset = 4;
  float safe = -2.0f;
  EXPECT_EQ(fp8attn_qk_rope_norms(c.ctx, &tq, &tk, 1, 1, 8, &r, &safe, nullptr, nullptr), FP8ATTN_STATUS_BAD_OPTION);
  r.max_offset = 5;
  r.layout = 9;
  EXPECT_EQ(fp8attn_qk_rope_norms(c.ctx, &tq, &tk, 1, 1, 8, &r, &safe, nullptr, nullptr), FP8ATTN_STATUS_BAD_OPTION);
  r.layout = 0;
  Matrix odd = random_weights(7, 16, 3);
  fp8attn_tensor to = tensor_view(odd);
  EXPECT_EQ(fp8attn_qk_rope_norms(c.ctx, &to, &to, 1, 1, 7, &r, &safe, nullptr, nullptr), FP8ATTN_STATUS_BAD_SHAPE);
  EXPECT_EQ(safe, -2.0f);
}

}  // namespace
}  // namespace fp8attn::test
