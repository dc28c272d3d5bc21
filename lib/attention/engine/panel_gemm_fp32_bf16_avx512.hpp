// The FP32 accumulation's products (panel_gemm.hpp: per instruction a chunk sum from +0, k
// ascending, one rounded FMA per product, then one FP32 add) on AVX512-BF16's vdpbf16ps, which
// does two multiply-adds per FP32 lane per instruction: twice the products per cycle of
// panel_block_avx512's FMAs, and the same bits.
//
// Why the bits are the same: vdpbf16ps adds its odd pair's product, then its even pair's, each
// addition rounded to nearest even (`fma(even, fma(odd, acc))`, tests/portability's
// Avx512Bf16.DotProductAddsTheOddProductThenTheEvenOneRoundedEachTime). So k = 2j goes in the
// odd (high) word of pair j and k = 2j + 1 in the even (low) word, and the chunk sum meets its
// products in the FMA loop's order, each product exact (two BF16 values' product fits FP32's 24
// bits). The instruction differs from two FMAs only where a subnormal or a non-finite value takes
// part (it treats subnormal inputs and accumulators as zero and flushes subnormal results), so a
// call takes this form only when none can:
//  - every A and B value is a BF16 value (E4M3 values, BF16 values and the P cast to either are),
//    finite, and not an FP32 subnormal;
//  - ea + eb ≥ −112 for the least exponents of a non-zero A and B value: every product, and so
//    every partial sum, is then a multiple of 2^−126, FP32's least normal, never a subnormal;
//  - ea + eb ≤ 120 for the largest: a chunk of 32 products stays below 2^127, no overflow.
// Otherwise (a NaN, ±inf, a value BF16 does not hold, a range too wide) the row block, or the
// whole call when B is the cause, runs panel_block_avx512's FMAs.
//
// NOTE: only for a caller that knows the CPU has AVX512-BF16 (lib/cpu_isa's avx512bf16 level):
// the functions carry target("avx512bf16") inside the x86-64-v4 build.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "lib/attention/engine/panel_gemm_scratch.hpp"

// NOTE: GCC 12's reductions and narrowing intrinsics start from _mm512_undefined, which it
// reports as (maybe) uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace fp8attn::engine::fp32_bf16_avx512 {

inline constexpr int kWidth = 16;           ///< a panel's columns
inline constexpr int kMaxDepth = kBf16PairsMaxDepth;  ///< the deepest product this form takes
inline constexpr int kRowPairs = kMaxDepth / 2;  ///< A's pairs per row in the scratch
inline constexpr int kNoValue = 255;        ///< the least-exponent start: no non-zero value seen

/// FP32 biased exponents of the values seen, and whether every one could go through vdpbf16ps.
struct ValueRange {
  __m512i least = _mm512_set1_epi32(kNoValue), most = _mm512_setzero_si512();
  __mmask16 inexact = 0;  ///< a lane held a value BF16 does not (low 16 bits set)

  /// Takes 16 values: bits of FP32 numbers (zero lanes for padding).
  __attribute__((always_inline)) inline void see(__m512i bits) {
    inexact |= _mm512_test_epi32_mask(bits, _mm512_set1_epi32(0xFFFF));
    const __mmask16 nonzero = _mm512_test_epi32_mask(bits, _mm512_set1_epi32(0x7FFFFFFF));
    const __m512i e = _mm512_and_si512(_mm512_srli_epi32(bits, 23), _mm512_set1_epi32(0xFF));
    least = _mm512_mask_min_epi32(least, nonzero, least, e);
    most = _mm512_max_epi32(most, e);
  }
  /// Reduced: {least, most} biased exponents, or false when a value is not a BF16 value, is
  /// non-finite (biased 255) or is an FP32 subnormal (biased 0, non-zero).
  bool finish(int* least_out, int* most_out) const {
    *least_out = _mm512_reduce_min_epi32(least);
    *most_out = _mm512_reduce_max_epi32(most);
    return inexact == 0 && *least_out >= 1 && *most_out <= 254;
  }
};

/// Whether A and B's exponent ranges (biased) keep every product and sum normal and finite.
inline bool ranges_fit(int least_a, int most_a, int least_b, int most_b) {
  if (least_a == kNoValue || least_b == kNoValue) return true;  // every product is ±0
  return (least_a - 127) + (least_b - 127) >= -112 && (most_a - 127) + (most_b - 127) <= 120;
}

/// Pair j of 32 FP32 lanes' bits lo (k = 2j) and hi (k = 2j + 1) per column: k = 2j's BF16 in the
/// odd (high) word, so vdpbf16ps adds it first.
__attribute__((always_inline)) inline __m512i pair_words(__m512i first, __m512i second) {
  return _mm512_or_si512(_mm512_and_si512(first, _mm512_set1_epi32(static_cast<int32_t>(0xFFFF0000u))),
                         _mm512_srli_epi32(second, 16));
}

/// B's panels as pairs: pair j of panel p at pairs[(p·stride + j)·16 + column].
struct PairPanels {
  uint32_t* pairs = nullptr;
  int64_t stride = 0;  ///< pairs per panel
  int least = kNoValue, most = 0;

