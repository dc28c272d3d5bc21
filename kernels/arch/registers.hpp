// Register budgets of warp-specialized kernels: the setmaxnreg instruction (PTX ISA 9.0,
// sm_90a only).
// The producer warpgroup lowers its per-thread register count, the consumers raise theirs.
// On the emulator registers are host variables, so both are no-ops there (the count is still
// checked at compile time).
#pragma once

#include <cstdint>

#include "kernels/arch/platform.hpp"

namespace fp8attn::arch {

// The count is an immediate in [24, 256] and a multiple of 8 (setmaxnreg, PTX ISA 9.0).
template <uint32_t kRegisters>
inline constexpr bool kValidRegisterCount = kRegisters >= 24 && kRegisters <= 256 && kRegisters % 8 == 0;

template <uint32_t kRegisters>
FP8ATTN_ARCH_FN void setmaxnreg_inc() {
  static_assert(kValidRegisterCount<kRegisters>, "setmaxnreg takes 24..256 in steps of 8");
#if FP8ATTN_DEVICE_BUILD
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
#endif
}

template <uint32_t kRegisters>
FP8ATTN_ARCH_FN void setmaxnreg_dec() {
  static_assert(kValidRegisterCount<kRegisters>, "setmaxnreg takes 24..256 in steps of 8");
#if FP8ATTN_DEVICE_BUILD
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
#endif
}

}  // namespace fp8attn::arch
