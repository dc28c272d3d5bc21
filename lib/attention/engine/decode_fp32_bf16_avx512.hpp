// The FP32 decode tile's products over E4M3 keys and values (decode_fp32.cpp) on AVX512-BF16's
// vdpbf16ps: two multiply-adds per FP32 lane per instruction, the same bits as the FMA loops of
// decode_fp32_keys.hpp and decode_fp32_values.hpp.
//
// Why the bits are the same (as for the forward's products, panel_gemm_fp32_bf16_avx512.hpp):
// vdpbf16ps adds its odd (high) word's product, then its even (low) word's, each addition rounded
// to nearest even. So the earlier term of each pair (dimension e for Q·Kᵀ, key j for P·V) goes in
// the high word, and every sum meets its products in the FMA loops' order. The products are the
// FMA loops' exact products: Q·2^8 (E4M3, exact in BF16) times k·2^-8, and P·2^8 (the cast P)
// times v·2^-8, each code widened through FP16 as the FMA loops do and then to BF16 (exact). The
// instruction departs from FMAs only where a subnormal takes part, and none can here unless O
// holds one:
//  - every product is 0 or at least 2^-18 in magnitude (E4M3's least value 2^-9, squared), so a
//    sum from +0 of such products is a multiple of 2^-18 and never an FP32 subnormal, and an O
//    that is normal (or 0) plus such a product is never one either (a cancellation leaves a
//    multiple of the larger term's ulp, at least 2^-41);
//  - O after a rescale can hold a subnormal, which the instruction would read as 0: decode_fp32.cpp
//    checks the rescaled rows and keeps that head's P·V on the FMAs for the block.
// A chunk holding an E4M3 NaN code, or a P value BF16 does not hold or NaN, keeps the FMAs too, and
// so does an item whose Q holds a NaN: a NaN's bits are then the FMA loops' in every build.
//
// NOTE: only for a caller that knows the CPU has AVX512-BF16 (lib/cpu_isa's avx512bf16 level): the
// functions carry target("avx512bf16") inside the x86-64-v4 build. Included by decode_fp32.cpp
// after decode_fp32_keys.hpp and decode_fp32_values.hpp, inside its per-ISA namespace.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace fp8attn::engine::decode_fp32_vec {

/// 16 pairs of E4M3 codes, 32 bytes with each pair's first code in the odd byte, to 16 dwords of
/// BF16 words of value · 2^-8, the first in the high word (NaN codes excluded: the callers check).
/// NOTE: through FP16 as the FMA loops widen (decode_fp32_keys.hpp), then FP32 to BF16 in place:
/// vcvtne2ps2bf16 of the two halves keeps each word where it was, and every value is exact.
__attribute__((target("avx512bf16"), always_inline)) inline __m512bh bf16_pairs_of_codes(__m256i pairs) {
  const __m512i w = _mm512_cvtepi8_epi16(pairs);
  const __m512i h = _mm512_and_si512(_mm512_slli_epi16(w, 7), _mm512_set1_epi16(static_cast<short>(0xBF80)));
  return _mm512_cvtne2ps_pbh(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1)),
                             _mm512_cvtph_ps(_mm512_castsi512_si256(h)));
}

/// Two FP32 values exact in BF16 as one dword, `first` in the high word.
inline uint32_t bf16_pair(float first, float second) {
  uint32_t a, b;
  std::memcpy(&a, &first, 4);
  std::memcpy(&b, &second, 4);
  return (a & 0xFFFF0000u) | (b >> 16);
}

/// The lane orders unpacking bytes leaves: lanes 0-15 of unpacklo hold elements 0-7 and 16-23 of
/// 32, unpackhi's 8-15 and 24-31. interleave_lo and _hi index [lo, hi] into
/// the natural order, and the natural order into [lo, hi].
inline __m512i interleave_lo() { return _mm512_set_epi32(23, 22, 21, 20, 19, 18, 17, 16, 7, 6, 5, 4, 3, 2, 1, 0); }
inline __m512i interleave_hi() {
  return _mm512_set_epi32(31, 30, 29, 28, 27, 26, 25, 24, 15, 14, 13, 12, 11, 10, 9, 8);
}

/// qp[r · d/2 + i] = (q[r][2i], q[r][2i + 1]) for `rows` rows of Q (already times 2^8, exact in
/// BF16). Returns false when a value is NaN: the item keeps its FMAs, so that a NaN's bits are
/// the FMA loops' in every build.
FP8ATTN_DECODE_KERNEL inline bool query_pairs(const float* q, int rows, int d, uint32_t* qp) {
  bool nan = false;
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < d / 2; ++i) {
      const float first = q[r * d + 2 * i], second = q[r * d + 2 * i + 1];
      nan = nan || first != first || second != second;
      qp[r * (d / 2) + i] = bf16_pair(first, second);
    }
  return !nan;
}

