// libfp8attn_cuda's only exported symbol (cuda_backend_abi.hpp): the versioned entry whose
// create() checks the device and builds the Hopper backend over the CUDA runtime.
#include <cstdio>
#include <exception>

#include "lib/backend/cuda/cuda_runtime.hpp"
#include "lib/backend/cuda_backend_abi.hpp"
#include "lib/backend/gpu/gpu_backend.hpp"
#include "lib/core/error.hpp"

namespace fp8attn::cuda {
namespace {

/// NOTE: every message starts with the library's name, so the core's fallback WARN and the
/// caller's error both say which library refused.
void fill(fp8attn_error* err, int32_t status, const char* message) {
  if (err == nullptr || err->struct_size < sizeof(fp8attn_error)) return;
  err->status = status;
  std::snprintf(err->message, sizeof err->message, "libfp8attn_cuda: %s", message);
}

/// NOTE: no exception leaves the library through this C entry; the core gets a status.
Backend* create(int32_t device_ordinal, fp8attn_error* err) {
  try {
    return make_gpu_backend(make_cuda_runtime(device_ordinal)).release();
  } catch (const Error& e) {
    fill(err, e.status(), e.what());
  } catch (const std::exception& e) {
    fill(err, FP8ATTN_STATUS_INTERNAL, e.what());
  } catch (...) {
    fill(err, FP8ATTN_STATUS_INTERNAL, "unknown exception in libfp8attn_cuda");
  }
  return nullptr;
}

constexpr CudaBackendEntry kEntry{kCudaBackendAbiVersion, 0, &create};

}  // namespace
}  // namespace fp8attn::cuda

extern "C" __attribute__((visibility("default"))) const fp8attn::CudaBackendEntry* fp8attn_cuda_backend_entry() {
  return &fp8attn::cuda::kEntry;
}
