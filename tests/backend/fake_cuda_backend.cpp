// A stand-in libfp8attn_cuda for the loader's version check: it exports the entry symbol with a
// backend ABI version the core does not speak (FP8ATTN_FAKE_BACKEND_ABI, set by the build).
#include <cstdint>

#include "lib/backend/cuda_backend_abi.hpp"

namespace {

fp8attn::Backend* never_created(int32_t, fp8attn_error* err) {
  // NOTE: the loader must refuse before calling this; reaching it is reported as INTERNAL.
  if (err != nullptr) err->status = FP8ATTN_STATUS_INTERNAL;
  return nullptr;
}

constexpr fp8attn::CudaBackendEntry kEntry{FP8ATTN_FAKE_BACKEND_ABI, 0, &never_created};

}  // namespace

extern "C" __attribute__((visibility("default"))) const fp8attn::CudaBackendEntry* fp8attn_cuda_backend_entry() {
  return &kEntry;
}
