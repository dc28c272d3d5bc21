// Packed conversions to FP8 and BF16 (PTX ISA 9.0 §9.7.9.21 cvt). The emulator calls the
// project's converters in lib/numerics, which are bit-exact to CUDA's cuda_fp8.h / cuda_bf16.h
// host code, so the emulated kernel rounds exactly like the CPU engine.
//
// Operand order trap: `cvt.rn.satfinite.e4m3x2.f32 d, a, b` puts convert(a) in d[15:8] and
// convert(b) in d[7:0]; `cvt.rn.bf16x2.f32 d, a, b` puts a in d[31:16]. The functions here take
// (lo, hi) instead, lowest element first, which is the order of the fragment layouts.
#pragma once

#include <cstdint>

#include "kernels/arch/platform.hpp"

#if !FP8ATTN_DEVICE_BUILD
#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"
#endif

namespace fp8attn::arch {

/// cvt.rn.satfinite.e4m3x2.f32: two floats to E4M3 (round to nearest even, |x| > 448 and ±inf
/// to ±448, NaN to NaN); `lo` in bits 7:0.
FP8ATTN_ARCH_FN uint16_t cvt_e4m3x2(float lo, float hi) {
#if FP8ATTN_DEVICE_BUILD
  uint16_t d;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %2, %1;" : "=h"(d) : "f"(lo), "f"(hi));
  return d;
#else
  return static_cast<uint16_t>(num::float_to_e4m3(lo) | (num::float_to_e4m3(hi) << 8));
#endif
}

/// cvt.rn.satfinite.e5m2x2.f32: as cvt_e4m3x2 for E5M2 (saturating to ±57344).
FP8ATTN_ARCH_FN uint16_t cvt_e5m2x2(float lo, float hi) {
#if FP8ATTN_DEVICE_BUILD
  uint16_t d;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %2, %1;" : "=h"(d) : "f"(lo), "f"(hi));
  return d;
#else
  return static_cast<uint16_t>(num::float_to_e5m2(lo) | (num::float_to_e5m2(hi) << 8));
#endif
}

/// Four floats to four E4M3 bytes of one register, v0 in bits 7:0 (the FP8 A-fragment order).
FP8ATTN_ARCH_FN uint32_t cvt_e4m3x4(float v0, float v1, float v2, float v3) {
  return static_cast<uint32_t>(cvt_e4m3x2(v0, v1)) | (static_cast<uint32_t>(cvt_e4m3x2(v2, v3)) << 16);
}

/// cvt.rn.bf16x2.f32: two floats to BF16 (round to nearest even); `lo` in bits 15:0.
FP8ATTN_ARCH_FN uint32_t cvt_bf16x2(float lo, float hi) {
#if FP8ATTN_DEVICE_BUILD
  uint32_t d;
  asm("cvt.rn.bf16x2.f32 %0, %2, %1;" : "=r"(d) : "f"(lo), "f"(hi));
  return d;
#else
  return static_cast<uint32_t>(num::float_to_bf16(lo)) | (static_cast<uint32_t>(num::float_to_bf16(hi)) << 16);
#endif
}

}  // namespace fp8attn::arch
