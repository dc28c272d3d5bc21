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

}  // namespace fp8attn::quant
