#include "lib/numerics/underflow_prediction.hpp"

#include <algorithm>
#include <cmath>

namespace fp8attn {
namespace {

constexpr double kPi = 3.14159265358979323846;
/// ln(2¹⁰): E4M3 rounds |x| ≤ 2⁻¹⁰ to zero (half its smallest subnormal, ties to even).
constexpr double kLnE4M3ZeroPoint = 10.0 * 0.69314718055994530942;

double normal_pdf(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2.0 * kPi); }

/// Density of the max of k i.i.d. N(0,1): k·φ(x)·Φ(x)^(k−1).
double max_density(double x, int k) { return k * normal_pdf(x) * std::pow(normal_cdf(x), k - 1); }

/// ∫ f(x) dx over [−12, 12] by composite Simpson with 24,000 intervals; the max of k ≥ 1
/// normals has negligible mass outside (tails below 1e-30).
template <class F>
double integrate(F&& f) {
  constexpr double lo = -12.0, hi = 12.0;
  constexpr int n = 24000;
  const double h = (hi - lo) / n;
  double sum = f(lo) + f(hi);
  for (int i = 1; i < n; ++i) sum += f(lo + i * h) * (i % 2 ? 4.0 : 2.0);
  return sum * h / 3.0;
}

}  // namespace

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

double expected_max_of_normals(int k) {
  return integrate([k](double x) { return x * max_density(x, k); });
}

double reverse_order_share(int k_sink, int block_n, int64_t seqlen_k) {
  const double in_block = static_cast<double>(std::min<int64_t>(block_n, seqlen_k)) - k_sink;
  return std::max(0.0, in_block) / static_cast<double>(seqlen_k - k_sink);
}

UnderflowPrediction predict_p_underflow(double delta, int k, double p_scale, bool reverse, int block_n,
                                        int64_t seqlen_k) {
  const double offset = delta - kLnE4M3ZeroPoint - std::log(p_scale);
  UnderflowPrediction r{};
  r.leading_order = normal_cdf(offset + expected_max_of_normals(k));
  r.expected = integrate([&](double x) { return max_density(x, k) * normal_cdf(offset + x); });
  // NOTE: both are probabilities; the quadrature's error (about 1e-10 for k near 2^30, found by
  // tests/fuzz/fuzz_predict) could carry them just outside [0, 1].
  r.leading_order = std::clamp(r.leading_order, 0.0, 1.0);
  r.expected = std::clamp(r.expected, 0.0, 1.0);
  if (reverse) {
    const double share = reverse_order_share(k, block_n, seqlen_k);
    r.leading_order *= share;
    r.expected *= share;
  }
  return r;
}

}  // namespace fp8attn
