// Inputs of the dot-product order tests (test_bf16_dot_order.cpp, test_amx_bf16_order.cpp):
// E4M3 values as BF16 words, whose products are exact in FP32, and accumulators over a wide range.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

namespace fp8attn::test {

/// A random E4M3 normal value (exponent -6..8, three fraction bits, either sign) as BF16 bits:
/// exact in BF16, so every product of two of them is exact in FP32.
inline uint16_t e4m3_value_as_bf16(std::mt19937& rng) {
  const int exponent = static_cast<int>(rng() % 15) - 6, fraction = static_cast<int>(rng() % 8);
  const float v = std::ldexp(1.0f + fraction / 8.0f, exponent) * ((rng() & 1) ? -1.0f : 1.0f);
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return static_cast<uint16_t>(u >> 16);
}

inline float bf16_value(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// A normal FP32 accumulator, 2^-12 to about 2^17 in magnitude, either sign.
inline float random_accumulator(std::mt19937& rng) {
  return std::ldexp(static_cast<float>(rng() % 100000 + 1) / 1000.0f, static_cast<int>(rng() % 24) - 12) *
         ((rng() & 1) ? -1.0f : 1.0f);
}

}  // namespace fp8attn::test
