// The quantizer's problem after validation, as plain data both the CPU quantizer and the Hopper
// kernel read: tensor views, the granularity, and the split of every (sequence, head) into work
// units of rows, each with its own amax slot.
//
// Two passes, on the CPU and on the GPU alike: pass 1 rotates each unit's rows and records the
// unit's amax; pass 2 reduces the amax of each descale's slice from the units, and casts. The
// maximum is exact and order-free, so how rows are split into units never changes a bit.
#pragma once

#include <cstdint>

// NOTE: a macro of its own rather than platform.hpp's FP8ATTN_HOST_DEVICE: the CPU quantizer is
// compiled beside tile_config.hpp, which defines that name differently.
#ifndef FP8ATTN_QUANT_FN
#if defined(__CUDACC__)
#define FP8ATTN_QUANT_FN __host__ __device__ __forceinline__
#else
#define FP8ATTN_QUANT_FN inline
#endif
#endif

namespace fp8attn::sm90::quant {

/// Explicit numbers: the same values as fp8attn_quant_granularity.
enum class Granularity : int32_t { PerTensor = 0, PerHead = 1, PerBlock = 2 };

struct QuantizeParams {
  // Input [b, row, h, e] at input + b·in_stride[0] + row·in_stride[1] + h·in_stride[2] +
  // e·in_stride[3] elements; packed layouts have in_stride[0] = 0 and rows from cu_seqlens.
  const void* input = nullptr;
  bool input_is_bf16 = false;
  int64_t in_stride[4] = {0, 0, 0, 0};
  uint8_t* output = nullptr;  ///< E4M3, same indexing with out_stride
  int64_t out_stride[4] = {0, 0, 0, 0};
  float* descale = nullptr;   ///< [b, head group, block] with descale_stride (unused dims 0)
  int64_t descale_stride[3] = {0, 0, 0};
  float* tensor_amax = nullptr;  ///< optional out: amax of the whole (rotated) tensor
  const int32_t* cu_seqlens = nullptr;  ///< packed layout: I32 [batch + 1]; null when padded
  int64_t batch = 0, seqlen = 0, heads = 0, head_dim = 0;  ///< seqlen: padded length
  Granularity granularity = Granularity::PerTensor;
  int32_t head_group = 1;
  int64_t block_rows = 1;   ///< per-block: rows per descale block
  int64_t leading_rows = 0; ///< per-block: rows [0, leading_rows) form block 0 (sink isolation's grid)
  int64_t num_blocks = 1;   ///< per-block: the descale tensor's block extent
  bool rotate = false;
  int32_t log2_head_dim = 0;  ///< when rotating
  uint64_t seed = 0;
  int32_t margin = 0;
  // Work units: (b, h, u) covers rows [unit_first_row(u), unit_first_row(u + 1)) of sequence b,
  // head h: blocks of unit_rows from row 0, or after a leading unit of leading_rows rows.
  int64_t unit_rows = 1;
  int64_t units_per_head = 1;
  float* unit_amax = nullptr;  ///< workspace: [batch, heads, units_per_head]
};

/// First row and row count of sequence b (rows index the tensor's seq dimension).
struct RowSpan {
  int64_t offset, rows;
};
FP8ATTN_QUANT_FN RowSpan sequence_rows(const QuantizeParams& p, int64_t b) {
  if (p.cu_seqlens == nullptr) return {0, p.seqlen};
  return {p.cu_seqlens[b], static_cast<int64_t>(p.cu_seqlens[b + 1]) - p.cu_seqlens[b]};
}

FP8ATTN_QUANT_FN int64_t input_offset(const QuantizeParams& p, int64_t b, int64_t row, int64_t h, int64_t e) {
  return b * p.in_stride[0] + row * p.in_stride[1] + h * p.in_stride[2] + e * p.in_stride[3];
}
FP8ATTN_QUANT_FN int64_t output_offset(const QuantizeParams& p, int64_t b, int64_t row, int64_t h, int64_t e) {
  return b * p.out_stride[0] + row * p.out_stride[1] + h * p.out_stride[2] + e * p.out_stride[3];
}

/// The first row of unit u within its sequence. With leading rows (per-block under sink
/// isolation) unit 0 is rows [0, leading_rows) and unit u ≥ 1 starts at leading_rows +
/// (u − 1)·unit_rows: the grid of kernels/sm90/kv_schedule.hpp's kv_descale_slot.
FP8ATTN_QUANT_FN int64_t unit_first_row(const QuantizeParams& p, int64_t u) {
  if (p.leading_rows == 0 || u == 0) return u * p.unit_rows;
  return p.leading_rows + (u - 1) * p.unit_rows;
}

FP8ATTN_QUANT_FN int64_t unit_index(const QuantizeParams& p, int64_t b, int64_t h, int64_t u) {
  return (b * p.heads + h) * p.units_per_head + u;
}

/// The work units whose rows share one descale with unit (b, h, u): a box of
/// [b_begin, b_end) × [h_begin, h_end) × [u_begin, u_end) in unit coordinates.
struct UnitBox {
  int64_t b_begin, b_end, h_begin, h_end, u_begin, u_end;
  FP8ATTN_QUANT_FN int64_t count() const { return (b_end - b_begin) * (h_end - h_begin) * (u_end - u_begin); }
};
FP8ATTN_QUANT_FN UnitBox scale_group(const QuantizeParams& p, int64_t b, int64_t h, int64_t u) {
  const int64_t h0 = (h / p.head_group) * p.head_group;
  switch (p.granularity) {
    case Granularity::PerTensor: return {0, p.batch, 0, p.heads, 0, p.units_per_head};
    case Granularity::PerHead: return {b, b + 1, h0, h0 + p.head_group, 0, p.units_per_head};
    default: return {b, b + 1, h0, h0 + p.head_group, u, u + 1};  // unit_rows == block_rows
  }
}
/// The i-th unit of a box, i in [0, count()), as an index into unit_amax.
FP8ATTN_QUANT_FN int64_t unit_in_box(const QuantizeParams& p, const UnitBox& box, int64_t i) {
  const int64_t nu = box.u_end - box.u_begin, nh = box.h_end - box.h_begin;
  const int64_t u = box.u_begin + i % nu, h = box.h_begin + (i / nu) % nh, b = box.b_begin + i / (nu * nh);
  return unit_index(p, b, h, u);
}

/// True for the one unit of its scale group that writes the group's descale: the group's first.
FP8ATTN_QUANT_FN bool writes_descale(const QuantizeParams& p, int64_t b, int64_t h, int64_t u) {
  const UnitBox box = scale_group(p, b, h, u);
  return b == box.b_begin && h == box.h_begin && u == box.u_begin;
}

/// Where the descale of unit (b, h, u)'s group lives.
FP8ATTN_QUANT_FN int64_t descale_offset(const QuantizeParams& p, int64_t b, int64_t h, int64_t u) {
  switch (p.granularity) {
    case Granularity::PerTensor: return 0;
    case Granularity::PerHead: return b * p.descale_stride[0] + (h / p.head_group) * p.descale_stride[1];
    default:
      return b * p.descale_stride[0] + (h / p.head_group) * p.descale_stride[1] + u * p.descale_stride[2];
  }
}

}  // namespace fp8attn::sm90::quant
