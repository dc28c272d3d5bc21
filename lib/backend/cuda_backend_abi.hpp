// The one symbol libfp8attn_cuda exports, shared by the library and the core's loader. The core
// and the backend exchange C++ objects (Backend, its argument structs), so both must be built
// from the same version of those types: the entry carries the backend ABI version, and the
// loader refuses any other (FP8ATTN_STATUS_CUDA_BACKEND_MISSING, naming both versions).
#pragma once

#include <cstdint>

#include "fp8attn/fp8attn.h"

namespace fp8attn {

class Backend;

/// NOTE: bump whenever Backend, DeviceRuntime or any struct they pass changes layout or meaning.
// 2: Backend gained the attention backward; 3: the forward's amaxes and the host pickup;
// 4: the attention combine (launch_combine) and the KV append (Backend::kv_append,
//    DeviceRuntime::launch_kv_append); 5: CombineParams' decode rows (seq_tokens, E4M3 out) and
//    the decode path (FwdKernelKey::decode, the workspace query's shapes).
inline constexpr uint32_t kCudaBackendAbiVersion = 5;

/// What the exported symbol returns. `create` builds the backend for a device ordinal, or fills
/// `err` (NO_CUDA_DEVICE, UNSUPPORTED_DEVICE, DEVICE_ERROR) and returns NULL; it never throws.
struct CudaBackendEntry {
  uint32_t abi_version;
  uint32_t reserved;
  Backend* (*create)(int32_t device_ordinal, fp8attn_error* err);
};

}  // namespace fp8attn

/// The exported entry point's name (a C symbol, versioned FP8ATTN_CUDA_1 by the library's
/// version script).
#define FP8ATTN_CUDA_BACKEND_ENTRY_SYMBOL "fp8attn_cuda_backend_entry"
