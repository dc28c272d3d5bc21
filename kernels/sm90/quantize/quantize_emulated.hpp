// Runs the quantizer kernels (kernels/sm90/quantize) on the SIMT emulator.
#pragma once

#include "kernels/emu/runtime.hpp"
#include "kernels/sm90/quantize/quantize_params.hpp"

namespace fp8attn::sm90::quant {

/// Runs both kernels on `p` (its unit_amax must hold batch·heads·units_per_head floats) with the
/// schedule options of `schedule`; grid, block and shared memory come from the kernels. Throws
/// std::invalid_argument for a problem the kernels refuse and emu::KernelError for any failure
/// inside a kernel.
void run_quantize_emulated(const QuantizeParams& p, const emu::LaunchConfig& schedule);

}  // namespace fp8attn::sm90::quant
