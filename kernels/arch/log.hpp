// The natural logarithm of the merge's log-sum-exp (kernels/sm90/combine/combine_math.hpp:
// lse = m + log(Σ w_p)).
//
// The device build calls CUDA's logf (1 ulp). The host build (the CPU combine, the decode engine's
// merge of its splits, and the emulated combine kernel, which must agree bit for bit) runs
// log_model below, one function for every caller and every vector ISA build:
//  - its bits do not depend on the C library: glibc's logf picks an FMA or a non-FMA form by the
//    CPU it runs on, so the same call gave different bits on different machines;
//  - it has no branches, so a loop over a merge's rows vectorizes (a call per row took about a
//    tenth of a two-part merge on a Zen 4).
// It is within 1 ulp of log(x) for every positive float and correctly rounded for all of the
// 2^31 but two, one of them in [1, 512) (glibc's logf: 145,188 of those 75.5 million):
// tests/numerics/test_log_model.cpp (every float of [1, 512), random ones over the whole range,
// the special values) and test_log_model_exhaustive.cpp (every positive float).
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/arch/platform.hpp"

namespace fp8attn::arch {

/// log(x) for a float x: x = 2^k · m with m in [√½, √2), log(m) = 2·atanh(s) with
/// s = (m − 1)/(m + 1), |s| ≤ 0.1716, summed in double to s^15 (the next term is below 2^-44 of
/// the sum). Special values as C's logf: log(±0) = −inf, log(+inf) = +inf, NaN for x < 0 or NaN.
inline float log_model(float x) {
  uint32_t x_bits;
  std::memcpy(&x_bits, &x, sizeof x_bits);
  // NOTE: every branch is a select, as in ex2_model: a loop over rows then vectorizes.
  const bool subnormal = (x_bits & 0x7F800000u) == 0u;
  const float xs = subnormal ? x * 8388608.0f : x;  // 2^23: a subnormal becomes normal, exactly
  uint32_t bits;
  std::memcpy(&bits, &xs, sizeof bits);
  int32_t k = static_cast<int32_t>((bits >> 23) & 0xFFu) - 127 - (subnormal ? 23 : 0);
  uint32_t m_bits = (bits & 0x007FFFFFu) | 0x3F800000u;  // m in [1, 2)
  const bool above_sqrt2 = m_bits > 0x3FB504F3u;          // m > √2: take m/2 and k + 1
  m_bits = above_sqrt2 ? m_bits - 0x00800000u : m_bits;
  k = above_sqrt2 ? k + 1 : k;
  float m;
  std::memcpy(&m, &m_bits, sizeof m);
  const double f = static_cast<double>(m) - 1.0;  // exact
  const double s = f / (2.0 + f), z = s * s;
  double p = 1.0 / 15.0;
  p = p * z + 1.0 / 13.0;
  p = p * z + 1.0 / 11.0;
  p = p * z + 1.0 / 9.0;
  p = p * z + 1.0 / 7.0;
  p = p * z + 1.0 / 5.0;
  p = p * z + 1.0 / 3.0;
  const double log_m = 2.0 * s + (2.0 * s) * (z * p);
  const double r = static_cast<double>(k) * 0.69314718055994530942 + log_m;
  float y = static_cast<float>(r);
  uint32_t y_bits;
  std::memcpy(&y_bits, &y, sizeof y_bits);
  const uint32_t magnitude = x_bits & 0x7FFFFFFFu;
  y_bits = magnitude == 0u ? 0xFF800000u : y_bits;                        // ±0: −inf
  y_bits = x_bits == 0x7F800000u ? x_bits : y_bits;                         // +inf
  y_bits = x_bits > 0x80000000u ? 0x7FC00000u : y_bits;                      // x < 0: NaN
  y_bits = magnitude > 0x7F800000u ? (x_bits | 0x00400000u) : y_bits;        // NaN stays NaN, quiet
  std::memcpy(&y, &y_bits, sizeof y);
  return y;
}

/// log(x) as the merge computes it: logf on the device, log_model on the host.
FP8ATTN_HOST_DEVICE float natural_log(float x) {
#if defined(__CUDA_ARCH__)
  return logf(x);
#else
  return log_model(x);
#endif
}

}  // namespace fp8attn::arch
