// Register budgets of warp-specialized kernels: the setmaxnreg instruction (PTX ISA 9.0,
// sm_90a only).
// The producer warpgroup lowers its per-thread register count, the consumers raise theirs.
// On the emulator registers are host variables; it keeps the CTA's register pool instead
// (kernels/emu/register_pool.cpp), so budgets over the launch pool deadlock there as on a GPU.
#pragma once

#include <cstdint>

#include "kernels/arch/platform.hpp"
#if !FP8ATTN_DEVICE_BUILD
#include "kernels/emu/runtime.hpp"
#endif

namespace fp8attn::arch {

// The count is an immediate in [24, 256] and a multiple of 8 (setmaxnreg, PTX ISA 9.0).
template <uint32_t kRegisters>
inline constexpr bool kValidRegisterCount = kRegisters >= 24 && kRegisters <= 256 && kRegisters % 8 == 0;

/// Whether a warp-specialized CTA's budgets fit the registers it holds from its launch.
/// NOTE: setmaxnreg.inc waits until the CTA's pool has the registers to give: the pool is what
/// the CTA was launched with (threads x ptxas' count, which __launch_bounds__(threads, 1) makes
/// 65536 / threads rounded down to 8: 168 at 384 threads, 64512 in all), not the 65536 of the
/// register file. Budgets that only fit the file (one producer at 32 + two consumers at 240 =
/// 65536) hang the second consumer's setmaxnreg.inc on the GPU; seen on an H200, 2026-11-26.
/// Checked here at compile time, by the emulator's register pool at run time, and against
/// ptxas' actual count by tools/sm90_check_common.sh (check_register_pool).
constexpr bool register_budgets_fit(uint32_t threads, uint32_t producer_registers, uint32_t consumer_warpgroups,
                                    uint32_t consumer_registers) {
  const uint32_t launch_registers = 65536 / threads / 8 * 8;
  return 128 * producer_registers + 128 * consumer_warpgroups * consumer_registers <= threads * launch_registers;
}

template <uint32_t kRegisters>
FP8ATTN_ARCH_FN void setmaxnreg_inc() {
  static_assert(kValidRegisterCount<kRegisters>, "setmaxnreg takes 24..256 in steps of 8");
#if FP8ATTN_DEVICE_BUILD
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
#else
  emu::setmaxnreg(kRegisters, /*increase=*/true);
#endif
}

template <uint32_t kRegisters>
FP8ATTN_ARCH_FN void setmaxnreg_dec() {
  static_assert(kValidRegisterCount<kRegisters>, "setmaxnreg takes 24..256 in steps of 8");
#if FP8ATTN_DEVICE_BUILD
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
#else
  emu::setmaxnreg(kRegisters, /*increase=*/false);
#endif
}

}  // namespace fp8attn::arch
