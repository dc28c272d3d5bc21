// The quantizer on a device runtime: the workspace it needs (one FP32 amax per work unit) and
// the carving of that workspace into the kernel's parameters. Written once for the CUDA runtime
// and the emulator.
#pragma once

#include <cstddef>

#include "kernels/sm90/quantize/quantize_params.hpp"

namespace fp8attn::gpu {

/// Workspace bytes of one quantize call: unit_count(p) floats, rounded up to 256 bytes.
size_t quantize_workspace_bytes(const sm90::quant::QuantizeParams& p);

/// `p` with unit_amax pointing into `workspace` (which holds quantize_workspace_bytes(p)).
/// Throws Error(UNSUPPORTED_ON_BACKEND) when the kernels cannot run p (their head dims).
sm90::quant::QuantizeParams plan_quantize(const sm90::quant::QuantizeParams& p, void* workspace);

}  // namespace fp8attn::gpu
