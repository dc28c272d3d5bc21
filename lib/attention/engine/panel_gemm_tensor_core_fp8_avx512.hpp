// The tensor core's addition for FP8 inputs (kernels/ptx/mma_order.hpp, steps 1-4) with AVX-512,
// in two passes that cost about half the µops per product of panel_gemm_tensor_core_avx512.hpp's
// (that file keeps BF16 inputs and is the fallback here). Same bits, element by element.
//
//  1. E on bytes, 64 lanes per operation: a product's exponent is ea + eb, so E of four rows × 16
//     columns is one saturating byte add and one byte max per k (A's exponents replicated 16 times
//     per row, B's 16 exponents repeated for the four rows). B's bytes are made once per
//     panel_gemm call (PanelSide), A's once per row block (RowSide).
//  2. The cut sums by the rounding of an FMA, two masked FMAs (one per sum) per 16 products:
//     with M = 2^(E + 23 − F), every value in [M, 2M) is a multiple of u = 2^(E − F), so
//     RZ(acc + |p|) for acc in that binade is acc + (|p| cut toward zero to a multiple of u):
//     step 2 and step 3 in one instruction (the FMA's product is exact before its one rounding).
//     Positive products go to one such sum and negative ones, negated, to another, both starting at
//     M plus the cut accumulator's positive or negative part; which lanes go where is the XOR of
//     the two inputs' sign bits, made per row and instruction as 16-bit masks (RowSide's and
//     PanelSide's sign words). The result is pos − neg (exact: two multiples of u in one binade),
//     then step 4 as a mask of the low 23 − 13 fraction bits.
//
// NOTE: why the sums stay in M's binade: a product is below 2^(ea + eb + 2) ≤ 2^(E + 2), 32 of them
// below 2^(E + 7), the accumulator below 2^(E + 1), so each sum is below M + 2^(E + 8) < 2M for
// F ≤ 14 (FP8's F is 13).
// NOTE: lanes whose E is out of the vector range (an infinite or NaN accumulator, E ≥ 2^100, or an
// accumulator alone below 2^−100) take rule_block for the block, as in the other vector forms; an
// A or B holding NaN, ±inf or a value no FP8 format has (exponent beyond ±40) takes
// panel_gemm_tensor_core_avx512.hpp's block for the row block (A) or the whole call (B).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/ptx/mma_order.hpp"
#include "lib/attention/engine/panel_gemm_scratch.hpp"
#include "lib/attention/engine/panel_gemm_tensor_core_avx512.hpp"
#include "lib/attention/engine/tile_ops.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace fp8attn::engine::tensor_core_fp8_avx512 {

inline constexpr int kWidth = 16;           ///< a panel's columns
inline constexpr int kMaxK = 32;            ///< the deepest instruction this form takes (FP8's k32)
inline constexpr int8_t kNoExponent = -100;  ///< a zero input's exponent byte
inline constexpr int kNoAddendBelow = -64;  ///< a byte E below this: every product was zero
inline constexpr int kRz = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;

/// Whether the form applies to a rule and instruction depth (the binade NOTE needs F ≤ 14).
inline bool applies(const arch::MmaRule& rule, int mma_k) {
  return rule.tensor_core && !rule.wide_sum && rule.align_bits <= 14 && mma_k <= kMaxK;
}

/// max(e(x), emin) per lane as bytes for the 16 FP8 values in x, kNoExponent for ±0; `special`
/// gets the lanes holding NaN, ±inf, an FP32 subnormal or an exponent beyond ±40.
__attribute__((always_inline)) inline __m128i exponent_bytes(__m512 x, int32_t emin, __mmask16* special) {
  const __m512i bits = _mm512_castps_si512(x);
  const __mmask16 nonzero = _mm512_test_epi32_mask(bits, _mm512_set1_epi32(0x7FFFFFFF));
  const __m512i biased = _mm512_and_si512(_mm512_srli_epi32(bits, 23), _mm512_set1_epi32(0xFF));
  const __m512i e = _mm512_sub_epi32(biased, _mm512_set1_epi32(127));
  *special |= nonzero & (_mm512_cmpgt_epi32_mask(e, _mm512_set1_epi32(40)) |
                         _mm512_cmplt_epi32_mask(e, _mm512_set1_epi32(-40)));
  const __m512i clamped = _mm512_max_epi32(e, _mm512_set1_epi32(emin));
  return _mm512_cvtepi32_epi8(_mm512_mask_mov_epi32(_mm512_set1_epi32(kNoExponent), nonzero, clamped));
}

