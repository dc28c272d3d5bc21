// The FP32 decode tile's vector kernels (decode_fp32.cpp): 16-lane GCC vectors, the exact
// E4M3/BF16 decode, the QKᵀ dot products and the PV broadcast FMAs over a decoded K/V block.
// Included by decode_fp32.cpp only, inside its per-ISA namespace (isa/decode_fp32_in_isa.cpp):
// its namespace sits under `engine`, which that file renames per ISA, so each build has its own
// copy of these inline functions.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__AVX512F__) || defined(__AVX2__) || defined(__FMA__)
#include <immintrin.h>
#endif

// NOTE: the 16-lane vectors pass through internal (inlined) functions only, so the ABI note GCC
// gives for 64-byte vectors in builds without AVX-512 does not concern any interface.
#pragma GCC diagnostic ignored "-Wpsabi"
// NOTE: GCC 12's avx512fintrin.h starts the widening intrinsics from an undefined vector, which
// -Wmaybe-uninitialized (or -Wuninitialized, depending on inlining) reports inside the header.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace fp8attn::engine::decode_fp32_vec {

// Sixteen lanes: one zmm register (AVX-512), two ymm (AVX2), four xmm (baseline).
using F16 = float __attribute__((vector_size(16 * sizeof(float))));
using F8 = float __attribute__((vector_size(8 * sizeof(float))));
using F4 = float __attribute__((vector_size(4 * sizeof(float))));
using U16 = uint32_t __attribute__((vector_size(16 * sizeof(uint32_t))));
using I16 = int32_t __attribute__((vector_size(16 * sizeof(int32_t))));
using B16 = uint8_t __attribute__((vector_size(16)));
using H16 = uint16_t __attribute__((vector_size(16 * sizeof(uint16_t))));
constexpr int kLanes = 16;

// NOTE: the small vector helpers are always inlined: a call would pass 64-byte vectors, which the
// builds without AVX-512 cannot hold in one register (GCC then warns about the ABI, in a warning
// that -Wpsabi's pragma does not reach), and a call per 16 lanes would cost more than the work.
#define FP8ATTN_VEC_INLINE inline __attribute__((always_inline))
// NOTE: the products over one chunk are kept out of line: inlined into the tile, they left GCC's
// inlining budget short of the softmax's exp2 (kernels/arch/ex2.hpp), which then became a call
// per element and cost more than the products gained.
#define FP8ATTN_DECODE_KERNEL __attribute__((noinline))

FP8ATTN_VEC_INLINE F16 load16(const float* p) {
  F16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
FP8ATTN_VEC_INLINE void store16(float* p, F16 v) { std::memcpy(p, &v, sizeof v); }
// NOTE: an initializer is one broadcast; a lane loop became 16 masked ones, and 0 + x an add.
FP8ATTN_VEC_INLINE F16 splat(float x) { return F16{x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; }

/// a·b + c, rounded once, lane by lane (the same bits in every build).
FP8ATTN_VEC_INLINE F16 fma16(F16 a, F16 b, F16 c) {
#if defined(__AVX512F__)
  return reinterpret_cast<F16>(_mm512_fmadd_ps(reinterpret_cast<__m512>(a), reinterpret_cast<__m512>(b),
                                               reinterpret_cast<__m512>(c)));
#elif defined(__FMA__)
  const F8 lo = _mm256_fmadd_ps(__builtin_shufflevector(a, a, 0, 1, 2, 3, 4, 5, 6, 7),
                                __builtin_shufflevector(b, b, 0, 1, 2, 3, 4, 5, 6, 7),
                                __builtin_shufflevector(c, c, 0, 1, 2, 3, 4, 5, 6, 7));
  const F8 hi = _mm256_fmadd_ps(__builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15),
                                __builtin_shufflevector(b, b, 8, 9, 10, 11, 12, 13, 14, 15),
                                __builtin_shufflevector(c, c, 8, 9, 10, 11, 12, 13, 14, 15));
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
#else
  F16 r;
  for (int l = 0; l < kLanes; ++l) r[l] = std::fma(a[l], b[l], c[l]);
  return r;
#endif
}

/// The lanes' sum in a fixed tree: lane l with l + 8, then with l + 4, then pairs.
FP8ATTN_VEC_INLINE float hsum16(F16 v) {
  const F8 a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
               __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const F4 b = __builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7);
  return (b[0] + b[2]) + (b[1] + b[3]);
}

