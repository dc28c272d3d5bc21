#include "lib/quantize/hadamard_rotation.hpp"

namespace fp8attn::quant {

int exact_log2(int64_t d) {
  if (d < 1 || (d & (d - 1)) != 0) return -1;
  int k = 0;
  while ((int64_t{1} << k) < d) ++k;
  return k;
}

void rotate_row(float* x, int log2_d, uint64_t seed) {
  // NOTE: lower + upper and lower − upper are exactly quant::butterfly(lower, upper, false) and
  // butterfly(upper, lower, true): the kernel's cross-lane form of the same two operations.
  walsh_hadamard_butterflies(x, log2_d);
  const int d = 1 << log2_d;
  const float norm = sm90::quant::hadamard_norm(log2_d);
  for (int j = 0; j < d; ++j) {
    const float y = x[j] * norm;
    x[j] = sm90::quant::rotation_sign_negative(seed, j) ? -y : y;
  }
}

HadamardRotation::HadamardRotation(int log2_d, uint64_t seed)
    : log2_d_(log2_d), signed_norm_(static_cast<size_t>(1) << log2_d) {
  const float norm = sm90::quant::hadamard_norm(log2_d);
  for (size_t j = 0; j < signed_norm_.size(); ++j)
    signed_norm_[j] = sm90::quant::rotation_sign_negative(seed, static_cast<int>(j)) ? -norm : norm;
}

void HadamardRotation::apply(float* x) const {
  walsh_hadamard_butterflies(x, log2_d_);
  for (size_t j = 0; j < signed_norm_.size(); ++j) x[j] *= signed_norm_[j];
}

}  // namespace fp8attn::quant
