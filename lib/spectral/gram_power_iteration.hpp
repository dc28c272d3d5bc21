// The power iteration at the heart of the spectral norms: the largest eigenvalue of A·B for
// two symmetric positive semi-definite n × n matrices (A = G_Q,h, B = G_K,g, the d_h × d_h
// Grams), which is σ_h² = ‖W_Q,hᵀ·W_K,g‖₂² (DESIGN §3).
#pragma once

#include <cstdint>

namespace fp8attn {

struct PowerIterationResult {
  double lambda = 0.0;    ///< estimate of λ_max(A·B) (≥ 0)
  int32_t iterations = 0; ///< applications of the powered operator (A·B)^(2^squarings)
  double residual = 0.0;  ///< ‖S·y − λ·y‖ / (λ·‖y‖) for S = B^½·A·B^½, y = B^½·v (0 when λ = 0)
};

/// Squarings that form the powered operator (A·B)^(2^k) the iteration applies.
/// NOTE: trained weights have close top eigenvalues: on all-MiniLM-L6-v2, plain power
/// iteration on A·B left heads at 5e-3 relative error after 100 steps (ratio λ₂/λ₁ ≈ 0.97).
/// Five squarings (d_h³ each, small next to the Grams' d_h²·d) make one step worth 32 plain
/// ones, which reaches 1e-6 within a few steps on every MiniLM head.
inline constexpr int32_t kOperatorSquarings = 5;

/// Doubles of scratch that power_iterate_gram_product() needs for n × n matrices.
inline int64_t power_iteration_scratch_doubles(int32_t n) { return 3 * int64_t{n} + 2 * int64_t{n} * n; }

/// Finds the dominant eigenpair of A·B. Forms P = (A·B)^(2^squarings) in double by repeated
/// squaring (rescaled after each), then runs v ← P·v/‖P·v‖ until the Rayleigh quotient
/// λ = (wᵀ·A·w)/(vᵀ·w), w = B·v (computed with A and B themselves, not P), changes by at most
/// `tolerance`·λ, or `max_iterations` applications of P.
///
/// NOTE: A·B is not symmetric, but with y = B^½·v it is similar to the symmetric
/// S = B^½·A·B^½ (S·y = B^½·A·B·v), and λ is S's Rayleigh quotient at y. So the estimate
/// approaches λ_max from below with an error quadratic in the vector's, as for a symmetric
/// matrix, without ever forming B^½ (Golub & Van Loan, §8.2 and §8.7 on the symmetric-definite
/// pencil). A·B's eigenvalues are real and ≥ 0, so its powers have a dominant direction.
///
/// `a`, `b`: row-major n × n floats (full, symmetric). `v`: n doubles, in: a start vector that
/// is not all zero; out: the final iterate, unit length. `scratch`:
/// power_iteration_scratch_doubles(n) doubles. Everything past the Grams runs in double: the
/// matrices are small (n = d_h), so double costs little and keeps a 1e-6 tolerance meaningful.
PowerIterationResult power_iterate_gram_product(const float* a, const float* b, int32_t n, double* v, double* scratch,
                                                int32_t max_iterations, double tolerance,
                                                int32_t squarings = kOperatorSquarings);

/// Fills v (n doubles) with a seeded, deterministic unit vector (SplitMix64 → uniform(−1, 1)).
void seeded_unit_vector(uint64_t seed, int32_t n, double* v);

}  // namespace fp8attn
