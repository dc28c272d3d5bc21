// The Hopper backend: every operation of Backend (the attention forward with E4M3 or BF16 inputs
// and its telemetry copy, the BF16 attention backward, the quantizer, the QK spectral norms and
// the scale state's device amax pickup), planned by the host code of lib/backend/gpu and run
// through a DeviceRuntime, the CUDA one or the emulator's.
#pragma once

#include <memory>

#include "lib/backend/backend.hpp"
#include "lib/backend/device_runtime.hpp"

namespace fp8attn {

std::unique_ptr<Backend> make_gpu_backend(std::unique_ptr<DeviceRuntime> runtime);

}  // namespace fp8attn
