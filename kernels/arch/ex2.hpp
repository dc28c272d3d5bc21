// ex2.approx.ftz.f32 (PTX ISA 9.0, floating-point instruction "ex2"): 2^x, the exponential of
// the softmax.
//
// NOTE: the host body is exp2f, which is not bit-equal to the hardware instruction: ex2.approx
// is an approximation with an error of about 2 ulp over its range (the figure this project works
// with; not re-derived here) and, with .ftz, flushes subnormal inputs and results to
// sign-preserving zero. The emulator follows
// exp2f but flushes subnormal results to zero as .ftz does, so results agree to ~2 ulp and are
// zero in the same places. Bit-equality tests of kernels that use it must share this function
// with the CPU engine (it is host-callable for that reason).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/arch/platform.hpp"

namespace fp8attn::arch {

/// The host model of ex2.approx.ftz.f32: exp2f with subnormal inputs and outputs flushed to
/// zero (of the same sign for inputs; results of 2^x are never negative).
inline float ex2_approx_host(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7F800000u) == 0 && (bits & 0x007FFFFFu) != 0) x = 0.0f;  // ftz input: 2^(±0) = 1
  const float y = std::exp2f(x);
  return std::fpclassify(y) == FP_SUBNORMAL ? 0.0f : y;
}

FP8ATTN_ARCH_FN float ex2_approx(float x) {
#if FP8ATTN_DEVICE_BUILD
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return ex2_approx_host(x);
#endif
}

}  // namespace fp8attn::arch
