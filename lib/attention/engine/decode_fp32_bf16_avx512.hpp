// The FP32 decode tile's products over E4M3 keys and values (decode_fp32.cpp) on AVX512-BF16's
// vdpbf16ps: two multiply-adds per FP32 lane per instruction, the same bits as the FMA loops of
// decode_fp32_keys.hpp and decode_fp32_values.hpp.
//
// Why the bits are the same (as for the forward's products, panel_gemm_fp32_bf16_avx512.hpp):
// vdpbf16ps adds its odd (high) word's product, then its even (low) word's, each addition rounded
// to nearest even. So the earlier term of each pair (dimension e for Q·Kᵀ, key j for P·V) goes in
// the high word, and every sum meets its products in the FMA loops' order. The products are the
// FMA loops' exact products: Q·2^8 (E4M3, exact in BF16) times k·2^-8, and P·2^8 (the cast P)
// times v·2^-8, each code's BF16 word of value · 2^-8 looked up in a table (the value the FMA
// loops' FP16 route gives, exact in BF16). The instruction departs from FMAs only where a
// subnormal takes part, and none can here unless O holds one:
//  - every product is 0 or at least 2^-18 in magnitude (E4M3's least value 2^-9, squared), so a
//    sum from +0 of such products is a multiple of 2^-18 and never an FP32 subnormal, and an O
//    that is normal (or 0) plus such a product is never one either (a cancellation leaves a
//    multiple of the larger term's ulp, at least 2^-41);
//  - O after a rescale can hold a subnormal, which the instruction would read as 0: decode_fp32.cpp
//    checks the rescaled rows and keeps that head's P·V on the FMAs for the block.
// A chunk holding an E4M3 NaN code, or a P value BF16 does not hold or NaN, keeps the FMAs too, and
// so does an item whose Q holds a NaN: a NaN's bits are then the FMA loops' in every build.
//
// NOTE: only for a caller that knows the CPU has AVX512-BF16 and AVX512-VBMI (lib/cpu_isa's
// avx512bf16 level): the functions carry those targets inside the x86-64-v4 build. Included by
// decode_fp32.cpp after decode_fp32_keys.hpp and decode_fp32_values.hpp, inside its per-ISA
// namespace.
#pragma once

#include <immintrin.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace fp8attn::engine::decode_fp32_vec {

/// Byte `half` (0 low, 1 high) of the BF16 word of an E4M3 magnitude code's value · 2^-8 (code
/// 0x7F, NaN, excluded: the callers check), sign clear. With e the code's exponent field and m its
/// three fraction bits, the value is (8 + m) · 2^(e − 10) (e ≥ 1) or m · 2^-9 (e = 0): exact in
/// BF16, and the value the FMA loops' FP16 route gives.
constexpr std::array<uint8_t, 128> code_bf16_bytes(int half) {
  std::array<uint8_t, 128> t{};
  for (int c = 0; c < 128; ++c) {
    const int e = c >> 3, m = c & 7;
    int word = 0;
    if (e > 0) {
      word = ((e + 112) << 7) | (m << 4);  // (1 + m/8) · 2^(e − 15): FP32 exponent field e + 112
    } else if (m > 0) {
      const int k = m >= 4 ? 2 : m >= 2 ? 1 : 0;  // m · 2^-17 = (m / 2^k) · 2^(k − 17)
      word = ((110 + k) << 7) | (((m - (1 << k)) << (7 - k)) & 0x7F);
    }
    t[c] = static_cast<uint8_t>(half == 0 ? word & 0xFF : word >> 8);
  }
  return t;
}
alignas(64) inline constexpr std::array<uint8_t, 128> kCodeBf16Lo = code_bf16_bytes(0);
alignas(64) inline constexpr std::array<uint8_t, 128> kCodeBf16Hi = code_bf16_bytes(1);

