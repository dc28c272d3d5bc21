#include "lib/attention/engine/backward_tile.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/sm90/kv_schedule.hpp"
#include "kernels/sm90/mask.hpp"
#include "kernels/sm90/softmax_math.hpp"
#include "lib/attention/engine/tile_ops.hpp"
#include "lib/numerics/element_io.hpp"

namespace fp8attn::engine {
namespace {

/// One worker's buffers; names say the layout ("t" = transposed).
/// NOTE: the item computes Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ directly, so that Pᵀ and dSᵀ are the A
/// operands of dV += Pᵀ·dO and dK += dSᵀ·Q without a transpose of the bm × bn tiles; only dS is
/// transposed back for dQ = dS·K.
struct BackwardBuffers {
  float* q;      // [block_m][head_dim]
  float* qt;     // [head_dim][block_m]
  float* dout;   // [block_m][head_dim_v]
  float* doutt;  // [head_dim_v][block_m]
  float* k;      // [block_n][head_dim]
  float* v;      // [block_n][head_dim_v]
  float* p;      // [block_n][block_m]  Sᵀ, then P (FP32)
  float* p_bf16; // [block_n][block_m]  P cast to BF16
  float* ds;     // [block_n][block_m]  dPᵀ, then dSᵀ cast to BF16
  float* ds_rows;// [block_m][block_n]  dS
  float* dk;     // [block_n][head_dim]
  float* dv;     // [block_n][head_dim_v]
  float* dq;     // [block_m][head_dim]  this key block's dS·K
  float* lse;    // [block_m] LSE in log2 units
  float* delta;  // [block_m] D = rowsum(dO∘O)
  float* row;    // [head_dim_v] one loaded row
};

constexpr int kBuffers = 16;

struct BackwardLayout {
  size_t offsets[kBuffers];
  size_t total;
};

BackwardLayout backward_layout(const AttentionConfig& c) {
  const size_t bm = c.tile.block_m, bn = c.tile.block_n, d = c.head_dim, dv = c.head_dim_v;
  const size_t floats[kBuffers] = {bm * d,  d * bm,  bm * dv, dv * bm, bn * d, bn * dv, bn * bm, bn * bm,
                                   bn * bm, bm * bn, bn * d,  bn * dv, bm * d, bm,      bm,      dv};
  BackwardLayout l{};
  size_t at = 0;
  for (int i = 0; i < kBuffers; ++i) {
    l.offsets[i] = at;
    at += (floats[i] * sizeof(float) + 63) / 64 * 64;
  }
  l.total = at;
  return l;
}

BackwardBuffers carve(void* scratch, const BackwardLayout& l) {
  auto* base = static_cast<unsigned char*>(scratch);
  float* f[kBuffers];
  for (int i = 0; i < kBuffers; ++i) f[i] = reinterpret_cast<float*>(base + l.offsets[i]);
  return {f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11], f[12], f[13], f[14], f[15]};
}

/// Loads elements [0, count) of (b, row, head) of t as float.
/// NOTE: the contiguous BF16 case is the common one and a shift per element; it keeps the loads
/// well below the tile products' cost.
inline void load_row(const SeqTensor& t, int64_t b, int64_t row, int64_t head, int count, float* dst) {
  const int64_t off = element_offset(t, b, row, head, 0);
  if (t.dtype == FP8ATTN_DTYPE_BF16 && t.dim_stride == 1) {
    const uint16_t* src = static_cast<const uint16_t*>(t.data) + off;
    for (int e = 0; e < count; ++e) dst[e] = num::bf16_to_float(src[e]);
    return;
  }
  for (int e = 0; e < count; ++e) dst[e] = num::load_as_float(t.data, t.dtype, off + e * t.dim_stride);
}

/// dst[c][r] = src[r][c] for r < rows, c < cols.
/// NOTE: in 8 × 8 tiles: a row-by-row transpose stores one float per cache line of dst, and its
/// strided stores took about a third of this file's own time (perf, head_dim 128).
void transpose(const float* src, int ld_src, float* dst, int ld_dst, int rows, int cols) {
  constexpr int kTile = 8;
  for (int r0 = 0; r0 < rows; r0 += kTile)
    for (int c0 = 0; c0 < cols; c0 += kTile) {
      const int r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      for (int c = c0; c < c1; ++c)
        for (int r = r0; r < r1; ++r) dst[static_cast<int64_t>(c) * ld_dst + r] = src[static_cast<int64_t>(r) * ld_src + c];
    }
}

/// Loads `rows` rows of t from (b, row0, head) into `dst` [rows][count] and, when `dst_t` is
/// given, into `dst_t` [count][ld_t] as well.
void load_rows(const SeqTensor& t, int64_t b, int64_t row0, int64_t head, int rows, int count, float* dst,
               float* dst_t, int ld_t) {
  for (int r = 0; r < rows; ++r) load_row(t, b, row0 + r, head, count, dst + static_cast<int64_t>(r) * count);
  if (dst_t) transpose(dst, count, dst_t, ld_t, rows, count);
}

/// Per-row values of a query block: the LSE in log2 units and D = rowsum(dO∘O), in FP32 from the
/// stored out and dout (FlashAttention-2's preprocessing), in dP's order (sm90::row_delta).
/// NOTE: D is recomputed for every (key block, query block) pair rather than kept in a
/// [rows, heads] buffer by a pass of its own: it costs block_m·head_dim_v FMAs against the five
/// tile products' 10·block_m·block_n·head_dim flops, and the same loop in the same order gives the
/// same bits every time.
void load_row_stats(const AttentionConfig& c, const AttentionBackwardProblem& p, int64_t b, int64_t first_row,
                    int head, int rows, const float* dout, float* row, float* lse, float* delta) {
  const SeqTensor& l = p.fwd.lse;
  const int dv = c.head_dim_v;
  for (int r = 0; r < rows; ++r) {
    const int64_t at = first_row + r;
    const float x = static_cast<const float*>(l.data)[b * l.batch_stride + at * l.seq_stride + head * l.head_stride];
    lse[r] = x * sm90::kLog2e;
    load_row(p.fwd.out, b, at, head, dv, row);
    const float* g = dout + static_cast<int64_t>(r) * dv;
    // NOTE: in the order of dPᵀ = V·dOᵀ below (depth mma_k_qk), so that one visible key gives dS = 0.
    delta[r] = sm90::row_delta(dv, c.tile.mma_k_qk, c.mma_model, [&](int e) { return g[e]; },
                               [&](int e) { return row[e]; });
  }
}

/// P = exp2(S·scale·log2e − LSE·log2e) for element (row i, key j), 0 where the mask hides the key.
/// A row with no visible key has LSE = −inf and all of its keys hidden.
/// NOTE: the forward's exp2 (sm90::p_tilde: one FMA, then arch::ex2_approx, the kernels' exp2),
/// with the LSE in log2 units as the max_scaled argument, so the backward kernel
/// (kernels/sm90/attention/bwd_mainloop.hpp) recomputes the same bits.
inline float recompute_p(float s, float scale_log2, float lse_log2, bool visible) {
  return visible ? sm90::p_tilde(s, scale_log2, lse_log2) : 0.0f;
}

/// Whether key j (in the sequence) is visible from row i, given the tile-level shortcut.
inline bool visible(const sm90::MaskParams& m, bool full, int64_t row, int64_t key) {
  if (full) return true;
  const sm90::KeyRange r = sm90::visible_keys(m, row);
  return key >= r.first && key <= r.last;
}

/// Stores `value` scaled into (b, row, head, e) of an output, counting non-finite results.
inline void store_row(const SeqTensor& t, int64_t b, int64_t row, int64_t head, const float* acc, int count,
                      float scale, uint64_t& nonfinite) {
  const int64_t off = element_offset(t, b, row, head, 0);
  const bool bf16 = t.dtype == FP8ATTN_DTYPE_BF16;
  for (int e = 0; e < count; ++e) {
    const float x = acc[e] * scale;
    if (!std::isfinite(x) || (bf16 && !std::isfinite(num::round_to_bf16(x)))) ++nonfinite;
    num::store_from_float(t.data, t.dtype, off + e * t.dim_stride, x);
  }
}

/// Waits until key block `n` may add into a query block's dQ rows: every earlier key block of the
/// sequence has passed them. NOTE: yield, not a pure spin, so that more workers than cores still
/// progress; the wait is short, since block n − 1 started earlier and is ahead.
inline void wait_for_turn(const std::atomic<int64_t>& turn, int64_t n) {
  while (turn.load(std::memory_order_acquire) != n) std::this_thread::yield();
}

}  // namespace

