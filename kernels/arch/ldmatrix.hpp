// ldmatrix / stmatrix .m8n8 .b16, .x1/.x2/.x4, with or without .trans (PTX ISA 9.0
// §9.7.14.5.15-16): warp-collective moves of 8x8 16-bit matrices between shared memory and
// registers. Lane i gives the address of row i%8 of matrix i/8. Layouts: kernels/emu/ldmatrix.hpp.
#pragma once

#include <cstdint>

#include "kernels/arch/platform.hpp"
#include "kernels/arch/shared_memory.hpp"

#if !FP8ATTN_DEVICE_BUILD
#include "kernels/emu/ldmatrix.hpp"
#endif

namespace fp8attn::arch {

template <int kCount, bool kTrans = false>
FP8ATTN_ARCH_FN void ldmatrix(const void* smem_row, uint32_t (&regs)[kCount]) {
  static_assert(kCount == 1 || kCount == 2 || kCount == 4, "ldmatrix loads 1, 2 or 4 matrices");
#if FP8ATTN_DEVICE_BUILD
  const uint32_t a = smem_address(smem_row);
  if constexpr (kCount == 1) {
    if constexpr (kTrans) asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(regs[0]) : "r"(a) : "memory");
    else asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(regs[0]) : "r"(a) : "memory");
  } else if constexpr (kCount == 2) {
    if constexpr (kTrans)
      asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(regs[0]), "=r"(regs[1]) : "r"(a) : "memory");
    else
      asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(regs[0]), "=r"(regs[1]) : "r"(a) : "memory");
  } else {
    if constexpr (kTrans)
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                   : "=r"(regs[0]), "=r"(regs[1]), "=r"(regs[2]), "=r"(regs[3]) : "r"(a) : "memory");
    else
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                   : "=r"(regs[0]), "=r"(regs[1]), "=r"(regs[2]), "=r"(regs[3]) : "r"(a) : "memory");
  }
#else
  emu::ldmatrix(kCount, kTrans, smem_row, regs);
#endif
}

template <int kCount, bool kTrans = false>
FP8ATTN_ARCH_FN void stmatrix(void* smem_row, const uint32_t (&regs)[kCount]) {
  static_assert(kCount == 1 || kCount == 2 || kCount == 4, "stmatrix stores 1, 2 or 4 matrices");
#if FP8ATTN_DEVICE_BUILD
  const uint32_t a = smem_address(smem_row);
  if constexpr (kCount == 1) {
    if constexpr (kTrans) asm volatile("stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [%0], {%1};" ::"r"(a), "r"(regs[0]) : "memory");
    else asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" ::"r"(a), "r"(regs[0]) : "memory");
  } else if constexpr (kCount == 2) {
    if constexpr (kTrans)
      asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};" ::"r"(a), "r"(regs[0]), "r"(regs[1]) : "memory");
    else
      asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};" ::"r"(a), "r"(regs[0]), "r"(regs[1]) : "memory");
  } else {
    if constexpr (kTrans)
      asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};"
                   ::"r"(a), "r"(regs[0]), "r"(regs[1]), "r"(regs[2]), "r"(regs[3]) : "memory");
    else
      asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                   ::"r"(a), "r"(regs[0]), "r"(regs[1]), "r"(regs[2]), "r"(regs[3]) : "memory");
  }
#else
  emu::stmatrix(kCount, kTrans, smem_row, regs);
#endif
}

}  // namespace fp8attn::arch
