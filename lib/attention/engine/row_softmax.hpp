// The per-row work of the online softmax between the two tile products of the CPU engine: the
// block's row max, the exp2 step, the FP32 row sums, the cast of P̃ and its telemetry counts.
// The math is kernels/sm90/softmax_math.hpp's; this file only arranges it in loops that the
// compiler vectorizes (this work was a third of the engine's time as scalar code with a
// libm call per element).
//
// NOTE: each loop body is straight-line code without calls or branches: p_tilde's exp2 is the
// inline ex2 model of kernels/arch/ex2.hpp, and the casts are the select-based roundings of
// lib/numerics. Vectorizing changes no bit: every element is computed by the same IEEE
// operations as the scalar code, and the only reductions are a max (exact, so its order does not
// matter) and integer counts. The row sums keep their documented order (accumulate_quad_partials).
//
// Included by query_tile.cpp inside its per-ISA namespace (see isa/query_tile_in_isa.cpp), so
// every ISA build has its own copy.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"
#include "kernels/sm90/softmax_math.hpp"

namespace fp8attn::engine {

inline constexpr int kRowLanes = 8;

// NOTE: GCC does not vectorize a float max reduction without -ffinite-math-only (the order would
// matter for NaN), so the two max loops are written on vector types (GCC's vector extension;
// two SSE registers in the baseline build). Max is exact, so the lane order changes no bit.
using RowLanes = float __attribute__((vector_size(kRowLanes * sizeof(float))));

/// max over s[0, n) (−inf when n = 0 or every entry is masked), a zero max as +0
/// (sm90::block_max_of), NaN entries never winning (sm90::score_max).
/// NOTE: four vectors of lanes side by side: one alone is a chain of dependent maxes (four
/// cycles each), which made this loop a fifth of the softmax's time on a 128-key row.
inline float row_max(const float* s, int n) {
  constexpr int kChains = 4;
  RowLanes chains[kChains];
  for (RowLanes& c : chains) c = RowLanes{} + sm90::kNegInf;  // all −inf
  int j = 0;
  for (; j + kChains * kRowLanes <= n; j += kChains * kRowLanes)
    for (int c = 0; c < kChains; ++c) {
      RowLanes v;
      std::memcpy(&v, s + j + c * kRowLanes, sizeof v);
      chains[c] = v > chains[c] ? v : chains[c];
    }
  RowLanes lanes = chains[0];
  for (int c = 1; c < kChains; ++c) lanes = chains[c] > lanes ? chains[c] : lanes;
  for (; j + kRowLanes <= n; j += kRowLanes) {
    RowLanes v;
    std::memcpy(&v, s + j, sizeof v);
    lanes = v > lanes ? v : lanes;
  }
  float m = sm90::kNegInf;
  for (int l = 0; l < kRowLanes; ++l) m = lanes[l] > m ? lanes[l] : m;
  for (; j < n; ++j) m = s[j] > m ? s[j] : m;
  return sm90::block_max_of(m);
}

/// max |s| over the visible (not −inf) entries of s[0, n); 0 when none is visible.
inline float row_max_abs_visible(const float* s, int n) {
  RowLanes lanes = {};
  int j = 0;
  for (; j + kRowLanes <= n; j += kRowLanes) {
    RowLanes v;
    std::memcpy(&v, s + j, sizeof v);
    const RowLanes a = v == sm90::kNegInf ? RowLanes{} : (v < 0.0f ? -v : v);
    lanes = a > lanes ? a : lanes;
  }
  float m = 0.0f;
  for (int l = 0; l < kRowLanes; ++l) m = lanes[l] > m ? lanes[l] : m;
  for (; j < n; ++j) {
    const float a = s[j] == sm90::kNegInf ? 0.0f : std::fabs(s[j]);
    m = a > m ? a : m;
  }
  return m;
}

/// Entries within `tol` of the block max (the stabilized variant's ties).
inline int row_ties(const float* s, int n, float block_max, float tol) {
  int ties = 0;
  for (int j = 0; j < n; ++j) ties += (block_max - s[j] <= tol) ? 1 : 0;
  return ties;
}

/// s[j] ← P̃ = p_tilde(s[j]) for j < n.
inline void row_p_tilde(float* s, int n, float scale_log2, float subtrahend) {
  for (int j = 0; j < n; ++j) s[j] = sm90::p_tilde(s[j], scale_log2, subtrahend);
}

// Four floats, and eight: one vector of quad partials for one row, or for two.
using QuadLanes = float __attribute__((vector_size(4 * sizeof(float))));
using PairLanes = float __attribute__((vector_size(8 * sizeof(float))));

/// partial[q] += P̃[j] for the columns j of quad partial q (sm90::quad_partial_of_column), in
/// ascending j: the per-thread row sums of the kernel's D fragment.
/// NOTE: vectorized over q. Of every 8 columns, quad partial q owns 2q and 2q + 1, so lane q adds
/// the even column of its pair, then the odd one: the scalar order, four chains side by side.
inline void accumulate_quad_partials(const float* p, int n, float* partial) {
  QuadLanes acc;
  std::memcpy(&acc, partial, sizeof acc);
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    QuadLanes lo, hi;
    std::memcpy(&lo, p + j, sizeof lo);
    std::memcpy(&hi, p + j + 4, sizeof hi);
    acc += __builtin_shufflevector(lo, hi, 0, 2, 4, 6);  // columns j + 2q
    acc += __builtin_shufflevector(lo, hi, 1, 3, 5, 7);  // columns j + 2q + 1
  }
  std::memcpy(partial, &acc, sizeof acc);
  for (; j < n; ++j) partial[sm90::quad_partial_of_column(j)] += p[j];
}

