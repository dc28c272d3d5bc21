// The rotation x ← x·H·D: the fast butterflies equal the explicit normalized Hadamard matrix
// product; H·D is orthogonal (its inverse D·H gives the input back, in FP64 to 1e-12); the FP32
// quantizer transform stays within FP32 rounding of the FP64 one; and attention computed in FP64
// is unchanged by rotating Q and K with the same seed (relative change < 1e-12).
#include <bit>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "kernels/sm90/quantize/quantize_math.hpp"
#include "tests/quantize/quantize_test_support.hpp"

namespace fp8attn::quant::testing {
namespace {

std::vector<double> normal_vector(size_t n, std::mt19937_64& rng) {
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

/// y = x·H·D with H_ij = (−1)^popcount(i & j) / √d, as a plain O(d²) product.
std::vector<double> explicit_rotation(const std::vector<double>& x, uint64_t seed) {
  const size_t d = x.size();
  std::vector<double> y(d, 0.0);
  for (size_t j = 0; j < d; ++j) {
    double sum = 0.0;
    for (size_t i = 0; i < d; ++i) sum += (std::popcount(i & j) & 1 ? -x[i] : x[i]);
    y[j] = sum / std::sqrt(static_cast<double>(d)) * (sm90::quant::rotation_sign_negative(seed, static_cast<int>(j)) ? -1.0 : 1.0);
  }
  return y;
}

TEST(HadamardRotation, FastTransformEqualsExplicitMatrix) {
  const uint64_t seed = test_seed("fast vs explicit");
  std::mt19937_64 rng(seed);
  for (int log2_d = 0; log2_d <= 8; ++log2_d) {
    const auto x = normal_vector(size_t{1} << log2_d, rng);
    const uint64_t sign_seed = rng();
    auto fast = x;
    rotate_row_f64(fast.data(), log2_d, sign_seed);
    const auto slow = explicit_rotation(x, sign_seed);
    double worst = 0.0;
    for (size_t j = 0; j < x.size(); ++j) worst = std::max(worst, std::fabs(fast[j] - slow[j]));
    std::printf("d = %4zu: max |fast − explicit| = %.3e (bound 1e-12)\n", x.size(), worst);
    EXPECT_LE(worst, 1e-12) << "d = " << x.size();
  }
}

TEST(HadamardRotation, InverseGivesTheInputBackAndNormIsKept) {
  const uint64_t seed = test_seed("orthogonality");
  std::mt19937_64 rng(seed);
  for (int log2_d : {5, 6, 7, 8}) {
    for (int trial = 0; trial < 8; ++trial) {
      const auto x = normal_vector(size_t{1} << log2_d, rng);
      const uint64_t sign_seed = rng();
      auto y = x;
      rotate_row_f64(y.data(), log2_d, sign_seed);
      double norm_x = 0.0, norm_y = 0.0;
      for (size_t j = 0; j < x.size(); ++j) norm_x += x[j] * x[j], norm_y += y[j] * y[j];
      unrotate_row_f64(y.data(), log2_d, sign_seed);
      double worst = 0.0;
      for (size_t j = 0; j < x.size(); ++j) worst = std::max(worst, std::fabs(y[j] - x[j]));
      if (trial == 0)
        std::printf("d = %zu: max |D·H·(H·D)x − x| = %.3e, | ‖xHD‖² / ‖x‖² − 1 | = %.3e (bounds 1e-12)\n", x.size(),
                    worst, std::fabs(norm_y / norm_x - 1.0));
      EXPECT_LE(worst, 1e-12);
      EXPECT_LE(std::fabs(norm_y / norm_x - 1.0), 1e-12);
    }
  }
}

TEST(HadamardRotation, SignsDependOnTheSeedAndAreBalanced) {
  const uint64_t seed = test_seed("signs");
  int negatives = 0, differ = 0;
  const int d = 4096;
  for (int j = 0; j < d; ++j) {
    negatives += sm90::quant::rotation_sign_negative(seed, j);
    differ += sm90::quant::rotation_sign_negative(seed, j) != sm90::quant::rotation_sign_negative(seed + 1, j);
  }
  // Binomial(4096, ½): mean 2048, standard deviation 32; 6σ bounds.
  std::printf("of %d signs: %d negative, %d differ between seeds s and s+1 (both expected 2048 ± 192)\n", d,
              negatives, differ);
  EXPECT_NEAR(negatives, 2048, 192);
  EXPECT_NEAR(differ, 2048, 192);
}

TEST(HadamardRotation, NormalizationConstantIsTheRoundedInverseSquareRoot) {
  for (int k = 0; k <= 20; ++k) {
    const float want = static_cast<float>(1.0 / std::sqrt(std::ldexp(1.0, k)));
    EXPECT_EQ(sm90::quant::hadamard_norm(k), want) << "d = 2^" << k;
  }
}

TEST(HadamardRotation, Fp32TransformIsWithinRoundingOfFp64) {
  const uint64_t seed = test_seed("fp32 vs fp64");
  std::mt19937_64 rng(seed);
  for (int log2_d : {6, 7, 8}) {
    const size_t d = size_t{1} << log2_d;
    const auto x = normal_vector(d, rng);
    std::vector<float> xf(d);
    std::vector<double> xd(d);
    for (size_t j = 0; j < d; ++j) xf[j] = static_cast<float>(x[j]), xd[j] = xf[j];
    const uint64_t sign_seed = rng();
    rotate_row(xf.data(), log2_d, sign_seed);
    rotate_row_f64(xd.data(), log2_d, sign_seed);
    double worst = 0.0, norm = 0.0;
    for (size_t j = 0; j < d; ++j) worst = std::max(worst, std::fabs(xf[j] - xd[j])), norm += xd[j] * xd[j];
    // Each output is a sum of d terms with log2(d) roundings on its path plus one for the norm;
    // bound (log2 d + 2)·2⁻²⁴·‖x‖.
    const double bound = (log2_d + 2) * std::ldexp(1.0, -24) * std::sqrt(norm);
    std::printf("d = %zu: max |fp32 − fp64| = %.3e (bound %.3e)\n", d, worst, bound);
    EXPECT_LE(worst, bound);
  }
}

/// softmax(Q·Kᵀ/√d)·V for one head in FP64, row-major [n][d].
std::vector<double> attention_f64(const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<double>& v, int nq, int nk, int d) {
  std::vector<double> out(static_cast<size_t>(nq) * d, 0.0), s(nk);
  for (int i = 0; i < nq; ++i) {
    double m = -INFINITY;
    for (int j = 0; j < nk; ++j) {
      double dot = 0.0;
      for (int e = 0; e < d; ++e) dot += q[i * d + e] * k[j * d + e];
      s[j] = dot / std::sqrt(static_cast<double>(d));
      m = std::max(m, s[j]);
    }
    double l = 0.0;
    for (int j = 0; j < nk; ++j) l += (s[j] = std::exp(s[j] - m));
    for (int j = 0; j < nk; ++j)
      for (int e = 0; e < d; ++e) out[i * d + e] += s[j] / l * v[j * d + e];
  }
  return out;
}

TEST(HadamardRotation, AttentionInExactArithmeticIsUnchanged) {
  const uint64_t seed = test_seed("attention invariance");
  std::mt19937_64 rng(seed);
  const int nq = 48, nk = 96;
  for (int log2_d : {6, 7}) {
    const int d = 1 << log2_d;
    auto q = normal_vector(static_cast<size_t>(nq) * d, rng), k = normal_vector(static_cast<size_t>(nk) * d, rng);
    const auto v = normal_vector(static_cast<size_t>(nk) * d, rng);
    for (double& x : q) x *= 3.0;  // peaked softmax rows: logits of a few units
    const auto plain = attention_f64(q, k, v, nq, nk, d);
    const uint64_t sign_seed = rng();
    for (int i = 0; i < nq; ++i) rotate_row_f64(&q[static_cast<size_t>(i) * d], log2_d, sign_seed);
    for (int j = 0; j < nk; ++j) rotate_row_f64(&k[static_cast<size_t>(j) * d], log2_d, sign_seed);
    const auto rotated = attention_f64(q, k, v, nq, nk, d);
    double diff = 0.0, ref = 0.0;
    for (size_t i = 0; i < plain.size(); ++i) diff += std::pow(rotated[i] - plain[i], 2), ref += plain[i] * plain[i];
    const double relative = std::sqrt(diff / ref);
    std::printf("d = %d: ‖O(QHD, KHD) − O(Q, K)‖ / ‖O(Q, K)‖ = %.3e (bound 1e-12)\n", d, relative);
    EXPECT_LT(relative, 1e-12);
  }
}

}  // namespace
}  // namespace fp8attn::quant::testing