/// Sixteen E4M3 codes to their exact FP32 values: (hidden bit | mantissa) · 2^(max(e, 1) − 10),
/// both factors normal FP32 numbers (no subnormal operand, so no DAZ/FTZ mode can change a
/// value); the sign ORed in; the NaN codes (S.1111.111) to a quiet NaN, as the decoding table.
/// Sixteen bytes (or 16-bit words) zero-extended to 32-bit lanes.
/// NOTE: GCC 12 lowers __builtin_convertvector from 16 bytes to 16 ints lane by lane (a scalar
/// extract per byte, the decode's whole cost); the builds with AVX2 or AVX-512 widen in one
/// instruction per 8 or 16 lanes.
FP8ATTN_VEC_INLINE I16 widen_bytes(const uint8_t* in) {
#if defined(__AVX512F__)
  return reinterpret_cast<I16>(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in))));
#elif defined(__AVX2__)
  const __m256i lo = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(in)));
  const __m256i hi = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + 8)));
  using I8 = int32_t __attribute__((vector_size(8 * sizeof(int32_t))));
  return __builtin_shufflevector(reinterpret_cast<I8>(lo), reinterpret_cast<I8>(hi), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                 11, 12, 13, 14, 15);
#else
  B16 raw;
  std::memcpy(&raw, in, sizeof raw);
  return __builtin_convertvector(raw, I16);
#endif
}

FP8ATTN_VEC_INLINE I16 widen_words(const uint16_t* in) {
#if defined(__AVX512F__)
  return reinterpret_cast<I16>(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in))));
#elif defined(__AVX2__)
  const __m256i lo = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in)));
  const __m256i hi = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 8)));
  using I8 = int32_t __attribute__((vector_size(8 * sizeof(int32_t))));
  return __builtin_shufflevector(reinterpret_cast<I8>(lo), reinterpret_cast<I8>(hi), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                 11, 12, 13, 14, 15);
#else
  H16 raw;
  std::memcpy(&raw, in, sizeof raw);
  return __builtin_convertvector(raw, I16);
#endif
}

FP8ATTN_VEC_INLINE F16 e4m3_16(const uint8_t* in) {
  const I16 x = widen_bytes(in);
  const I16 e = (x >> 3) & 15, m = x & 7;
  const I16 normal = e != 0;  // −1 where normal
  const I16 mant = m | (normal & 8);
  const I16 pow2_bits = (e + normal + 1 + 117) << 23;  // 2^(max(e, 1) − 10): biased max(e, 1) + 117
  const F16 mag = __builtin_convertvector(mant, F16) * reinterpret_cast<F16>(pow2_bits);
  U16 bits = reinterpret_cast<U16>(mag) | (reinterpret_cast<U16>(x & 0x80) << 24);
  const U16 nan = reinterpret_cast<U16>((x & 0x7F) == 0x7F);
  bits = (bits & ~nan) | (nan & 0x7FC00000u);
  return reinterpret_cast<F16>(bits);
}

/// Sixteen BF16 values to FP32 (exact: the upper half of the FP32 bits).
FP8ATTN_VEC_INLINE F16 bf16_16(const uint16_t* in) { return reinterpret_cast<F16>(widen_words(in) << 16); }

#if defined(__AVX2__)
/// 16 E4M3 codes (as 16-bit words) to their FP16 codes: the same sign, exponent and mantissa
/// fields, the exponent bias 15 instead of 7, so each FP16 value is the E4M3 value · 2^-8
/// (subnormals included: an E4M3 subnormal is an FP16 subnormal); the NaN codes to FP16's NaN.
/// The FP16-to-FP32 conversion and the product by 2^8 are exact.
inline __m256i e4m3_words_to_fp16(__m256i w) {
  const __m256i mag = _mm256_and_si256(w, _mm256_set1_epi16(0x7F));
  const __m256i h = _mm256_or_si256(_mm256_slli_epi16(mag, 7), _mm256_and_si256(_mm256_slli_epi16(w, 8),
                                                                                _mm256_set1_epi16(-0x8000)));
  return _mm256_blendv_epi8(h, _mm256_set1_epi16(0x7E00), _mm256_cmpeq_epi16(mag, _mm256_set1_epi16(0x7F)));
}
#endif

