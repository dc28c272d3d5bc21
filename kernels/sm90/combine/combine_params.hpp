// fp8attn_attention_combine's problem after validation, as plain data the CPU implementation
// (lib/combine) and the kernel (combine_kernel.hpp) both read: one row per (token, head), each
// merged from num_parts partial rows.
#pragma once

#include <cstdint>

#include "kernels/ptx/build_switch.hpp"

namespace fp8attn::sm90::combine {

struct CombineParams {
  /// partial_out [p, t, h, e] at partial_out + p·po_stride[0] + t·po_stride[1] + h·po_stride[2] +
  /// e·po_stride[3] elements; F32 or BF16 (partial_out_bf16).
  const void* partial_out = nullptr;
  bool partial_out_bf16 = false;
  int64_t po_stride[4] = {0, 0, 0, 0};
  const float* partial_lse = nullptr;  ///< [p, t, h]
  int64_t pl_stride[3] = {0, 0, 0};
  void* out = nullptr;  ///< [t, h, e], F32 or BF16 (out_bf16)
  bool out_bf16 = false;
  int64_t out_stride[3] = {0, 0, 0};
  float* lse = nullptr;  ///< optional [t, h]
  int64_t lse_stride[2] = {0, 0};
  int32_t num_parts = 0;  ///< 1..kMaxParts
  int64_t tokens = 0, heads = 0, head_dim = 0;
};

/// FP8ATTN_MAX_COMBINE_PARTS: the kernel keeps one weight per part in shared memory.
inline constexpr int32_t kMaxParts = 256;

FP8ATTN_HOST_DEVICE int64_t row_count(const CombineParams& p) { return p.tokens * p.heads; }

FP8ATTN_HOST_DEVICE int64_t partial_lse_offset(const CombineParams& p, int64_t part, int64_t t, int64_t h) {
  return part * p.pl_stride[0] + t * p.pl_stride[1] + h * p.pl_stride[2];
}
FP8ATTN_HOST_DEVICE int64_t partial_out_offset(const CombineParams& p, int64_t part, int64_t t, int64_t h, int64_t e) {
  return part * p.po_stride[0] + t * p.po_stride[1] + h * p.po_stride[2] + e * p.po_stride[3];
}
FP8ATTN_HOST_DEVICE int64_t out_offset(const CombineParams& p, int64_t t, int64_t h, int64_t e) {
  return t * p.out_stride[0] + h * p.out_stride[1] + e * p.out_stride[2];
}
FP8ATTN_HOST_DEVICE int64_t lse_offset(const CombineParams& p, int64_t t, int64_t h) {
  return t * p.lse_stride[0] + h * p.lse_stride[1];
}

}  // namespace fp8attn::sm90::combine
