// Reading and writing one element of a tensor of a runtime dtype, through the converters.
#pragma once

#include <cstdint>
#include <cstring>

#include "fp8attn/fp8attn.h"
#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"

namespace fp8attn::num {

/// Value of element `index` of a buffer of dtype E4M3, E5M2, BF16, F32 or F64, as float
/// (exact for every type but F64).
inline float load_as_float(const void* data, int32_t dtype, int64_t index) {
  switch (dtype) {
    case FP8ATTN_DTYPE_E4M3: return e4m3_to_float(static_cast<const uint8_t*>(data)[index]);
    case FP8ATTN_DTYPE_E5M2: return e5m2_to_float(static_cast<const uint8_t*>(data)[index]);
    case FP8ATTN_DTYPE_BF16: return bf16_to_float(static_cast<const uint16_t*>(data)[index]);
    case FP8ATTN_DTYPE_F32: return static_cast<const float*>(data)[index];
    case FP8ATTN_DTYPE_F64: return static_cast<float>(static_cast<const double*>(data)[index]);
    default: return 0.0f;  // dtypes are validated before any load
  }
}

/// Stores `value` into element `index` of a BF16, F32 or F64 buffer (rounding to nearest even).
inline void store_from_float(void* data, int32_t dtype, int64_t index, float value) {
  switch (dtype) {
    case FP8ATTN_DTYPE_BF16: static_cast<uint16_t*>(data)[index] = float_to_bf16(value); break;
    case FP8ATTN_DTYPE_F32: static_cast<float*>(data)[index] = value; break;
    case FP8ATTN_DTYPE_F64: static_cast<double*>(data)[index] = value; break;
    case FP8ATTN_DTYPE_E4M3: static_cast<uint8_t*>(data)[index] = float_to_e4m3(value); break;
    default: break;
  }
}

}  // namespace fp8attn::num
