// Runs the TN GEMM kernel source on the SIMT emulator (kernels/emu).
#pragma once

#include <cstdint>

#include "kernels/emu/runtime.hpp"
#include "kernels/sm90/gemm/gemm_host.hpp"

namespace fp8attn::sm90 {

/// Plans and runs `problem` under the emulator with the schedule options of `schedule` (seed,
/// shuffle, host threads, race check); grid, block and shared memory come from the plan.
/// Throws std::invalid_argument for a problem the plan refuses and emu::KernelError for any
/// failure inside the kernel.
void run_gemm_emulated(const GemmProblem& problem, const emu::LaunchConfig& schedule);

}  // namespace fp8attn::sm90
