// BF16 converters, bit-exact to CUDA's cuda_bf16.h host code: round to nearest even; NaN stays
// NaN. Shared by the engine, the emulator's cvt and the tests.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace fp8attn::num {

inline uint16_t float_to_bf16(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  // NOTE: cuda_bf16.h returns the positive canonical NaN 0x7FFF whatever the input's sign.
  if (std::isnan(x)) return 0x7FFFu;
  const uint32_t rounding_bias = 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding_bias) >> 16);
}

inline float bf16_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

/// Rounds a float to the nearest BF16 value and returns it as float (NaN becomes the canonical
/// 0x7FFF, as float_to_bf16 does). Selects instead of branches, so a loop over a row vectorizes.
inline float round_to_bf16(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  // NOTE: NaN tested as a float: AVX2 has no unsigned vector compare for the bits' test.
  return std::bit_cast<float>(std::isnan(x) ? 0x7FFF0000u : rounded);
}

}  // namespace fp8attn::num