/// A 16-bit mask loaded straight into a mask register. NOTE: GCC 12 compiles _load_mask16 as a
/// load into a general register and a kmovw from it, one more µop on port 5 per mask.
__attribute__((always_inline)) inline __mmask16 load_mask(const uint16_t* p) {
  __mmask16 m;
  asm("kmovw %1, %0" : "=Yk"(m) : "m"(*p));
  return m;
}

/// 0xFFFF per lane whose sign bit is set, as 16 words.
__attribute__((always_inline)) inline __m256i sign_words(__m512 x) {
  return _mm512_cvtepi32_epi16(_mm512_srai_epi32(_mm512_castps_si512(x), 31));
}

/// B's side of a panel_gemm call: per panel and k, the 16 columns' exponent bytes and one word of
/// sign bits (bit c: column c is negative); rows past depth_total are zero bytes and words.
struct PanelSide {
  int8_t* exp = nullptr;      ///< [panel][stride][16]
  uint16_t* sign = nullptr;   ///< [panel][stride]
  int64_t stride = 0;
  bool special = false;       ///< a panel holds a value the form does not take

  /// Fills `exp` and `sign` (64-byte aligned: panel_gemm_scratch.hpp's first two regions).
  void build(const float* panels, int64_t panel_stride, int panels_count, int depth_total, int32_t emin_b) {
    stride = panel_scratch_stride(depth_total);
    __mmask16 bad = 0;
    for (int p = 0; p < panels_count; ++p) {
      // NOTE: only the sign words past depth_total are read (32 at a time, then unused): zero them.
      std::memset(sign + p * stride + depth_total, 0, static_cast<size_t>(stride - depth_total) * sizeof(uint16_t));
      for (int k = 0; k < depth_total; ++k) {
        const __m512 b = _mm512_loadu_ps(panels + p * panel_stride + static_cast<int64_t>(k) * kWidth);
        _mm_store_si128(reinterpret_cast<__m128i*>(exp + (p * stride + k) * kWidth), exponent_bytes(b, emin_b, &bad));
        sign[p * stride + k] = static_cast<uint16_t>(_mm512_movepi32_mask(_mm512_castps_si512(b)));
      }
    }
    special = bad != 0;
  }
};

/// Where panel_gemm keeps B's side and one row block's A side (panel_gemm_scratch.hpp's regions).
struct Prepared {
  PanelSide side;
  int8_t* pattern = nullptr;  ///< [group][stride][64]
  uint16_t* sign = nullptr;   ///< [row][stride]
  float* by_k = nullptr;      ///< [stride][row]

  /// Carves `bytes` at `scratch` and builds B's side; false (nothing prepared) if too small.
  bool carve(void* scratch, size_t bytes, const float* panels, int64_t panel_stride, int panels_count,
             int depth_total, int32_t emin_b) {
    auto at = reinterpret_cast<uintptr_t>(scratch);
    const uintptr_t aligned = (at + 63) / 64 * 64;
    if (scratch == nullptr || bytes < aligned - at + panel_scratch_regions_bytes(panels_count, depth_total)) return false;
    const size_t stride = static_cast<size_t>(panel_scratch_stride(depth_total)), count = static_cast<size_t>(panels_count);
    at = aligned;
    auto take = [&](size_t n) {
      const uintptr_t here = at;
      at += round_up_64(n);
      return reinterpret_cast<void*>(here);
    };
    side.exp = static_cast<int8_t*>(take(count * stride * kWidth));
    side.sign = static_cast<uint16_t*>(take(count * stride * 2));
    pattern = static_cast<int8_t*>(take(2 * stride * 64));
    sign = static_cast<uint16_t*>(take(8 * stride * 2));
    by_k = static_cast<float*>(take(8 * stride * 4));
    side.build(panels, panel_stride, panels_count, depth_total, emin_b);
    return true;
  }
};

