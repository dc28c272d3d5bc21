// FP8 converters (OCP E4M3 "e4m3fn" and E5M2), bit-exact to CUDA's cuda_fp8.h host code with
// __NV_SATFINITE: round to nearest even; |x| above the largest finite value, and ±inf, go to
// ±max; NaN stays NaN. Header-only and constexpr-free on purpose: the SIMT emulator's cvt, the
// CPU engine and the tests all call these same functions, so "bit-exact" holds by construction.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace fp8attn::num {

/// Parameters of one FP8 format.
struct Fp8Format {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  uint8_t max_finite_bits;  // magnitude bits of the largest finite value
  uint8_t nan_bits;         // magnitude bits of the canonical NaN
  bool has_infinity;
};

inline constexpr Fp8Format kE4M3{4, 3, 7, 0x7E, 0x7F, false};
inline constexpr Fp8Format kE5M2{5, 2, 15, 0x7B, 0x7F, true};

namespace detail {

/// Decodes FP8 bits of format F to float (exact: every FP8 value is a float).
inline float fp8_to_float(uint8_t bits, const Fp8Format& f) {
  const bool negative = bits & 0x80;
  const uint32_t mag = bits & 0x7F;
  const uint32_t exp_field = mag >> f.mantissa_bits;
  const uint32_t man = mag & ((1u << f.mantissa_bits) - 1);
  const uint32_t exp_all_ones = (1u << f.exponent_bits) - 1;
  float value;
  if (!f.has_infinity && mag == f.nan_bits) {
    value = std::numeric_limits<float>::quiet_NaN();
  } else if (f.has_infinity && exp_field == exp_all_ones) {
    value = man == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else if (exp_field == 0) {
    value = std::ldexp(static_cast<float>(man), 1 - f.bias - f.mantissa_bits);
  } else {
    value = std::ldexp(static_cast<float>(man | (1u << f.mantissa_bits)),
                       static_cast<int>(exp_field) - f.bias - f.mantissa_bits);
  }
  return negative ? -value : value;
}

/// Encodes float to FP8 of format F, round-to-nearest-even, saturating to finite.
inline uint8_t float_to_fp8(float x, const Fp8Format& f) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80);
  // NOTE: cuda_fp8.h returns the positive canonical NaN whatever the input's sign.
  if (std::isnan(x)) return f.nan_bits;
  const float a = std::fabs(x);
  const float max_finite = fp8_to_float(f.max_finite_bits, f);
  if (a >= max_finite) return static_cast<uint8_t>(sign | f.max_finite_bits);
  const int min_normal_exp = 1 - f.bias;
  int e = std::ilogb(a);  // floor(log2 a) for finite nonzero a
  if (a == 0.0f || e < min_normal_exp) e = min_normal_exp;  // subnormal: fixed quantum
  // NOTE: a / quantum is exact (power-of-two scaling) and nearbyint rounds half to even in the
  // default rounding mode, so this is a single correctly rounded step.
  const float q = std::nearbyint(std::ldexp(a, f.mantissa_bits - e));
  uint32_t mag;
  if (q == 0.0f) {
    mag = 0;
  } else if (e == min_normal_exp && q < static_cast<float>(1u << f.mantissa_bits)) {
    mag = static_cast<uint32_t>(q);  // subnormal
  } else {
    uint32_t qi = static_cast<uint32_t>(q);
    if (qi == (2u << f.mantissa_bits)) {  // rounded up to the next binade
      qi >>= 1;
      ++e;
    }
    mag = (static_cast<uint32_t>(e + f.bias) << f.mantissa_bits) | (qi & ((1u << f.mantissa_bits) - 1));
  }
  if (mag > f.max_finite_bits) mag = f.max_finite_bits;  // satfinite after rounding up
  return static_cast<uint8_t>(sign | mag);
}

}  // namespace detail

inline float e4m3_to_float(uint8_t bits) { return detail::fp8_to_float(bits, kE4M3); }
inline uint8_t float_to_e5m2(float x) { return detail::float_to_fp8(x, kE5M2); }
inline float e5m2_to_float(uint8_t bits) { return detail::fp8_to_float(bits, kE5M2); }

