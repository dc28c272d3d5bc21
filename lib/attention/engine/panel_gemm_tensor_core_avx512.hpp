// The tensor core's addition (kernels/ptx/mma_order.hpp, steps 1-4) over one panel of 16 columns
// with AVX-512: one zmm register is the panel's 16 columns. Same two passes and same bits as
// panel_gemm_tensor_core.hpp's AVX2 block (its comment derives them), with two changes:
//  - 16 lanes per operation instead of 8, and 32 registers: all R ≤ 8 rows of a block keep their
//    exponent maxima and sums in registers through each pass;
//  - pass 2 truncates with vcvttps2dq and sums in int32 (one µop each; AVX2's vroundps is two on
//    Intel). FP8: each cut product is below 2^15 in units, so 33 of them stay below 2^21, and the
//    int32 sum is the FP32 sum the AVX2 block forms (exact below 2^24, never −0: both start from
//    +0). BF16 (F = 25): the even/odd int32 halves of the AVX2 block.
// NOTE: per product, pass 1 is a multiply and a max, pass 2 a multiply by a, one by 2^−(E−F), a
// truncation and an add: six µops per 16 products on the two 512-bit ports, against fourteen per
// 16 on AVX2's two FP ports. A's broadcasts are memory operands of the multiplies.
// Lanes the vector form does not cover fall back to rule_block, as in the AVX2 block.
// NOTE: FP8 inputs run panel_gemm_tensor_core_fp8_avx512.hpp's form (about half the µops per
// product); this block serves BF16 inputs and FP8 operands holding NaN or ±inf.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/ptx/mma_order.hpp"
#include "lib/attention/engine/panel_gemm_tensor_core.hpp"
#include "lib/attention/engine/tile_ops.hpp"

// NOTE: GCC 12's AVX-512 intrinsics pass an undefined source (_mm512_undefined_*) to their
// builtins, and -Wmaybe-uninitialized reports it wherever they are inlined (fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace fp8attn::engine::tensor_core_avx512 {

/// x ↦ 2^max(e(x), emin) as a float, +0 for ±0, +inf for ±inf and NaN (the AVX2 block's
/// exponent_only on 16 lanes).
__attribute__((always_inline)) inline __m512 exponent_only(__m512 x, __m512 emin) {
  const __m512i bits = _mm512_castps_si512(x);
  const __mmask16 nonzero = _mm512_test_epi32_mask(bits, _mm512_set1_epi32(0x7FFFFFFF));
  const __m512 e = _mm512_castsi512_ps(_mm512_and_si512(bits, _mm512_set1_epi32(0x7F800000)));
  return _mm512_maskz_max_ps(nonzero, e, emin);
}

/// Lanes whose E needs the generic block: E ≥ 2^100 or NaN, or 0 < E < 2^−100.
__attribute__((always_inline)) inline __mmask16 out_of_range(__m512 e) {
  const __mmask16 high = _mm512_cmp_ps_mask(e, _mm512_set1_ps(0x1p100f), _CMP_NLT_UQ);
  const __mmask16 low = _mm512_cmp_ps_mask(e, _mm512_set1_ps(0x1p-100f), _CMP_LT_OQ) &
                        _mm512_cmp_ps_mask(e, _mm512_setzero_ps(), _CMP_GT_OQ);
  return high | low;
}

/// 2^F / E for E a power of two in [2^−100, 2^100), 1 for E = 0 (inverse_unit of the AVX2 block).
__attribute__((always_inline)) inline __m512 inverse_unit(__m512 e, int align_bits) {
  const __m512i bits = _mm512_sub_epi32(_mm512_set1_epi32((254 + align_bits) << 23), _mm512_castps_si512(e));
  const __mmask16 zero = _mm512_cmp_ps_mask(e, _mm512_setzero_ps(), _CMP_EQ_OQ);
  return _mm512_mask_blend_ps(zero, _mm512_castsi512_ps(bits), _mm512_set1_ps(1.0f));
}