/// accumulate_quad_partials for two rows at once: the same additions in the same order per row,
/// eight chains in one vector. Lanes: row 0's q0, q1, row 1's q0, q1, row 0's q2, q3, row 1's
/// q2, q3 (the order one in-lane shuffle of AVX gives).
inline void accumulate_quad_partials_2rows(const float* p0, const float* p1, int n, float* partial0, float* partial1) {
  PairLanes acc = {partial0[0], partial0[1], partial1[0], partial1[1],
                   partial0[2], partial0[3], partial1[2], partial1[3]};
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    PairLanes v0, v1;
    std::memcpy(&v0, p0 + j, sizeof v0);
    std::memcpy(&v1, p1 + j, sizeof v1);
    acc += __builtin_shufflevector(v0, v1, 0, 2, 8, 10, 4, 6, 12, 14);  // columns j + 2q
    acc += __builtin_shufflevector(v0, v1, 1, 3, 9, 11, 5, 7, 13, 15);  // columns j + 2q + 1
  }
  partial0[0] = acc[0];
  partial0[1] = acc[1];
  partial1[0] = acc[2];
  partial1[1] = acc[3];
  partial0[2] = acc[4];
  partial0[3] = acc[5];
  partial1[2] = acc[6];
  partial1[3] = acc[7];
  for (; j < n; ++j) {
    partial0[sm90::quad_partial_of_column(j)] += p0[j];
    partial1[sm90::quad_partial_of_column(j)] += p1[j];
  }
}

#if defined(__AVX512F__)
using FourRowLanes = float __attribute__((vector_size(16 * sizeof(float))));

/// accumulate_quad_partials for four rows at once (the AVX-512 build): the same additions in the
/// same order per row, sixteen chains in one vector, row i's quad partials in lanes 4i to 4i + 3.
/// NOTE: each partial is a chain of dependent additions (four cycles each); with two rows per
/// vector the chains left the loop at a cycle per column of each row.
inline void accumulate_quad_partials_4rows(const float* const p[4], int n, float* const partial[4]) {
  FourRowLanes acc;
  for (int i = 0; i < 4; ++i)
    for (int q = 0; q < 4; ++q) acc[4 * i + q] = partial[i][q];
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    PairLanes v[4];
    for (int i = 0; i < 4; ++i) std::memcpy(&v[i], p[i] + j, sizeof v[i]);
    const FourRowLanes a = __builtin_shufflevector(v[0], v[1], 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const FourRowLanes b = __builtin_shufflevector(v[2], v[3], 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    acc += __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);  // j + 2q
    acc += __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);  // j + 2q + 1
  }
  for (int i = 0; i < 4; ++i)
    for (int q = 0; q < 4; ++q) partial[i][q] = acc[4 * i + q];
  for (; j < n; ++j)
    for (int i = 0; i < 4; ++i) partial[i][sm90::quad_partial_of_column(j)] += p[i][j];
}
#endif

/// Casts P̃ in place before the PV product (E4M3 for FP8 inputs, BF16 otherwise) and counts the
/// positive P̃ and those the cast flushes to zero (the telemetry's underflow count).
template <bool kFp8>
inline void row_cast_p(float* s, int n, uint64_t& positive, uint64_t& underflow) {
  uint32_t pos = 0, flushed = 0;
  for (int j = 0; j < n; ++j) {
    const float pt = s[j];
    const float pc = kFp8 ? num::round_to_e4m3(pt) : num::round_to_bf16(pt);
    pos += pt > 0.0f ? 1u : 0u;
    flushed += ((pt > 0.0f) & (pc == 0.0f)) ? 1u : 0u;  // & not &&: no guarded comparison
    s[j] = pc;
  }
  positive += pos;
  underflow += flushed;
}

}  // namespace fp8attn::engine
