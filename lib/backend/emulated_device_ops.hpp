// The emulated runtime's side of the spectral-norm operations (lib/backend/gpu/device_ops.hpp):
// FP8 GEMMs run the project's own sm90 TN GEMM kernel on the SIMT emulator, FP32 GEMMs (which
// that kernel does not take) and the two small per-head steps run as host loops with the CUDA
// kernels' FP32 arithmetic.
#pragma once

#include "kernels/emu/runtime.hpp"
#include "lib/backend/gpu/device_ops.hpp"

namespace fp8attn::emulated {

/// Throws Error(UNSUPPORTED_ON_BACKEND) for what cuBLASLt would refuse (FP8 not TN, misaligned
/// FP8 operands), Error(DEVICE_ERROR) when the emulated kernel fails.
void gemm(const gpu::BatchedGemmDesc& desc, const emu::LaunchConfig& schedule);
void rescale_blocks(const gpu::RescaleDesc& desc);
void power_iteration(const gpu::PowerIterationDesc& desc);

}  // namespace fp8attn::emulated