/// qk_key_columns on pairs: s[r·ld + j] (j < kKeyChunk) = Σ_e q[r][e] · K[j][e], e ascending from
/// +0, from the chunk's transposed codes kt (no NaN); step() after every 8 dimensions.
template <int kRows, class Step>
__attribute__((target("avx512bf16"), always_inline)) inline void qk_pair_columns(const uint32_t* qp, int d,
                                                                                 const uint8_t* kt, float* s, int ld,
                                                                                 Step& step) {
  __m512 a[kRows], b[kRows];  // keys 0-7 and 16-23; 8-15 and 24-31
  for (int r = 0; r < kRows; ++r) a[r] = b[r] = _mm512_setzero_ps();
  for (int i0 = 0; i0 < d / 2; i0 += 4) {
    for (int i = i0; i < i0 + 4; ++i) {
      const __m256i first = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kt + (2 * i) * kKeyChunk));
      const __m256i second = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kt + (2 * i + 1) * kKeyChunk));
      const __m512bh x0 = bf16_pairs_of_codes(_mm256_unpacklo_epi8(second, first));
      const __m512bh x1 = bf16_pairs_of_codes(_mm256_unpackhi_epi8(second, first));
      for (int r = 0; r < kRows; ++r) {
        const __m512bh qr = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int32_t>(qp[r * (d / 2) + i])));
        a[r] = _mm512_dpbf16_ps(a[r], qr, x0);
        b[r] = _mm512_dpbf16_ps(b[r], qr, x1);
      }
    }
    step();
  }
  for (int r = 0; r < kRows; ++r) {
    _mm512_storeu_ps(s + static_cast<int64_t>(r) * ld, _mm512_permutex2var_ps(a[r], interleave_lo(), b[r]));
    _mm512_storeu_ps(s + static_cast<int64_t>(r) * ld + kLanes, _mm512_permutex2var_ps(a[r], interleave_hi(), b[r]));
  }
}

/// qk_key_chunk on pairs (d a multiple of 8).
template <class Step>
__attribute__((target("avx512bf16"))) FP8ATTN_DECODE_KERNEL void qk_pair_chunk(const uint32_t* qp, int rows, int d,
                                                                               const uint8_t* kt, float* s, int ld,
                                                                               Step& step) {
  int r = 0;
  for (; r + 8 <= rows; r += 8) qk_pair_columns<8>(qp + r * (d / 2), d, kt, s + static_cast<int64_t>(r) * ld, ld, step);
  for (; r + 4 <= rows; r += 4) qk_pair_columns<4>(qp + r * (d / 2), d, kt, s + static_cast<int64_t>(r) * ld, ld, step);
  for (; r < rows; ++r) qk_pair_columns<1>(qp + r * (d / 2), d, kt, s + static_cast<int64_t>(r) * ld, ld, step);
}

/// pp[r · kKeyChunk/2 + i] = (p[r][2i], p[r][2i + 1]) for the chunk's `keys` keys of `rows` rows (a
/// missing second key is 0). Returns false, leaving the FMAs to the chunk, when a P value is not a
/// BF16 value or is NaN.
__attribute__((target("avx512bf16"))) inline bool prob_pairs(const float* p, int rows, int ld, int keys, uint32_t* pp) {
  const __mmask16 m0 = keys >= kLanes ? 0xFFFF : static_cast<__mmask16>((1u << keys) - 1u);
  const __mmask16 m1 = keys >= 2 * kLanes ? 0xFFFF
                       : keys <= kLanes   ? 0
                                          : static_cast<__mmask16>((1u << (keys - kLanes)) - 1u);
  __mmask16 inexact = 0;
  for (int r = 0; r < rows; ++r) {
    const float* pr = p + static_cast<int64_t>(r) * ld;
    const __m512 v0 = _mm512_maskz_loadu_ps(m0, pr), v1 = _mm512_maskz_loadu_ps(m1, pr + kLanes);
    inexact |= _mm512_test_epi32_mask(_mm512_castps_si512(v0), _mm512_set1_epi32(0xFFFF)) |
               _mm512_test_epi32_mask(_mm512_castps_si512(v1), _mm512_set1_epi32(0xFFFF)) |
               _mm512_cmp_ps_mask(v0, v0, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(v1, v1, _CMP_UNORD_Q);
    // Word i = p[i], so dword j = (p[2j + 1], p[2j]); the rotation puts p[2j] high.
    const __m512i words = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(v1, v0));
    _mm512_storeu_si512(pp + r * (kKeyChunk / 2), _mm512_rol_epi32(words, 16));
  }
  return inexact == 0;
}

