// The tensor core's addition for FP8 inputs (kernels/ptx/mma_order.hpp, steps 1-4) over one
// panel of 16 columns, with AVX2 intrinsics: panel_gemm.hpp's block for the default accumulation.
// Same bits as arch::mma_tensor_core_instruction, element by element. BF16 inputs (F = 25) take
// the same pass 1 and an integer form of pass 2 (cut_sums_bf16).
//
// Two passes over the instruction's k, both vectorized over the panel's columns:
//  1. E: exponents as "exponent-only" floats, x ↦ 2^max(e(x), emin) (+0 for x = 0). The product
//     of two such floats is 2^(ea + eb) exactly, so step 1 is one multiply and one max per
//     product. A's exponents are taken once per row block for all panels (panel_rows), B's once
//     per k for the block's rows.
//  2. The cut products summed in units of u = 2^(E − 13): trunc(a·b·2^−(E−13)) is the cut of
//     a·b (the scaling is exact, |a·b/u| < 2^15), and the sum of 33 such integers is exact in
//     FP32 (mma_order.hpp's NOTE). Then sum·u, and step 4 as a mask of the low 10 fraction bits.
//
// NOTE: why not the generic rule_block: its R × 16 arrays of sums, units and scales do not fit
// AVX2's 16 registers at the engine's 6-row block, GCC keeps them on the stack, and the E4M3
// forward ran at 0.07 of sgemm. Here pass 1 holds 2·R maxima, pass 2 runs three rows at a time
// (six sums) and reads each column's 2^−(E−13) from memory as an operand of the multiply.
// NOTE: lanes the vector form does not cover fall back to rule_block for the whole block:
// E ≥ 2^100 (an infinite or NaN input or accumulator, or an accumulator near FP32's top) or
// 0 < E < 2^−100 (an accumulator alone near FP32's bottom, all products zero). Products of two
// FP8 values are never that small (≥ 2^−28 when non-zero), so real tiles do not fall back.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/ptx/mma_order.hpp"
#include "lib/attention/engine/tile_ops.hpp"

namespace fp8attn::engine::tensor_core_avx2 {

/// Most depth of one panel_rows call whose A exponents are taken up front (head_dim ≤ 256 and
/// block_n ≤ 224 in kernels/sm90/tile_config.hpp); deeper products take the generic block.
inline constexpr int kMaxDepth = 256;

/// x ↦ 2^max(e(x), emin) as a float, +0 for ±0, +inf for ±inf and NaN. `emin` is 2^emin.
__attribute__((always_inline)) inline __m256 exponent_only(__m256 x, __m256 emin) {
  const __m256 exp_bits = _mm256_castsi256_ps(_mm256_set1_epi32(0x7F800000));
  const __m256 abs_bits = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 nonzero = _mm256_cmp_ps(_mm256_and_ps(x, abs_bits), _mm256_setzero_ps(), _CMP_NEQ_UQ);
  return _mm256_and_ps(_mm256_max_ps(_mm256_and_ps(x, exp_bits), emin), nonzero);
}

inline float exponent_only(float x, float emin) {
  const uint32_t u = arch::float_bits(x);
  if ((u & 0x7FFFFFFFu) == 0) return 0.0f;
  const float e = arch::bits_float(u & 0x7F800000u);  // +inf for NaN and ±inf
  return e > emin ? e : emin;
}

/// 2^emin as a float (emin ≥ −126).
inline float pow2(int32_t e) { return arch::bits_float(static_cast<uint32_t>(e + 127) << 23); }

/// Whether a lane's E needs the generic block (the file comment): E ≥ 2^100 or NaN, or
/// 0 < E < 2^−100. Returns a lane mask.
__attribute__((always_inline)) inline int out_of_range(__m256 e) {
  const __m256 huge = _mm256_set1_ps(0x1p100f), tiny = _mm256_set1_ps(0x1p-100f);
  const __m256 bad_high = _mm256_cmp_ps(e, huge, _CMP_NLT_UQ);  // ≥ 2^100 or NaN
  const __m256 bad_low = _mm256_and_ps(_mm256_cmp_ps(e, tiny, _CMP_LT_OQ),
                                       _mm256_cmp_ps(e, _mm256_setzero_ps(), _CMP_GT_OQ));
  return _mm256_movemask_ps(_mm256_or_ps(bad_high, bad_low));
}

/// 2^13 / E for E a power of two in [2^−100, 2^100): the scale into units of u (integer
/// arithmetic on the encodings, exact). A lane with E = 0 (every addend zero) gets 1: any unit
/// sums its zeros to +0.
__attribute__((always_inline)) inline __m256 inverse_unit(__m256 e, int align_bits) {
  const __m256i bits = _mm256_sub_epi32(_mm256_set1_epi32((254 + align_bits) << 23), _mm256_castps_si256(e));
  const __m256 zero = _mm256_cmp_ps(e, _mm256_setzero_ps(), _CMP_EQ_OQ);
  return _mm256_blendv_ps(_mm256_castsi256_ps(bits), _mm256_set1_ps(1.0f), zero);
}

/// Step 4 on sum·u: `result_bits` fraction bits, a NaN becomes the canonical NaN.
__attribute__((always_inline)) inline __m256 instruction_result(__m256 sum, __m256 inv, int result_bits) {
  // NOTE: u = 1/inv is exact (a power of two); sum/inv would be a division per lane.
  const __m256 u = _mm256_castsi256_ps(_mm256_sub_epi32(_mm256_set1_epi32(254 << 23), _mm256_castps_si256(inv)));
  const __m256 value = _mm256_mul_ps(sum, u);
  const __m256 mask = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int32_t>(~((1u << (23 - result_bits)) - 1u))));
  const __m256 cut = _mm256_and_ps(value, mask);
  const __m256 nan = _mm256_cmp_ps(value, value, _CMP_UNORD_Q);
  return _mm256_blendv_ps(cut, _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int32_t>(arch::kCanonicalNan))), nan);
}

