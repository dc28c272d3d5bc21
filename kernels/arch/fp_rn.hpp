// FP32 multiplication and addition each rounded on its own (PTX mul.rn.f32 / add.rn.f32): never
// fused into an FMA. nvcc contracts a·b + c into one fma.rn by default, the host build does not
// (the project compiles with -ffp-contract=off); code whose device result must round like the
// host's calls these instead of writing a·b + c.
#pragma once

#include "kernels/arch/platform.hpp"

namespace fp8attn::arch {

FP8ATTN_HOST_DEVICE float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

FP8ATTN_HOST_DEVICE float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

}  // namespace fp8attn::arch
