// Runs the combine kernel (kernels/sm90/combine) on the SIMT emulator.
#pragma once

#include "kernels/emu/runtime.hpp"
#include "kernels/sm90/combine/combine_params.hpp"

namespace fp8attn::sm90::combine {

/// Runs the kernel on `p` (nothing for an empty problem) with the schedule options of
/// `schedule`; grid, block and shared memory come from the kernel. Throws std::invalid_argument
/// for a problem the kernel refuses and emu::KernelError for any failure inside it.
void run_combine_emulated(const CombineParams& p, const emu::LaunchConfig& schedule);

}  // namespace fp8attn::sm90::combine
