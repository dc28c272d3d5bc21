// Incoherent processing on the CPU: the fast Walsh–Hadamard rotation x ← x·H·D of one head-dim
// vector, in the order kernels/sm90/quantize/quantize_math.hpp defines (the Hopper kernel runs the
// same butterflies across lanes, so both round identically), and its FP64 form and inverse for
// checks and dequantization.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/sm90/quantize/quantize_math.hpp"

namespace fp8attn::quant {

/// log2(d) when d is a power of two ≥ 1; −1 otherwise.
int exact_log2(int64_t d);

/// Rotates x[0 .. 2^log2_d) in place, in FP32: log2_d butterfly stages (O(d log d)), the
/// normalization fl(1/√d), then D's signs from `seed`. The quantizer's transform, by its
/// definition; HadamardRotation computes the same bits with the signs drawn once.
void rotate_row(float* x, int log2_d, uint64_t seed);

/// rotate_row for many vectors of one size and seed: D's signs and the normalization are folded
/// into one factor per entry at construction (x·fl(1/√d) negated is x·(−fl(1/√d)) exactly, so the
/// bits are rotate_row's).
class HadamardRotation {
 public:
  HadamardRotation(int log2_d, uint64_t seed);
  void apply(float* x) const;
  int log2_d() const { return log2_d_; }
  /// The folded factors ±fl(1/√d), one per entry: apply() is the butterflies, then x[j] *= this[j].
  const float* signed_norm() const { return signed_norm_.data(); }

 private:
  int log2_d_;
  std::vector<float> signed_norm_;  ///< ±fl(1/√d), the sign from the seed
};

/// The unnormalized butterflies x ← x·H_d (H_d with entries ±1): stage h = 1, 2, 4, … pairs
/// x[i] and x[i + h] for i with bit h clear. Every element sees the same additions in the same
/// order as in the kernel's cross-lane form; the loops are laid out so the compiler vectorizes
/// the wide stages. NOTE: always inlined, so the quantizer's per-ISA builds (lib/quantize/isa)
/// never emit a shared out-of-line copy.
template <class T>
[[gnu::always_inline]] inline void walsh_hadamard_butterflies(T* x, int log2_d) {
  const int d = 1 << log2_d;
  for (int h = 1; h < d; h <<= 1)
    for (int base = 0; base < d; base += 2 * h)
      for (int i = base; i < base + h; ++i) {
        const T lower = x[i], upper = x[i + h];
        x[i] = lower + upper;
        x[i + h] = lower - upper;
      }
}

/// x ← x·H·D in FP64 (normalization 1/√d in double).
inline void rotate_row_f64(double* x, int log2_d, uint64_t seed) {
  walsh_hadamard_butterflies(x, log2_d);
  const int d = 1 << log2_d;
  const double norm = 1.0 / std::sqrt(static_cast<double>(d));
  for (int j = 0; j < d; ++j) x[j] *= sm90::quant::rotation_sign_negative(seed, j) ? -norm : norm;
}

/// The inverse, x ← x·(H·D)ᵀ = x·D·H (H is symmetric and orthogonal, D² = I), in FP64: what
/// turns a dequantized rotated vector back into the original basis.
inline void unrotate_row_f64(double* x, int log2_d, uint64_t seed) {
  const int d = 1 << log2_d;
  for (int j = 0; j < d; ++j)
    if (sm90::quant::rotation_sign_negative(seed, j)) x[j] = -x[j];
  walsh_hadamard_butterflies(x, log2_d);
  const double norm = 1.0 / std::sqrt(static_cast<double>(d));
  for (int j = 0; j < d; ++j) x[j] *= norm;
}

}  // namespace fp8attn::quant