/// n (a multiple of 16) E4M3 codes to their FP32 values.
/// NOTE: the builds with F16C (AVX2, AVX-512) go through FP16 (three integer operations per 16
/// or 32 codes, then the conversion instruction), several times fewer operations than
/// e4m3_16's exponent arithmetic; both give the exact values, so every build has the same bits.
inline void decode_e4m3_row(const uint8_t* in, int n, float* out) {
  int e = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
  const __m512 two8 = _mm512_set1_ps(256.0f);
  for (; e + 32 <= n; e += 32) {
    const __m512i w = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + e)));
    const __m512i mag = _mm512_and_si512(w, _mm512_set1_epi16(0x7F));
    __m512i h = _mm512_or_si512(_mm512_slli_epi16(mag, 7),
                                _mm512_and_si512(_mm512_slli_epi16(w, 8), _mm512_set1_epi16(-0x8000)));
    h = _mm512_mask_mov_epi16(h, _mm512_cmpeq_epi16_mask(mag, _mm512_set1_epi16(0x7F)), _mm512_set1_epi16(0x7E00));
    _mm512_storeu_ps(out + e, _mm512_mul_ps(_mm512_cvtph_ps(_mm512_castsi512_si256(h)), two8));
    _mm512_storeu_ps(out + e + 16, _mm512_mul_ps(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1)), two8));
  }
#endif
#if defined(__AVX2__)
  const __m256 two8x8 = _mm256_set1_ps(256.0f);
  for (; e + 16 <= n; e += 16) {
    const __m256i h =
        e4m3_words_to_fp16(_mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + e))));
    _mm256_storeu_ps(out + e, _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(h)), two8x8));
    _mm256_storeu_ps(out + e + 8, _mm256_mul_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)), two8x8));
  }
#endif
  for (; e < n; e += kLanes) store16(out + e, e4m3_16(in + e));
}

/// Decodes n (a multiple of 16) contiguous elements of an E4M3 or BF16 tensor to FP32.
inline void decode_contiguous(const SeqTensor& t, int64_t offset, int n, float* out) {
  if (t.dtype == FP8ATTN_DTYPE_E4M3) {
    decode_e4m3_row(static_cast<const uint8_t*>(t.data) + offset, n, out);
  } else {
    const uint16_t* in = static_cast<const uint16_t*>(t.data) + offset;
    for (int e = 0; e < n; e += kLanes) store16(out + e, bf16_16(in + e));
  }
}