/// pv_code_columns on pairs: o_r[e0, e0 + 32) += Σ_j p_r[j] · V[j][e0, e0 + 32), keys ascending
/// (an odd last key paired with a zero row and P 0: +0 added, which leaves O as it is, as O is
/// never −0); step() after every 8 keys.
template <int kRows, class Step>
__attribute__((target("avx512bf16"), always_inline)) inline void pv_pair_columns(const uint32_t* pp,
                                                                                 const uint8_t* const* rows,
                                                                                 const uint8_t* zero_row, int dv,
                                                                                 int keys, float* o, int e0,
                                                                                 Step& step) {
  __m512 lo[kRows], hi[kRows];  // dims e0 + 0-7 and 16-23; 8-15 and 24-31
  for (int r = 0; r < kRows; ++r) {
    const __m512 x = _mm512_loadu_ps(o + r * dv + e0), y = _mm512_loadu_ps(o + r * dv + e0 + kLanes);
    lo[r] = _mm512_permutex2var_ps(x, interleave_lo(), y);
    hi[r] = _mm512_permutex2var_ps(x, interleave_hi(), y);
  }
  for (int j = 0; j < keys; j += 2) {
    if ((j & 7) == 6) step();
    const __m256i first = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[j] + e0));
    const __m256i second =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(j + 1 < keys ? rows[j + 1] + e0 : zero_row));
    const __m512bh v0 = bf16_pairs_of_codes(_mm256_unpacklo_epi8(second, first));
    const __m512bh v1 = bf16_pairs_of_codes(_mm256_unpackhi_epi8(second, first));
    for (int r = 0; r < kRows; ++r) {
      const __m512bh pr =
          reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int32_t>(pp[r * (kKeyChunk / 2) + j / 2])));
      lo[r] = _mm512_dpbf16_ps(lo[r], pr, v0);
      hi[r] = _mm512_dpbf16_ps(hi[r], pr, v1);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    _mm512_storeu_ps(o + r * dv + e0, _mm512_permutex2var_ps(lo[r], interleave_lo(), hi[r]));
    _mm512_storeu_ps(o + r * dv + e0 + kLanes, _mm512_permutex2var_ps(lo[r], interleave_hi(), hi[r]));
  }
}

/// pv_code_chunk on pairs (dv a multiple of 32; zero_row holds at least 32 zero bytes).
template <class Step>
__attribute__((target("avx512bf16"))) FP8ATTN_DECODE_KERNEL void pv_pair_chunk(const uint32_t* pp, int rows,
                                                                               const uint8_t* const* v_rows,
                                                                               const uint8_t* zero_row, int dv,
                                                                               int keys, float* o, Step& step) {
  for (int e0 = 0; e0 < dv; e0 += 2 * kLanes) {
    int r = 0;
    for (; r + 8 <= rows; r += 8)
      pv_pair_columns<8>(pp + r * (kKeyChunk / 2), v_rows, zero_row, dv, keys, o + r * dv, e0, step);
    for (; r + 4 <= rows; r += 4)
      pv_pair_columns<4>(pp + r * (kKeyChunk / 2), v_rows, zero_row, dv, keys, o + r * dv, e0, step);
    for (; r < rows; ++r)
      pv_pair_columns<1>(pp + r * (kKeyChunk / 2), v_rows, zero_row, dv, keys, o + r * dv, e0, step);
  }
}

/// Whether some value of `n` floats is an FP32 subnormal (non-zero, below 2^-126 in magnitude).
FP8ATTN_DECODE_KERNEL inline bool holds_subnormal(const float* o, int n) {
  __mmask16 seen = 0;
  int e = 0;
  for (; e + kLanes <= n; e += kLanes) {
    const __m512i bits = _mm512_loadu_si512(o + e);
    const __m512i mag = _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF));
    seen |= _mm512_test_epi32_mask(mag, mag) & _mm512_cmplt_epi32_mask(mag, _mm512_set1_epi32(0x00800000));
  }
  bool any = seen != 0;
  for (; e < n; ++e) any = any || (o[e] != 0.0f && std::fabs(o[e]) < 0x1p-126f);
  return any;
}

}  // namespace fp8attn::engine::decode_fp32_vec
