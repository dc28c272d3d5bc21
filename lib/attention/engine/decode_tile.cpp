#include "lib/attention/engine/decode_tile.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/sm90/decode_schedule.hpp"
#include "kernels/sm90/kv_cache_math.hpp"
#include "kernels/sm90/mask.hpp"
#include "kernels/sm90/softmax_math.hpp"
#include "lib/attention/engine/decode_rows.hpp"
#include "lib/attention/engine/panel_gemm.hpp"
#include "lib/attention/engine/pv_order.hpp"
#include "lib/attention/engine/row_softmax.hpp"
#include "lib/attention/engine/tile_rules.hpp"
#include "lib/cpu_isa/cpu_isa.hpp"
#include "lib/numerics/element_io.hpp"

namespace fp8attn::engine {
namespace {

struct DecodeBuffers {
  float *q, *s, *o, *o_fresh, *row_max, *row_sum, *rescale, *k_token, *v_ratio;
  float* gemm;  // panel_gemm's scratch (panel_gemm_scratch.hpp), gemm_bytes of it
  size_t gemm_bytes;
  uint8_t* k_codes;  // [block_n / 16][head_dim][16]: a block's E4M3 K codes in panels (key_code_panels)
  uint8_t* v_codes;  // [head_dim_v / 16][block_n][16]: its V codes in the P·V slot order (value_code_panels)
  float* o_saved;    // P·V's accumulator before a try on the codes (block_m × head_dim_v)
};

size_t carve(const AttentionConfig& c, void* scratch, DecodeBuffers* b) {
  const size_t bm = c.tile.block_m, bn = c.tile.block_n, d = c.head_dim, dv = c.head_dim_v;
  ScratchCarve carve_scratch(scratch);
  auto take = [&](size_t floats) { return carve_scratch.take(floats); };
  DecodeBuffers t{};
  t.q = take(bm * d);
  t.s = take(bm * bn);
  t.o = take(bm * dv);
  t.o_fresh = take(bm * dv);
  t.row_max = take(bm);
  t.row_sum = take(bm * 4);
  t.rescale = take(bm);
  t.k_token = take(bn);
  t.v_ratio = take(bn);
  t.gemm_bytes = tile_products_scratch_bytes(static_cast<int>(bn), static_cast<int>(d), static_cast<int>(dv));
  t.gemm = take((t.gemm_bytes + sizeof(float) - 1) / sizeof(float));
  t.k_codes = reinterpret_cast<uint8_t*>(take(bn * d / sizeof(float)));
  t.v_codes = reinterpret_cast<uint8_t*>(take(bn * dv / sizeof(float)));
  t.o_saved = take(bm * dv);
  if (b) *b = t;
  return carve_scratch.bytes();
}

#if defined(__AVX512F__)
/// The block's E4M3 K codes as panels of 16 keys transposed, codes[(p · d + e) · 16 + j] = K[16p + j][e],
/// zero past the block's last key, for panel_gemm_e4m3_codes. Returns false when the form does not
/// apply to the cache (not E4M3, a dimension stride, a head_dim too large) or a code is a NaN.
bool key_code_panels(const AttentionProblem& p, const SeqSpan& span, int64_t batch, int head_kv,
                     const sm90::KeyBlock& block, int d, uint8_t* codes) {
  if (p.k.dtype != FP8ATTN_DTYPE_E4M3 || p.k.dim_stride != 1 || d % kPanelWidth != 0 || d > kMaxVectorDecodeDim)
    return false;
  const int keys = static_cast<int>(block.key_end - block.key_begin);
  bool nan = false;
  for (int j0 = 0; j0 < keys; j0 += kPanelWidth) {
    const uint8_t* rows[kPanelWidth];
    key_panel_rows(p, span, batch, head_kv, block, j0, rows);  // query_tile.cpp's, in this translation unit
    nan = decode_fp32_vec::transpose_key_bytes<kPanelWidth>(rows, d, codes + static_cast<int64_t>(j0) * d) || nan;
  }
  return !nan;
}

/// The block's E4M3 V codes as panels of 16 columns with the keys in the P·V slot order of E4M3 P
/// (pv_order.hpp), codes[(p · depth + a) · 16 + c] = V[key of slot a][16p + c] with depth =
/// pv_slot_depth(keys), zero for a slot past the block's last key: decode_block_panels' V panels
/// as codes, for panel_gemm_e4m3_codes. Returns false where the form does not apply to the cache
/// or a code is a NaN.
bool value_code_panels(const AttentionProblem& p, const SeqSpan& span, int64_t batch, int head_kv,
                       const sm90::KeyBlock& block, int dv, uint8_t* codes) {
  if (p.v.dtype != FP8ATTN_DTYPE_E4M3 || p.v.dim_stride != 1 || dv % kPanelWidth != 0) return false;
  const int keys = static_cast<int>(block.key_end - block.key_begin), depth = pv_slot_depth(keys);
  const auto* base = static_cast<const uint8_t*>(p.v.data);
  bool nan = false;
  for (int j = 0; j < depth; ++j) {
    const int a = sm90::pv_slot_of_key(j);
    const uint8_t* row =
        j < keys ? base + p.kv_element_offset(p.v, batch, span.k_offset + block.key_begin + j, head_kv, 0) : nullptr;
    for (int c0 = 0; c0 < dv; c0 += kPanelWidth) {
      uint8_t* out = codes + (static_cast<int64_t>(c0 / kPanelWidth) * depth + a) * kPanelWidth;
      if (row == nullptr) {
        std::memset(out, 0, kPanelWidth);
        continue;
      }
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + c0));
      nan = nan || _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(x, _mm_set1_epi8(0x7F)), _mm_set1_epi8(0x7F))) != 0;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out), x);
    }
  }
  return !nan;
}
#endif

}  // namespace