/// u = 1/inv, exact (a power of two), from the bits.
__attribute__((always_inline)) inline __m512 unit_of(__m512 inv) {
  return _mm512_castsi512_ps(_mm512_sub_epi32(_mm512_set1_epi32(254 << 23), _mm512_castps_si512(inv)));
}

/// Step 4 on sum·u: `result_bits` fraction bits; a NaN becomes the canonical NaN.
__attribute__((always_inline)) inline __m512 instruction_result(__m512 value, int result_bits) {
  const __m512i mask = _mm512_set1_epi32(static_cast<int32_t>(~((1u << (23 - result_bits)) - 1u)));
  const __m512 cut = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(value), mask));
  const __mmask16 nan = _mm512_cmp_ps_mask(value, value, _CMP_UNORD_Q);
  return _mm512_mask_blend_ps(nan, cut, _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int32_t>(arch::kCanonicalNan))));
}

/// Pass 2 for FP8 inputs (F = 13), rows [0, R): the cut products in units, summed in int32.
template <int R>
__attribute__((always_inline)) inline void cut_sums(const float* a, int64_t lda, const float* panel, int depth,
                                                    const __m512 (&c_in)[R], const __m512 (&inv)[R], float* acc,
                                                    int64_t ldacc, int result_bits) {
  __m512i sum[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) sum[r] = _mm512_cvttps_epi32(_mm512_mul_ps(c_in[r], inv[r]));
  for (int k = 0; k < depth; ++k, panel += 16) {
    const __m512 b = _mm512_loadu_ps(panel);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 p = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(a[r * lda + k]), b), inv[r]);
      sum[r] = _mm512_add_epi32(sum[r], _mm512_cvttps_epi32(p));
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const __m512 value = _mm512_mul_ps(_mm512_cvtepi32_ps(sum[r]), unit_of(inv[r]));
    _mm512_storeu_ps(acc + r * ldacc, instruction_result(value, result_bits));
  }
}

/// Pass 2 for BF16 inputs (F = 25), rows [0, R) with R ≤ 4: even and odd k in two int32 halves
/// (the AVX2 block's cut_sums_bf16 gives the bounds), added in double at the end, 23 fraction bits
/// kept. NOTE: four rows at a time: eight rows' sums, halves and scales (24 registers) with two B
/// vectors left GCC 12 spilling sums inside the loop.
template <int R>
__attribute__((always_inline)) inline void cut_sums_bf16(const float* a, int64_t lda, const float* panel, int depth,
                                                         const __m512* c_in, const __m512* inv, float* acc,
                                                         int64_t ldacc) {
  static_assert(R >= 1 && R <= 4, "four rows at a time");
  __m512i even[R], odd[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    even[r] = _mm512_cvttps_epi32(_mm512_mul_ps(c_in[r], inv[r]));
    odd[r] = _mm512_setzero_si512();
  }
  int k = 0;
  for (; k + 2 <= depth; k += 2, panel += 32) {
    const __m512 b0 = _mm512_loadu_ps(panel), b1 = _mm512_loadu_ps(panel + 16);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 p0 = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(a[r * lda + k]), b0), inv[r]);
      const __m512 p1 = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(a[r * lda + k + 1]), b1), inv[r]);
      even[r] = _mm512_add_epi32(even[r], _mm512_cvttps_epi32(p0));
      odd[r] = _mm512_add_epi32(odd[r], _mm512_cvttps_epi32(p1));
    }
  }
  if (k < depth) {
    const __m512 b0 = _mm512_loadu_ps(panel);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 p0 = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(a[r * lda + k]), b0), inv[r]);
      even[r] = _mm512_add_epi32(even[r], _mm512_cvttps_epi32(p0));
    }
  }
  const __m512d keep = _mm512_castsi512_pd(_mm512_set1_epi64(static_cast<int64_t>(~((1ull << (52 - 23)) - 1ull))));
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const __m512 u = unit_of(inv[r]);
    __m256 half[2];
    for (int q = 0; q < 2; ++q) {
      const __m256i e = q == 0 ? _mm512_castsi512_si256(even[r]) : _mm512_extracti64x4_epi64(even[r], 1);
      const __m256i o = q == 0 ? _mm512_castsi512_si256(odd[r]) : _mm512_extracti64x4_epi64(odd[r], 1);
      const __m256 u8 = q == 0 ? _mm512_castps512_ps256(u)
                               : _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(u), 1));
      const __m512d total = _mm512_add_pd(_mm512_cvtepi32_pd(e), _mm512_cvtepi32_pd(o));
      half[q] = _mm512_cvtpd_ps(_mm512_and_pd(_mm512_mul_pd(total, _mm512_cvtps_pd(u8)), keep));
    }
    _mm512_storeu_ps(acc + r * ldacc, _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(half[0])),
                                                                          _mm256_castps_pd(half[1]), 1)));
  }
}

