// The power iteration at the heart of the spectral norms: the largest eigenvalue of A·B for
// two symmetric positive semi-definite n × n matrices (A = G_Q,h, B = G_K,g, the d_h × d_h
// Grams), which is σ_h² = ‖W_Q,hᵀ·W_K,g‖₂² (DESIGN §3).
#pragma once

#include <cstdint>

namespace fp8attn {

struct PowerIterationResult {
  double lambda = 0.0;    ///< estimate of λ_max(A·B) (≥ 0)
  int32_t iterations = 0; ///< applications of A·B
  double residual = 0.0;  ///< ‖S·y − λ·y‖ / (λ·‖y‖) for S = B^½·A·B^½, y = B^½·v (0 when λ = 0)
};

/// Runs v ← A·(B·v)/‖·‖ until the Rayleigh quotient λ = (wᵀ·A·w)/(vᵀ·w), w = B·v, changes by
/// at most `tolerance`·λ, or `max_iterations` applications.
///
/// NOTE: A·B is not symmetric, but with y = B^½·v this is exactly the power iteration on the
/// symmetric S = B^½·A·B^½ (S·y = B^½·A·B·v), and λ is S's Rayleigh quotient at y. So the
/// estimate rises monotonically to λ_max with an error quadratic in the vector's, as for a
/// symmetric matrix, without ever forming B^½ (Golub & Van Loan, §8.2 and §8.7 on the
/// symmetric-definite pencil).
///
/// `a`, `b`: row-major n × n floats (full, symmetric). `v`: n doubles, in: a start vector that
/// is not all zero; out: the final iterate, unit length. `scratch`: 3·n doubles.
/// Accumulates in double: the matrices are small (n = d_h), so double costs nothing and keeps
/// the 1e-6 tolerance meaningful.
PowerIterationResult power_iterate_gram_product(const float* a, const float* b, int32_t n, double* v, double* scratch,
                                                int32_t max_iterations, double tolerance);

/// Fills v (n doubles) with a seeded, deterministic unit vector (SplitMix64 → uniform(−1, 1)).
void seeded_unit_vector(uint64_t seed, int32_t n, double* v);

}  // namespace fp8attn
