// ex2.approx.ftz.f32 (PTX ISA 9.0, floating-point instruction "ex2"): 2^x, the exponential of
// the softmax.
//
// The device build runs ex2.approx.ftz.f32 itself: one MUFU.EX2 per score. CUDA's exp2f (without
// -ftz=true) wraps the same unit in a range scaling that keeps subnormal results, about three more
// instructions per score in the softmax's main loop (tools/check_attention_sm90a.sh counts them).
// NOTE: an earlier try of the inline asm spilled the head_dim-128 every-block kernel (16 bytes);
// since P's A fragment is the accumulator in place (kernels/sm90/pv_key_order.hpp) no kernel
// spills with it. The PTX ISA gives its error as 2 ulp over the full range. The host build (the
// SIMT emulator and the CPU tile engine, which must agree bit for bit) runs ex2_model below, one
// function for both.
//
// NOTE: why a model of our own rather than exp2f: libm's exp2f is a call per element that no
// compiler vectorizes, and it was 19% of the CPU engine's time (profiled). ex2_model is
// branch-free straight-line code on the FP32 bits, so the engine's loop over a row of logits
// vectorizes (AVX2: eight lanes per instruction), and every build computes the same bits: it
// uses only IEEE additions and multiplications (the project compiles with -ffp-contract=off)
// and integer operations.
//
// Error: at most 1 ulp against the correctly rounded 2^x over every float x in [−126, 128), and
// correctly rounded for 99.14% of them (measured exhaustively by the exhaustive-labelled test
// tests/numerics/test_ex2_model_exhaustive.cpp). The GPU's exp2 is specified to 2 ulp, so
// neither the engine nor the emulator is bit-equal to a GPU; bounds against real hardware allow
// for it.
//
// Like .ftz, results below 2^−126 (x < −126) flush to +0, and subnormal inputs act as 0, as the
// device's instruction does.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/arch/platform.hpp"

namespace fp8attn::arch {

/// The host model of ex2.approx.ftz.f32: x = n + f with n = rint(x) and |f| ≤ 1/2, then
/// 2^f from a degree-6 polynomial (Cephes' exp2f coefficients for [−1/2, 1/2], evaluated by
/// Horner's rule in FP32) and 2^n added into the exponent field.
/// NaN gives NaN, x ≥ 128 gives +inf, x < −126 (−inf included) gives +0.
inline float ex2_model(float x) {
  uint32_t x_bits;
  std::memcpy(&x_bits, &x, sizeof x_bits);
  // NOTE: the clamp keeps n in [−126, 128], where 2^f · 2^n is a normal float or +inf and the
  // exponent addition below cannot carry into the sign. Both comparisons are made
  // unconditionally: a comparison guarded by another is control flow to the compiler (it may trap
  // on NaN), and the loop over a row would not vectorize.
  const bool below = x < -126.0f, above = x >= 128.0f;
  float xc = below ? -126.0f : x;
  xc = x > 128.0f ? 128.0f : xc;
  // Round to nearest even by the 1.5·2^23 trick: t's low mantissa bits hold n.
  constexpr float kRound = 12582912.0f;
  const float t = xc + kRound;
  const float f = xc - (t - kRound);
  uint32_t t_bits, round_bits;
  std::memcpy(&t_bits, &t, sizeof t_bits);
  std::memcpy(&round_bits, &kRound, sizeof round_bits);
  const uint32_t n = t_bits - round_bits;  // two's complement n
  float p = 1.535336188319500e-4f;
  p = p * f + 1.339887440266574e-3f;
  p = p * f + 9.618437357674640e-3f;
  p = p * f + 5.550332471162809e-2f;
  p = p * f + 2.402264791363012e-1f;
  p = p * f + 6.931472028550421e-1f;
  p = p * f + 1.0f;
  uint32_t p_bits;
  std::memcpy(&p_bits, &p, sizeof p_bits);
  uint32_t y_bits = p_bits + (n << 23);
  y_bits = below ? 0u : y_bits;
  y_bits = above ? 0x7F800000u : y_bits;
  y_bits = (x_bits & 0x7FFFFFFFu) > 0x7F800000u ? x_bits : y_bits;  // NaN stays NaN
  float y;
  std::memcpy(&y, &y_bits, sizeof y);
  return y;
}

/// 2^x as the kernels compute it: ex2.approx.ftz.f32 on the device, ex2_model on the host.
/// Host-and-device callable, so the shared softmax math (kernels/sm90/softmax_math.hpp) calls it.
FP8ATTN_HOST_DEVICE float ex2_approx(float x) {
#if defined(__CUDA_ARCH__)
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return ex2_model(x);
#endif
}

}  // namespace fp8attn::arch
