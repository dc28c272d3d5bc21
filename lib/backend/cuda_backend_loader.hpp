// Finds and loads libfp8attn_cuda with dlopen, so the core never links CUDA. The library is
// looked up at $FP8ATTN_CUDA_BACKEND first, then next to libfp8attn itself.
#pragma once

#include <memory>

#include "lib/backend/backend.hpp"

namespace fp8attn {

/// Loads the CUDA backend for `device_ordinal`. Throws Error:
/// FP8ATTN_STATUS_CUDA_BACKEND_MISSING when the library cannot be loaded (the message lists
/// every path tried and why each failed), FP8ATTN_STATUS_NO_CUDA_DEVICE or
/// FP8ATTN_STATUS_UNSUPPORTED_DEVICE as the library reports them.
std::unique_ptr<Backend> load_cuda_backend(int device_ordinal);

}  // namespace fp8attn