/// A's side of one row block of R rows: per group of four rows and k, 64 exponent bytes (row
/// 4g + q's in lanes 16q..16q + 15, kNoExponent for rows past R), and per row and k a sign word.
template <int R>
struct RowSide {
  static constexpr int kGroups = (R + 3) / 4;
  int8_t* pattern;    ///< [group][stride][64]
  uint16_t* sign;     ///< [row][stride]
  float* by_k;        ///< [stride][R]: A's values, k-major
  int64_t stride = 0;
  bool any_negative = false;  ///< some A value has its sign bit set

  /// Returns false when A holds a value the form does not take.
  bool build(const float* a, int64_t lda, int depth_total, int32_t emin_a) {
    stride = (depth_total + kMaxK - 1) / kMaxK * kMaxK + kMaxK;
    // NOTE: the loops below write every pattern, sign word and value an instruction reads, and the
    // sign words up to depth_total rounded to 16; the rest of each row's words is zeroed here.
    const int64_t written = (depth_total + kWidth - 1) / kWidth * kWidth;
    for (int r = 0; r < R; ++r)
      std::memset(sign + r * stride + written, 0, static_cast<size_t>(stride - written) * sizeof(uint16_t));
    for (int r = 0; r < R; ++r)
      for (int k = 0; k < depth_total; ++k) by_k[k * R + r] = a[r * lda + k];
    alignas(64) int8_t row_exp[4][16];
    __mmask16 bad = 0;
    const __m512i spread = _mm512_set_epi64(0x0303030303030303, 0x0303030303030303, 0x0202020202020202,
                                            0x0202020202020202, 0x0101010101010101, 0x0101010101010101, 0, 0);
    for (int g = 0; g < kGroups; ++g)
      for (int k0 = 0; k0 < depth_total; k0 += kWidth) {
        const int len = depth_total - k0 < kWidth ? depth_total - k0 : kWidth;
        const __mmask16 live = static_cast<__mmask16>((1u << len) - 1u);
        for (int q = 0; q < 4; ++q) {
          const int r = 4 * g + q;
          if (r >= R) {
            _mm_store_si128(reinterpret_cast<__m128i*>(row_exp[q]), _mm_set1_epi8(kNoExponent));
            continue;
          }
          const __m512 x = _mm512_maskz_loadu_ps(live, a + r * lda + k0);
          _mm_store_si128(reinterpret_cast<__m128i*>(row_exp[q]), exponent_bytes(x, emin_a, &bad));
          const __m256i words = _mm256_maskz_mov_epi16(live, sign_words(x));
          any_negative |= !_mm256_testz_si256(words, words);
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(sign + r * stride + k0), words);
        }
        // The four rows' bytes interleaved, one dword per k, then each dword spread to 64 bytes.
        const __m128i x0 = _mm_load_si128(reinterpret_cast<const __m128i*>(row_exp[0]));
        const __m128i x1 = _mm_load_si128(reinterpret_cast<const __m128i*>(row_exp[1]));
        const __m128i x2 = _mm_load_si128(reinterpret_cast<const __m128i*>(row_exp[2]));
        const __m128i x3 = _mm_load_si128(reinterpret_cast<const __m128i*>(row_exp[3]));
        const __m128i lo01 = _mm_unpacklo_epi8(x0, x1), hi01 = _mm_unpackhi_epi8(x0, x1);
        const __m128i lo23 = _mm_unpacklo_epi8(x2, x3), hi23 = _mm_unpackhi_epi8(x2, x3);
        alignas(64) int32_t four[16];
        _mm_store_si128(reinterpret_cast<__m128i*>(four), _mm_unpacklo_epi16(lo01, lo23));
        _mm_store_si128(reinterpret_cast<__m128i*>(four + 4), _mm_unpackhi_epi16(lo01, lo23));
        _mm_store_si128(reinterpret_cast<__m128i*>(four + 8), _mm_unpacklo_epi16(hi01, hi23));
        _mm_store_si128(reinterpret_cast<__m128i*>(four + 12), _mm_unpackhi_epi16(hi01, hi23));
        for (int k = 0; k < len; ++k)
          _mm512_store_si512(pattern + (g * stride + k0 + k) * 64,
                             _mm512_shuffle_epi8(_mm512_set1_epi32(four[k]), spread));
      }
    return bad == 0;
  }
};

