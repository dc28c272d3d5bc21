// The FP32 decode tile's Q·Kᵀ over E4M3 keys (decode_fp32.cpp): a chunk of kKeyChunk keys is
// transposed byte for byte (kt[e][j] = K[j][e]), then each of the tile's query rows accumulates
// S[r][j..j+16) += q[r][e] · kt[e][j..j+16) over e = 0, 1, ..., d − 1 with one FMA per 16 keys.
// Included by decode_fp32.cpp only, after decode_fp32_vec.hpp, inside its per-ISA namespace
// (isa/decode_fp32_in_isa.cpp).
//
// NOTE: why transposed. The row-major dot products (decode_fp32_vec.hpp's qk_rows) end each key
// with a horizontal sum of 16 lanes per query row, shuffles that compete with the FMAs for the
// same ports and serialize on their latency: about 3.5× the time of the FMAs alone. With the
// keys in the lanes there is no horizontal sum; the transpose of the E4M3 bytes (a 16 × 16 byte
// block in 64 byte shuffles) costs an eighth of the FMAs.
// NOTE: the keys are widened to FP32 inside the FMA loop through FP16 (the E4M3 code sign-extended
// to 16 bits, shifted left by 7 and masked is the FP16 code of value · 2^-8, subnormals included),
// so the loop reads 16 bytes per 16 keys; Q is multiplied by 2^8 when it is decoded (exact for
// E4M3 Q), so each product q · (k · 2^-8) · 2^8 is the exact q · k and every rounding is the one
// of the unscaled sum. E4M3's NaN codes have no FP16 image: a chunk holding one takes the exact
// decode (e4m3_16) instead. Every build sums in the same order (e ascending, from +0, one
// rounding per FMA), so the bits are the same in all of them.
// NOTE: why not FP32 bits placed directly (the code sign-extended to 32 bits, shifted left by 20
// and masked is value · 2^-120 in FP32, three integer operations per 16 keys against the FP16
// route's five, about 8 % faster on the AMD EPYC measured): an E4M3 subnormal then becomes an FP32
// subnormal FMA operand, which Intel's cores handle by a microcode assist of a hundred cycles or
// more, and about 1 % of N(0, 1) codes are subnormal.
#pragma once

#include <cstdint>
#include <cstring>

namespace fp8attn::engine::decode_fp32_vec {

/// Keys per chunk: kt (d × 32 bytes) and the chunk's S columns stay in L1.
constexpr int kKeyChunk = 32;

/// Q's factor for the FP16 route: 2^8, undoing the keys' 2^-8.
constexpr float kKeyScaleUndo = 256.0f;

/// kt[e · kKeys + j] = rows[j][e] for j < kKeys (16 or 32) and e < d (a multiple of 16). Returns
/// whether some code is an E4M3 NaN (S.1111.111).
template <int kKeys = kKeyChunk>
inline bool transpose_key_bytes(const uint8_t* const* rows, int d, uint8_t* kt) {
  static_assert(kKeys % 16 == 0);
  B16 nan_seen{};
#if defined(__AVX512BW__)
  __mmask64 nan_mask = 0;
#endif
  for (int g = 0; g < kKeys; g += 16) {
    int e0 = 0;
#if defined(__AVX512BW__)
    // Four 16 × 16 blocks at once (one per 128-bit lane): after the four unpack stages register i
    // holds, in lane l, column 16·l + i of the 16 rows.
    for (; e0 + 64 <= d; e0 += 64) {
      __m512i r[16], t[16];
      for (int i = 0; i < 16; ++i) {
        r[i] = _mm512_loadu_si512(rows[g + i] + e0);
        nan_mask |= _mm512_cmpeq_epi8_mask(_mm512_and_si512(r[i], _mm512_set1_epi8(0x7F)), _mm512_set1_epi8(0x7F));
      }
      for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_epi8(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
      }
      for (int i = 0; i < 4; ++i)
        for (int k = 0; k < 2; ++k) {
          r[4 * i + 2 * k] = _mm512_unpacklo_epi16(t[4 * i + k], t[4 * i + k + 2]);
          r[4 * i + 2 * k + 1] = _mm512_unpackhi_epi16(t[4 * i + k], t[4 * i + k + 2]);
        }
      for (int i = 0; i < 2; ++i)
        for (int k = 0; k < 4; ++k) {
          t[8 * i + 2 * k] = _mm512_unpacklo_epi32(r[8 * i + k], r[8 * i + k + 4]);
          t[8 * i + 2 * k + 1] = _mm512_unpackhi_epi32(r[8 * i + k], r[8 * i + k + 4]);
        }
      for (int k = 0; k < 8; ++k) {
        r[2 * k] = _mm512_unpacklo_epi64(t[k], t[k + 8]);
        r[2 * k + 1] = _mm512_unpackhi_epi64(t[k], t[k + 8]);
      }
      for (int i = 0; i < 16; ++i) {
        uint8_t* out = kt + static_cast<int64_t>(e0 + i) * kKeys + g;
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_castsi512_si128(r[i]));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16 * kKeys), _mm512_extracti32x4_epi32(r[i], 1));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 32 * kKeys), _mm512_extracti32x4_epi32(r[i], 2));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 48 * kKeys), _mm512_extracti32x4_epi32(r[i], 3));
      }
    }
