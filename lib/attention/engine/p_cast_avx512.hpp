// The cast of P̃ on 16 AVX-512 lanes, for the CPU engine's softmax (row_softmax.hpp): the
// roundings of kernels/numerics (round_to_e4m3, round_to_bf16) lane by lane, with the cast's
// telemetry counts and, for E4M3 P, the P·V key order (pv_order.hpp) in the same pass. And the
// epilogue's store of an O row to BF16, the same rounding.
//
// NOTE: why its own code. GCC vectorizes row_cast_p's select-based scalar rounding into about 25
// instructions per 16 values and p_row_to_slots stays scalar (a store per value); together they
// were an eighth of the FP32 mode's forward on an Intel Xeon. Here the rounding is 14
// instructions (one minimum stands for the two saturation tests, the sign goes back in one
// ternary-logic operation), the counts are mask popcounts, and the key order is one permute
// before the store. Each value is rounded by the same IEEE operations as the scalar code, so
// the bits are the same (tests/portability/test_p_cast_avx512.cpp compares them).
//
// The functions carry their target, so a translation unit built without AVX-512 (a test that
// checks the CPU first) can include this file; the engine's AVX-512 build includes it inside
// its per-ISA namespace (row_softmax.hpp).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/sm90/pv_key_order.hpp"

#define FP8ATTN_P_CAST_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl"), always_inline)) inline

namespace fp8attn::engine::p_cast_avx512 {

/// num::round_to_e4m3 on 16 lanes: same bits for every input.
FP8ATTN_P_CAST_AVX512 __m512 round_to_e4m3_x16(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i a = _mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF));
  const __m512 abs_x = _mm512_castsi512_ps(a);
  // Normal results: the mantissa rounded to 3 bits, ties to even.
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(a, 20), _mm512_set1_epi32(1));
  const __m512i normal = _mm512_and_si512(_mm512_add_epi32(_mm512_add_epi32(a, _mm512_set1_epi32(0x7FFFF)), odd),
                                          _mm512_set1_epi32(static_cast<int>(0xFFF00000u)));
  // Below 2⁻⁶ the quantum is 2⁻⁹: adding 1.5·2¹⁴ rounds there (ties to even).
  const __mmask16 below = _mm512_cmp_ps_mask(abs_x, _mm512_set1_ps(0.015625f), _CMP_LT_OQ);
  const __m512 subnormal = _mm512_sub_ps(_mm512_add_ps(abs_x, _mm512_set1_ps(24576.0f)), _mm512_set1_ps(24576.0f));
  __m512 magnitude = _mm512_mask_blend_ps(below, _mm512_castsi512_ps(normal), subnormal);
  // NOTE: one minimum for the scalar code's two saturations (a rounded value above 448, and
  // |x| ≥ 464): every |x| ≥ 464, ±inf included, rounds to 448 or above. The minimum of a NaN
  // magnitude (only from a NaN input) is replaced below.
  magnitude = _mm512_min_ps(magnitude, _mm512_set1_ps(448.0f));
  // magnitude | (u & sign): ternary-logic table 0xF8 is A | (B & C).
  const __m512i bits = _mm512_ternarylogic_epi32(_mm512_castps_si512(magnitude), u,
                                                 _mm512_set1_epi32(static_cast<int>(0x80000000u)), 0xF8);
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  return _mm512_mask_blend_ps(nan, _mm512_castsi512_ps(bits), x);  // NaN keeps its bits
}

/// num::round_to_bf16 on 16 lanes (as FP32 values): same bits for every input.
FP8ATTN_P_CAST_AVX512 __m512 round_to_bf16_x16(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_and_si512(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), odd),
                                           _mm512_set1_epi32(static_cast<int>(0xFFFF0000u)));
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  return _mm512_castsi512_ps(_mm512_mask_mov_epi32(rounded, nan, _mm512_set1_epi32(0x7FFF0000)));
}

/// row_cast_p<kFp8> on s[0, n), and with kSlots (E4M3 P only) p_row_to_slots after it: the
/// row's columns in the P·V key order, +0 from column n up to whole periods of 16.
template <bool kFp8, bool kSlots>
__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl"))) inline void cast_p_row(float* s, int n,
                                                                                      uint64_t& positive,
                                                                                      uint64_t& underflow) {
  static_assert(!kSlots || kFp8, "the key order is E4M3 P's");
  static_assert(sm90::kPvKeyPeriod == 16, "one period per vector");
  __m512i key_of_slot = _mm512_setzero_si512();
  if constexpr (kSlots) {
    alignas(64) int32_t index[16];
    for (int a = 0; a < 16; ++a) index[a] = sm90::pv_key_of_slot(a);
    key_of_slot = _mm512_load_si512(index);
  }
  const __m512 zero = _mm512_setzero_ps();
  uint32_t pos = 0, flushed = 0;
  const int end = kSlots ? (n + 15) / 16 * 16 : n;
  for (int j = 0; j < end; j += 16) {
    const int left = n - j;
    const __mmask16 live = left >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>(left > 0 ? (1u << left) - 1 : 0u);
    const __m512 pt = _mm512_maskz_loadu_ps(live, s + j);  // +0 past n: no count, casts to +0
    const __m512 pc = kFp8 ? round_to_e4m3_x16(pt) : round_to_bf16_x16(pt);
    const __mmask16 above = _mm512_cmp_ps_mask(pt, zero, _CMP_GT_OQ);
    pos += static_cast<uint32_t>(__builtin_popcount(above));
    flushed += static_cast<uint32_t>(__builtin_popcount(_mm512_mask_cmp_ps_mask(above, pc, zero, _CMP_EQ_OQ)));
    if constexpr (kSlots)
      _mm512_storeu_ps(s + j, _mm512_permutexvar_ps(key_of_slot, pc));
    else
      _mm512_mask_storeu_ps(s + j, live, pc);
  }
  positive += pos;
  underflow += flushed;
}

/// The forward's epilogue for one row of a BF16 output with contiguous dims (query_tile.cpp):
/// out[e] = float_to_bf16(o[e] · factor) for e < n (a multiple of 16), `nonfinite` counting the
/// values that are not finite before or after the rounding, `max_abs` the largest |o · factor|
/// (NaN never wins, as std::max(max_abs, |x|)).
__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl"))) inline void store_o_row_bf16(
    const float* o, int n, float factor, uint16_t* out, uint64_t& nonfinite, float& max_abs) {
  const __m512 f = _mm512_set1_ps(factor);
  __m512 largest = _mm512_setzero_ps();
  uint32_t bad = 0;
  constexpr int kNotFinite = 0x01 | 0x08 | 0x10 | 0x80;  // fpclass: QNaN, +inf, −inf, SNaN
  for (int e = 0; e < n; e += 16) {
    const __m512 x = _mm512_mul_ps(_mm512_loadu_ps(o + e), f);
    const __m512 r = round_to_bf16_x16(x);
    bad += static_cast<uint32_t>(
        __builtin_popcount(_mm512_fpclass_ps_mask(x, kNotFinite) | _mm512_fpclass_ps_mask(r, kNotFinite)));
    // NOTE: MAXPS returns its second operand when either is NaN, so a NaN |x| keeps `largest`.
    const __m512i magnitude = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7FFFFFFF));
    largest = _mm512_max_ps(_mm512_castsi512_ps(magnitude), largest);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + e),
                        _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(r), 16)));
  }
  nonfinite += bad;
  const float row_largest = _mm512_reduce_max_ps(largest);
  max_abs = max_abs < row_largest ? row_largest : max_abs;
}

}  // namespace fp8attn::engine::p_cast_avx512