  /// Converts depth_total rows of each panel; false when a value keeps the form off.
  bool build(const float* panels, int64_t panel_stride, int panels_count, int depth_total) {
    stride = (depth_total + 1) / 2;
    ValueRange range;
    for (int p = 0; p < panels_count; ++p) {
      const float* panel = panels + p * panel_stride;
      for (int j = 0; j < stride; ++j) {
        const __m512i first = _mm512_loadu_si512(panel + 2 * j * kWidth);
        const __m512i second = 2 * j + 1 < depth_total ? _mm512_loadu_si512(panel + (2 * j + 1) * kWidth)
                                                       : _mm512_setzero_si512();
        range.see(first);
        range.see(second);
        _mm512_store_si512(pairs + (p * stride + j) * kWidth, pair_words(first, second));
      }
    }
    return range.finish(&least, &most);
  }
};

/// R rows of A as pairs, row r's pair j at pairs[r·kRowPairs + j] (a constant row stride: the
/// loop's broadcasts take one pointer and constant offsets).
template <int R>
inline bool build_rows(const float* a, int64_t lda, int depth_total, uint32_t* pairs, int* least, int* most) {
  ValueRange range;
  // 16 values of a row at a time: as 8 qwords (k = 2j in the low dword), each pair's words to its
  // low dword, then the low dwords packed.
  const __m512i keep = _mm512_set1_epi64(0xFFFF0000);
  for (int r = 0; r < R; ++r)
    for (int k0 = 0; k0 < depth_total; k0 += 16) {
      const int len = depth_total - k0 < 16 ? depth_total - k0 : 16;
      const __m512i x = _mm512_maskz_loadu_epi32(static_cast<__mmask16>((1u << len) - 1u), a + r * lda + k0);
      range.see(x);
      const __m512i words = _mm512_or_si512(_mm512_and_si512(x, keep), _mm512_srli_epi64(x, 48));
      _mm256_store_si256(reinterpret_cast<__m256i*>(pairs + r * kRowPairs + k0 / 2), _mm512_cvtepi64_epi32(words));
    }
  return range.finish(least, most);
}

/// One instruction (pairs j0 ≤ j < j1) of R rows against P adjacent panels: chunk sums from +0,
/// then acc = chunk (overwrite) or acc + chunk, as panel_block_avx512.
template <int R, int P>
__attribute__((target("avx512bf16"), always_inline)) inline void block(const uint32_t* a_pairs, const uint32_t* b_pairs,
                                                                        int64_t b_stride, int j0, int j1, float* acc,
                                                                        int64_t ldacc, bool overwrite) {
  __m512 c[P][R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < P; ++q) c[q][r] = _mm512_setzero_ps();
  for (int j = j0; j < j1; ++j) {
    __m512bh b[P];
    for (int q = 0; q < P; ++q)
      b[q] = reinterpret_cast<__m512bh>(_mm512_load_si512(b_pairs + (q * b_stride + j) * kWidth));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512bh a_rj =
          reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int32_t>(a_pairs[r * kRowPairs + j])));
      for (int q = 0; q < P; ++q) c[q][r] = _mm512_dpbf16_ps(c[q][r], a_rj, b[q]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < P; ++q) {
      float* out = acc + r * ldacc + q * kWidth;
      // NOTE: the chunk alone for 0 + chunk: a chunk summed from +0 is never −0.
      _mm512_storeu_ps(out, overwrite ? c[q][r] : _mm512_add_ps(_mm512_loadu_ps(out), c[q][r]));
    }
}

/// R rows of A (as pairs) against panels p0, p0 + P, ... while P of them are left, each panel's
/// instructions in order; returns the first panel left.
template <int R, int P>
__attribute__((target("avx512bf16"), always_inline)) inline int panels_at_once(const uint32_t* a_pairs,
                                                                               const PairPanels& b, int p0,
                                                                               int panels_count, float* acc,
                                                                               int64_t ldacc, int depth_total,
                                                                               int mma_k, bool overwrite) {
  for (; p0 + P <= panels_count; p0 += P)
    for (int k0 = 0; k0 < depth_total; k0 += mma_k) {
      const int k1 = k0 + mma_k < depth_total ? k0 + mma_k : depth_total;
      block<R, P>(a_pairs, b.pairs + p0 * b.stride * kWidth, b.stride, k0 / 2, (k1 + 1) / 2, acc + p0 * kWidth, ldacc,
                  overwrite && k0 == 0);
    }
  return p0;
}

/// R rows of A (as pairs) against every panel, three, two, then one at a time.
template <int R>
__attribute__((target("avx512bf16"))) inline void rows_against_panels(const uint32_t* a_pairs, const PairPanels& b,
                                                                      int panels_count, float* acc, int64_t ldacc,
                                                                      int depth_total, int mma_k, bool overwrite) {
  int p0 = panels_at_once<R, 3>(a_pairs, b, 0, panels_count, acc, ldacc, depth_total, mma_k, overwrite);
  p0 = panels_at_once<R, 2>(a_pairs, b, p0, panels_count, acc, ldacc, depth_total, mma_k, overwrite);
  panels_at_once<R, 1>(a_pairs, b, p0, panels_count, acc, ldacc, depth_total, mma_k, overwrite);
}

}  // namespace fp8attn::engine::fp32_bf16_avx512

#pragma GCC diagnostic pop
