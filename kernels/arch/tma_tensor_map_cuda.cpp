// Compiled only in the CUDA build (kernels/sm90/CMakeLists.txt, FP8ATTN_BUILD_CUDA).
#include "kernels/arch/tma_tensor_map_cuda.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <sstream>

namespace fp8attn::arch {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 driver_encode_tiled(std::string& error) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
  // NOTE: pinned to the CUDA 12.0 ABI of the function (the version that introduced it), so a
  // newer driver hands back the signature this file was compiled against.
  const cudaError_t status =
      cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &query);
  if (status != cudaSuccess || query != cudaDriverEntryPointSuccess || fn == nullptr) {
    std::ostringstream s;
    s << "cuTensorMapEncodeTiled not found through cudaGetDriverEntryPointByVersion: " << cudaGetErrorString(status)
      << " (query result " << static_cast<int>(query) << ")";
    error = s.str();
    return nullptr;
  }
  return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
}

}  // namespace

std::string encode_tensor_map_cuda(const TensorMapSpec& spec, void* out) {
  static_assert(sizeof(CUtensorMap) == 128, "CUtensorMap is 128 bytes (PTX ISA 9.0 §5.5.8)");
  if (std::string why = validate_tensor_map_spec(spec); !why.empty()) return why;
  if (reinterpret_cast<uintptr_t>(out) % 64 != 0) return "tensor map: destination must be 64-byte aligned";
  std::string error;
  const auto encode = driver_encode_tiled(error);
  if (encode == nullptr) return error;
  // NOTE: the driver call needs a current context (CUresult 201 on an H200 from a thread that
  // had made no runtime call yet); cudaSetDevice makes the runtime's primary context of the
  // thread's device current (CUDA 12+), as any runtime call that touches the device would.
  int device = 0;
  if (cudaGetDevice(&device) == cudaSuccess) (void)cudaSetDevice(device);
  cuuint64_t dims[kTmaMaxRank], strides[kTmaMaxRank - 1];
  cuuint32_t box[kTmaMaxRank], element_strides[kTmaMaxRank];
  for (int i = 0; i < spec.rank; ++i) {
    dims[i] = spec.global_dims[i];
    box[i] = spec.box_dims[i];
    element_strides[i] = spec.element_strides[i];
    if (i > 0) strides[i - 1] = spec.global_strides_bytes[i - 1];
  }
  const CUresult result = encode(
      static_cast<CUtensorMap*>(out), static_cast<CUtensorMapDataType>(spec.data_type), static_cast<cuuint32_t>(spec.rank),
      const_cast<void*>(spec.global_address), dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      static_cast<CUtensorMapSwizzle>(tma_swizzle_code(spec.swizzle)),
      // NOTE: L2 promotion is a fetch-granularity hint; 128B is what CuTe uses for these tiles.
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS) {
    std::ostringstream s;
    s << "cuTensorMapEncodeTiled failed with CUresult " << static_cast<int>(result);
    return s.str();
  }
  return {};
}

}  // namespace fp8attn::arch