#endif
    // One 16 × 16 block at a time, the same four stages on 16-byte vectors.
    for (; e0 < d; e0 += 16) {
      B16 r[16], t[16];
      for (int i = 0; i < 16; ++i) {
        std::memcpy(&r[i], rows[g + i] + e0, sizeof r[i]);
        nan_seen |= reinterpret_cast<B16>((r[i] & 0x7F) == 0x7F);
      }
      for (int i = 0; i < 8; ++i) {
        t[2 * i] = __builtin_shufflevector(r[2 * i], r[2 * i + 1], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
        t[2 * i + 1] =
            __builtin_shufflevector(r[2 * i], r[2 * i + 1], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
      }
      for (int i = 0; i < 4; ++i)
        for (int k = 0; k < 2; ++k) {
          const B16 a = t[4 * i + k], b = t[4 * i + k + 2];
          r[4 * i + 2 * k] = __builtin_shufflevector(a, b, 0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23);
          r[4 * i + 2 * k + 1] = __builtin_shufflevector(a, b, 8, 9, 24, 25, 10, 11, 26, 27, 12, 13, 28, 29, 14, 15, 30, 31);
        }
      for (int i = 0; i < 2; ++i)
        for (int k = 0; k < 4; ++k) {
          const B16 a = r[8 * i + k], b = r[8 * i + k + 4];
          t[8 * i + 2 * k] = __builtin_shufflevector(a, b, 0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
          t[8 * i + 2 * k + 1] =
              __builtin_shufflevector(a, b, 8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
        }
      for (int k = 0; k < 8; ++k) {
        r[2 * k] = __builtin_shufflevector(t[k], t[k + 8], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
        r[2 * k + 1] =
            __builtin_shufflevector(t[k], t[k + 8], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
      }
      for (int i = 0; i < 16; ++i) std::memcpy(kt + static_cast<int64_t>(e0 + i) * kKeys + g, &r[i], sizeof r[i]);
    }
  }
  uint64_t half[2];
  std::memcpy(half, &nan_seen, sizeof half);
  bool nan = (half[0] | half[1]) != 0;
#if defined(__AVX512BW__)
  nan = nan || nan_mask != 0;
#endif
  return nan;
}

/// Sixteen E4M3 codes to value · 2^-8 in FP32: through FP16 where the build has F16C (no NaN
/// code allowed), else (kExact) the exact decode times 2^-8.
template <bool kExact>
FP8ATTN_VEC_INLINE F16 key_lanes(const uint8_t* in) {
  if constexpr (!kExact) {
#if defined(__AVX512F__)
    const __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in)));
    const __m256i h = _mm256_and_si256(_mm256_slli_epi16(w, 7), _mm256_set1_epi16(static_cast<short>(0xBF80)));
    return reinterpret_cast<F16>(_mm512_cvtph_ps(h));
#elif defined(__AVX2__)
    const __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in)));
    const __m256i h = _mm256_and_si256(_mm256_slli_epi16(w, 7), _mm256_set1_epi16(static_cast<short>(0xBF80)));
    const F8 lo = reinterpret_cast<F8>(_mm256_cvtph_ps(_mm256_castsi256_si128(h)));
    const F8 hi = reinterpret_cast<F8>(_mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)));
    return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
#endif
  }
  return e4m3_16(in) * splat(1.0f / kKeyScaleUndo);
}

/// s[r·ld + j] (j < kKeyChunk) = Σ_e q[r·d + e] · K[j][e] for kRows rows, from kt (the chunk's
/// transposed codes) and Q pre-multiplied by kKeyScaleUndo; step() after every 8 dimensions
/// (decode_fp32_ahead.hpp: the cache's next lines requested between the FMAs).
template <int kRows, bool kExact, class Step>
void qk_key_columns(const float* q, int d, const uint8_t* kt, float* s, int ld, Step& step) {
  F16 a[kRows], b[kRows];
  for (int r = 0; r < kRows; ++r) a[r] = b[r] = splat(0.0f);
  for (int e0 = 0; e0 < d; e0 += 8) {
    for (int e = e0; e < e0 + 8; ++e) {
      const F16 x0 = key_lanes<kExact>(kt + static_cast<int64_t>(e) * kKeyChunk);
      const F16 x1 = key_lanes<kExact>(kt + static_cast<int64_t>(e) * kKeyChunk + 16);
      for (int r = 0; r < kRows; ++r) {
        const F16 qr = splat(q[r * d + e]);
        a[r] = fma16(qr, x0, a[r]);
        b[r] = fma16(qr, x1, b[r]);
      }
    }
    step();
  }
  for (int r = 0; r < kRows; ++r) {
    store16(s + static_cast<int64_t>(r) * ld, a[r]);
    store16(s + static_cast<int64_t>(r) * ld + 16, b[r]);
  }
}

/// The chunk's S columns for `rows` query rows (eight at a time, then four, then the rest).
template <bool kExact, class Step>
FP8ATTN_DECODE_KERNEL void qk_key_chunk(const float* q, int rows, int d, const uint8_t* kt, float* s, int ld, Step& step) {
  int r = 0;
  for (; r + 8 <= rows; r += 8)
    qk_key_columns<8, kExact>(q + r * d, d, kt, s + static_cast<int64_t>(r) * ld, ld, step);
  for (; r + 4 <= rows; r += 4)
    qk_key_columns<4, kExact>(q + r * d, d, kt, s + static_cast<int64_t>(r) * ld, ld, step);
  for (; r < rows; ++r) qk_key_columns<1, kExact>(q + r * d, d, kt, s + static_cast<int64_t>(r) * ld, ld, step);
}

}  // namespace fp8attn::engine::decode_fp32_vec
