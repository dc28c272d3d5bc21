#include "lib/spectral/gram_power_iteration.hpp"

#include <cmath>

namespace fp8attn {
namespace {

void symmetric_matvec(const float* m, int32_t n, const double* x, double* y) {
  for (int32_t i = 0; i < n; ++i) {
    const float* row = m + static_cast<int64_t>(i) * n;
    double acc = 0.0;
    for (int32_t j = 0; j < n; ++j) acc += static_cast<double>(row[j]) * x[j];
    y[i] = acc;
  }
}

double dot(const double* x, const double* y, int32_t n) {
  double acc = 0.0;
  for (int32_t i = 0; i < n; ++i) acc += x[i] * y[i];
  return acc;
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

void seeded_unit_vector(uint64_t seed, int32_t n, double* v) {
  uint64_t state = seed;
  double norm2 = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    v[i] = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-52 - 1.0;  // uniform in [−1, 1)
    norm2 += v[i] * v[i];
  }
  if (norm2 == 0.0) {
    v[0] = 1.0;
    norm2 = 1.0;
  }
  const double inv = 1.0 / std::sqrt(norm2);
  for (int32_t i = 0; i < n; ++i) v[i] *= inv;
}

PowerIterationResult power_iterate_gram_product(const float* a, const float* b, int32_t n, double* v, double* scratch,
                                                int32_t max_iterations, double tolerance) {
  double* w = scratch;      // B·v
  double* z = scratch + n;  // A·B·v
  double* r = scratch + 2 * n;
  PowerIterationResult result;
  double lambda_prev = -1.0;
  // Normalize the start vector.
  {
    const double norm = std::sqrt(dot(v, v, n));
    if (norm == 0.0 || !std::isfinite(norm)) return result;  // caller guarantees nonzero; stay safe
    for (int32_t i = 0; i < n; ++i) v[i] /= norm;
  }
  double lambda = 0.0;
  for (int32_t it = 0; it < max_iterations; ++it) {
    symmetric_matvec(b, n, v, w);
    symmetric_matvec(a, n, w, z);
    const double vw = dot(v, w, n);
    lambda = vw > 0.0 ? dot(w, z, n) / vw : 0.0;
    result.iterations = it + 1;
    const double znorm = std::sqrt(dot(z, z, n));
    if (znorm == 0.0) {  // v lies in the null space of A·B: the product is 0 along it
      lambda = 0.0;
      break;
    }
    for (int32_t i = 0; i < n; ++i) v[i] = z[i] / znorm;
    if (lambda_prev >= 0.0 && std::fabs(lambda - lambda_prev) <= tolerance * lambda) break;
    lambda_prev = lambda;
  }
  result.lambda = lambda < 0.0 ? 0.0 : lambda;
  // Residual of the final (normalized) iterate, in the symmetric frame y = B^½·v:
  // ‖S·y − λ·y‖² = rᵀ·B·r with r = A·B·v − λ·v, and ‖y‖² = vᵀ·B·v.
  symmetric_matvec(b, n, v, w);
  symmetric_matvec(a, n, w, z);
  const double vw = dot(v, w, n);
  if (vw > 0.0) {
    const double lam = dot(w, z, n) / vw;
    for (int32_t i = 0; i < n; ++i) r[i] = z[i] - lam * v[i];
    symmetric_matvec(b, n, r, w);
    const double res2 = dot(r, w, n);
    if (lam > 0.0) result.residual = std::sqrt(res2 > 0.0 ? res2 : 0.0) / (lam * std::sqrt(vw));
    // The final iterate is one application further along, so its quotient is at least as good.
    if (lam > result.lambda) result.lambda = lam;
  }
  return result;
}

}  // namespace fp8attn