/// Byte indices into [low bytes | high bytes] (two registers) that lay out the BF16 words of
/// x = [32 first codes | 32 second codes] as 16 dwords (second's word low, first's high), for
/// positions `from` to from + 15.
constexpr std::array<uint8_t, 64> pair_word_bytes(int from) {
  std::array<uint8_t, 64> t{};
  for (int j = 0; j < 16; ++j) {
    t[4 * j + 0] = static_cast<uint8_t>(32 + from + j);       // second: low byte
    t[4 * j + 1] = static_cast<uint8_t>(64 + 32 + from + j);  // second: high byte
    t[4 * j + 2] = static_cast<uint8_t>(from + j);            // first: low byte
    t[4 * j + 3] = static_cast<uint8_t>(64 + from + j);       // first: high byte
  }
  return t;
}
alignas(64) inline constexpr std::array<uint8_t, 64> kPairWords0 = pair_word_bytes(0);
alignas(64) inline constexpr std::array<uint8_t, 64> kPairWords1 = pair_word_bytes(16);

/// The tables bf16_pair_words looks codes up in, held in registers across a chunk.
struct CodeTables {
  __m512i lo0, lo1, hi0, hi1, sign, words0, words1;
};
__attribute__((target("avx512bf16,avx512vbmi"), always_inline)) inline CodeTables code_tables() {
  auto at = [](const uint8_t* p) { return _mm512_load_si512(p); };
  return {at(kCodeBf16Lo.data()), at(kCodeBf16Lo.data() + 64), at(kCodeBf16Hi.data()),
          at(kCodeBf16Hi.data() + 64), _mm512_set1_epi8(static_cast<char>(0x80)), at(kPairWords0.data()),
          at(kPairWords1.data())};
}

/// x = [32 first codes | 32 second codes] (E4M3, no NaN) to BF16 pairs of value · 2^-8, position i
/// holding (first[i], second[i]), first in the high word: w0 positions 0-15, w1 16-31.
/// NOTE: two 128-entry byte lookups (vpermi2b reads a code's low seven bits) give every code's
/// low and high byte, the sign is copied in, and two byte permutes pair the words: seven
/// operations per 64 codes where widening through FP16 took sixteen, in the natural order.
__attribute__((target("avx512bf16,avx512vbmi"), always_inline)) inline void bf16_pair_words(const CodeTables& t,
                                                                                            __m512i x, __m512bh& w0,
                                                                                            __m512bh& w1) {
  const __m512i lo = _mm512_permutex2var_epi8(t.lo0, x, t.lo1);
  const __m512i hi = _mm512_ternarylogic_epi32(t.sign, x, _mm512_permutex2var_epi8(t.hi0, x, t.hi1), 0xCA);
  w0 = reinterpret_cast<__m512bh>(_mm512_permutex2var_epi8(lo, t.words0, hi));
  w1 = reinterpret_cast<__m512bh>(_mm512_permutex2var_epi8(lo, t.words1, hi));
}

/// Two FP32 values exact in BF16 as one dword, `first` in the high word.
inline uint32_t bf16_pair(float first, float second) {
  uint32_t a, b;
  std::memcpy(&a, &first, 4);
  std::memcpy(&b, &second, 4);
  return (a & 0xFFFF0000u) | (b >> 16);
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
__attribute__((target("avx512bf16,avx512vbmi"), always_inline)) inline void qk_pair_columns(
    const CodeTables& tables, const uint32_t* qp, int d, const uint8_t* kt, float* s, int ld, Step& step) {
  __m512 a[kRows], b[kRows];  // keys 0-15; 16-31
  for (int r = 0; r < kRows; ++r) a[r] = b[r] = _mm512_setzero_ps();
  for (int i0 = 0; i0 < d / 2; i0 += 4) {
    for (int i = i0; i < i0 + 4; ++i) {
      // Dimensions 2i and 2i + 1 of the chunk's keys: two rows of kt, 64 bytes.
      __m512bh x0, x1;
      bf16_pair_words(tables, _mm512_loadu_si512(kt + (2 * i) * kKeyChunk), x0, x1);
      for (int r = 0; r < kRows; ++r) {
        const __m512bh qr = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int32_t>(qp[r * (d / 2) + i])));
        a[r] = _mm512_dpbf16_ps(a[r], qr, x0);
        b[r] = _mm512_dpbf16_ps(b[r], qr, x1);
      }
    }
    step();
  }
  for (int r = 0; r < kRows; ++r) {
    _mm512_storeu_ps(s + static_cast<int64_t>(r) * ld, a[r]);
    _mm512_storeu_ps(s + static_cast<int64_t>(r) * ld + kLanes, b[r]);
  }
}