size_t decode_tile_scratch_bytes(const AttentionConfig& c) {
  // NOTE: base nullptr only measures; carve never dereferences.
  return carve(c, nullptr, nullptr);
}

void store_output(const AttentionProblem& p, int64_t b, int64_t row, int head, int e, float o, TileTelemetry& tel) {
  const bool bf16 = p.out.dtype == FP8ATTN_DTYPE_BF16;
  if (!std::isfinite(o) || (bf16 && !std::isfinite(num::round_to_bf16(o)))) ++tel.nonfinite;
  tel.max_abs_o = std::max(tel.max_abs_o, std::fabs(o));
  num::store_from_float(p.out.data, p.out.dtype, element_offset(p.out, b, row, head, e),
                        p.out.dtype == FP8ATTN_DTYPE_E4M3 ? o * p.out_scale : o);
}

void run_decode_tile(const AttentionConfig& c, const AttentionProblem& p, const DecodeTileCoord& at, void* scratch,
                     KvBlockCache& kv, TileTelemetry& telemetry, const DecodePartials& parts) {
  DecodeBuffers t{};
  carve(c, scratch, &t);
  const SeqSpan span = p.span(at.batch);
  const int group = c.heads_per_kv();
  const int d = c.head_dim, dv = c.head_dim_v, bn = c.tile.block_n;
  const int rows =
      static_cast<int>(std::min<int64_t>(c.tile.block_m, sm90::decode_rows(span.seqlen_q, group) - at.row_begin));
  const int head_kv = at.head_kv;
  const bool fp8 = c.fp8();
  const float* lut = e4m3_table();
  const bool avx512_bf16 = avx512_bf16_for_products(c.mma_rule.tensor_core);  // as in the forward's tile
  auto token_of = [&](int r) { return sm90::decode_row_token(at.row_begin + r, group); };
  auto head_of = [&](int r) { return head_kv * group + sm90::decode_row_head(at.row_begin + r, group); };

  // Host arguments folded once, as in the forward's tile.
  const float q_descale = p.q_descale.at(at.batch, head_kv);
  const float k_descale = p.k_descale.at(at.batch, head_kv);
  const float v_descale = p.v_descale.at(at.batch, head_kv);
  // NOTE: named copies, not a structured binding: clang before 16 cannot capture one in a lambda.
  const sm90::LogitScales logit = sm90::logit_scales(c.softmax_scale, q_descale, k_descale, c.stabilized_tie_tol);
  const float scale_log2 = logit.scale_log2, natural_scale = logit.natural_scale, tie_tol_raw = logit.tie_tol_raw;
  // NOTE: a paged cache's per-token descales as in the forward's tile (tile_rules.hpp): split and
  // promoted every block for E4M3 P, whole on P̃'s columns for BF16 P.
  const PvRules pv = pv_rules(c, p);
  const bool per_token = pv.per_token, v_blocks = pv.v_blocks, promote = pv.promote;
  const int64_t promote_interval = pv.promote_interval;
  float* pv_acc = promote ? t.o_fresh : t.o;
  const bool k_blocks = p.k_block_descale.present() || p.q_block_descale.present();

  for (int r = 0; r < rows; ++r)
    decode_row(p.q, element_offset(p.q, at.batch, span.q_offset + token_of(r), head_of(r), 0), d, lut, t.q + r * d, 1);
  std::fill(t.o, t.o + static_cast<size_t>(rows) * dv, 0.0f);
  if (promote) std::fill(t.o_fresh, t.o_fresh + static_cast<size_t>(rows) * dv, 0.0f);
  std::fill(t.row_max, t.row_max + rows, sm90::kNegInf);
  std::fill(t.row_sum, t.row_sum + static_cast<size_t>(rows) * 4, 0.0f);

  const DecodeRowRules rules = decode_row_rules(c, span, scale_log2, tie_tol_raw);
  const sm90::KvSchedule schedule = decode_kv_schedule(c, rules, token_of(0), token_of(rows - 1) + 1);
  const int64_t blocks = sm90::kv_descale_slots(span.seqlen_k, c.sink_tokens, bn);
  float tile_max_abs_logit = 0.0f;
  int64_t visited = 0;  // this split's blocks so far: the promotion counts them as the forward's steps

  // NOTE: promotion every N blocks counts the split's own blocks; with one split that is the
  // forward's step count, so the bits match.
  int64_t split_blocks = 0;
  for (int64_t step = 0; step < schedule.count(); ++step)
    split_blocks += sm90::decode_split_holds(blocks, at.num_splits, at.split, schedule.at(step).index);

  for (int64_t step = 0; step < schedule.count(); ++step) {
    const sm90::KeyBlock block = schedule.at(step);
    if (!sm90::decode_split_holds(blocks, at.num_splits, at.split, block.index)) continue;
    const int64_t key0 = block.key_begin;
    const int keys = static_cast<int>(block.key_end - block.key_begin);
    // NOTE: every block into the worker's one block of panels (decode_engine.cpp), not the
    // forward's cache of decoded blocks: an item visits each of its blocks once, so there is
    // nothing to keep, and a slot per block (32 MiB per worker at 32k keys) made each block's
    // panels a fresh stream of stores to memory (about 8 % of this tile's time, measured).
    const int k_panel_count = (keys + kPanelWidth - 1) / kPanelWidth;
    // NOTE: E4M3 K goes to the integer form of the tensor core's addition as codes, its B prepared
    // from them with no float panels: decoding K to floats and preparing B from those took about
    // a quarter of this tile's time. Same bits (panel_gemm_e4m3_codes); a NaN code or a Q value
    // the form does not take sends the block back to the float panels.
    bool s_done = false;
#if defined(__AVX512F__)
    s_done = fp8 && c.mma_rule.tensor_core &&
             key_code_panels(p, span, at.batch, head_kv, block, d, t.k_codes) &&
             panel_gemm_e4m3_codes(t.q, d, t.k_codes, k_panel_count, t.s, bn, rows, d, c.tile.mma_k_qk, true,
                                   c.mma_rule, t.gemm, t.gemm_bytes, avx512_bf16);
#endif
    // NOTE: V likewise: its codes in the slot order feed P·V's integer form, with no float panels.
    // P·V accumulates into O, so a try that finds an instruction needing the scalar rule (an O
    // the form does not take) restores O and takes the float panels.
    bool v_as_codes = false;
#if defined(__AVX512F__)
    v_as_codes = fp8 && c.mma_rule.tensor_core && value_code_panels(p, span, at.batch, head_kv, block, dv, t.v_codes);
#endif
    engine::decode_block_panels(c, p, span, at.batch, head_kv, block, s_done ? nullptr : kv.k,
                                v_as_codes ? nullptr : kv.v);
    const float *k_panels = kv.k, *v_panels = kv.v;
    // NOTE: block_token_scales is query_tile.cpp's, in this translation unit (isa/query_tile_in_isa.cpp).
    const float v_token_max =
        per_token ? block_token_scales(p, at.batch, head_kv, key0, keys, t.k_token, t.v_ratio, fp8) : 1.0f;
    if (!s_done)
      panel_gemm(t.q, d, k_panels, static_cast<int64_t>(d) * kPanelWidth, k_panel_count, t.s, bn, rows, d,
                 c.tile.mma_k_qk, true, c.mma_rule, t.gemm, t.gemm_bytes, avx512_bf16);
    const float k_block = k_blocks ? p.k_block_descale.at(at.batch, head_kv, block.index) : 1.0f;

    for (int r = 0; r < rows; ++r) {
      // NOTE: the factor per row, since the packed rows' heads differ; q_len ≤ 8 < BlockM, so
      // every token lies in the forward's query tile 0.
      const float factor = k_blocks ? p.q_block_descale.at(at.batch, head_of(r), 0) * k_block : 1.0f;
      const float rescale = decode_row_softmax(
          rules, t.s + static_cast<int64_t>(r) * bn, keys, token_of(r), key0, k_blocks ? &factor : nullptr,
          per_token ? t.k_token : nullptr, per_token ? t.v_ratio : nullptr, t.row_max[r], t.row_sum + r * 4,
          tile_max_abs_logit, telemetry);
      if (fp8) p_row_to_slots(t.s + static_cast<int64_t>(r) * bn, keys);
      float* orow = t.o + static_cast<int64_t>(r) * dv;
      for (int e = 0; e < dv; ++e) orow[e] *= rescale;
      if (promote) {
        float* frow = t.o_fresh + static_cast<int64_t>(r) * dv;
        for (int e = 0; e < dv; ++e) frow[e] *= rescale;
      }
    }
    const int pv_depth = fp8 ? pv_slot_depth(keys) : keys;
    bool pv_done = false;
#if defined(__AVX512F__)
    if (v_as_codes) {
      std::copy(pv_acc, pv_acc + static_cast<size_t>(rows) * dv, t.o_saved);
      pv_done = panel_gemm_e4m3_codes(t.s, bn, t.v_codes, dv / kPanelWidth, pv_acc, dv, rows, pv_depth,
                                      c.tile.mma_k_pv, false, c.mma_rule, t.gemm, t.gemm_bytes, avx512_bf16);
      if (!pv_done) {
        std::copy(t.o_saved, t.o_saved + static_cast<size_t>(rows) * dv, pv_acc);
        engine::decode_block_panels(c, p, span, at.batch, head_kv, block, nullptr, kv.v);
      }
    }
#endif
    if (!pv_done)
      panel_gemm(t.s, bn, v_panels, static_cast<int64_t>(bn) * kPanelWidth, dv / kPanelWidth, pv_acc, dv, rows,
                 pv_depth, c.tile.mma_k_pv, false, c.mma_rule, t.gemm, t.gemm_bytes, avx512_bf16);
    ++visited;
    if (promote && (visited % promote_interval == 0 || visited == split_blocks)) {
      const float vb = sm90::kv_token_pv_factor(p.v_block_descale.at(at.batch, head_kv, block.index), v_token_max);
      for (int64_t i = 0; i < static_cast<int64_t>(rows) * dv; ++i) {
        t.o[i] = v_blocks ? std::fmaf(t.o_fresh[i], vb, t.o[i]) : t.o[i] + t.o_fresh[i];
        t.o_fresh[i] = 0.0f;
      }
    }
  }
  telemetry.max_abs_scaled_logit = std::max(telemetry.max_abs_scaled_logit, tile_max_abs_logit * natural_scale);

  // Epilogue: the forward's (one split), or the split's partial rows for the combine.
  decode_rows_epilogue(p, at, span, group, rows, dv, t.o, t.row_max, t.row_sum, v_descale, scale_log2,
                       rules.p_scale_log2, parts, telemetry);
}

}  // namespace fp8attn::engine
