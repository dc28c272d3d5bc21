// The QK spectral norms on a device runtime (DESIGN §3): head Grams as FP8 GEMMs (E4M3 in, FP32
// accumulation, strided-batched over heads), the product G_Q,h·G_K,g and its 2^5-th power as
// FP32 GEMMs, and a power iteration per head ending in an FP32 Rayleigh quotient on the Grams:
// the algorithm of the CPU path (lib/spectral/gram_power_iteration.hpp). The plan builds the
// GEMM descriptors and carves the workspace once, for the CUDA runtime (cuBLASLt) and the
// emulator (the project's GEMM) alike.
#pragma once

#include <cstddef>

#include "lib/backend/device_runtime.hpp"
#include "lib/spectral/qk_spectral_norms.hpp"
#include "lib/spectral/qk_weights.hpp"

namespace fp8attn::gpu {

/// Workspace bytes: four per-head d_h × d_h FP32 buffers and the runtime's GEMM scratch.
size_t spectral_workspace_bytes(const QkShape& shape, size_t gemm_scratch_bytes);

/// Throws Error (UNSUPPORTED_ON_BACKEND, BAD_DTYPE, BAD_STRIDE) for weights the FP8 GEMMs cannot
/// read: E4M3 only, unit column stride, rows and base on 16 bytes, head_dim a multiple of 16 up
/// to 256 (one thread per row in the iteration), d_model a multiple of 16.
void check_spectral_supported(const WeightMatrix& wq, const WeightMatrix& wk, const QkShape& shape);

/// Enqueues the whole computation on `stream` through `runtime`: allocates nothing, never
/// synchronizes, reads no device memory. `workspace` holds spectral_workspace_bytes().
void run_spectral(DeviceRuntime& runtime, const WeightMatrix& wq, const WeightMatrix& wk, const QkShape& shape,
                  const PowerIterationSettings& settings, float* sigma_out, void* workspace, CUstream_st* stream);

}  // namespace fp8attn::gpu