/// One instruction (depth ≤ 32, from k0) of R rows against panel p: acc = mma_instruction(...).
/// kNonNegativeA: no A value of the row block has its sign bit set.
template <int R, bool kNonNegativeA>
__attribute__((always_inline)) inline void panel_block(const float* a, int64_t lda, const RowSide<R>& rows,
                                                       const PanelSide& side, int p, const float* panel, int k0,
                                                       int depth, float* acc, int64_t ldacc, bool overwrite,
                                                       const arch::MmaRule& rule) {
  constexpr int G = RowSide<R>::kGroups;
  // Pass 1: E of the products, as bytes.
  alignas(64) int8_t e_bytes[G][64];
  {
    __m512i e8[G];
#pragma GCC unroll 2
    for (int g = 0; g < G; ++g) e8[g] = _mm512_set1_epi8(-128);
    const int8_t* b_exp = side.exp + (p * side.stride + k0) * kWidth;
    auto sum_at = [&](int g, int k) {
      const __m512i eb = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b_exp + k * kWidth)));
      return _mm512_adds_epi8(_mm512_loadu_si512(rows.pattern + (g * rows.stride + k0 + k) * 64), eb);
    };
    // NOTE: two k per step, their sums' max first: with one, GCC 12 copied each group's maximum
    // to another register every k (two more µops per k on the vector ports).
    int k = 0;
    for (; k + 2 <= depth; k += 2) {
#pragma GCC unroll 2
      for (int g = 0; g < G; ++g) e8[g] = _mm512_max_epi8(e8[g], _mm512_max_epi8(sum_at(g, k), sum_at(g, k + 1)));
    }
    if (k < depth) {
#pragma GCC unroll 2
      for (int g = 0; g < G; ++g) e8[g] = _mm512_max_epi8(e8[g], sum_at(g, k));
    }
#pragma GCC unroll 2
    for (int g = 0; g < G; ++g) _mm512_store_si512(e_bytes[g], e8[g]);
  }
  // Which lanes are negative products, per row and k: pos = ~(sa ^ sb), neg = sa ^ sb. With no
  // negative A in the row block (P, the softmax's output), one pair of masks serves every row.
  constexpr int kMaskRows = kNonNegativeA ? 1 : R;
  alignas(64) uint16_t masks[kMaskRows][2][kMaxK];
  const __m512i sb = _mm512_loadu_si512(side.sign + p * side.stride + k0);
