#include "lib/attention/engine/query_tile.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/sm90/kv_cache_math.hpp"
#include "kernels/sm90/kv_schedule.hpp"
#include "kernels/sm90/mask.hpp"
#include "kernels/sm90/softmax_math.hpp"
#include "lib/attention/engine/row_softmax.hpp"
#include "lib/attention/engine/tile_rules.hpp"
#include "lib/attention/engine/panel_gemm.hpp"
#include "lib/attention/engine/decoded_block_e4m3.hpp"
#include "lib/attention/engine/pv_order.hpp"
#if defined(__AVX512F__)
#include "lib/attention/engine/p_cast_avx512.hpp"
#endif
#include "kernels/numerics/bfloat16.hpp"
#include "lib/numerics/element_io.hpp"
#include "kernels/numerics/float8.hpp"
#include "lib/cpu_isa/cpu_isa.hpp"

namespace fp8attn::engine {
namespace {

/// The tile's buffers, carved from the worker's scratch.
// NOTE: K and V blocks are not here: they come decoded from the worker's KvBlockCache, packed in
// column panels for panel_gemm.
struct TileBuffers {
  float* q;        // [rows][head_dim]        rows: up to kMaxTilesPerCall · block_m
  float* s;        // [rows][block_n]         logits, then P cast to E4M3/BF16
  float* o;        // [rows][head_dim_v]      output accumulator
  float* o_fresh;  // [rows][head_dim_v]      PV accumulator between promotions
  float* row_max;  // [rows]                  running max, raw S units
  float* row_sum;  // [rows][4]               per-quad-thread partial sums of P̃
  float* rescale;  // [rows]                  this block's rescale factor of each row
  float* k_token;  // [block_n]               a paged cache's per-token K descales of the block
  float* v_ratio;  // [block_n]               its per-token V descales / their block maximum
  void* gemm;      // panel_gemm's scratch (panel_gemm_scratch.hpp), gemm_bytes of it
  size_t gemm_bytes;
};

struct TileLayout {
  size_t q, s, o, o_fresh, row_max, row_sum, rescale, k_token, v_ratio, gemm, gemm_bytes, total;
};

TileLayout tile_layout(const AttentionConfig& c) {
  const size_t bm = static_cast<size_t>(c.tile.block_m) * kMaxTilesPerCall, bn = c.tile.block_n, d = c.head_dim,
               dv = c.head_dim_v;
  TileLayout l{};
  size_t at = 0;
  auto take = [&](size_t floats) {
    const size_t here = at;
    at += (floats * sizeof(float) + 63) / 64 * 64;
    return here;
  };
  l.q = take(bm * d);
  l.s = take(bm * bn);
  l.o = take(bm * dv);
  l.o_fresh = take(bm * dv);
  l.row_max = take(bm);
  l.row_sum = take(bm * 4);
  l.rescale = take(bm);
  l.k_token = take(bn);
  l.v_ratio = take(bn);
  l.gemm_bytes = tile_products_scratch_bytes(static_cast<int>(bn), static_cast<int>(d), static_cast<int>(dv));
  l.gemm = take((l.gemm_bytes + sizeof(float) - 1) / sizeof(float));
  l.total = at;
  return l;
}

TileBuffers carve(void* scratch, const TileLayout& l) {
  auto* base = static_cast<unsigned char*>(scratch);
  auto f = [&](size_t off) { return reinterpret_cast<float*>(base + off); };
  return {f(l.q), f(l.s),       f(l.o),       f(l.o_fresh), f(l.row_max),
          f(l.row_sum), f(l.rescale), f(l.k_token), f(l.v_ratio), base + l.gemm, l.gemm_bytes};
}

}  // namespace

// NOTE: the three below are shared with the decode tile (decode_tile.cpp), which gathers and
// decodes K and V exactly as the forward's tiles do.

/// Decoding table for E4M3 inputs (256 entries), built once.
const float* e4m3_table() {
  static const auto table = [] {
    struct T {
      float v[256];
    } t{};
    for (int i = 0; i < 256; ++i) t.v[i] = num::e4m3_to_float(static_cast<uint8_t>(i));
    return t;
  }();
  return table.v;
}

/// Decodes n elements of an input tensor's row (element `offset` first, then dim_stride apart) to
/// float, writing out[e·out_stride]. Decoding is exact: E4M3 and BF16 values are FP32 values.
void decode_row(const SeqTensor& t, int64_t offset, int n, const float* lut, float* out, int out_stride) {
  if (t.dtype == FP8ATTN_DTYPE_E4M3) {
    const uint8_t* in = static_cast<const uint8_t*>(t.data) + offset;
    for (int e = 0; e < n; ++e) out[e * out_stride] = lut[in[e * t.dim_stride]];
  } else {
    const uint16_t* in = static_cast<const uint16_t*>(t.data) + offset;
    for (int e = 0; e < n; ++e) out[e * out_stride] = num::bf16_to_float(in[e * t.dim_stride]);
  }
}

namespace {

/// The code rows of keys j0 .. j0 + 15 of a block's K (a K panel's keys), zero rows past its last
/// key (the panel's padding columns). E4M3 K, unit dimension stride, head_dim ≤ kMaxVectorDecodeDim.
void key_panel_rows(const AttentionProblem& p, const SeqSpan& span, int64_t batch, int head_kv,
                    const sm90::KeyBlock& block, int j0, const uint8_t** rows) {
  alignas(64) static constexpr uint8_t kZeroRow[kMaxVectorDecodeDim] = {};
  const auto* k_codes = static_cast<const uint8_t*>(p.k.data);
  const int keys = static_cast<int>(block.key_end - block.key_begin);
  for (int i = 0; i < kPanelWidth; ++i) {
    const int64_t key = span.k_offset + block.key_begin + j0 + i;
    rows[i] = j0 + i < keys ? k_codes + p.kv_element_offset(p.k, batch, key, head_kv, 0) : kZeroRow;
  }
}

/// decode_block_panels' vector path for E4M3 K and V with unit dimension stride
/// (decoded_block_e4m3.hpp): the same panels, K's zero columns and bits as the scalar path below.
/// Returns false where it does not apply, and when the block holds a NaN code: the scalar path
/// then decodes the whole block again, overwriting what this one wrote.
bool decode_e4m3_block(const AttentionProblem& p, const SeqSpan& span, int64_t batch, int head_kv,
                       const sm90::KeyBlock& block, int d, int dv, int bn, bool slots, float* block_k, float* block_v) {
  if (p.k.dtype != FP8ATTN_DTYPE_E4M3 || p.v.dtype != FP8ATTN_DTYPE_E4M3 || p.k.dim_stride != 1 ||
      p.v.dim_stride != 1 || d % kPanelWidth != 0 || dv % kPanelWidth != 0 || d > kMaxVectorDecodeDim)
    return false;
  const int keys = static_cast<int>(block.key_end - block.key_begin);
  const auto* v_codes = static_cast<const uint8_t*>(p.v.data);
  // K: 16 keys per panel; the keys past the block's last are zero rows (its padding columns).
  for (int j0 = 0; block_k != nullptr && j0 < keys; j0 += kPanelWidth) {
    const uint8_t* rows[kPanelWidth];
    key_panel_rows(p, span, batch, head_kv, block, j0, rows);
    if (!decode_e4m3_key_panel(rows, d, block_k + static_cast<int64_t>(j0 / kPanelWidth) * d * kPanelWidth))
      return false;
  }
  // V: each key's row into its slot of every 16-wide panel.
  for (int j = 0; block_v != nullptr && j < keys; ++j) {
    const int v_row = slots ? sm90::pv_slot_of_key(j) : j;
    const int64_t key = span.k_offset + block.key_begin + j;
    const uint8_t* row = v_codes + p.kv_element_offset(p.v, batch, key, head_kv, 0);
    if (!decode_e4m3_value_row(row, dv, block_v + static_cast<int64_t>(v_row) * kPanelWidth, bn)) return false;
  }
  return true;
}

}  // namespace

/// Decodes one KV block of (batch, head_kv) into panels for panel_gemm at block_k and block_v.
/// K: [block_n / 16][head_dim][16], panel p holding keys 16p..16p+15, zero past the block's last
/// key (S's padding columns come out 0 and are never read); none with block_k null. V:
/// [head_dim_v / 16][block_n][16], for E4M3 P with its rows in the P·V key order (pv_order.hpp),
/// zero up to the block's period; none with block_v null.
void decode_block_panels(const AttentionConfig& c, const AttentionProblem& p, const SeqSpan& span, int64_t batch,
                         int head_kv, const sm90::KeyBlock& block, float* block_k, float* block_v) {
  const int d = c.head_dim, dv = c.head_dim_v, bn = c.tile.block_n;
  const int keys = static_cast<int>(block.key_end - block.key_begin);
  const bool slots = c.fp8();
  if (!decode_e4m3_block(p, span, batch, head_kv, block, d, dv, bn, slots, block_k, block_v)) {
    const float* lut = e4m3_table();
    for (int j = 0; j < keys; ++j) {
      const int v_row = slots ? sm90::pv_slot_of_key(j) : j;
      const int64_t key = span.k_offset + block.key_begin + j;
      // NOTE: a paged cache is gathered here, row by row through the block table; what follows
      // sees the same decoded block as for contiguous K and V, so the results are bit-equal.
      if (block_k != nullptr)
        decode_row(p.k, p.kv_element_offset(p.k, batch, key, head_kv, 0), d, lut,
                   block_k + (j / kPanelWidth) * d * kPanelWidth + j % kPanelWidth, kPanelWidth);
      for (int e0 = 0; block_v != nullptr && e0 < dv; e0 += kPanelWidth)
        decode_row(p.v, p.kv_element_offset(p.v, batch, key, head_kv, e0), kPanelWidth, lut,
                   block_v + e0 * bn + v_row * kPanelWidth, 1);
    }
    for (int j = keys; block_k != nullptr && j % kPanelWidth != 0; ++j) {
      float* k_col = block_k + (j / kPanelWidth) * d * kPanelWidth + j % kPanelWidth;
      for (int e = 0; e < d; ++e) k_col[e * kPanelWidth] = 0.0f;
    }
  }
  if (slots && block_v != nullptr)
    for (int j = keys; j < pv_slot_depth(keys); ++j)
      for (int e0 = 0; e0 < dv; e0 += kPanelWidth)
        std::fill_n(block_v + e0 * bn + sm90::pv_slot_of_key(j) * kPanelWidth, kPanelWidth, 0.0f);
}

/// The decoded K and V of one KV block of (batch, head_kv), as panels for panel_gemm
/// (decode_block_panels): from the worker's cache, decoding the block on first use.
void decoded_block(const AttentionConfig& c, const AttentionProblem& p, const SeqSpan& span, int64_t batch,
                   int head_kv, const sm90::KeyBlock& block, KvBlockCache& kv, const float** k_panels,
                   const float** v_panels) {
  float* block_k = kv.k + block.index * c.head_dim * c.tile.block_n;
  float* block_v = kv.v + block.index * c.tile.block_n * c.head_dim_v;
  *k_panels = block_k;
  *v_panels = block_v;
  if (kv.ready[block.index]) return;
  decode_block_panels(c, p, span, batch, head_kv, block, block_k, block_v);
  kv.ready[block.index] = 1;
}

namespace {

/// A paged cache's per-(token, KV head) descales of one KV block: K's into k_token, V's divided
/// by their largest into v_ratio (each ≤ 1); returns that largest. With `split` false (BF16 P:
/// kv_cache_math.hpp) V's go into v_ratio whole and the return is 1.
float block_token_scales(const AttentionProblem& p, int64_t batch, int head_kv, int64_t key0, int keys, float* k_token,
                         float* v_ratio, bool split) {
  const PagedKv& kv = p.paged;
  float v_max = 0.0f;
  for (int j = 0; j < keys; ++j) {
    const int64_t key = key0 + j, page = kv.page(batch, key), token = key % kv.page_size;
    k_token[j] = kv.k_scale.at(page, token, head_kv);
    v_ratio[j] = kv.v_scale.at(page, token, head_kv);
    v_max = sm90::kv_token_max(v_max, v_ratio[j]);
  }
  // NOTE: BF16 P keeps V's descales whole (kv_token_v_whole is the identity): v_ratio already holds them.
  if (!split) return 1.0f;
  for (int j = 0; j < keys; ++j) v_ratio[j] = sm90::kv_token_v_ratio(v_ratio[j], v_max);
  return v_max;
}

}  // namespace

size_t query_tile_scratch_bytes(const AttentionConfig& c) { return tile_layout(c).total; }

void run_query_tile(const AttentionConfig& c, const AttentionProblem& p, const QueryTileCoord& at, void* scratch,
                    KvBlockCache& kv, TileTelemetry& telemetry, const EngineHooks& hooks) {
  const TileBuffers t = carve(scratch, tile_layout(c));
  const SeqSpan span = p.span(at.batch);
  const int d = c.head_dim, dv = c.head_dim_v, bn = c.tile.block_n;
  // NOTE: several tiles run as one only where nothing but their KV schedules tells them apart
  // (tile_engine.cpp's query_tiles_run_together), and each keeps its own schedule below: each
  // row's operations are then the same as alone.
  const int rows = static_cast<int>(
      std::min<int64_t>(static_cast<int64_t>(c.tile.block_m) * at.tiles, span.seqlen_q - at.row_begin));
  const int head_kv = at.head / c.heads_per_kv();
  const bool fp8 = c.fp8();
  const float* lut = e4m3_table();
  // AVX512-BF16 and VNNI where the CPU has them (same bits, panel_gemm.hpp): the FP32
  // accumulation's products on vdpbf16ps where the CPU runs it faster than FMAs
  // (bf16_dot_products_active), the tensor core's FP8 sums on vpdpwssd.
  const bool avx512_bf16 = avx512_bf16_for_products(c.mma_rule.tensor_core);
  if (kv.batch != at.batch || kv.head_kv != head_kv) {  // another (sequence, KV head): drop the blocks
    std::fill(kv.ready, kv.ready + kv.slots, uint8_t{0});
    kv.batch = at.batch;
    kv.head_kv = head_kv;
  }

  // Host arguments folded once, as the kernel's Params are.
  const float q_descale = p.q_descale.at(at.batch, head_kv);
  const float k_descale = p.k_descale.at(at.batch, head_kv);
  const float v_descale = p.v_descale.at(at.batch, head_kv);
  // NOTE: named copies, not a structured binding: clang before 16 cannot capture one in a lambda.
  const sm90::LogitScales logit = sm90::logit_scales(c.softmax_scale, q_descale, k_descale, c.stabilized_tie_tol);
  const float scale_log2 = logit.scale_log2, natural_scale = logit.natural_scale, tie_tol_raw = logit.tie_tol_raw;
  const float p_scale_log2 = static_cast<float>(c.p_scale_log2);
  const bool stabilized = c.softmax_variant == FP8ATTN_SOFTMAX_STABILIZED;
  // NOTE: per-token descales of a paged cache (docs/numerics.md, "KV scales"): K's multiply each
  // key's logits, as a per-block K descale does its block's; V's follow pv_rules (tile_rules.hpp).
  // Dividing by the block's largest keeps P̃'s largest entries where S_p put them, away from
  // E4M3's underflow.
  const PvRules pv = pv_rules(c, p);
  const bool per_token = pv.per_token, v_blocks = pv.v_blocks, promote = pv.promote;
  const int64_t promote_interval = pv.promote_interval;
  float* pv_acc = promote ? t.o_fresh : t.o;
  const int64_t tile_index = at.row_begin / c.tile.block_m;
  const float q_block_descale = p.q_block_descale.at(at.batch, at.head, tile_index);
  const bool k_blocks = p.k_block_descale.present() || p.q_block_descale.present();

  for (int r = 0; r < rows; ++r)
    decode_row(p.q, element_offset(p.q, at.batch, span.q_offset + at.row_begin + r, at.head, 0), d, lut,
               t.q + r * d, 1);
  std::fill(t.o, t.o + static_cast<size_t>(rows) * dv, 0.0f);
  if (promote) std::fill(t.o_fresh, t.o_fresh + static_cast<size_t>(rows) * dv, 0.0f);
  std::fill(t.row_max, t.row_max + rows, sm90::kNegInf);
  std::fill(t.row_sum, t.row_sum + static_cast<size_t>(rows) * 4, 0.0f);

  const sm90::MaskParams mask{c.causal, c.window_left, c.window_right, span.seqlen_q, span.seqlen_k};
  const int64_t row0 = at.row_begin;
  float tile_max_abs_logit = 0.0f;
  // NOTE: the call's tiles each keep their own schedule and step: the walk goes over the union of
  // their blocks, and each block runs the rows of the tiles whose next block it is, a contiguous
  // run of tiles (tile_engine.cpp's query_tiles_run_together checked that before the call).
  TileGroupWalk walk(c, span, row0, rows);
  const int bm = c.tile.block_m;

  for (int64_t step = 0; step < walk.all.count(); ++step) {
    sm90::KeyBlock block;
    int lo = 0, hi = 0;
    walk.visit(step, &block, &lo, &hi);
    if (hi < lo) continue;
    const int64_t key0 = block.key_begin;
    const int keys = static_cast<int>(block.key_end - block.key_begin);
    const int r_lo = lo * bm, r_hi = std::min(rows, (hi + 1) * bm), active = r_hi - r_lo;

    const float *k_panels = nullptr, *v_panels = nullptr;
    decoded_block(c, p, span, at.batch, head_kv, block, kv, &k_panels, &v_panels);
    const float v_token_max =
        per_token ? block_token_scales(p, at.batch, head_kv, key0, keys, t.k_token, t.v_ratio, fp8) : 1.0f;

    // S = Q·Kᵀ, over the block's keys rounded up to whole panels
    panel_gemm(t.q + static_cast<int64_t>(r_lo) * d, d, k_panels, static_cast<int64_t>(d) * kPanelWidth,
               (keys + kPanelWidth - 1) / kPanelWidth, t.s + static_cast<int64_t>(r_lo) * bn, bn, active, d,
               c.tile.mma_k_qk, true, c.mma_rule, t.gemm, t.gemm_bytes, avx512_bf16);
    // Per-block descales fold into this block's logits, so the running max and the exp2 step see
    // one consistent scale across blocks.
    const float block_factor = k_blocks ? q_block_descale * p.k_block_descale.at(at.batch, head_kv, block.index) : 1.0f;
    const bool full = sm90::block_fully_visible(mask, row0 + r_lo, row0 + r_hi, key0, key0 + keys);

    // The online softmax of kernels/sm90/softmax_math.hpp, row by row while the row is in L1
    // (row_softmax.hpp's vectorized loops): logits → P̃ and the row's max and rescale factor.
    auto p_tilde_of_row = [&](int r) {
      float* s = t.s + static_cast<int64_t>(r) * bn;
      if (k_blocks)
        for (int j = 0; j < keys; ++j) s[j] *= block_factor;
      if (per_token)
        for (int j = 0; j < keys; ++j) s[j] *= t.k_token[j];
      if (!full) {
        const sm90::KeyRange vis = sm90::visible_keys(mask, row0 + r);
        for (int j = 0; j < keys; ++j)
          if (key0 + j < vis.first || key0 + j > vis.last) s[j] = sm90::kNegInf;
      }
      float block_max = row_max(s, keys);
      if (c.telemetry) tile_max_abs_logit = std::max(tile_max_abs_logit, row_max_abs_visible(s, keys));
      if (stabilized && block_max != sm90::kNegInf)
        block_max = sm90::stabilized_block_max(block_max, row_ties(s, keys, block_max, tie_tol_raw),
                                               c.stabilized_beta, c.stabilized_shift_cap_log2, scale_log2);
      const float old_max = t.row_max[r];
      const float new_max = std::max(old_max, block_max);
      t.rescale[r] = sm90::rescale_factor(old_max, new_max, scale_log2);
      t.row_max[r] = new_max;
      row_p_tilde(s, keys, scale_log2, sm90::max_scaled(new_max, scale_log2, p_scale_log2));
      for (int q = 0; q < 4; ++q) t.row_sum[r * 4 + q] *= t.rescale[r];
    };
    // Then the cast of P̃ with its counts and O's rescale.
    auto cast_row = [&](int r) {
      float* s = t.s + static_cast<int64_t>(r) * bn;
      if (per_token)
        for (int j = 0; j < keys; ++j) s[j] *= t.v_ratio[j];
#if defined(__AVX512F__)
      // NOTE: the cast and E4M3 P's key order in one pass (p_cast_avx512.hpp); a hook sees the
      // cast row in key order, so with one the two passes below run instead.
      if (!hooks.on_p_cast) {
        if (fp8)
          p_cast_avx512::cast_p_row<true, true>(s, keys, telemetry.p_positive, telemetry.p_underflow);
        else
          p_cast_avx512::cast_p_row<false, false>(s, keys, telemetry.p_positive, telemetry.p_underflow);
      } else
#endif
      {
        if (fp8)
          row_cast_p<true>(s, keys, telemetry.p_positive, telemetry.p_underflow);
        else
          row_cast_p<false>(s, keys, telemetry.p_positive, telemetry.p_underflow);
        if (hooks.on_p_cast) hooks.on_p_cast(at.batch, at.head, row0 + r, key0, s, keys);
        if (fp8) p_row_to_slots(s, keys);
      }
      const float rescale = t.rescale[r];
      float* orow = t.o + static_cast<int64_t>(r) * dv;
      for (int e = 0; e < dv; ++e) orow[e] *= rescale;
      if (promote) {
        float* frow = t.o_fresh + static_cast<int64_t>(r) * dv;
        for (int e = 0; e < dv; ++e) frow[e] *= rescale;
      }
    };
    // NOTE: the row sum uses FP32 P̃, before the cast (FlashAttention-3), accumulated per quad
    // thread in ascending column order (sm90::quad_partial_of_column). Rows go in pairs: each
    // quad partial is a chain of dependent additions, and a pair fills one vector of chains.
    int r = r_lo;
#if defined(__AVX512F__)
    for (; r + 4 <= r_hi; r += 4) {  // four rows' partials in one vector (row_softmax.hpp)
      for (int i = 0; i < 4; ++i) p_tilde_of_row(r + i);
      const float* p_rows[4];
      float* sums[4];
      for (int i = 0; i < 4; ++i) {
        p_rows[i] = t.s + static_cast<int64_t>(r + i) * bn;
        sums[i] = t.row_sum + (r + i) * 4;
      }
      accumulate_quad_partials_4rows(p_rows, keys, sums);
      for (int i = 0; i < 4; ++i) cast_row(r + i);
    }
#endif
    for (; r + 2 <= r_hi; r += 2) {
      p_tilde_of_row(r);
      p_tilde_of_row(r + 1);
      accumulate_quad_partials_2rows(t.s + static_cast<int64_t>(r) * bn, t.s + static_cast<int64_t>(r + 1) * bn, keys,
                                     t.row_sum + r * 4, t.row_sum + (r + 1) * 4);
      cast_row(r);
      cast_row(r + 1);
    }
    if (r < r_hi) {
      p_tilde_of_row(r);
      accumulate_quad_partials(t.s + static_cast<int64_t>(r) * bn, keys, t.row_sum + r * 4);
      cast_row(r);
    }

    // O += P·V  (into the fresh tile when promotion is on)
    panel_gemm(t.s + static_cast<int64_t>(r_lo) * bn, bn, v_panels, static_cast<int64_t>(bn) * kPanelWidth,
               dv / kPanelWidth, pv_acc + static_cast<int64_t>(r_lo) * dv, dv, active, fp8 ? pv_slot_depth(keys) : keys,
               c.tile.mma_k_pv, false, c.mma_rule, t.gemm, t.gemm_bytes, avx512_bf16);
    // NOTE: two-level accumulation guards against the FP8 tensor core's accumulator keeping
    // fewer bits than FP32 (DESIGN §3): the fresh tile is added into O every N of its blocks.
    for (int i = lo; i <= hi; ++i) {
      const int64_t own_done = walk.done[i];
      if (!promote || (own_done % promote_interval != 0 && own_done != walk.own[i].count())) continue;
      const float vb = sm90::kv_token_pv_factor(p.v_block_descale.at(at.batch, head_kv, block.index), v_token_max);
      const int64_t e0 = static_cast<int64_t>(i) * bm * dv, e1 = static_cast<int64_t>(std::min(rows, (i + 1) * bm)) * dv;
      for (int64_t e = e0; e < e1; ++e) {
        t.o[e] = v_blocks ? std::fmaf(t.o_fresh[e], vb, t.o[e]) : t.o[e] + t.o_fresh[e];
        t.o_fresh[e] = 0.0f;
      }
    }
  }
  telemetry.max_abs_scaled_logit = std::max(telemetry.max_abs_scaled_logit, tile_max_abs_logit * natural_scale);

  // Epilogue: O · v_descale / l, and the LSE. An E4M3 output stores round_e4m3(O · out_scale)
  // (cuDNN's scale_o); max |O| is taken before that scale, for amax_o.
  const bool e4m3_out = p.out.dtype == FP8ATTN_DTYPE_E4M3;
  float tile_max_abs_o = 0.0f;
  // NOTE: a BF16 output with contiguous dims is rounded 16 values at a time on AVX-512
  // (p_cast_avx512.hpp, the same bits and counts): element by element it was a twentieth of the
  // FP32 mode's forward.
  [[maybe_unused]] const bool bf16_rows =
      p.out.dtype == FP8ATTN_DTYPE_BF16 && p.out.dim_stride == 1 && dv % 16 == 0;
  for (int r = 0; r < rows; ++r) {
    const float* partial = t.row_sum + static_cast<int64_t>(r) * 4;
    const float l = sm90::quad_sum(partial[0], partial[1], partial[2], partial[3]);
    const float factor = sm90::output_factor(l, v_descale);
    const int64_t row = span.q_offset + row0 + r;
    const float* orow = t.o + static_cast<int64_t>(r) * dv;
#if defined(__AVX512F__)
    if (bf16_rows) {
      uint16_t* out_row = static_cast<uint16_t*>(p.out.data) + element_offset(p.out, at.batch, row, at.head, 0);
      p_cast_avx512::store_o_row_bf16(orow, dv, factor, out_row, telemetry.nonfinite, tile_max_abs_o);
    } else
#endif
    for (int e = 0; e < dv; ++e) {
      const float o = orow[e] * factor;
      // NOTE: descales that can overflow are refused before the call (require_scales_in_range);
      // finite BF16 inputs still can, and the call then reports NUMERICS instead of OK.
      // A finite float above BF16's range also becomes inf in a BF16 output.
      const bool bf16 = p.out.dtype == FP8ATTN_DTYPE_BF16;
      if (!std::isfinite(o) || (bf16 && !std::isfinite(num::round_to_bf16(o)))) ++telemetry.nonfinite;
      tile_max_abs_o = std::max(tile_max_abs_o, std::fabs(o));
      num::store_from_float(p.out.data, p.out.dtype, element_offset(p.out, at.batch, row, at.head, e),
                            e4m3_out ? o * p.out_scale : o);
    }
    if (p.lse.data) {
      const float lse = sm90::row_lse(t.row_max[r], l, scale_log2, p_scale_log2);
      if (std::isnan(lse) || lse == std::numeric_limits<float>::infinity()) ++telemetry.nonfinite;
      static_cast<float*>(p.lse.data)[at.batch * p.lse.batch_stride + row * p.lse.seq_stride +
                                      at.head * p.lse.head_stride] = lse;
    }
  }
  telemetry.max_abs_o = std::max(telemetry.max_abs_o, tile_max_abs_o);
}

}  // namespace fp8attn::engine
