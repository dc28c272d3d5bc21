#include "lib/attention/engine/decode_fp32.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/sm90/decode_schedule.hpp"
#include "kernels/sm90/kv_schedule.hpp"
#include "kernels/sm90/mask.hpp"
#include "kernels/sm90/softmax_math.hpp"
#include "lib/attention/engine/decode_fp32_vec.hpp"
#include "lib/attention/engine/decode_rows.hpp"
#include "lib/attention/engine/row_softmax.hpp"

namespace fp8attn::engine {
namespace {

using namespace decode_fp32_vec;

/// Element offsets of `keys` consecutive keys (from `key`, span.k_offset included) of KV head h in
/// x: kv_element_offset's, with one block-table read per page instead of a division per row.
void row_offsets(const AttentionProblem& p, const SeqTensor& x, int64_t b, int h, int64_t key, int keys, int64_t* out) {
  if (!p.paged.present) {
    for (int j = 0; j < keys; ++j) out[j] = p.kv_element_offset(x, b, key + j, h, 0);
    return;
  }
  const PagedKv& kv = p.paged;
  int64_t page = key / kv.page_size, token = key % kv.page_size;
  int64_t page_at = kv.block_table[b * kv.table_batch_stride + page * kv.table_page_stride] * x.batch_stride;
  for (int j = 0; j < keys; ++j) {
    out[j] = page_at + token * x.seq_stride + h * x.head_stride;
    if (++token == kv.page_size && j + 1 < keys) {
      token = 0;
      ++page;
      page_at = kv.block_table[b * kv.table_batch_stride + page * kv.table_page_stride] * x.batch_stride;
    }
  }
}

struct Fp32Buffers {
  float *q, *s, *o, *row_max, *row_sum, *k, *v;
  int64_t *k_at, *v_at;
};

size_t carve(const AttentionConfig& c, void* scratch, Fp32Buffers* b) {
  const size_t bm = c.tile.block_m, bn = c.tile.block_n, d = c.head_dim, dv = c.head_dim_v;
  ScratchCarve carve_scratch(scratch);
  auto take = [&](size_t floats) { return carve_scratch.take(floats); };
  Fp32Buffers t{};
  t.q = take(bm * d);
  t.s = take(bm * bn);
  t.o = take(bm * dv);
  t.row_max = take(bm);
  t.row_sum = take(bm * 4);
  t.k = take(bn * d);
  t.v = take(bn * dv);
  t.k_at = reinterpret_cast<int64_t*>(take(4 * bn));  // 2·bn int64 each
  t.v_at = reinterpret_cast<int64_t*>(take(4 * bn));
  if (b) *b = t;
  return carve_scratch.bytes();
}

}  // namespace

bool decode_fp32_applies(const AttentionConfig& c, const AttentionProblem& p) {
  const bool per_token = p.paged.present && p.paged.scale_granularity == FP8ATTN_KV_SCALE_PER_TOKEN_HEAD;
  const bool inputs = (c.input_dtype == FP8ATTN_DTYPE_E4M3 || c.input_dtype == FP8ATTN_DTYPE_BF16) &&
                      p.q.dtype == c.input_dtype && p.k.dtype == c.input_dtype && p.v.dtype == c.input_dtype;
  return c.mma_model.accumulation == arch::MmaAccumulation::Fp32 && c.pv_promote_interval == 0 && !per_token &&
         !p.q_block_descale.present() && !p.k_block_descale.present() && !p.v_block_descale.present() && inputs &&
         p.q.dim_stride == 1 && p.k.dim_stride == 1 && p.v.dim_stride == 1 && c.head_dim % kLanes == 0 &&
         c.head_dim_v % kLanes == 0;
}

size_t decode_fp32_scratch_bytes(const AttentionConfig& c) {
  // NOTE: base nullptr only measures; carve never dereferences.
  return carve(c, nullptr, nullptr);
}

void run_decode_fp32_tile(const AttentionConfig& c, const AttentionProblem& p, const DecodeTileCoord& at,
                          void* scratch, TileTelemetry& telemetry, const DecodePartials& parts) {
  Fp32Buffers t{};
  carve(c, scratch, &t);
  const SeqSpan span = p.span(at.batch);
  const int group = c.heads_per_kv();
  const int d = c.head_dim, dv = c.head_dim_v, bn = c.tile.block_n;
  const int rows =
      static_cast<int>(std::min<int64_t>(c.tile.block_m, sm90::decode_rows(span.seqlen_q, group) - at.row_begin));
  const int head_kv = at.head_kv;
  const bool fp8 = c.fp8();
  auto token_of = [&](int r) { return sm90::decode_row_token(at.row_begin + r, group); };
  auto head_of = [&](int r) { return head_kv * group + sm90::decode_row_head(at.row_begin + r, group); };

  const float q_descale = p.q_descale.at(at.batch, head_kv);
  const float k_descale = p.k_descale.at(at.batch, head_kv);
  const float v_descale = p.v_descale.at(at.batch, head_kv);
  // NOTE: named copies, not a structured binding: clang before 16 cannot capture one in a lambda.
  const sm90::LogitScales logit = sm90::logit_scales(c.softmax_scale, q_descale, k_descale, c.stabilized_tie_tol);
  const float scale_log2 = logit.scale_log2, natural_scale = logit.natural_scale, tie_tol_raw = logit.tie_tol_raw;

  for (int r = 0; r < rows; ++r)
    decode_contiguous(p.q, element_offset(p.q, at.batch, span.q_offset + token_of(r), head_of(r), 0), d, t.q + r * d);
  std::fill(t.o, t.o + static_cast<size_t>(rows) * dv, 0.0f);
  std::fill(t.row_max, t.row_max + rows, sm90::kNegInf);
  std::fill(t.row_sum, t.row_sum + static_cast<size_t>(rows) * 4, 0.0f);

  const DecodeRowRules rules = decode_row_rules(c, span, scale_log2, tie_tol_raw);
  const sm90::KvSchedule schedule = decode_kv_schedule(c, rules, token_of(0), token_of(rows - 1) + 1);
  const int64_t blocks = sm90::kv_descale_slots(span.seqlen_k, c.sink_tokens, bn);
  float tile_max_abs_logit = 0.0f;

  const int elem = fp8 ? 1 : 2;
  auto next_held = [&](int64_t step) {
    while (step < schedule.count() &&
           !sm90::decode_split_holds(blocks, at.num_splits, at.split, schedule.at(step).index))
      ++step;
    return step;
  };
  // The element offsets of a block's K and V rows: [0, bn) this block's, [bn, 2·bn) the next's.
  auto offsets_of = [&](const sm90::KeyBlock& block, int64_t* k_at, int64_t* v_at) {
    const int keys = static_cast<int>(block.key_end - block.key_begin);
    row_offsets(p, p.k, at.batch, head_kv, span.k_offset + block.key_begin, keys, k_at);
    row_offsets(p, p.v, at.batch, head_kv, span.k_offset + block.key_begin, keys, v_at);
    return keys;
  };
  int64_t *k_at = t.k_at, *v_at = t.v_at, *k_next = t.k_at + bn, *v_next = t.v_at + bn;
  int64_t step = next_held(0);
  if (step < schedule.count()) offsets_of(schedule.at(step), k_at, v_at);

  for (; step < schedule.count();) {
    const sm90::KeyBlock block = schedule.at(step);
    const int64_t key0 = block.key_begin;
    const int keys = static_cast<int>(block.key_end - block.key_begin);
    // NOTE: the next block's rows are fetched while this one is decoded and computed: a paged
    // cache's rows lie in scattered pages, where the hardware prefetcher, which stops at 4 KiB
    // pages, left most reads waiting on memory. Offsets come per block, one block-table read
    // per page (a division per row cost more than the row's arithmetic).
    const int64_t after = next_held(step + 1);
    const int next_keys = after < schedule.count() ? offsets_of(schedule.at(after), k_next, v_next) : 0;
    const char* k_base = static_cast<const char*>(p.k.data);
    const char* v_base = static_cast<const char*>(p.v.data);
    // Each K and V row read once from the cache (through the block table when paged) for every
    // packed row of the group.
    for (int j = 0; j < keys; ++j) {
      if (j < next_keys) {
        for (int b = 0; b < d * elem; b += 64) __builtin_prefetch(k_base + k_next[j] * elem + b);
        for (int b = 0; b < dv * elem; b += 64) __builtin_prefetch(v_base + v_next[j] * elem + b);
      }
      decode_contiguous(p.k, k_at[j], d, t.k + static_cast<int64_t>(j) * d);
      decode_contiguous(p.v, v_at[j], dv, t.v + static_cast<int64_t>(j) * dv);
    }
    std::swap(k_at, k_next);
    std::swap(v_at, v_next);
    step = after;
    qk_block(t.q, rows, d, t.k, keys, t.s, bn);

    for (int r = 0; r < rows; ++r) {
      const float rescale = decode_row_softmax(rules, t.s + static_cast<int64_t>(r) * bn, keys, token_of(r), key0,
                                               nullptr, nullptr, nullptr, t.row_max[r], t.row_sum + r * 4,
                                               tile_max_abs_logit, telemetry);
      float* orow = t.o + static_cast<int64_t>(r) * dv;
      for (int e = 0; e < dv; ++e) orow[e] *= rescale;
    }
    pv_block(t.s, rows, bn, t.v, dv, keys, t.o);
  }
  telemetry.max_abs_scaled_logit = std::max(telemetry.max_abs_scaled_logit, tile_max_abs_logit * natural_scale);

  // Epilogue: decode_tile.cpp's (the forward's with one split, else the split's partial rows).
  decode_rows_epilogue(p, at, span, group, rows, dv, t.o, t.row_max, t.row_sum, v_descale, scale_log2,
                       rules.p_scale_log2, parts, telemetry);
}

}  // namespace fp8attn::engine
