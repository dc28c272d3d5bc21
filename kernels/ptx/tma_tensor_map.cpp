#include "kernels/ptx/tma_tensor_map_spec.hpp"

#include <sstream>

namespace fp8attn::arch {

std::string validate_tensor_map_spec(const TensorMapSpec& s) {
  std::ostringstream why;
  const uint32_t e = tma_element_bytes(s.data_type);
  if (e == 0) return "tensor map: unknown data type";
  if (s.rank < 2 || s.rank > kTmaMaxRank) {
    why << "tensor map: rank " << s.rank << " outside 2..5";
    return why.str();
  }
  if (s.global_address == nullptr || reinterpret_cast<uintptr_t>(s.global_address) % 16 != 0)
    return "tensor map: global address must be non-null and 16-byte aligned";
  for (int i = 0; i < s.rank; ++i) {
    if (s.global_dims[i] < 1 || s.global_dims[i] > (uint64_t{1} << 32)) {
      why << "tensor map: global dim " << i << " = " << s.global_dims[i] << " outside [1, 2^32]";
      return why.str();
    }
    if (s.box_dims[i] < 1 || s.box_dims[i] > 256) {
      why << "tensor map: box dim " << i << " = " << s.box_dims[i] << " outside [1, 256]";
      return why.str();
    }
    // NOTE: the driver accepts element strides 1..8, but where a strided box element lands is
    // not documented (PTX_FACTS.md §6b), so this project uses 1 only.
    if (s.element_strides[i] != 1) {
      why << "tensor map: element stride " << i << " = " << s.element_strides[i] << " (only 1 is supported)";
      return why.str();
    }
  }
  for (int i = 1; i < s.rank; ++i) {
    const uint64_t stride = s.global_strides_bytes[i - 1];
    if (stride % 16 != 0 || stride >= (uint64_t{1} << 40)) {
      why << "tensor map: global stride of dim " << i << " = " << stride << " bytes is not a multiple of 16 below 2^40";
      return why.str();
    }
    const uint64_t below = i == 1 ? s.global_dims[0] * e : s.global_strides_bytes[i - 2] * s.global_dims[i - 1];
    if (stride < below) {
      why << "tensor map: global stride of dim " << i << " = " << stride << " bytes overlaps the " << below
          << " bytes of the dimensions below it";
      return why.str();
    }
  }
  const uint32_t inner_bytes = s.box_dims[0] * e;
  if (inner_bytes % 16 != 0) {
    why << "tensor map: inner box row of " << inner_bytes << " bytes is not a multiple of 16";
    return why.str();
  }
  if (s.swizzle != Swizzle::None && inner_bytes != swizzle_span_bytes(s.swizzle)) {
    why << "tensor map: inner box row of " << inner_bytes << " bytes must equal the swizzle span of "
        << swizzle_span_bytes(s.swizzle) << " bytes (the driver limit is <=; a shorter row's layout is undocumented)";
    return why.str();
  }
  return {};
}


}  // namespace fp8attn::arch