size_t backward_tile_scratch_bytes(const AttentionConfig& c) { return backward_layout(c).total; }

uint64_t run_key_block_backward(const AttentionConfig& c, const AttentionBackwardProblem& p, const KeyBlockCoord& at,
                                const DqAccumulator& dq, void* scratch) {
  const BackwardBuffers t = carve(scratch, backward_layout(c));
  const SeqSpan span = p.span(at.batch);
  const int d = c.head_dim, dv = c.head_dim_v, bm = c.tile.block_m, bn = c.tile.block_n;
  const int keys = static_cast<int>(std::min<int64_t>(bn, span.seqlen_k - at.key_begin));
  const int64_t key0 = at.key_begin, key1 = at.key_begin + keys;
  const float scale_log2 = c.softmax_scale * sm90::kLog2e;
  const sm90::MaskParams mask{c.causal, c.window_left, c.window_right, span.seqlen_q, span.seqlen_k};
  const int64_t block_index = at.key_begin / bn;

  load_rows(p.fwd.k, at.batch, span.k_offset + key0, at.head_kv, keys, d, t.k, nullptr, 0);
  load_rows(p.fwd.v, at.batch, span.k_offset + key0, at.head_kv, keys, dv, t.v, nullptr, 0);
  std::fill(t.dk, t.dk + static_cast<size_t>(keys) * d, 0.0f);
  std::fill(t.dv, t.dv + static_cast<size_t>(keys) * dv, 0.0f);

  // Fixed order: query heads of the group ascending, then query blocks ascending.
  const int group = c.heads_per_kv();
  for (int head = at.head_kv * group; head < (at.head_kv + 1) * group; ++head) {
    for (int64_t row0 = 0; row0 < span.seqlen_q; row0 += bm) {
      const int rows = static_cast<int>(std::min<int64_t>(bm, span.seqlen_q - row0));
      const int64_t row1 = row0 + rows;
      // Whether this key block holds a key any of these rows sees (kv_schedule.hpp; the sm_90a
      // backward kernel visits the same pairs).
      std::atomic<int64_t>& turn = dq.turns[(at.batch * c.num_heads_q + head) * dq.q_blocks + row0 / bm];
      float* dq_rows = dq.data + (DqAccumulator::row(p, at.batch, row0) * c.num_heads_q + head) * d;
      const int64_t dq_stride = int64_t{c.num_heads_q} * d;
      if (!sm90::backward_visits(mask, row0, row1, bn, block_index)) {
        // Nothing to add; the first block still stores the rows' zeros, and every block passes
        // the turn on.
        wait_for_turn(turn, block_index);
        if (block_index == 0)
          for (int i = 0; i < rows; ++i) std::fill(dq_rows + i * dq_stride, dq_rows + i * dq_stride + d, 0.0f);
        turn.store(block_index + 1, std::memory_order_release);
        continue;
      }
      const bool full = sm90::block_fully_visible(mask, row0, row1, key0, key1);

      const int64_t qrow = span.q_offset + row0;
      load_rows(p.fwd.q, at.batch, qrow, head, rows, d, t.q, t.qt, bm);
      load_rows(p.dout, at.batch, qrow, head, rows, dv, t.dout, t.doutt, bm);
      load_row_stats(c, p, at.batch, qrow, head, rows, t.dout, t.row, t.lse, t.delta);

      // Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ, [keys][rows].
      gemm_in_mma_order(t.k, d, t.qt, bm, t.p, bm, keys, rows, d, c.tile.mma_k_qk, true, c.mma_rule);
      gemm_in_mma_order(t.v, dv, t.doutt, bm, t.ds, bm, keys, rows, dv, c.tile.mma_k_qk, true, c.mma_rule);
      for (int j = 0; j < keys; ++j) {
        float* pj = t.p + static_cast<int64_t>(j) * bm;
        float* pc = t.p_bf16 + static_cast<int64_t>(j) * bm;
        float* dsj = t.ds + static_cast<int64_t>(j) * bm;
        for (int i = 0; i < rows; ++i) {
          const float pij = recompute_p(pj[i], scale_log2, t.lse[i], visible(mask, full, row0 + i, key0 + j));
          // NOTE: P enters dV = Pᵀ·dO as BF16 and dS enters dQ and dK as BF16, the operand type
          // of the kernel's BF16 wgmma (FlashAttention-2/3); dS itself uses the FP32 P.
          pc[i] = num::round_to_bf16(pij);
          dsj[i] = num::round_to_bf16(pij * (dsj[i] - t.delta[i]));
        }
      }
      // dV += Pᵀ·dO, dK += dSᵀ·Q (the softmax scale is applied once, at the store).
      gemm_in_mma_order(t.p_bf16, bm, t.dout, dv, t.dv, dv, keys, dv, rows, c.tile.mma_k_pv, false, c.mma_rule);
      gemm_in_mma_order(t.ds, bm, t.q, d, t.dk, d, keys, d, rows, c.tile.mma_k_pv, false, c.mma_rule);
      // This block's dQ share dS·K, in a fresh tile, then added in key-block order.
      transpose(t.ds, bm, t.ds_rows, bn, keys, rows);
      gemm_in_mma_order(t.ds_rows, bn, t.k, d, t.dq, d, rows, d, keys, c.tile.mma_k_pv, true, c.mma_rule);
      wait_for_turn(turn, block_index);
      for (int i = 0; i < rows; ++i) {
        float* acc = dq_rows + i * dq_stride;
        const float* add = t.dq + static_cast<int64_t>(i) * d;
        if (block_index == 0) std::copy(add, add + d, acc);
        else
          for (int e = 0; e < d; ++e) acc[e] += add[e];
      }
      turn.store(block_index + 1, std::memory_order_release);
    }
  }

  uint64_t nonfinite = 0;
  for (int j = 0; j < keys; ++j) {
    const int64_t key = span.k_offset + key0 + j;
    store_row(p.dk, at.batch, key, at.head_kv, t.dk + static_cast<int64_t>(j) * d, d, c.softmax_scale, nonfinite);
    store_row(p.dv, at.batch, key, at.head_kv, t.dv + static_cast<int64_t>(j) * dv, dv, 1.0f, nonfinite);
  }
  return nonfinite;
}

}  // namespace fp8attn::engine
