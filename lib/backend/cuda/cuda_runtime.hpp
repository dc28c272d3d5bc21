// The CUDA implementation of the device-runtime seam (lib/backend/device_runtime.hpp): cudart
// (linked statically), driver entry points through cudaGetDriverEntryPointByVersion (never
// -lcuda), cuBLASLt (linked dynamically) for the spectral GEMMs. Part of libfp8attn_cuda only.
#pragma once

#include <memory>

#include "lib/backend/device_runtime.hpp"

namespace fp8attn::cuda {

/// Checks for a driver and an sm_90 device at `ordinal` and builds the runtime. Throws Error:
/// NO_CUDA_DEVICE (no driver, no device, ordinal out of range), UNSUPPORTED_DEVICE (another
/// architecture), DEVICE_ERROR (a CUDA or cuBLASLt call failed). Each message names the device,
/// its compute capability, and the driver and runtime versions.
std::unique_ptr<DeviceRuntime> make_cuda_runtime(int ordinal);

}  // namespace fp8attn::cuda
