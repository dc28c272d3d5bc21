// The per-row steps the two decode tiles share (decode_tile.cpp for the tensor core's addition,
// decode_fp32.cpp for FP32 accumulation): one packed row's online softmax over one KV block, and
// the epilogue that writes a tile's rows (the forward's output store, or a split's partials).
// The tiles differ in their products only; these steps are one text, so they cannot drift.
// Included by both tiles inside their per-ISA namespaces (the `engine` rename of
// isa/query_tile_in_isa.cpp and isa/decode_fp32_in_isa.cpp), after row_softmax.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "kernels/sm90/decode_schedule.hpp"
#include "kernels/sm90/kv_schedule.hpp"
#include "kernels/sm90/mask.hpp"
#include "kernels/sm90/softmax_math.hpp"
#include "lib/attention/engine/decode_tile.hpp"
#include "lib/attention/engine/row_softmax.hpp"
#if defined(__AVX512F__)
#include "lib/attention/engine/p_cast_avx512.hpp"  // the cast of P on 16 lanes, same bits
#endif

namespace fp8attn::engine {

/// Hands out 64-byte-aligned float arrays, one after another, from a tile's scratch buffer.
/// NOTE: with no buffer (nullptr) it only measures: it never forms a pointer past null, which
/// would be undefined behaviour even when nothing dereferences it.
class ScratchCarve {
 public:
  explicit ScratchCarve(void* scratch) : base_(static_cast<unsigned char*>(scratch)) {}
  float* take(size_t floats) {
    float* here = base_ ? reinterpret_cast<float*>(base_ + at_) : nullptr;
    at_ += (floats * sizeof(float) + 63) / 64 * 64;
    return here;
  }
  size_t bytes() const { return at_; }

