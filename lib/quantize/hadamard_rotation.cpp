#include "lib/quantize/hadamard_rotation.hpp"

#include "kernels/sm90/quantize/quantize_math.hpp"

namespace fp8attn::quant {

int exact_log2(int64_t d) {
  if (d < 1 || (d & (d - 1)) != 0) return -1;
  int k = 0;
  while ((int64_t{1} << k) < d) ++k;
  return k;
}

void rotate_row(float* x, int log2_d, uint64_t seed) {
  const int d = 1 << log2_d;
  for (int stage = 0; stage < log2_d; ++stage) {
    const int h = 1 << stage;
    for (int i = 0; i < d; ++i) {
      if (i & h) continue;
      const float lower = x[i], upper = x[i + h];
      x[i] = sm90::quant::butterfly(lower, upper, false);
      x[i + h] = sm90::quant::butterfly(upper, lower, true);
    }
  }
  const float norm = sm90::quant::hadamard_norm(log2_d);
  for (int j = 0; j < d; ++j) {
    const float y = x[j] * norm;
    x[j] = sm90::quant::rotation_sign_negative(seed, j) ? -y : y;
  }
}

}  // namespace fp8attn::quant