/// Pass 2 for rows [0, G) of a block (G ≤ 3): the cut products in units, then the results.
/// c_in: G × 2 accumulator vectors; inv: G rows of 16 floats, 2^−(E−13) per column.
template <int G>
__attribute__((always_inline)) inline void cut_sums(const float* a, int64_t lda, const float* panel, int depth,
                                                    const __m256* c_in, const float* inv, float* acc, int64_t ldacc,
                                                    int result_bits) {
  constexpr int kTrunc = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;
  __m256 sum[G][2];
#pragma GCC unroll 4
  for (int r = 0; r < G; ++r)
    for (int h = 0; h < 2; ++h)
      sum[r][h] = _mm256_add_ps(_mm256_setzero_ps(),
                                _mm256_round_ps(_mm256_mul_ps(c_in[2 * r + h], _mm256_load_ps(inv + 16 * r + 8 * h)), kTrunc));
  for (int k = 0; k < depth; ++k, panel += 16) {
    const __m256 b_lo = _mm256_loadu_ps(panel), b_hi = _mm256_loadu_ps(panel + 8);
#pragma GCC unroll 4
    for (int r = 0; r < G; ++r) {
      const __m256 a_rk = _mm256_broadcast_ss(a + r * lda + k);
      const __m256 p_lo = _mm256_mul_ps(_mm256_mul_ps(a_rk, b_lo), _mm256_load_ps(inv + 16 * r));
      const __m256 p_hi = _mm256_mul_ps(_mm256_mul_ps(a_rk, b_hi), _mm256_load_ps(inv + 16 * r + 8));
      sum[r][0] = _mm256_add_ps(sum[r][0], _mm256_round_ps(p_lo, kTrunc));
      sum[r][1] = _mm256_add_ps(sum[r][1], _mm256_round_ps(p_hi, kTrunc));
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < G; ++r)
    for (int h = 0; h < 2; ++h)
      _mm256_storeu_ps(acc + r * ldacc + 8 * h,
                       instruction_result(sum[r][h], _mm256_load_ps(inv + 16 * r + 8 * h), result_bits));
}

/// Pass 2 for BF16 inputs (F = 25), rows [0, G) with G ≤ 2. NOTE: a BF16 product has 16
/// significant bits, so it and its scaling by 2^−(E−25) are exact in FP32, and truncating the
/// scaled value to int32 (vcvttps2dq) is the cut: an integer below 2^27. 16 of them and the
/// accumulator may reach 2^31, so even and odd k sum into two int32 halves (below 2^30 + 2^26
/// each), added in double at the end (exact), where step 4 keeps 23 fraction bits.
template <int G>
__attribute__((always_inline)) inline void cut_sums_bf16(const float* a, int64_t lda, const float* panel, int depth,
                                                         const __m256* c_in, const float* inv, float* acc,
                                                         int64_t ldacc) {
  __m256i sum[2][G][2];
#pragma GCC unroll 4
  for (int r = 0; r < G; ++r)
    for (int h = 0; h < 2; ++h) {
      sum[0][r][h] = _mm256_cvttps_epi32(_mm256_mul_ps(c_in[2 * r + h], _mm256_load_ps(inv + 16 * r + 8 * h)));
      sum[1][r][h] = _mm256_setzero_si256();
    }
  for (int k = 0; k < depth; ++k, panel += 16) {
    const int half = k & 1;
    const __m256 b_lo = _mm256_loadu_ps(panel), b_hi = _mm256_loadu_ps(panel + 8);
#pragma GCC unroll 4
    for (int r = 0; r < G; ++r) {
      const __m256 a_rk = _mm256_broadcast_ss(a + r * lda + k);
      const __m256 p_lo = _mm256_mul_ps(_mm256_mul_ps(a_rk, b_lo), _mm256_load_ps(inv + 16 * r));
      const __m256 p_hi = _mm256_mul_ps(_mm256_mul_ps(a_rk, b_hi), _mm256_load_ps(inv + 16 * r + 8));
      sum[half][r][0] = _mm256_add_epi32(sum[half][r][0], _mm256_cvttps_epi32(p_lo));
      sum[half][r][1] = _mm256_add_epi32(sum[half][r][1], _mm256_cvttps_epi32(p_hi));
    }
  }
  const __m256d keep = _mm256_castsi256_pd(_mm256_set1_epi64x(static_cast<int64_t>(~((1ull << (52 - 23)) - 1ull))));
#pragma GCC unroll 4
  for (int r = 0; r < G; ++r)
    for (int h = 0; h < 2; ++h) {
      // u = 2^(E−25) = 1/inv, exact as a double from the float's bits.
      const __m256 u_f = _mm256_castsi256_ps(
          _mm256_sub_epi32(_mm256_set1_epi32(254 << 23), _mm256_castps_si256(_mm256_load_ps(inv + 16 * r + 8 * h))));
      __m128 out[2];
      for (int q = 0; q < 2; ++q) {
        const __m128i e = q == 0 ? _mm256_castsi256_si128(sum[0][r][h]) : _mm256_extracti128_si256(sum[0][r][h], 1);
        const __m128i o = q == 0 ? _mm256_castsi256_si128(sum[1][r][h]) : _mm256_extracti128_si256(sum[1][r][h], 1);
        const __m128 u4 = q == 0 ? _mm256_castps256_ps128(u_f) : _mm256_extractf128_ps(u_f, 1);
        const __m256d total = _mm256_add_pd(_mm256_cvtepi32_pd(e), _mm256_cvtepi32_pd(o));
        out[q] = _mm256_cvtpd_ps(_mm256_and_pd(_mm256_mul_pd(total, _mm256_cvtps_pd(u4)), keep));
      }
      _mm256_storeu_ps(acc + r * ldacc + 8 * h, _mm256_set_m128(out[1], out[0]));
    }
}

/// One instruction for R rows and one panel. `a_exp` holds A's exponent-only floats, row r at
/// a_exp + r·ld_exp, from the instruction's first k. Same bits as rule_block.
template <int R>
__attribute__((always_inline)) inline void panel_block(const float* a, int64_t lda, const float* a_exp, int64_t ld_exp,
                                                       const float* panel, int depth, float* acc, int64_t ldacc,
                                                       bool overwrite, const arch::MmaRule& rule) {
  alignas(32) __m256 c_in[R][2];
  __m256 e[R][2];
  const __m256 emin_acc = _mm256_set1_ps(pow2(-126)), emin_b = _mm256_set1_ps(pow2(rule.emin_b));
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
    for (int h = 0; h < 2; ++h) {
      c_in[r][h] = overwrite ? _mm256_setzero_ps() : _mm256_loadu_ps(acc + r * ldacc + 8 * h);
      e[r][h] = exponent_only(c_in[r][h], emin_acc);
    }
  const __m256 inf = _mm256_set1_ps(__builtin_inff());
  __m256 special = _mm256_setzero_ps();  // a NaN or ±inf in B (A's are found by exponents_of_rows)
  const float* b_row = panel;
  for (int k = 0; k < depth; ++k, b_row += 16) {
    const __m256 eb_lo = exponent_only(_mm256_loadu_ps(b_row), emin_b);
    const __m256 eb_hi = exponent_only(_mm256_loadu_ps(b_row + 8), emin_b);
    if (rule.wide_sum)
      special = _mm256_or_ps(special, _mm256_or_ps(_mm256_cmp_ps(eb_lo, inf, _CMP_EQ_OQ), _mm256_cmp_ps(eb_hi, inf, _CMP_EQ_OQ)));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 ea = _mm256_broadcast_ss(a_exp + r * ld_exp + k);
      e[r][0] = _mm256_max_ps(e[r][0], _mm256_mul_ps(ea, eb_lo));
      e[r][1] = _mm256_max_ps(e[r][1], _mm256_mul_ps(ea, eb_hi));
    }
  }
  int bad = _mm256_movemask_ps(special);
  alignas(32) float inv[R][16];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
    for (int h = 0; h < 2; ++h) {
      bad |= out_of_range(e[r][h]);
      _mm256_store_ps(&inv[r][8 * h], inverse_unit(e[r][h], rule.align_bits));
    }
  if (bad != 0) {
    if (rule.wide_sum) rule_block<R, 16, double>(a, lda, panel, 16, 0, depth, acc, ldacc, overwrite, rule);
    else rule_block<R, 16, float>(a, lda, panel, 16, 0, depth, acc, ldacc, overwrite, rule);
    return;
  }
  if (rule.wide_sum) {
    // NOTE: two rows at a time: eight int32 sums, two B vectors and a broadcast.
    int r0 = 0;
    for (; r0 + 2 <= R; r0 += 2)
      cut_sums_bf16<2>(a + r0 * lda, lda, panel, depth, &c_in[r0][0], &inv[r0][0], acc + r0 * ldacc, ldacc);
    if (r0 < R) cut_sums_bf16<1>(a + r0 * lda, lda, panel, depth, &c_in[r0][0], &inv[r0][0], acc + r0 * ldacc, ldacc);
    return;
  }
  // NOTE: three rows at a time: six sums, two B vectors and a broadcast stay in registers.
  int r0 = 0;
  for (; r0 + 3 <= R; r0 += 3)
    cut_sums<3>(a + r0 * lda, lda, panel, depth, &c_in[r0][0], &inv[r0][0], acc + r0 * ldacc, ldacc,
                rule.result_bits);
  for (; r0 < R; ++r0)
    cut_sums<1>(a + r0 * lda, lda, panel, depth, &c_in[r0][0], &inv[r0][0], acc + r0 * ldacc, ldacc,
                rule.result_bits);
}

/// A's exponent-only floats for rows [0, R) and k < depth: out[r·depth + k]. Returns whether A
/// holds a NaN or ±inf (exponent-only +inf).
template <int R>
inline bool exponents_of_rows(const float* a, int64_t lda, int depth, int32_t emin, float* out) {
  const float emin_f = pow2(emin);
  bool special = false;
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < depth; ++k) {
      out[r * depth + k] = exponent_only(a[r * lda + k], emin_f);
      special |= out[r * depth + k] == __builtin_inff();
    }
  return special;
}

}  // namespace fp8attn::engine::tensor_core_avx2