/// One instruction for R ≤ 8 rows and one panel (the AVX2 block's panel_block, same arguments:
/// `a_exp` holds A's exponent-only floats from tensor_core_avx2::exponents_of_rows).
template <int R>
__attribute__((always_inline)) inline void panel_block(const float* a, int64_t lda, const float* a_exp, int64_t ld_exp,
                                                       const float* panel, int depth, float* acc, int64_t ldacc,
                                                       bool overwrite, const arch::MmaRule& rule) {
  static_assert(R >= 1 && R <= 8, "one zmm of maxima and one of sums per row");
  __m512 c_in[R], e[R];
  const __m512 emin_acc = _mm512_set1_ps(tensor_core_avx2::pow2(-126));
  const __m512 emin_b = _mm512_set1_ps(tensor_core_avx2::pow2(rule.emin_b));
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    c_in[r] = overwrite ? _mm512_setzero_ps() : _mm512_loadu_ps(acc + r * ldacc);
    e[r] = exponent_only(c_in[r], emin_acc);
  }
  const __m512 inf = _mm512_set1_ps(__builtin_inff());
  __mmask16 special = 0;  // a NaN or ±inf in B (A's are found by exponents_of_rows)
  const float* b_row = panel;
  for (int k = 0; k < depth; ++k, b_row += 16) {
    const __m512 eb = exponent_only(_mm512_loadu_ps(b_row), emin_b);
    if (rule.wide_sum) special |= _mm512_cmp_ps_mask(eb, inf, _CMP_EQ_OQ);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) e[r] = _mm512_max_ps(e[r], _mm512_mul_ps(_mm512_set1_ps(a_exp[r * ld_exp + k]), eb));
  }
  __mmask16 bad = special;
  __m512 inv[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    bad |= out_of_range(e[r]);
    inv[r] = inverse_unit(e[r], rule.align_bits);
  }
  if (bad != 0) {
    if (rule.wide_sum) rule_block<R, 16, double>(a, lda, panel, 16, 0, depth, acc, ldacc, overwrite, rule);
    else rule_block<R, 16, float>(a, lda, panel, 16, 0, depth, acc, ldacc, overwrite, rule);
    return;
  }
  if (rule.wide_sum) {
    constexpr int kFirst = R < 4 ? R : 4;
    cut_sums_bf16<kFirst>(a, lda, panel, depth, c_in, inv, acc, ldacc);
    if constexpr (R > 4) cut_sums_bf16<R - 4>(a + 4 * lda, lda, panel, depth, c_in + 4, inv + 4, acc + 4 * ldacc, ldacc);
    return;
  }
  cut_sums<R>(a, lda, panel, depth, c_in, inv, acc, ldacc, rule.result_bits);
}

}  // namespace fp8attn::engine::tensor_core_avx512

#pragma GCC diagnostic pop