#pragma GCC unroll 8
  for (int r = 0; r < kMaskRows; ++r) {
    const __m512i sa = kNonNegativeA ? _mm512_setzero_si512() : _mm512_loadu_si512(rows.sign + r * rows.stride + k0);
    _mm512_store_si512(masks[r][0], _mm512_ternarylogic_epi32(sa, sb, sb, 0xC3));  // ~(sa ^ sb)
    _mm512_store_si512(masks[r][1], _mm512_xor_si512(sa, sb));
  }
  // E, M = 2^(E + 23 − F), and the two sums from the cut accumulator.
  __m512 pos[R], neg[R];
  __mmask16 bad = 0;
  const __m512 emin_acc = _mm512_set1_ps(tensor_core_avx2::pow2(-126));
  const __m512 to_magic = _mm512_set1_ps(tensor_core_avx2::pow2(23 - rule.align_bits));
  const __m512 sign_bit = _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int32_t>(0x80000000u)));
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const __m512i e32 = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(&e_bytes[r / 4][16 * (r % 4)])));
    const __mmask16 some = _mm512_cmpgt_epi32_mask(e32, _mm512_set1_epi32(kNoAddendBelow));
    const __m512 e_products = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(some, _mm512_add_epi32(e32, _mm512_set1_epi32(127)), 23));
    const __m512 c = overwrite ? _mm512_setzero_ps() : _mm512_loadu_ps(acc + r * ldacc);
    const __m512 e = _mm512_max_ps(e_products, tensor_core_avx512::exponent_only(c, emin_acc));
    bad |= tensor_core_avx512::out_of_range(e);
    const __m512 magic = _mm512_mul_ps(e, to_magic);
    pos[r] = _mm512_add_round_ps(magic, _mm512_max_ps(c, _mm512_setzero_ps()), kRz);
    neg[r] = _mm512_add_round_ps(magic, _mm512_max_ps(_mm512_xor_ps(c, sign_bit), _mm512_setzero_ps()), kRz);
  }
  if (bad != 0) {
    rule_block<R, kWidth, float>(a + k0, lda, panel, kWidth, 0, depth, acc, ldacc, overwrite, rule);
    return;
  }
  // Pass 2: each product into its sum, cut by the FMA's rounding toward zero.
  // NOTE: with masks per row, the loop reads 2.5 values per product vector (a broadcast, one or two
  // masks) and its loads about match its FMA-port µops; with shared masks, its FMAs bound it.
  // NOTE: A read k-major (RowSide::by_k): one pointer and constant offsets for the 8 broadcasts;
  // from A's rows GCC 12 kept the rows' offsets on the stack and reloaded them, a load each.
  const float* a_by_k = rows.by_k + k0 * R;
  for (int k = 0; k < depth; ++k) {
    const __m512 b = _mm512_loadu_ps(panel + k * kWidth);
    __mmask16 to_pos = 0, to_neg = 0;
    if constexpr (kNonNegativeA) {
      to_pos = load_mask(&masks[0][0][k]);
      to_neg = load_mask(&masks[0][1][k]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      if constexpr (!kNonNegativeA) {
        // NOTE: odd rows take neg as ~pos (one µop on port 0) instead of a third load, which
        // evens the loop's loads and its FMA-port µops.
        to_pos = load_mask(&masks[r][0][k]);
        to_neg = r % 2 == 1 ? static_cast<__mmask16>(_knot_mask16(to_pos)) : load_mask(&masks[r][1][k]);
      }
      const __m512 a_rk = _mm512_set1_ps(a_by_k[k * R + r]);
      pos[r] = _mm512_mask3_fmadd_round_ps(a_rk, b, pos[r], to_pos, kRz);
      neg[r] = _mm512_mask3_fnmadd_round_ps(a_rk, b, neg[r], to_neg, kRz);
    }
  }
  const __m512i keep = _mm512_set1_epi32(static_cast<int32_t>(~((1u << (arch::kFp32MantissaBits - rule.result_bits)) - 1u)));
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
    _mm512_storeu_ps(acc + r * ldacc, _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(_mm512_sub_ps(pos[r], neg[r])), keep)));
}

/// R rows of A against every panel, each panel's instructions in order (panel_gemm.hpp's
/// panel_rows for this form). Returns false, having written nothing, when A holds a value the form
/// does not take.
template <int R>
inline bool panel_rows(const float* a, int64_t lda, const float* panels, int64_t panel_stride, int panels_count,
                       float* acc, int64_t ldacc, int depth_total, int mma_k, bool overwrite, const arch::MmaRule& rule,
                       const Prepared& prepared) {
  static_assert(R <= 8, "the scratch holds 8 rows");
  const PanelSide& side = prepared.side;
  RowSide<R> rows{prepared.pattern, prepared.sign, prepared.by_k};
  if (side.special || !rows.build(a, lda, depth_total, rule.emin_a)) return false;
  auto each_block = [&](auto non_negative) {
    for (int p = 0; p < panels_count; ++p) {
      const float* panel = panels + p * panel_stride;
      for (int k0 = 0; k0 < depth_total; k0 += mma_k)
        panel_block<R, decltype(non_negative)::value>(a, lda, rows, side, p, panel + static_cast<int64_t>(k0) * kWidth,
                                                      k0, k0 + mma_k <= depth_total ? mma_k : depth_total - k0,
                                                      acc + p * kWidth, ldacc, overwrite && k0 == 0, rule);
    }
  };
  if (rows.any_negative) each_block(std::false_type{});
  else each_block(std::true_type{});
  return true;
}

}  // namespace fp8attn::engine::tensor_core_fp8_avx512

#pragma GCC diagnostic pop
