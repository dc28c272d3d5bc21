// The tile products of the CPU engine's backward (backward_tile.cpp), and the generic register
// block (chunk_block) under the forward's products over K and V packed in panels (panel_gemm.hpp)
// wherever those have no intrinsic block. Each instruction adds as arch::mma_instruction does
// (kernels/ptx/mma_order.hpp), bit for bit: by the tensor core's rule (rule_block), or as a
// chunk sum from +0 with k ascending then one FP32 add (chunk_block's Fp32 path).
//
// NOTE: the loops are register-blocked (kRowBlock rows × kColBlock columns held while k runs)
// and vectorize over columns. std::fma is used because products of E4M3 or BF16 values are exact
// in FP32, so a fused multiply-add rounds exactly like the multiply-then-add of the Fp32 chunk;
// a zero product adds an exact ±0 to a chunk that starts at +0 and so changes no bit, and under
// the tensor core's rule a zero product neither sets E nor adds anything, which lets padded rows
// and columns run unmasked in both.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/ptx/mma_order.hpp"

namespace fp8attn::engine {

// NOTE: the register block is chosen per ISA build (lib/attention/engine/isa): its R × C chunk
// sums must fit the vector registers with room for a row of b and a broadcast of a, or the
// compiler spills them and the products run at a third of their speed (4 × 64 on AVX2
// spilled, and the engine ran at 0.2 of sgemm). AVX-512 (32 registers of 16 floats): 4 × 64,
// 16 registers. AVX2 (16 registers of 8 floats): 4 × 16, 8 registers (6 × 16 would fit in
// principle, but GCC 12 then spills three of its twelve chunk registers in the k loop).
inline constexpr int kRowBlock = 4;
#if defined(__AVX512F__)
inline constexpr int kColBlock = 64;
#else
inline constexpr int kColBlock = 16;
#endif

/// Steps 2-4 of rule_block for FP8 (F = 13, exact FP32 sums). NOTE: a cut to a multiple of
/// 2^unit is trunc(x·2^-unit)·2^unit, and the scaling is exact here (|x·2^-unit| < 2^15), so the
/// sums run in units of 2^unit as a multiply, a truncation (vroundps) and an add, several times
/// faster than the bit mask of arch::mma_cut; same bits. The scales must be normal floats: unit
/// is clamped to [-126, 126]. Outside it an element's addends are all zero (the sum is +0 either
/// way), or infinite or NaN (so is the sum), or its accumulator alone lies below 2^-113 (all FP8
/// products are at least 2^-28 when non-zero), which the last loop cuts by the reference form.
template <int R, int C>
inline void rule_block_fp8_sums(const float* a, int64_t lda, const float* b_row, int64_t ldb, int depth,
                                const float (&c_in)[R][C], const int32_t (&unit)[R][C], float* acc, int64_t ldacc,
                                int result_bits) {
  float inv[R][C], sum[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      const int32_t u = unit[r][c] < -126 ? -126 : (unit[r][c] > 126 ? 126 : unit[r][c]);
      inv[r][c] = arch::bits_float(static_cast<uint32_t>(127 - u) << 23);
      sum[r][c] = 0.0f + std::trunc(c_in[r][c] * inv[r][c]);
    }
  for (int k = 0; k < depth; ++k, b_row += ldb)
    for (int r = 0; r < R; ++r) {
      const float a_rk = a[r * lda + k];
      for (int c = 0; c < C; ++c) sum[r][c] += std::trunc(a_rk * b_row[c] * inv[r][c]);
    }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      const int32_t u = unit[r][c] < -126 ? -126 : (unit[r][c] > 126 ? 126 : unit[r][c]);
      const float scale = arch::bits_float(static_cast<uint32_t>(127 + u) << 23);
      acc[r * ldacc + c] = unit[r][c] < -126 ? arch::mma_result(0.0f + arch::mma_cut(c_in[r][c], unit[r][c]), result_bits)
                                             : arch::mma_result(sum[r][c] * scale, result_bits);
    }
}

/// The tensor core's addition (arch::mma_tensor_core_instruction) for an R × C block of one
/// instruction, the same bits element by element: step 1 as a max over k of exponent sums, then
/// the cut products summed exactly in Sum (float for FP8, double for BF16; see mma_order.hpp).
template <int R, int C, class Sum>
inline void rule_block(const float* a, int64_t lda, const float* b, int64_t ldb, int c0, int depth, float* acc,
                       int64_t ldacc, bool overwrite, const arch::MmaRule& rule) {
  float c_in[R][C];
  int32_t unit[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      c_in[r][c] = overwrite ? 0.0f : acc[r * ldacc + c0 + c];
      unit[r][c] = arch::mma_accumulator_exponent(c_in[r][c]);
    }
  const float* b_row = b + c0;
  for (int k = 0; k < depth; ++k, b_row += ldb) {
    int32_t eb[C];
    for (int c = 0; c < C; ++c) eb[c] = arch::mma_input_exponent(b_row[c], rule.emin_b);
    for (int r = 0; r < R; ++r) {
      const int32_t ea = arch::mma_input_exponent(a[r * lda + k], rule.emin_a);
      for (int c = 0; c < C; ++c) unit[r][c] = unit[r][c] > ea + eb[c] ? unit[r][c] : ea + eb[c];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) unit[r][c] -= rule.align_bits;
  if constexpr (std::is_same_v<Sum, float>) {
    rule_block_fp8_sums<R, C>(a, lda, b + c0, ldb, depth, c_in, unit, acc + c0, ldacc, rule.result_bits);
    return;
  }
  Sum sum[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      sum[r][c] = static_cast<Sum>(0) + arch::mma_cut(static_cast<Sum>(c_in[r][c]), unit[r][c]);
    }
  b_row = b + c0;
  for (int k = 0; k < depth; ++k, b_row += ldb)
    for (int r = 0; r < R; ++r) {
      const Sum a_rk = a[r * lda + k];
      for (int c = 0; c < C; ++c) sum[r][c] += arch::mma_cut(a_rk * static_cast<Sum>(b_row[c]), unit[r][c]);
    }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r * ldacc + c0 + c] = arch::mma_result(sum[r][c], rule.result_bits);
}

