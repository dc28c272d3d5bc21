// A dense, row-major host tensor view for the C API, as the tools build them around std::vector
// storage: the last dimension contiguous, each stride the product of the extents after it.
#pragma once

#include <cstdint>
#include <vector>

#include "fp8attn/fp8attn.h"

namespace fp8attn::workloads {

inline fp8attn_tensor dense_host_tensor(void* data, int32_t dtype, const std::vector<int64_t>& shape) {
  fp8attn_tensor t{};
  t.struct_size = sizeof t;
  t.data = data;
  t.dtype = dtype;
  t.device = FP8ATTN_DEVICE_HOST;
  t.rank = static_cast<int32_t>(shape.size());
  int64_t stride = 1;
  for (int i = t.rank - 1; i >= 0; --i) t.shape[i] = shape[i], t.stride[i] = stride, stride *= shape[i];
  return t;
}

}  // namespace fp8attn::workloads
