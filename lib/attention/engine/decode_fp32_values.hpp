// The FP32 decode tile's P·V over E4M3 values (decode_fp32.cpp): each of the tile's query rows
// accumulates O[r][e..e+32) += P[r][j] · V[j][e..e+32) over the chunk's keys j in ascending order,
// reading V's codes straight from the cache and widening them to FP32 inside the FMA loop.
// Included after decode_fp32_keys.hpp by decode_fp32.cpp and decoded_block_e4m3.hpp, inside a
// per-ISA namespace (isa/decode_fp32_in_isa.cpp, isa/query_tile_in_isa.cpp).
//
// NOTE: why widened in the loop. The tile decoded each chunk's V rows into an FP32 buffer first
// (a store and a reload of every element, and a NaN select per code), a tenth of the decode's
// time. Widened where the FMAs use them, the codes are read once, 32 bytes per 32 values.
// NOTE: the route is FP16's: the E4M3 code sign-extended to 16 bits, shifted left by 7 and masked
// is the FP16 code of value · 2^-8 (subnormals included), which the conversion instruction widens
// exactly (four operations per 16 values with AVX-512 BW). The tile multiplies P by kValueScaleUndo
// = 2^8 after the softmax (exact, P ≤ 2^8), so each product (p · 2^8) · (v · 2^-8) is the exact
// p · v and O's sums and roundings are the unscaled ones, bit for bit: O itself is not scaled, so
// its rescaling between blocks rounds as before. (The keys' route, 2^-120 by placing bits, would
// leave O scaled, and a rescaled O near FP32's subnormals would round differently.) E4M3's NaN
// codes have no FP16 image: a chunk of one KV head holding one takes the exact decode (e4m3_16
// times 2^-8, the same floats otherwise). Every build sums in the same order, so the bits are the
// same in all of them.
#pragma once

#include <cstdint>
#include <cstring>

namespace fp8attn::engine::decode_fp32_vec {

/// The factor P takes before the products with the values' lanes (value · 2^-8, the keys'
/// widening: decode_fp32_keys.hpp).
constexpr float kValueScaleUndo = kKeyScaleUndo;

/// Whether some code among `keys` rows of n bytes (n a multiple of 16) is an E4M3 NaN (S.1111.111).
inline bool value_codes_hold_nan(const uint8_t* const* rows, int keys, int n) {
  int e0 = 0;
#if defined(__AVX512BW__)
  __mmask64 seen = 0;
  for (; e0 + 64 <= n; e0 += 64)
    for (int j = 0; j < keys; ++j)
      seen |= _mm512_cmpeq_epi8_mask(_mm512_and_si512(_mm512_loadu_si512(rows[j] + e0), _mm512_set1_epi8(0x7F)),
                                     _mm512_set1_epi8(0x7F));
  if (seen) return true;
#endif
  B16 any{};
  for (; e0 < n; e0 += 16)
    for (int j = 0; j < keys; ++j) {
      B16 r;
      std::memcpy(&r, rows[j] + e0, sizeof r);
      any |= reinterpret_cast<B16>((r & 0x7F) == 0x7F);
    }
  uint64_t half[2];
  std::memcpy(half, &any, sizeof half);
  return (half[0] | half[1]) != 0;
}

/// 32 E4M3 codes to value · 2^-8 in FP32 (two vectors of 16): key_lanes' widening, 32 codes at
/// once where the build has AVX-512 BW.
template <bool kExact>
FP8ATTN_VEC_INLINE void value_lanes32(const uint8_t* in, F16& lo, F16& hi) {
#if defined(__AVX512BW__)
  if constexpr (!kExact) {
    const __m512i w = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in)));
    const __m512i h = _mm512_and_si512(_mm512_slli_epi16(w, 7), _mm512_set1_epi16(static_cast<short>(0xBF80)));
    lo = reinterpret_cast<F16>(_mm512_cvtph_ps(_mm512_castsi512_si256(h)));
    hi = reinterpret_cast<F16>(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1)));
    return;
  }
#endif
  lo = key_lanes<kExact>(in);
  hi = key_lanes<kExact>(in + 16);
}

/// o_r[e0, e0 + 32) += Σ_j p_r[j] · V[j][e0, e0 + 32) for kRows rows, keys in ascending order,
/// from the value rows' codes (rows[j]) and P pre-multiplied by kValueScaleUndo; step() after
/// every 8 keys (decode_fp32_ahead.hpp).
template <int kRows, bool kExact, class Step>
void pv_code_columns(const float* p, int ld, const uint8_t* const* rows, int dv, int keys, float* o, int e0,
                     Step& step) {
  F16 lo[kRows], hi[kRows];
  for (int r = 0; r < kRows; ++r) {
    lo[r] = load16(o + r * dv + e0);
    hi[r] = load16(o + r * dv + e0 + kLanes);
  }
  for (int j = 0; j < keys; ++j) {
    if ((j & 7) == 7) step();
    F16 v0, v1;
    value_lanes32<kExact>(rows[j] + e0, v0, v1);
    for (int r = 0; r < kRows; ++r) {
      const F16 pr = splat(p[r * ld + j]);
      lo[r] = fma16(pr, v0, lo[r]);
      hi[r] = fma16(pr, v1, hi[r]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    store16(o + r * dv + e0, lo[r]);
    store16(o + r * dv + e0 + kLanes, hi[r]);
  }
}

/// O += P·V over one chunk's `keys` value rows (codes, dv a multiple of 32) for `rows` query
/// rows: eight at a time, then four, then one.
template <bool kExact, class Step>
FP8ATTN_DECODE_KERNEL void pv_code_chunk(const float* p, int rows, int ld, const uint8_t* const* v_rows, int dv, int keys, float* o,
                   Step& step) {
  for (int e0 = 0; e0 < dv; e0 += 2 * kLanes) {
    int r = 0;
    for (; r + 8 <= rows; r += 8)
      pv_code_columns<8, kExact>(p + static_cast<int64_t>(r) * ld, ld, v_rows, dv, keys, o + r * dv, e0, step);
    for (; r + 4 <= rows; r += 4)
      pv_code_columns<4, kExact>(p + static_cast<int64_t>(r) * ld, ld, v_rows, dv, keys, o + r * dv, e0, step);
    for (; r < rows; ++r)
      pv_code_columns<1, kExact>(p + static_cast<int64_t>(r) * ld, ld, v_rows, dv, keys, o + r * dv, e0, step);
  }
}

}  // namespace fp8attn::engine::decode_fp32_vec
