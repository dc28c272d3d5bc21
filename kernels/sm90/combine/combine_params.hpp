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
  /// The decode path's merge (kernels/sm90/decode; never set by fp8attn_attention_combine): with
  /// seq_tokens > 0, row t of the parts is token t % seq_tokens of sequence b = t / seq_tokens,
  /// merged only when that token exists (q_len from cu_seqlens_q in device memory, else
  /// seqlen_q) and stored at row q_offset + token of sequence b: out + b·out_batch_stride +
  /// row·out_stride[0] + ..., lse alike. E4M3 out stores round_e4m3_satfinite(O · out_scale),
  /// as the forward's epilogue.
  int64_t seq_tokens = 0;
  const int32_t* cu_seqlens_q = nullptr;
  int64_t seqlen_q = 0;
  int64_t out_batch_stride = 0, lse_batch_stride = 0;
  bool out_e4m3 = false;
  float out_scale = 1.0f;
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

/// Where row (t, h) is stored: whether it is merged at all, and the offsets of its out element 0
/// and of its LSE (the plain layout, or the decode path's sequences: seq_tokens above).
struct RowTarget {
  bool merged;
  int64_t out, lse;
};
FP8ATTN_HOST_DEVICE RowTarget row_target(const CombineParams& p, int64_t t, int64_t h) {
  if (p.seq_tokens <= 0) return {true, out_offset(p, t, h, 0), lse_offset(p, t, h)};
  const int64_t b = t / p.seq_tokens, token = t % p.seq_tokens;
  int64_t q0 = 0, q_len = p.seqlen_q;
  if (p.cu_seqlens_q != nullptr) {
    q0 = p.cu_seqlens_q[b];
    q_len = p.cu_seqlens_q[b + 1] - q0;
  }
  const int64_t row = q0 + token;
  return {token < q_len, b * p.out_batch_stride + row * p.out_stride[0] + h * p.out_stride[1],
          b * p.lse_batch_stride + row * p.lse_stride[0] + h * p.lse_stride[1]};
}

}  // namespace fp8attn::sm90::combine
