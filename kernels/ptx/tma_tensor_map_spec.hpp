// The parameters of a TMA tensor map, as cuTensorMapEncodeTiled takes them, and their
// validation (CUDA Driver API cuTensorMapEncodeTiled; PTX ISA 9.0 §5.5; facts in PTX_FACTS.md
// §6c). Plain host C++ shared by both builds: the emulator keeps these parameters as its tensor
// map, and the CUDA build validates them before handing them to the driver.
//
// This project's subset: tiled mode, rank 2..5, element strides 1, no interleave, zero OOB fill.
// Swizzled maps must have an inner box row of exactly the swizzle span (boxDim[0]*e == 32/64/128):
// the driver also accepts a shorter row, but the shared-memory layout then is undocumented.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/ptx/wgmma_descriptor.hpp"

namespace fp8attn::arch {

/// Element type, numbered as CUtensorMapDataType. FP8 travels as UInt8 (there is no FP8 enum).
enum class TmaDataType : int {
  UInt8 = 0, UInt16 = 1, UInt32 = 2, Int32 = 3, UInt64 = 4, Int64 = 5, Float16 = 6, Float32 = 7,
  Float64 = 8, BFloat16 = 9, Float32Ftz = 10, TFloat32 = 11, TFloat32Ftz = 12,
};

/// Bytes of one element; 0 for a value outside the enum.
constexpr uint32_t tma_element_bytes(TmaDataType t) {
  switch (t) {
    case TmaDataType::UInt8: return 1;
    case TmaDataType::UInt16: case TmaDataType::Float16: case TmaDataType::BFloat16: return 2;
    case TmaDataType::UInt32: case TmaDataType::Int32: case TmaDataType::Float32: case TmaDataType::Float32Ftz:
    case TmaDataType::TFloat32: case TmaDataType::TFloat32Ftz: return 4;
    case TmaDataType::UInt64: case TmaDataType::Int64: case TmaDataType::Float64: return 8;
  }
  return 0;
}

/// CUtensorMapSwizzle code of a swizzle mode (NONE = 0, 32B = 1, 64B = 2, 128B = 3); note that
/// the wgmma descriptor numbers the same modes differently.
constexpr int tma_swizzle_code(Swizzle s) { return static_cast<int>(s); }

inline constexpr int kTmaMaxRank = 5;

/// The parameters of cuTensorMapEncodeTiled, innermost dimension first.
struct TensorMapSpec {
  TmaDataType data_type = TmaDataType::UInt8;
  int rank = 2;
  const void* global_address = nullptr;
  uint64_t global_dims[kTmaMaxRank] = {1, 1, 1, 1, 1};          // elements per dimension
  uint64_t global_strides_bytes[kTmaMaxRank - 1] = {0, 0, 0, 0};  // of dims 1..rank-1
  uint32_t box_dims[kTmaMaxRank] = {1, 1, 1, 1, 1};              // elements per dimension
  uint32_t element_strides[kTmaMaxRank] = {1, 1, 1, 1, 1};
  Swizzle swizzle = Swizzle::None;
};

/// Empty when the spec is valid; otherwise the first rule it breaks.
std::string validate_tensor_map_spec(const TensorMapSpec& spec);

/// Bytes one load of the box writes to shared memory (zero-filled elements included), which is
/// what the load's complete_tx counts (CUTLASS's TmaTransactionBytes; PTX_FACTS.md §6b).
constexpr uint32_t tma_box_bytes(const TensorMapSpec& spec) {
  uint32_t bytes = tma_element_bytes(spec.data_type);
  for (int i = 0; i < spec.rank; ++i) bytes *= spec.box_dims[i];
  return bytes;
}

}  // namespace fp8attn::arch