/// qk_key_chunk on pairs (d a multiple of 8).
template <class Step>
__attribute__((target("avx512bf16,avx512vbmi"))) FP8ATTN_DECODE_KERNEL void qk_pair_chunk(
    const uint32_t* qp, int rows, int d, const uint8_t* kt, float* s, int ld, Step& step) {
  const CodeTables tables = code_tables();
  int r = 0;
  for (; r + 8 <= rows; r += 8)
    qk_pair_columns<8>(tables, qp + r * (d / 2), d, kt, s + static_cast<int64_t>(r) * ld, ld, step);
  for (; r + 4 <= rows; r += 4)
    qk_pair_columns<4>(tables, qp + r * (d / 2), d, kt, s + static_cast<int64_t>(r) * ld, ld, step);
  for (; r < rows; ++r) qk_pair_columns<1>(tables, qp + r * (d / 2), d, kt, s + static_cast<int64_t>(r) * ld, ld, step);
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
__attribute__((target("avx512bf16,avx512vbmi"), always_inline)) inline void pv_pair_columns(
    const CodeTables& tables, const uint32_t* pp, const uint8_t* const* rows, const uint8_t* zero_row, int dv,
    int keys, float* o, int e0, Step& step) {
  __m512 lo[kRows], hi[kRows];  // dims e0 + 0-15; 16-31
  for (int r = 0; r < kRows; ++r) {
    lo[r] = _mm512_loadu_ps(o + r * dv + e0);
    hi[r] = _mm512_loadu_ps(o + r * dv + e0 + kLanes);
  }
  for (int j = 0; j < keys; j += 2) {
    if ((j & 7) == 6) step();
    const __m256i first = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[j] + e0));
    const __m256i second =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(j + 1 < keys ? rows[j + 1] + e0 : zero_row));
    __m512bh v0, v1;
    bf16_pair_words(tables, _mm512_inserti64x4(_mm512_castsi256_si512(first), second, 1), v0, v1);
    for (int r = 0; r < kRows; ++r) {
      const __m512bh pr =
          reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int32_t>(pp[r * (kKeyChunk / 2) + j / 2])));
      lo[r] = _mm512_dpbf16_ps(lo[r], pr, v0);
      hi[r] = _mm512_dpbf16_ps(hi[r], pr, v1);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    _mm512_storeu_ps(o + r * dv + e0, lo[r]);
    _mm512_storeu_ps(o + r * dv + e0 + kLanes, hi[r]);
  }
}

/// pv_code_chunk on pairs (dv a multiple of 32; zero_row holds at least 32 zero bytes).
template <class Step>
__attribute__((target("avx512bf16,avx512vbmi"))) FP8ATTN_DECODE_KERNEL void pv_pair_chunk(
    const uint32_t* pp, int rows, const uint8_t* const* v_rows, const uint8_t* zero_row, int dv, int keys, float* o,
    Step& step) {
  const CodeTables tables = code_tables();
  for (int e0 = 0; e0 < dv; e0 += 2 * kLanes) {
    int r = 0;
    for (; r + 8 <= rows; r += 8)
      pv_pair_columns<8>(tables, pp + r * (kKeyChunk / 2), v_rows, zero_row, dv, keys, o + r * dv, e0, step);
    for (; r + 4 <= rows; r += 4)
      pv_pair_columns<4>(tables, pp + r * (kKeyChunk / 2), v_rows, zero_row, dv, keys, o + r * dv, e0, step);
    for (; r < rows; ++r)
      pv_pair_columns<1>(tables, pp + r * (kKeyChunk / 2), v_rows, zero_row, dv, keys, o + r * dv, e0, step);
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
