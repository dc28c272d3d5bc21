// The tensor map a kernel receives. On the GPU it is the driver's opaque 128-byte CUtensorMap,
// encoded by tma_tensor_map_cuda.cpp; on the emulator it carries the validated parameters
// (tma_tensor_map_spec.hpp).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/ptx/build_switch.hpp"
#include "kernels/ptx/tma_tensor_map_spec.hpp"

namespace fp8attn::arch {

#if FP8ATTN_DEVICE_BUILD
/// The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned (PTX ISA 9.0 §5.5.8).
struct alignas(64) TensorMap {
  uint64_t opaque[16];
};
#define FP8ATTN_GRID_CONSTANT __grid_constant__
#else
/// The emulator's tensor map: the validated parameters themselves.
struct TensorMap {
  TensorMapSpec spec;
};
#define FP8ATTN_GRID_CONSTANT
#endif

#if !FP8ATTN_DEVICE_BUILD
/// The emulator's counterpart of cuTensorMapEncodeTiled; throws std::invalid_argument with the
/// rule broken.
inline TensorMap make_emulated_tensor_map(const TensorMapSpec& spec) {
  if (std::string why = validate_tensor_map_spec(spec); !why.empty()) throw std::invalid_argument(why);
  return TensorMap{spec};
}
#endif

}  // namespace fp8attn::arch