/// s[r·ld + j] = q_r · k_j for kRows rows (one K row feeds them all while in registers' reach),
/// over d (a multiple of 16): lane l sums dims l, l + 16, ... by FMA, then hsum16.
/// hsum16 of eight vectors at once, the same additions in the same order per vector: two
/// vectors' halves per add, then quarters, then pairs, then the last add.
inline F8 hsum16_x8(const F16* a) {
  F16 b[4], c[2];
  for (int i = 0; i < 4; ++i)
    b[i] = __builtin_shufflevector(a[2 * i], a[2 * i + 1], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
           __builtin_shufflevector(a[2 * i], a[2 * i + 1], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30,
                                   31);
  for (int i = 0; i < 2; ++i)
    c[i] = __builtin_shufflevector(b[2 * i], b[2 * i + 1], 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
           __builtin_shufflevector(b[2 * i], b[2 * i + 1], 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  // Lanes 2i, 2i + 1: vector i's (b0 + b2), (b1 + b3).
  const F16 e = __builtin_shufflevector(c[0], c[1], 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29) +
                __builtin_shufflevector(c[0], c[1], 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31);
  return __builtin_shufflevector(e, e, 0, 2, 4, 6, 8, 10, 12, 14) + __builtin_shufflevector(e, e, 1, 3, 5, 7, 9, 11, 13, 15);
}

template <int kRows, class Step>
void qk_rows(const float* q, int d, const float* k, int keys, float* s, int ld, Step& step) {
  for (int j = 0; j < keys; ++j) {
    if (j & 1) step();
    const float* kj = k + static_cast<int64_t>(j) * d;
    F16 acc[kRows] = {};
    for (int e = 0; e < d; e += kLanes) {
      const F16 kv = load16(kj + e);
      for (int r = 0; r < kRows; ++r) acc[r] = fma16(load16(q + r * d + e), kv, acc[r]);
    }
    if constexpr (kRows == 8) {
      const F8 sums = hsum16_x8(acc);
      for (int r = 0; r < kRows; ++r) s[r * ld + j] = sums[r];
    } else {
      for (int r = 0; r < kRows; ++r) s[r * ld + j] = hsum16(acc[r]);
    }
  }
}

/// o_r[e0, e0 + 16·kVecs) += Σ_j p_r[j]·v_j[...] for kRows rows, keys in ascending order; step()
/// after every 8 keys (decode_fp32_ahead.hpp).
template <int kRows, int kVecs, class Step>
void pv_rows(const float* p, int ld, const float* v, int dv, int keys, float* o, int e0, Step& step) {
  F16 acc[kRows][kVecs];
  for (int r = 0; r < kRows; ++r)
    for (int x = 0; x < kVecs; ++x) acc[r][x] = load16(o + r * dv + e0 + x * kLanes);
  for (int j = 0; j < keys; ++j) {
    if ((j & 7) == 7) step();
    F16 vv[kVecs];
    for (int x = 0; x < kVecs; ++x) vv[x] = load16(v + static_cast<int64_t>(j) * dv + e0 + x * kLanes);
    for (int r = 0; r < kRows; ++r) {
      const F16 pr = splat(p[r * ld + j]);
      for (int x = 0; x < kVecs; ++x) acc[r][x] = fma16(pr, vv[x], acc[r][x]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int x = 0; x < kVecs; ++x) store16(o + r * dv + e0 + x * kLanes, acc[r][x]);
}

template <int kRows, class Step>
void pv_row_group(const float* p, int ld, const float* v, int dv, int keys, float* o, Step& step) {
  int e0 = 0;
  for (; e0 + 2 * kLanes <= dv; e0 += 2 * kLanes) pv_rows<kRows, 2>(p, ld, v, dv, keys, o, e0, step);
  if (e0 < dv) pv_rows<kRows, 1>(p, ld, v, dv, keys, o, e0, step);
}

// Rows go in groups of eight, then four: 8 rows × 2 vectors of O (16 accumulators) per V load
// pair, and eight dot products per K vector.
constexpr int kRowGroup = 4;

template <class Step>
FP8ATTN_DECODE_KERNEL void qk_block(const float* q, int rows, int d, const float* k, int keys, float* s, int ld, Step& step) {
  int r = 0;
  // NOTE: eight rows per K row (a GQA group of 8, or 2 tokens of 4) read each K vector once.
  for (; r + 8 <= rows; r += 8) qk_rows<8>(q + r * d, d, k, keys, s + r * ld, ld, step);
  for (; r + kRowGroup <= rows; r += kRowGroup) qk_rows<kRowGroup>(q + r * d, d, k, keys, s + r * ld, ld, step);
  switch (rows - r) {
    case 3: qk_rows<3>(q + r * d, d, k, keys, s + r * ld, ld, step); break;
    case 2: qk_rows<2>(q + r * d, d, k, keys, s + r * ld, ld, step); break;
    case 1: qk_rows<1>(q + r * d, d, k, keys, s + r * ld, ld, step); break;
    default: break;
  }
}

template <class Step>
FP8ATTN_DECODE_KERNEL void pv_block(const float* p, int rows, int ld, const float* v, int dv, int keys, float* o, Step& step) {
  int r = 0;
  for (; r + 8 <= rows; r += 8) pv_row_group<8>(p + r * ld, ld, v, dv, keys, o + r * dv, step);
  for (; r + kRowGroup <= rows; r += kRowGroup) pv_row_group<kRowGroup>(p + r * ld, ld, v, dv, keys, o + r * dv, step);
  switch (rows - r) {
    case 3: pv_row_group<3>(p + r * ld, ld, v, dv, keys, o + r * dv, step); break;
    case 2: pv_row_group<2>(p + r * ld, ld, v, dv, keys, o + r * dv, step); break;
    case 1: pv_row_group<1>(p + r * ld, ld, v, dv, keys, o + r * dv, step); break;
    default: break;
  }
}

}  // namespace fp8attn::engine::decode_fp32_vec