 private:
  unsigned char* base_;
  size_t at_ = 0;
};

/// What a tile's rows share for one call: the folded host scales and the softmax's options.
struct DecodeRowRules {
  sm90::MaskParams mask;
  float scale_log2, p_scale_log2, tie_tol_raw, stabilized_beta, stabilized_shift_cap_log2;
  bool stabilized, telemetry, fp8;
};

/// The rules of a decode tile's rows for sequence `span`, with the tile's folded logit scales.
inline DecodeRowRules decode_row_rules(const AttentionConfig& c, const SeqSpan& span, float scale_log2,
                                       float tie_tol_raw) {
  return {sm90::MaskParams{c.causal, c.window_left, c.window_right, span.seqlen_q, span.seqlen_k},
          scale_log2,
          static_cast<float>(c.p_scale_log2),
          tie_tol_raw,
          c.stabilized_beta,
          c.stabilized_shift_cap_log2,
          c.softmax_variant == FP8ATTN_SOFTMAX_STABILIZED,
          c.telemetry != 0,
          c.fp8()};
}

/// The KV blocks a decode tile's rows (query tokens [tok0, tok1)) visit, in the forward's order.
inline sm90::KvSchedule decode_kv_schedule(const AttentionConfig& c, const DecodeRowRules& rules, int64_t tok0,
                                           int64_t tok1) {
  return sm90::make_kv_schedule(rules.mask, tok0, tok1, c.tile.block_n, c.sink_tokens,
                                c.kv_order == FP8ATTN_KV_ORDER_REVERSE);
}

/// One packed row (query `token`) over one block of `keys` keys from key0: s holds the row's
/// logits; on return it holds the cast P. Before the mask: s times k_factor when k_factor is not
/// null, then times the per-key k_token; between the row sums and the cast, times the per-key
/// v_ratio (each null when absent). Updates the row's max and four quad partials and the tile's
/// max |logit|; returns the factor that rescales the row's O.
inline float decode_row_softmax(const DecodeRowRules& rules, float* s, int keys, int64_t token, int64_t key0,
                                const float* k_factor, const float* k_token, const float* v_ratio, float& row_max_r,
                                float* row_sum4, float& tile_max_abs_logit, TileTelemetry& telemetry) {
  if (k_factor)
    for (int j = 0; j < keys; ++j) s[j] *= *k_factor;
  if (k_token)
    for (int j = 0; j < keys; ++j) s[j] *= k_token[j];
  if (!sm90::block_fully_visible(rules.mask, token, token + 1, key0, key0 + keys)) {
    const sm90::KeyRange vis = sm90::visible_keys(rules.mask, token);
    for (int j = 0; j < keys; ++j)
      if (key0 + j < vis.first || key0 + j > vis.last) s[j] = sm90::kNegInf;
  }
  float block_max = row_max(s, keys);
  if (rules.telemetry) tile_max_abs_logit = std::max(tile_max_abs_logit, row_max_abs_visible(s, keys));
  if (rules.stabilized && block_max != sm90::kNegInf)
    block_max = sm90::stabilized_block_max(block_max, row_ties(s, keys, block_max, rules.tie_tol_raw),
                                           rules.stabilized_beta, rules.stabilized_shift_cap_log2, rules.scale_log2);
  const float old_max = row_max_r;
  const float new_max = std::max(old_max, block_max);
  const float rescale = sm90::rescale_factor(old_max, new_max, rules.scale_log2);
  row_max_r = new_max;
  row_p_tilde(s, keys, rules.scale_log2, sm90::max_scaled(new_max, rules.scale_log2, rules.p_scale_log2));
  for (int q = 0; q < 4; ++q) row_sum4[q] *= rescale;
  accumulate_quad_partials(s, keys, row_sum4);
  if (v_ratio)
    for (int j = 0; j < keys; ++j) s[j] *= v_ratio[j];
#if defined(__AVX512F__)
  if (rules.fp8)
    p_cast_avx512::cast_p_row<true, false>(s, keys, telemetry.p_positive, telemetry.p_underflow);
  else
    p_cast_avx512::cast_p_row<false, false>(s, keys, telemetry.p_positive, telemetry.p_underflow);
#else
  if (rules.fp8)
    row_cast_p<true>(s, keys, telemetry.p_positive, telemetry.p_underflow);
  else
    row_cast_p<false>(s, keys, telemetry.p_positive, telemetry.p_underflow);
#endif
  return rescale;
}

/// The epilogue of a tile's `rows` packed rows (from at.row_begin; `group` query heads per KV
/// head): O (rows × dv) times the row's output factor, with the LSE, to the output as the
/// forward's epilogue writes it (one split), or to the split's partial rows.
inline void decode_rows_epilogue(const AttentionProblem& p, const DecodeTileCoord& at, const SeqSpan& span, int group,
                                 int rows, int dv, const float* o, const float* row_max, const float* row_sum,
                                 float v_descale, float scale_log2, float p_scale_log2, const DecodePartials& parts,
                                 TileTelemetry& telemetry) {
  for (int r = 0; r < rows; ++r) {
    const float* partial = row_sum + static_cast<int64_t>(r) * 4;
    const float l = sm90::quad_sum(partial[0], partial[1], partial[2], partial[3]);
    const float factor = sm90::output_factor(l, v_descale);
    const float lse = sm90::row_lse(row_max[r], l, scale_log2, p_scale_log2);
    const int64_t token = sm90::decode_row_token(at.row_begin + r, group);
    const int head = at.head_kv * group + sm90::decode_row_head(at.row_begin + r, group);
    const float* orow = o + static_cast<int64_t>(r) * dv;
    if (parts.o == nullptr) {
      for (int e = 0; e < dv; ++e) store_output(p, at.batch, span.q_offset + token, head, e, orow[e] * factor, telemetry);
      if (p.lse.data) {
        if (std::isnan(lse) || lse == std::numeric_limits<float>::infinity()) ++telemetry.nonfinite;
        static_cast<float*>(p.lse.data)[at.batch * p.lse.batch_stride + (span.q_offset + token) * p.lse.seq_stride +
                                        head * p.lse.head_stride] = lse;
      }
      continue;
    }
    const int64_t at_row = parts.row(at.split, at.batch, token, head);
    float* out = parts.o + at_row * dv;
    for (int e = 0; e < dv; ++e) out[e] = orow[e] * factor;
    parts.lse[at_row] = sm90::partial_row_lse(row_max[r], l, scale_log2, p_scale_log2);
  }
}

}  // namespace fp8attn::engine