/// The E4M3 value nearest to x (round to nearest even, saturating to ±448; NaN stays NaN),
/// as a float: e4m3_to_float(float_to_e4m3(x)) without the encoding, for the engine's cast of P.
/// NOTE: normal range: round the FP32 mantissa to 3 bits in integer arithmetic (ties to even);
/// below 2⁻⁶ the E4M3 quantum is a fixed 2⁻⁹, so adding and subtracting 1.5·2¹⁴ rounds there
/// (FP32 addition is round-to-nearest-even). Selects instead of branches, so the engine's loop
/// over a row vectorizes. Checked against the encoder for all 2³² inputs
/// (tests/numerics/test_converters_exhaustive.cpp).
inline float round_to_e4m3(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const uint32_t a = u & 0x7FFFFFFFu;
  // NOTE: the range tests compare |x| as a float, not its bits as an unsigned integer: AVX2 has
  // no unsigned vector compare (GCC emits two instructions for each), and the float order of
  // non-negative values is the order of their bits. A NaN fails every float test, and the last
  // select returns it unchanged.
  const float abs_x = std::bit_cast<float>(a);
  const uint32_t normal = (a + 0x7FFFFu + ((a >> 20) & 1u)) & ~0xFFFFFu;
  const bool below_normal = abs_x < 0.015625f;  // |x| < 2⁻⁶
  const float small = std::bit_cast<float>(below_normal ? a : 0u);
  const float subnormal = (small + 24576.0f) - 24576.0f;
  float magnitude = below_normal ? subnormal : std::bit_cast<float>(normal);
  // |x| ≥ 464 (±inf included) and values that round up past 448 saturate to 448.
  magnitude = magnitude > 448.0f ? 448.0f : magnitude;
  magnitude = abs_x >= 464.0f ? 448.0f : magnitude;
  const uint32_t bits = (u & 0x80000000u) | std::bit_cast<uint32_t>(magnitude);
  return std::isnan(x) ? x : std::bit_cast<float>(bits);  // NaN keeps its bits
}

/// E4M3 bits of x, computed on the FP32 bits with selects instead of branches, so that a bulk
/// cast such as the quantizer's vectorizes. round_to_e4m3's two roundings, then the encoding of
/// the value they give. The same bits as detail::float_to_fp8(x, kE4M3) for all 2³² inputs
/// (tests/numerics checks it), without that function's libm calls.
inline uint8_t float_to_e4m3(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const uint32_t a = u & 0x7FFFFFFFu;
  // Normal results: the FP32 mantissa rounded to 3 bits, ties to even, and the exponent rebiased
  // from 127 to 7. Only used where |x| ≥ 2⁻⁶ (bits 0x3C800000).
  const uint32_t n = (a + 0x7FFFFu + ((a >> 20) & 1u)) & ~0xFFFFFu;
  const uint32_t normal = ((((n >> 23) - 120u) << 3) | ((n >> 20) & 7u)) & 0x7Fu;
  // Below 2⁻⁶ the quantum is 2⁻⁹: adding 1.5·2¹⁴ rounds there (ties to even), and the count of
  // quanta is the field (8 quanta is 2⁻⁶, whose bits 0x08 are the same).
  const bool below_normal = a < 0x3C800000u;
  const float small = std::bit_cast<float>(below_normal ? a : 0u);
  const auto subnormal = static_cast<uint32_t>(((small + 24576.0f) - 24576.0f) * 512.0f);
  uint32_t magnitude = below_normal ? subnormal : normal;
  magnitude = a >= 0x43E80000u ? 0x7Eu : magnitude;  // |x| ≥ 464, ±inf: saturate to ±448
  const uint32_t bits = ((u >> 24) & 0x80u) | magnitude;
  return static_cast<uint8_t>(a > 0x7F800000u ? kE4M3.nan_bits : bits);  // NaN: the canonical one
}

/// Largest finite E4M3 value.
inline constexpr float kE4M3Max = 448.0f;
/// Largest finite E5M2 value.
inline constexpr float kE5M2Max = 57344.0f;

}  // namespace fp8attn::num