/// For rows [0, R) and columns [c0, c0 + C) of one instruction of depth `depth`:
/// acc[r][c] = mma_instruction(acc[r][c], a[r][·], b[·][c]); with `overwrite` (scale-d = 0) the
/// accumulator's old value is not read and +0 stands in for it.
/// a: R rows of stride lda starting at the instruction's first k; b: depth rows of stride ldb.
/// R, C are compile-time so the chunk sums stay in registers.
template <int R, int C>
inline void chunk_block(const float* a, int64_t lda, const float* b, int64_t ldb, int c0, int depth, float* acc,
                        int64_t ldacc, bool overwrite, const arch::MmaRule& rule) {
  if (rule.tensor_core) {
    if (rule.wide_sum) rule_block<R, C, double>(a, lda, b, ldb, c0, depth, acc, ldacc, overwrite, rule);
    else rule_block<R, C, float>(a, lda, b, ldb, c0, depth, acc, ldacc, overwrite, rule);
    return;
  }
  float chunk[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) chunk[r][c] = 0.0f;
  const float* b_row = b + c0;
  for (int k = 0; k < depth; ++k, b_row += ldb) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const float a_rk = a[r * lda + k];
#pragma GCC ivdep
      for (int c = 0; c < C; ++c) chunk[r][c] = std::fma(a_rk, b_row[c], chunk[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      float& out = acc[r * ldacc + c0 + c];
      out = (overwrite ? 0.0f : out) + chunk[r][c];
    }
}

/// The same for the columns [c0, c0 + cols) left over by the vector blocks: the reference form.
template <int R>
inline void chunk_block_tail(const float* a, int64_t lda, const float* b, int64_t ldb, int c0, int cols, int depth,
                             float* acc, int64_t ldacc, bool overwrite, const arch::MmaRule& rule) {
  for (int r = 0; r < R; ++r)
    for (int c = c0; c < c0 + cols; ++c) {
      float& out = acc[r * ldacc + c];
      out = arch::mma_instruction(overwrite ? 0.0f : out, depth, [&](int k) { return a[r * lda + k]; },
                                  [&](int k) { return b[k * ldb + c]; }, rule);
    }
}

/// One instruction's chunk for R rows and every column: C-wide blocks, then 16, 8, then scalar.
template <int R>
inline void chunk_rows(const float* a, int64_t lda, const float* b, int64_t ldb, int cols, int depth, float* acc,
                       int64_t ldacc, bool overwrite, const arch::MmaRule& rule) {
  int c0 = 0;
  for (; c0 + kColBlock <= cols; c0 += kColBlock)
    chunk_block<R, kColBlock>(a, lda, b, ldb, c0, depth, acc, ldacc, overwrite, rule);
  for (; c0 + 16 <= cols; c0 += 16) chunk_block<R, 16>(a, lda, b, ldb, c0, depth, acc, ldacc, overwrite, rule);
  for (; c0 + 8 <= cols; c0 += 8) chunk_block<R, 8>(a, lda, b, ldb, c0, depth, acc, ldacc, overwrite, rule);
  if (c0 < cols) chunk_block_tail<R>(a, lda, b, ldb, c0, cols - c0, depth, acc, ldacc, overwrite, rule);
}

/// acc[r][c] ⊕= Σ_k a[r][k]·b[k][c] as instructions of depth `mma_k` over k ∈ [0, depth_total),
/// the first instruction overwriting (scale-d = 0) when `overwrite`.
/// a: rows × lda; b: depth_total × ldb; acc: rows × ldacc.
inline void gemm_in_mma_order(const float* a, int lda, const float* b, int ldb, float* acc, int ldacc, int rows,
                              int cols, int depth_total, int mma_k, bool overwrite, const arch::MmaRule& rule) {
  for (int k0 = 0; k0 < depth_total; k0 += mma_k) {
    const int depth = k0 + mma_k <= depth_total ? mma_k : depth_total - k0;
    const bool first = overwrite && k0 == 0;  // NOTE: no zero fill of acc: the first chunk stores 0 + chunk
    const float* b_k0 = b + static_cast<int64_t>(k0) * ldb;
    int r0 = 0;
    // Rows in register blocks of kRowBlock, the remainder in pairs, then one.
    for (; r0 + kRowBlock <= rows; r0 += kRowBlock)
      chunk_rows<kRowBlock>(a + static_cast<int64_t>(r0) * lda + k0, lda, b_k0, ldb, cols, depth,
                            acc + static_cast<int64_t>(r0) * ldacc, ldacc, first, rule);
    for (; r0 + 2 <= rows; r0 += 2)
      chunk_rows<2>(a + static_cast<int64_t>(r0) * lda + k0, lda, b_k0, ldb, cols, depth,
                    acc + static_cast<int64_t>(r0) * ldacc, ldacc, first, rule);
    if (r0 < rows)
      chunk_rows<1>(a + static_cast<int64_t>(r0) * lda + k0, lda, b_k0, ldb, cols, depth,
                    acc + static_cast<int64_t>(r0) * ldacc, ldacc, first, rule);
  }
}

}  // namespace fp8attn::engine
