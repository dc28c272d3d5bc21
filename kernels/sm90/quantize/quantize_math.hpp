// The arithmetic of the FP8 quantizer, written once for the CPU quantizer (lib/quantize) and the
// Hopper kernel (kernels/sm90/quantize): D's signs, the Walsh–Hadamard butterfly, the
// normalization constant and the scale from an amax. Both sides call these functions in the same
// order, so their FP32 results agree bit for bit.
//
// The rotation of one head-dim vector x (length d = 2^k), as a row vector: x ← x·H·D with H the
// normalized Walsh–Hadamard matrix (H_ij = (−1)^popcount(i & j) / √d) and D = diag(±1):
//   1. for stage s = 0 .. k−1 (pair stride h = 2^s, smallest first): every pair (i, i + h) with
//      bit s of i clear becomes (x_i + x_{i+h}, x_i − x_{i+h});
//   2. x_j ← x_j · fl(1/√d);
//   3. x_j ← −x_j where D_jj = −1 (exact).
#pragma once

#include <cstdint>
#include <cstring>

// NOTE: a macro of its own rather than platform.hpp's FP8ATTN_HOST_DEVICE: the CPU quantizer is
// compiled beside tile_config.hpp, which defines that name differently.
#ifndef FP8ATTN_QUANT_FN
#if defined(__CUDACC__)
#define FP8ATTN_QUANT_FN __host__ __device__ __forceinline__
#else
#define FP8ATTN_QUANT_FN inline
#endif
#endif

namespace fp8attn::sm90::quant {

/// Largest finite E4M3 value: the target of every scale.
inline constexpr float kE4M3Max = 448.0f;
/// Largest head dimension the kernel rotates (8 elements per lane).
inline constexpr int kMaxRotatedHeadDim = 256;
/// Largest margin accepted (a headroom of 2^64).
inline constexpr int kMaxMargin = 64;

/// True when D_jj = −1 for this seed. NOTE: a counter-based hash (SplitMix64's finalizer of
/// seed + (j + 1)·golden ratio) instead of a sequential generator, so every lane of the kernel
/// computes its own signs with no shared state, and the signs depend on (seed, j) only: Q and K
/// of a layer, and every head, get the same D from the same seed.
FP8ATTN_QUANT_FN bool rotation_sign_negative(uint64_t seed, int j) {
  uint64_t z = seed + (static_cast<uint64_t>(j) + 1u) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (z >> 63) != 0;
}

/// One butterfly output: the lower element of a pair gets a + b, the upper a − b, where a is the
/// lower element's value and b the upper's. `mine` is this element's value, `partner` the other.
FP8ATTN_QUANT_FN float butterfly(float mine, float partner, bool is_upper) {
  return is_upper ? partner - mine : mine + partner;
}

/// fl(1/√d) for d = 2^log2_d. NOTE: 2^(−k/2) is exact for even k; for odd k it is
/// fl(√½)·2^(−(k−1)/2), which equals fl(1/√d) because scaling by a power of two commutes with
/// rounding for normal floats. No sqrt or division, so host and device agree by construction.
FP8ATTN_QUANT_FN float hadamard_norm(int log2_d) {
  float r = (log2_d & 1) ? 0.70710678118654752440f : 1.0f;
  for (int i = 0; i < log2_d / 2; ++i) r *= 0.5f;
  return r;
}

/// The FP8 scale of a slice with this amax: (448 / amax) / 2^margin, or 1 when amax is 0.
/// NOTE: TransformerEngine's recipe (DESIGN §3): fp8_max / amax, headroom as a power of two so
/// the margin itself adds no rounding. A quotient that overflows FP32 (amax below ~1.3e-36)
/// is clamped to the largest finite float, so the descale stays finite and nonzero.
FP8ATTN_QUANT_FN float scale_from_amax(float amax, int margin) {
  if (!(amax > 0.0f)) return 1.0f;
  const float kFloatMax = 3.40282346638528859812e+38f;
  float scale = kE4M3Max / amax;
  if (scale > kFloatMax) scale = kFloatMax;
  for (int i = 0; i < margin; ++i) scale *= 0.5f;
  return scale;
}

/// The descale written beside the quantized data: 1 / scale, in FP32.
FP8ATTN_QUANT_FN float descale_from_scale(float scale) { return 1.0f / scale; }

/// |x| for the amax, with NaN and ±inf mapped to +inf so a bad input shows in the amax.
FP8ATTN_QUANT_FN float amax_term(float x) {
  const float a = x < 0.0f ? -x : x;
  return (a <= 3.40282346638528859812e+38f) ? a : __builtin_inff();
}

/// The larger of two amax terms (never NaN: amax_term maps NaN to +inf). Written out so host and
/// device agree without fmaxf's NaN rules.
FP8ATTN_QUANT_FN float max_of(float a, float b) { return a > b ? a : b; }

/// A BF16 value's bits widened to float (exact).
FP8ATTN_QUANT_FN float bf16_bits_to_float(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

}  // namespace fp8attn::sm90::quant
