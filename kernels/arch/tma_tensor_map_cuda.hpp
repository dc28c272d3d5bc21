// Encoding a tensor map with the CUDA driver (CUDA build only). The driver entry point
// cuTensorMapEncodeTiled is obtained through cudaGetDriverEntryPointByVersion, so nothing links
// against libcuda; the runtime finds the driver already loaded by the CUDA context.
#pragma once

#include <string>

#include "kernels/ptx/tma_tensor_map_spec.hpp"

namespace fp8attn::arch {

/// Validates `spec` with this project's rules, then encodes it into the 128 bytes at `out`
/// (64-byte aligned). Returns an empty string on success, else why it failed (including the
/// driver's error code).
std::string encode_tensor_map_cuda(const TensorMapSpec& spec, void* out);

}  // namespace fp8attn::arch
