// The decode kernels' epilogue: a consumer thread's two packed rows (token, query head each) of
// O·v_descale/l and their LSE, stored as the CPU engine's decode tile does (decode_tile.cpp):
// into the output (one split: the forward's store) or into the split's partial rows (F32 O and
// the LSE) that the combine kernel then merges.
#pragma once

#include <cstdint>

#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/wgmma.hpp"
#include "kernels/sm90/attention/fwd_epilogue.hpp"
#include "kernels/sm90/attention/fwd_params.hpp"
#include "kernels/sm90/attention/fwd_softmax.hpp"
#include "kernels/sm90/softmax_math.hpp"

namespace fp8attn::sm90 {

/// A consumer thread's rows h = 0, 1 of the tile: token, query head, and whether it is a row.
struct DecodeRows {
  int32_t token[2];
  int32_t head[2];
  bool valid[2];
};

/// The rows h = 0, 1 of the consumer thread whose h = 0 row is row `my_row` of the tile, which
/// starts at packed row `row_begin`.
template <class Tile>
FP8ATTN_HOST_DEVICE DecodeRows decode_rows_of(const Tile& tile, int32_t row_begin, int32_t my_row, int32_t group) {
  DecodeRows at;
  FP8ATTN_UNROLL
  for (int h = 0; h < 2; ++h) {
    const int32_t r = row_begin + my_row + 8 * h;
    at.token[h] = r / group;
    at.head[h] = tile.head_kv * group + r % group;
    at.valid[h] = my_row + 8 * h < tile.rows;
  }
  return at;
}

/// The row of the partials for (split, sequence, token, query head): the engine's
/// DecodePartials::row.
FP8ATTN_HOST_DEVICE int64_t decode_partial_row(const FwdArguments& p, int32_t split, int32_t b, int32_t token,
                                               int32_t head) {
  return ((static_cast<int64_t>(split) * p.batch + b) * p.decode.max_q + token) * p.heads_q + head;
}

template <int kHeadDimO>
FP8ATTN_ARCH_FN void store_decode_output(const AttentionFwdParams& p, const arch::WgmmaAccF32<kHeadDimO>& o,
                                         const FwdRowState& rows, const DecodeRows& at, int32_t batch,
                                         int32_t q_offset, int32_t split, float scale_log2, float v_descale) {
  const int q = static_cast<int>(arch::thread_idx_in_warpgroup() % 4);
  float factor[2], l[2];
  int64_t row[2];
  FP8ATTN_UNROLL
  for (int h = 0; h < 2; ++h) {
    l[h] = quad_row_sum(rows.partial[h]);
    factor[h] = output_factor(l[h], v_descale);
    row[h] = decode_partial_row(p, split, batch, at.token[h], at.head[h]);
  }
  const bool partials = p.decode.part_o != nullptr;
  FP8ATTN_UNROLL
  for (int i = 0; i < kHeadDimO / 2; ++i) {
    const int h = (i >> 1) & 1;
    if (!at.valid[h]) continue;
    const int col = 8 * (i >> 2) + 2 * q + (i & 1);
    const float value = o[i] * factor[h];
    if (partials) {
      p.decode.part_o[row[h] * kHeadDimO + col] = value;
    } else {
      const int64_t out_at = p.out_batch_stride * batch + p.out_seq_stride * (q_offset + at.token[h]) +
                             p.out_head_stride * at.head[h] + p.out_dim_stride * col;
      store_out_element(p, out_at, value);
    }
  }
  if (q != 0) return;
  FP8ATTN_UNROLL
  for (int h = 0; h < 2; ++h) {
    if (!at.valid[h]) continue;
    if (partials)
      p.decode.part_lse[row[h]] = partial_row_lse(rows.max[h], l[h], scale_log2, p.p_scale_log2);
    else if (p.lse != nullptr)
      p.lse[p.lse_batch_stride * batch + p.lse_seq_stride * (q_offset + at.token[h]) + p.lse_head_stride * at.head[h]] =
          row_lse(rows.max[h], l[h], scale_log2, p.p_scale_log2);
  }
}

}  // namespace fp8attn::sm90
