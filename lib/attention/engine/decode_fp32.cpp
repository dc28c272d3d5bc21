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
#include "lib/attention/engine/decode_fp32_keys.hpp"
#include "lib/attention/engine/decode_fp32_values.hpp"
#include "lib/attention/engine/decode_fp32_ahead.hpp"
#if defined(__AVX512F__)
#include "lib/attention/engine/decode_fp32_bf16_avx512.hpp"
#endif
#include "lib/cpu_isa/cpu_isa.hpp"
#include "lib/attention/engine/decode_rows.hpp"
#include "lib/attention/engine/row_softmax.hpp"

namespace fp8attn::engine {
namespace {

using namespace decode_fp32_vec;

/// Query rows one KV head's part of a work item can have: the group's heads times the decode
/// limit of tokens, at most BlockM.
int64_t rows_per_head(const AttentionConfig& c) {
  return std::min<int64_t>(c.tile.block_m, sm90::decode_rows(sm90::kMaxDecodeQLen, c.heads_per_kv()));
}

/// The row pitch of S: the block's keys rounded up to whole key chunks.
int s_pitch(const AttentionConfig& c) { return (c.tile.block_n + kKeyChunk - 1) / kKeyChunk * kKeyChunk; }

struct Fp32Buffers {
  float *q, *s, *o, *row_max, *row_sum, *k, *v;
  uint8_t *kt, *zero_row;
  int64_t *k_at, *v_at, *ahead_at;
  uint32_t *qp, *pp;  ///< BF16 pairs of Q and of a chunk's P (decode_fp32_bf16_avx512.hpp)
};

constexpr int kMaxItemHeads = 8;

size_t carve(const AttentionConfig& c, void* scratch, Fp32Buffers* b) {
  const size_t rows = static_cast<size_t>(rows_per_head(c)) * std::min(c.num_heads_kv, kMaxItemHeads);
  const size_t d = c.head_dim, dv = c.head_dim_v, chunk = kKeyChunk;
  ScratchCarve carve_scratch(scratch);
  auto take = [&](size_t floats) { return carve_scratch.take(floats); };
  Fp32Buffers t{};
  t.q = take(rows * d);
  t.s = take(rows * static_cast<size_t>(s_pitch(c)));
  t.o = take(rows * dv);
  t.row_max = take(rows);
  t.row_sum = take(rows * 4);
  t.k = take(chunk * d);
  t.v = take(chunk * dv);
  t.kt = reinterpret_cast<uint8_t*>(take(chunk * d / 4));
  t.zero_row = reinterpret_cast<uint8_t*>(take(std::max<size_t>({d, dv, 64}) / 4));
  t.k_at = reinterpret_cast<int64_t*>(take(2 * chunk));
  t.v_at = reinterpret_cast<int64_t*>(take(2 * chunk));
  t.ahead_at = reinterpret_cast<int64_t*>(take(2 * chunk));
  t.qp = reinterpret_cast<uint32_t*>(take(rows * d / 2));
  t.pp = reinterpret_cast<uint32_t*>(take(rows * chunk / 2));
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

int decode_fp32_heads_per_item(const AttentionConfig& c) { return std::min(c.num_heads_kv, kMaxItemHeads); }

size_t decode_fp32_scratch_bytes(const AttentionConfig& c) {
  // NOTE: base nullptr only measures; carve never dereferences.
  return carve(c, nullptr, nullptr);
}

void run_decode_fp32_tile(const AttentionConfig& c, const AttentionProblem& p, const DecodeTileCoord& at,
                          void* scratch, TileTelemetry& telemetry, const DecodePartials& parts) {
  Fp32Buffers t{};
  carve(c, scratch, &t);
  const SeqSpan span = p.span(at.batch);
  const int group = c.heads_per_kv(), head0 = at.head_kv;
  const int heads = std::min(c.num_heads_kv - head0, kMaxItemHeads);  // the item's KV heads: head0 + [0, heads)
  const int d = c.head_dim, dv = c.head_dim_v, ld = s_pitch(c);
  const int64_t per_head = rows_per_head(c);
  const int rows =
      static_cast<int>(std::min<int64_t>(c.tile.block_m, sm90::decode_rows(span.seqlen_q, group) - at.row_begin));
  const bool fp8 = c.fp8();
  // NOTE: E4M3 products on vdpbf16ps where the CPU has AVX512-BF16 and runs it faster than FMAs
  // (bf16_dot_products_active): the same bits as the FMAs, twice the products per instruction
  // (decode_fp32_bf16_avx512.hpp).
#if defined(__AVX512F__)
  bool dot = fp8 && bf16_dot_products_active();
#else
  constexpr bool dot = false;
#endif
  auto token_of = [&](int r) { return sm90::decode_row_token(at.row_begin + r, group); };
  auto head_of = [&](int h, int r) { return (head0 + h) * group + sm90::decode_row_head(at.row_begin + r, group); };
  // The item's KV head head0 + h: its rows of Q, S, O and the row state.
  auto q_of = [&](int h) { return t.q + h * per_head * d; };
  auto s_of = [&](int h) { return t.s + h * per_head * ld; };
  auto o_of = [&](int h) { return t.o + h * per_head * dv; };
  [[maybe_unused]] auto qp_of = [&](int h) { return t.qp + h * per_head * (d / 2); };
  // NOTE: named copies, not a structured binding: clang before 16 cannot capture one in a lambda.
  auto scales_of = [&](int h) {
    return sm90::logit_scales(c.softmax_scale, p.q_descale.at(at.batch, head0 + h),
                              p.k_descale.at(at.batch, head0 + h), c.stabilized_tie_tol);
  };
  auto rules_of = [&](int h) {
    const sm90::LogitScales logit = scales_of(h);
    return decode_row_rules(c, span, logit.scale_log2, logit.tie_tol_raw);
  };

  // NOTE: E4M3 Q times 2^8 (exact), the factor the keys' FP16 route leaves out (decode_fp32_keys.hpp).
  const F16 q_factor = splat(fp8 ? kKeyScaleUndo : 1.0f);
  for (int h = 0; h < heads; ++h)
    for (int r = 0; r < rows; ++r) {
      float* qr = q_of(h) + r * d;
      decode_contiguous(p.q, element_offset(p.q, at.batch, span.q_offset + token_of(r), head_of(h, r), 0), d, qr);
      for (int e = 0; e < d; e += kLanes) store16(qr + e, load16(qr + e) * q_factor);
    }
#if defined(__AVX512F__)
  for (int h = 0; dot && h < heads; ++h) dot = query_pairs(q_of(h), rows, d, qp_of(h));
#endif
  const size_t all_rows = static_cast<size_t>(per_head) * heads;
  std::fill(t.o, t.o + all_rows * dv, 0.0f);
  std::fill(t.row_max, t.row_max + all_rows, sm90::kNegInf);
  std::fill(t.row_sum, t.row_sum + all_rows * 4, 0.0f);
  std::memset(t.zero_row, 0, std::max<size_t>({static_cast<size_t>(d), static_cast<size_t>(dv), 64}));
  [[maybe_unused]] bool o_subnormal[kMaxItemHeads] = {};  // a head's O holds an FP32 subnormal (dot: keep its FMAs)

  const sm90::KvSchedule schedule = decode_kv_schedule(c, rules_of(0), token_of(0), token_of(rows - 1) + 1);
  const int64_t blocks = sm90::kv_descale_slots(span.seqlen_k, c.sink_tokens, c.tile.block_n);
  auto next_held = [&](int64_t step) {
    while (step < schedule.count() &&
           !sm90::decode_split_holds(blocks, at.num_splits, at.split, schedule.at(step).index))
      ++step;
    return step;
  };
  const char* k_base = static_cast<const char*>(p.k.data);
  const uint8_t* v_base = static_cast<const uint8_t*>(p.v.data);
  // NOTE: E4M3 values 32 at a time are read as codes inside the products, P times 2^8
  // (decode_fp32_values.hpp); BF16 values, or a head_dim_v not a multiple of 32, are decoded first.
  const bool v_codes = fp8 && dv % (2 * kLanes) == 0;
  const int64_t first = next_held(0);
  Ahead ahead(p, schedule, at.batch, span.k_offset, head0, heads, d, dv, t.ahead_at, first, next_held);
  // NOTE: two chunks (K or V of 32 keys, every KV head) ahead: far enough to cover a read from
  // memory, near enough that the requested lines are still in L1 when used.
  constexpr int kChunksAhead = 2;
  for (int i = 0; i < kChunksAhead; ++i) ahead.prime();
  auto request_ahead = [&ahead] { ahead.step(); };

  for (int64_t step = first; step < schedule.count(); step = next_held(step + 1)) {
    const sm90::KeyBlock block = schedule.at(step);
    const int64_t key0 = block.key_begin;
    const int keys = static_cast<int>(block.key_end - block.key_begin);
    // S = Q·Kᵀ, a chunk of keys at a time, every KV head on the chunk while its rows are near.
    for (int c0 = 0; c0 < keys; c0 += kKeyChunk) {
      const int n = std::min(kKeyChunk, keys - c0);
      row_offsets(p, p.k, at.batch, head0, span.k_offset + key0 + c0, n, t.k_at);
      for (int h = 0; h < heads; ++h) {
        if (fp8) {
          const uint8_t* rows_of_chunk[kKeyChunk];
          for (int j = 0; j < kKeyChunk; ++j)
            rows_of_chunk[j] = j < n ? reinterpret_cast<const uint8_t*>(k_base) + t.k_at[j] + h * p.k.head_stride
                                     : t.zero_row;
          if (transpose_key_bytes(rows_of_chunk, d, t.kt)) {
            qk_key_chunk<true>(q_of(h), rows, d, t.kt, s_of(h) + c0, ld, request_ahead);
          } else if (dot) {
#if defined(__AVX512F__)
            qk_pair_chunk(qp_of(h), rows, d, t.kt, s_of(h) + c0, ld, request_ahead);
#endif
          } else {
            qk_key_chunk<false>(q_of(h), rows, d, t.kt, s_of(h) + c0, ld, request_ahead);
          }
        } else {
          for (int j = 0; j < n; ++j) decode_contiguous(p.k, t.k_at[j] + h * p.k.head_stride, d, t.k + j * d);
          qk_block(q_of(h), rows, d, t.k, n, s_of(h) + c0, ld, request_ahead);
        }
      }
      ahead.chunk_done();
    }
    // The online softmax of every row; S becomes the cast P.
    for (int h = 0; h < heads; ++h) {
      const DecodeRowRules rules = rules_of(h);
      float max_abs = 0.0f;
      for (int r = 0; r < rows; ++r) {
        const int64_t row = h * per_head + r;
        const float rescale =
            decode_row_softmax(rules, s_of(h) + static_cast<int64_t>(r) * ld, keys, token_of(r), key0, nullptr,
                               nullptr, nullptr, t.row_max[row], t.row_sum + row * 4, max_abs, telemetry);
        float* orow = o_of(h) + static_cast<int64_t>(r) * dv;
        for (int e = 0; e < dv; ++e) orow[e] *= rescale;
#if defined(__AVX512F__)
        if (dot) o_subnormal[h] = (r > 0 && o_subnormal[h]) || holds_subnormal(orow, dv);
#endif
        if (v_codes) {
          float* prow = s_of(h) + static_cast<int64_t>(r) * ld;
          for (int j = 0; j < keys; ++j) prow[j] *= kValueScaleUndo;
        }
      }
      telemetry.max_abs_scaled_logit = std::max(telemetry.max_abs_scaled_logit, max_abs * scales_of(h).natural_scale);
    }
    // O += P·V, a chunk of keys at a time.
    for (int c0 = 0; c0 < keys; c0 += kKeyChunk) {
      const int n = std::min(kKeyChunk, keys - c0);
      row_offsets(p, p.v, at.batch, head0, span.k_offset + key0 + c0, n, t.v_at);
      for (int h = 0; h < heads; ++h) {
        if (v_codes) {
          const uint8_t* rows_of_chunk[kKeyChunk];
          for (int j = 0; j < n; ++j) rows_of_chunk[j] = v_base + t.v_at[j] + h * p.v.head_stride;
          if (value_codes_hold_nan(rows_of_chunk, n, dv)) {
            pv_code_chunk<true>(s_of(h) + c0, rows, ld, rows_of_chunk, dv, n, o_of(h), request_ahead);
            continue;
          }
#if defined(__AVX512F__)
          if (dot && !o_subnormal[h] && prob_pairs(s_of(h) + c0, rows, ld, n, t.pp)) {
            pv_pair_chunk(t.pp, rows, rows_of_chunk, t.zero_row, dv, n, o_of(h), request_ahead);
            continue;
          }
#endif
          pv_code_chunk<false>(s_of(h) + c0, rows, ld, rows_of_chunk, dv, n, o_of(h), request_ahead);
          continue;
        }
        for (int j = 0; j < n; ++j) decode_contiguous(p.v, t.v_at[j] + h * p.v.head_stride, dv, t.v + j * dv);
        pv_block(s_of(h) + c0, rows, ld, t.v, dv, n, o_of(h), request_ahead);
      }
      ahead.chunk_done();
    }
  }

  // Epilogue per KV head: decode_tile.cpp's (the forward's with one split, else the split's
  // partial rows).
  for (int h = 0; h < heads; ++h) {
    DecodeTileCoord head_at = at;
    head_at.head_kv = head0 + h;
    const sm90::LogitScales logit = scales_of(h);
    const DecodeRowRules rules = rules_of(h);
    decode_rows_epilogue(p, head_at, span, group, rows, dv, o_of(h), t.row_max + h * per_head,
                         t.row_sum + h * per_head * 4, p.v_descale.at(at.batch, head0 + h), logit.scale_log2,
                         rules.p_scale_log2, parts, telemetry);
  }
}

}  // namespace fp8attn::engine
