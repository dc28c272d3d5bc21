#include "lib/spectral/gram_power_iteration.hpp"

#include <algorithm>
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

void matvec(const double* m, int32_t n, const double* x, double* y) {
  for (int32_t i = 0; i < n; ++i) {
    const double* row = m + static_cast<int64_t>(i) * n;
    double acc = 0.0;
    for (int32_t j = 0; j < n; ++j) acc += row[j] * x[j];
    y[i] = acc;
  }
}

double dot(const double* x, const double* y, int32_t n) {
  double acc = 0.0;
  for (int32_t i = 0; i < n; ++i) acc += x[i] * y[i];
  return acc;
}

/// out = x·y for n × n row-major doubles (i-k-j order: the inner loop streams rows).
void matmul(const double* x, const double* y, int32_t n, double* out) {
  std::fill(out, out + static_cast<int64_t>(n) * n, 0.0);
  for (int32_t i = 0; i < n; ++i) {
    double* out_row = out + static_cast<int64_t>(i) * n;
    for (int32_t k = 0; k < n; ++k) {
      const double xik = x[static_cast<int64_t>(i) * n + k];
      const double* y_row = y + static_cast<int64_t>(k) * n;
      for (int32_t j = 0; j < n; ++j) out_row[j] += xik * y_row[j];
    }
  }
}

/// Divides m by its largest |entry| (keeps repeated squaring finite); false if m is 0.
bool rescale(double* m, int64_t count) {
  double peak = 0.0;
  for (int64_t i = 0; i < count; ++i) peak = std::max(peak, std::fabs(m[i]));
  if (peak == 0.0 || !std::isfinite(peak)) return false;
  const double inv = 1.0 / peak;
  for (int64_t i = 0; i < count; ++i) m[i] *= inv;
  return true;
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
                                                int32_t max_iterations, double tolerance, int32_t squarings) {
  const int64_t nn = static_cast<int64_t>(n) * n;
  double* w = scratch;      // B·v
  double* z = scratch + n;  // A·B·v, or P·v
  double* r = scratch + 2 * n;
  double* power = scratch + 3 * n;  // P
  double* tmp = power + nn;
  PowerIterationResult result;
  {
    const double norm = std::sqrt(dot(v, v, n));
    if (norm == 0.0 || !std::isfinite(norm)) return result;  // callers pass a nonzero start
    for (int32_t i = 0; i < n; ++i) v[i] /= norm;
  }
  // P = (A·B)^(2^squarings), rescaled; the scale is irrelevant to the direction.
  for (int64_t i = 0; i < nn; ++i) tmp[i] = b[i];
  std::fill(power, power + nn, 0.0);
  for (int32_t i = 0; i < n; ++i)
    for (int32_t k = 0; k < n; ++k) {
      const double aik = a[static_cast<int64_t>(i) * n + k];
      for (int32_t j = 0; j < n; ++j) power[static_cast<int64_t>(i) * n + j] += aik * tmp[static_cast<int64_t>(k) * n + j];
    }
  bool nonzero = rescale(power, nn);
  for (int32_t s = 0; s < squarings && nonzero; ++s) {
    matmul(power, power, n, tmp);
    std::copy(tmp, tmp + nn, power);
    nonzero = rescale(power, nn);
  }
  if (!nonzero) return result;  // A·B = 0 (or its powers underflowed): σ = 0

  auto rayleigh = [&] {  // λ(v) with A and B, and w = B·v
    symmetric_matvec(b, n, v, w);
    symmetric_matvec(a, n, w, z);
    const double vw = dot(v, w, n);
    return vw > 0.0 ? dot(w, z, n) / vw : 0.0;
  };
  double lambda = rayleigh();
  for (int32_t it = 0; it < max_iterations; ++it) {
    matvec(power, n, v, z);
    const double znorm = std::sqrt(dot(z, z, n));
    result.iterations = it + 1;
    if (znorm == 0.0 || !std::isfinite(znorm)) break;  // v in P's null space: keep the last v
    for (int32_t i = 0; i < n; ++i) v[i] = z[i] / znorm;
    const double previous = lambda;
    lambda = rayleigh();
    if (std::fabs(lambda - previous) <= tolerance * lambda) break;
  }
  result.lambda = lambda < 0.0 ? 0.0 : lambda;
  // Residual of the final iterate in the symmetric frame y = B^½·v:
  // ‖S·y − λ·y‖² = rᵀ·B·r with r = A·B·v − λ·v, and ‖y‖² = vᵀ·B·v.
  symmetric_matvec(b, n, v, w);
  symmetric_matvec(a, n, w, z);
  const double vw = dot(v, w, n);
  if (vw > 0.0 && result.lambda > 0.0) {
    for (int32_t i = 0; i < n; ++i) r[i] = z[i] - result.lambda * v[i];
    symmetric_matvec(b, n, r, w);
    const double res2 = dot(r, w, n);
    result.residual = std::sqrt(res2 > 0.0 ? res2 : 0.0) / (result.lambda * std::sqrt(vw));
  }
  return result;
}

}  // namespace fp8attn
