// The tensor core's addition for FP8 inputs (kernels/ptx/mma_order.hpp, steps 1-4) with AVX-512,
// in integers: every addend of an instruction is cut to a multiple of u = 2^(E − F), so the cut
// addends are integers in units of u, and their sum is exact in int32. Same bits as
// panel_gemm_tensor_core_avx512.hpp's 16-lane form (which keeps BF16 inputs and is the fallback
// here), element by element.
//
//  1. E on bytes, 64 lanes per operation: a product's exponent is ea + eb, so E of one row × 16
//     columns × a quad of four k is one saturating byte subtraction and one byte max per quad
//     (A's four exponent bytes broadcast as a dword, B's stored column by column within the
//     quad; the bytes are biased so that the difference is FP32's exponent field, 0 beside a ±0
//     input), and two shifts and maxima per row end it. B's bytes are made once per panel_gemm
//     call (PanelSide), A's once per row block (RowSide).
//  2. Each FP8 value is m · 2^(e − 3) with e its exponent (at least the format's emin) and m an
//     integer below 16 (E5M2's too: its m is even). A product in units of u is then
//     m_a · m_b · 2^(F − 6) / 2^d with d = E − ea − eb ≥ 0, and its cut toward zero is the
//     magnitude shifted right by d: m_a · 2^7 (F = 13) times m_b is at most 28800, so the
//     product, the shift and the sign are 16-bit lanes, two k per column. Per row, pair of k and
//     32 lanes: one multiply (vpmullw), two adds for d, one variable shift (vpsrlvw), the product's
//     sign (±1 words, B's and, for an A with negative values, A's by an XOR), and a dot of the
//     words with the signs into int32 (vpdpwssd with AVX512-VNNI, else vpmaddwd and an add).
//  3. The accumulator, cut toward zero to a multiple of u, starts the int32 sum (exact: below
//     2^14 units); the 32 products add below 2^20 units more.
//  4. The sum converted to FP32 (exact) and scaled by u (a power of two), then step 4's cut as a
//     mask of the low 23 − 13 fraction bits.
//
// NOTE: why integers and not FMAs rounding toward zero (this file's earlier form, two masked FMAs
// per 16 products, one per sign): a rounding direction is one per instruction, so positive and
// negative products took one FMA each, and the masks per row and k loaded as often as the FMAs
// ran; the integer lanes take 32 products per row and pair of k in about five operations, none
// of them the FMA ports' alone. Measured in a register-only loop on a Zen 4: about 2.8× the
// products per second.
// NOTE: lanes whose E is out of the vector range (an infinite or NaN accumulator, E ≥ 2^100, or an
// accumulator alone below 2^−100) take rule_block for the block, as in the other vector forms; an
// A or B holding NaN, ±inf, a value no FP8 format has (exponent above 20, or more than three
// fraction bits) takes panel_gemm_tensor_core_avx512.hpp's block for the row block (A) or the
// whole call (B).
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
// NOTE: GCC 12 flags its own intrinsics' `__Y = __Y` placeholders when they are inlined into a lambda.
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace fp8attn::engine::tensor_core_fp8_avx512 {

inline constexpr int kWidth = 16;             ///< a panel's columns
inline constexpr int kMaxK = 32;              ///< the deepest instruction this form takes (FP8's k32)
inline constexpr int kMaxDepth = kTensorCoreFp8MaxDepth;  ///< the deepest product (A's pairs per row: half)
inline constexpr int kRowPairs = kMaxDepth / 2;
inline constexpr int kMaxExponent = 20;       ///< the largest input exponent the form takes
inline constexpr int kExponentBias = 127;     ///< FP32's: E is handled as its biased exponent field
/// Pass 1's bytes, unsigned: A's e + kExponentBias + kBByteBias (0 for ±0) minus, saturating at 0,
/// B's kBByteBias − e (255 for ±0) is the product's biased exponent field, or 0 where either
/// input is ±0. kBByteBias ≥ kMaxExponent keeps B's bytes of real values below 255, and A's
/// (e ≥ emin ≥ −14) above every B byte.
inline constexpr int kBByteBias = 20;
/// The least biased E an instruction works with: E's of no addend (every product and the
/// accumulator zero) are raised to it, so that 2^(F − E) and 2^(E − F) stay normal floats (their
/// sum is 0 whatever the unit; every real E is at least 2^−100, a field of 27).
inline constexpr int kLeastField = 14;

/// Whether the form applies to a rule, instruction depth and product depth: FP8 inputs, F ≤ 13
/// (m_a · m_b · 2^(F − 6) fits a signed 16-bit lane), instructions of whole pairs of k.
inline bool applies(const arch::MmaRule& rule, int mma_k, int depth_total) {
  return rule.tensor_core && !rule.wide_sum && rule.align_bits <= 13 && mma_k <= kMaxK && mma_k % 2 == 0 &&
         depth_total <= kMaxDepth;
}

/// An FP8 value's parts for 16 lanes: e = max(exponent, emin) and m = |x| · 2^(3 − e), an integer
/// below 16 (0 for ±0), and the lanes' sign bits (as −1 or +1).
struct Parts {
  __m512i e, m, sign;
  __mmask16 nonzero;  ///< the lanes not ±0
};

/// The parts of 16 FP8 values; `special` gets the lanes holding NaN, ±inf, an exponent beyond ±20
/// or a value with more than three fraction bits at its exponent (no FP8 format's value).
__attribute__((always_inline)) inline Parts parts_of(__m512 x, int32_t emin, __mmask16* special) {
  const __m512i bits = _mm512_castps_si512(x);
  const __mmask16 nonzero = _mm512_test_epi32_mask(bits, _mm512_set1_epi32(0x7FFFFFFF));
  const __m512i biased = _mm512_and_si512(_mm512_srli_epi32(bits, 23), _mm512_set1_epi32(0xFF));
  const __m512i e_raw = _mm512_sub_epi32(biased, _mm512_set1_epi32(127));
  const __m512i e = _mm512_max_epi32(e_raw, _mm512_set1_epi32(emin));
  // NOTE: 20 holds every FP8 format's exponents (E5M2's: up to 15) and pass 1's byte encoding.
  __mmask16 bad = nonzero & (_mm512_cmpgt_epi32_mask(e_raw, _mm512_set1_epi32(kMaxExponent)) |
                             _mm512_cmplt_epi32_mask(e_raw, _mm512_set1_epi32(-kMaxExponent)));
  // NOTE: 2^(3 − e) from its bits, e ≤ 128 (a NaN's or inf's); exact for an FP8 value, and a
  // NaN, inf or extra fraction bit shows in the round trip.
  const __m512 scale = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_sub_epi32(_mm512_set1_epi32(130), e), 23));
  const __m512 scaled = _mm512_mul_ps(_mm512_abs_ps(x), scale);
  const __m512i m = _mm512_cvttps_epi32(scaled);
  bad |= _mm512_cmp_ps_mask(_mm512_cvtepi32_ps(m), scaled, _CMP_NEQ_UQ);
  *special |= bad;
  return {e, m, _mm512_or_si512(_mm512_srai_epi32(bits, 31), _mm512_set1_epi32(1)), nonzero};
}

/// A's exponent bytes for pass 1: e + kExponentBias + kBByteBias per lane, 0 for ±0.
__attribute__((always_inline)) inline __m128i a_exponent_bytes(const Parts& parts) {
  return _mm512_cvtepi32_epi8(
      _mm512_maskz_add_epi32(parts.nonzero, parts.e, _mm512_set1_epi32(kExponentBias + kBByteBias)));
}

/// B's exponent bytes for pass 1: kBByteBias − e per lane, 255 for ±0.
__attribute__((always_inline)) inline __m128i b_exponent_bytes(const Parts& parts) {
  return _mm512_cvtepi32_epi8(_mm512_mask_sub_epi32(_mm512_set1_epi32(255), parts.nonzero,
                                                    _mm512_set1_epi32(kBByteBias), parts.e));
}

/// Two k's 16 lanes each (lo: k even, hi: k odd) as 32 words, two per column: word 2c from lo.
__attribute__((always_inline)) inline __m512i pair_words(__m512i lo, __m512i hi) {
  return _mm512_or_si512(_mm512_and_si512(lo, _mm512_set1_epi32(0xFFFF)), _mm512_slli_epi32(hi, 16));
}

/// Four depths' 16 exponent bytes as one quad: column c's bytes at 4c .. 4c + 3, depth order.
__attribute__((always_inline)) inline __m512i quad_bytes(__m128i x0, __m128i x1, __m128i x2, __m128i x3) {
  const __m128i lo01 = _mm_unpacklo_epi8(x0, x1), hi01 = _mm_unpackhi_epi8(x0, x1);
  const __m128i lo23 = _mm_unpacklo_epi8(x2, x3), hi23 = _mm_unpackhi_epi8(x2, x3);
  const __m256i lo = _mm256_set_m128i(_mm_unpackhi_epi16(lo01, lo23), _mm_unpacklo_epi16(lo01, lo23));
  const __m256i hi = _mm256_set_m128i(_mm_unpackhi_epi16(hi01, hi23), _mm_unpacklo_epi16(hi01, hi23));
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

/// B's side of a panel_gemm call, per panel: per quad of k the 16 columns' exponent bytes (pass 1), and
/// per pair of k three vectors of 32 words (two per column, k even first): m, e and the sign as
/// ±1. Rows past depth_total are ±0.
struct PanelSide {
  uint8_t* exp = nullptr;     ///< [panel][stride / 4][16][4]: b_exponent_bytes by quads (store_quad)
  int16_t* words = nullptr;   ///< [panel][stride / 2][3][32]: m, e, sign
  int64_t stride = 0;
  bool special = false;       ///< a panel holds a value the form does not take

  /// Panel p's depths k .. k + 3 (k a multiple of 4): their exponent bytes, column c's four at
  /// bytes 4c .. 4c + 3 of the quad's 64, and their two pairs of words.
  __attribute__((always_inline)) inline void store_quad(int p, int k, const Parts (&q)[4]) {
    const __m512i bytes =
        quad_bytes(b_exponent_bytes(q[0]), b_exponent_bytes(q[1]), b_exponent_bytes(q[2]), b_exponent_bytes(q[3]));
    _mm512_store_si512(exp + (p * stride + k) * kWidth, bytes);
    store_pair(p, k, q[0], q[1]);
    store_pair(p, k + 2, q[2], q[3]);
  }

  /// Panel p's pair of words for depths k and k + 1 (k even).
  __attribute__((always_inline)) inline void store_pair(int p, int k, const Parts& p0, const Parts& p1) {
    int16_t* w = words + (p * (stride / 2) + k / 2) * 96;
    _mm512_store_si512(w, pair_words(p0.m, p1.m));
    _mm512_store_si512(w + 32, pair_words(p0.e, p1.e));
    _mm512_store_si512(w + 64, pair_words(p0.sign, p1.sign));
  }

  /// Fills `exp` and `words` (64-byte aligned: panel_gemm_scratch.hpp's regions).
  void build(const float* panels, int64_t panel_stride, int panels_count, int depth_total, int32_t emin_b) {
    stride = panel_scratch_stride(depth_total);
    __mmask16 bad = 0;
    for (int p = 0; p < panels_count; ++p)
      for (int k = 0; k < depth_total; k += 4) {
        const float* row = panels + p * panel_stride + static_cast<int64_t>(k) * kWidth;
        Parts q[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i)
          q[i] = parts_of(k + i < depth_total ? _mm512_loadu_ps(row + i * kWidth) : _mm512_setzero_ps(), emin_b, &bad);
        store_quad(p, k, q);
      }
    special = bad != 0;
  }

  /// build() for B given as E4M3 codes, codes[(p · depth_total + k) · 16 + c] for column c of panel
  /// p at depth k (no NaN code: the caller checks), with emin −6: the same exponent bytes and
  /// words as build() of the decoded values, made with integer operations on the codes.
  void build_e4m3(const uint8_t* codes, int panels_count, int depth_total) {
    stride = panel_scratch_stride(depth_total);
    auto parts_of_codes = [](__m128i c) {
      const __m512i x = _mm512_cvtepu8_epi32(c);
      const __m512i field = _mm512_and_si512(_mm512_srli_epi32(x, 3), _mm512_set1_epi32(0xF));
      const __m512i mantissa = _mm512_and_si512(x, _mm512_set1_epi32(7));
      const __mmask16 normal = _mm512_test_epi32_mask(field, field);
      Parts parts;
      // e = max(field, 1) − 7 (a subnormal at E4M3's least exponent), m = 8 + mantissa or mantissa.
      parts.e = _mm512_sub_epi32(_mm512_max_epi32(field, _mm512_set1_epi32(1)), _mm512_set1_epi32(7));
      parts.m = _mm512_mask_or_epi32(mantissa, normal, mantissa, _mm512_set1_epi32(8));
      parts.sign = _mm512_or_si512(_mm512_srai_epi32(_mm512_slli_epi32(x, 24), 31), _mm512_set1_epi32(1));
      parts.nonzero = _mm512_test_epi32_mask(x, _mm512_set1_epi32(0x7F));
      return parts;
    };
    for (int p = 0; p < panels_count; ++p)
      for (int k = 0; k < depth_total; k += 4) {
        const uint8_t* row = codes + (static_cast<int64_t>(p) * depth_total + k) * kWidth;
        Parts q[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i)
          q[i] = parts_of_codes(k + i < depth_total
                                    ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i * kWidth))
                                    : _mm_setzero_si128());
        store_quad(p, k, q);
      }
    special = false;
  }
};

/// Where panel_gemm keeps B's side and one row block's A side (panel_gemm_scratch.hpp's regions).
struct Prepared {
  PanelSide side;
  uint8_t* row_exp = nullptr;  ///< [row][stride]: A's exponent bytes
  uint32_t* pairs = nullptr;  ///< [3][row][kRowPairs]: A's m · 2^(F − 6), e and sign flip per pair
  bool vnni = false;          ///< the CPU has AVX512-VNNI: the dot of the words in one instruction

  /// Carves `bytes` at `scratch` and builds B's side; false (nothing prepared) if too small.
  bool carve(void* scratch, size_t bytes, const float* panels, int64_t panel_stride, int panels_count,
             int depth_total, int32_t emin_b, bool has_vnni) {
    if (!carve_regions(scratch, bytes, panels_count, depth_total, has_vnni)) return false;
    side.build(panels, panel_stride, panels_count, depth_total, emin_b);
    return true;
  }

  /// carve() without building B's side (the caller builds it, PanelSide::build_e4m3).
  bool carve_regions(void* scratch, size_t bytes, int panels_count, int depth_total, bool has_vnni) {
    void* regions = panel_scratch_regions(scratch, bytes, panels_count, depth_total);
    if (regions == nullptr) return false;
    const size_t stride = static_cast<size_t>(panel_scratch_stride(depth_total)), count = static_cast<size_t>(panels_count);
    auto at = reinterpret_cast<uintptr_t>(regions);
    auto take = [&](size_t n) {
      const uintptr_t here = at;
      at += round_up_64(n);
      return reinterpret_cast<void*>(here);
    };
    side.exp = static_cast<uint8_t*>(take(count * stride * kWidth));
    side.words = static_cast<int16_t*>(take(count * (stride / 2) * 3 * 64));
    row_exp = static_cast<uint8_t*>(take(8 * stride));
    pairs = static_cast<uint32_t*>(take(3 * 8 * kRowPairs * 4));
    vnni = has_vnni;
    return true;
  }
};

/// A's side of one row block of R rows: per row and k an exponent byte (a_exponent_bytes), and per
/// row and pair of k three
/// dwords of two words (k even in the low word): m · 2^(F − 6), e + kExponentBias (so that
/// E's biased field minus it minus B's e is the shift d), and 0xFFFE where the value is negative
/// (the XOR that turns a ±1 word into ∓1).
template <int R>
struct RowSide {
  uint8_t* row_exp;   ///< [row][stride]: a_exponent_bytes, 0 for ±0 and past depth_total
  uint32_t* pairs;    ///< [3][row][kRowPairs]
  int64_t stride = 0;
  bool any_negative = false;  ///< some A value has its sign bit set

  /// Returns false when A holds a value the form does not take.
  bool build(const float* a, int64_t lda, int depth_total, int32_t emin_a, int align_bits) {
    stride = panel_scratch_stride(depth_total);
    __mmask16 bad = 0;
    __mmask16 negative = 0;
    for (int r = 0; r < R; ++r)
      for (int k0 = 0; k0 < depth_total; k0 += kWidth) {
        const int len = depth_total - k0 < kWidth ? depth_total - k0 : kWidth;
        const __mmask16 live = static_cast<__mmask16>((1u << len) - 1u);
        {
          const __m512 x = _mm512_maskz_loadu_ps(live, a + r * lda + k0);
          const Parts parts = parts_of(x, emin_a, &bad);
          _mm_store_si128(reinterpret_cast<__m128i*>(row_exp + r * stride + k0), a_exponent_bytes(parts));
          // The pairs: 16 lanes (k0 .. k0 + 15) narrowed to words, word 2j + i = k0 + 2j + i,
          // i.e. 8 dwords of two k each.
          const __m512i flip =
              _mm512_and_si512(_mm512_srai_epi32(_mm512_castps_si512(x), 31), _mm512_set1_epi32(0xFFFE));
          negative |= _mm512_test_epi32_mask(flip, flip);
          const __m512i m = _mm512_slli_epi32(parts.m, align_bits - 6);
          uint32_t* at = pairs + r * kRowPairs + k0 / 2;
          _mm256_store_si256(reinterpret_cast<__m256i*>(at), _mm512_cvtepi32_epi16(m));
          _mm256_store_si256(reinterpret_cast<__m256i*>(at + 8 * kRowPairs),
                             _mm512_cvtepi32_epi16(_mm512_add_epi32(parts.e, _mm512_set1_epi32(kExponentBias))));
          _mm256_store_si256(reinterpret_cast<__m256i*>(at + 16 * kRowPairs), _mm512_cvtepi32_epi16(flip));
        }
      }
    any_negative = negative != 0;
    return bad == 0;
  }
};

/// acc += Σ t·s over word pairs: vpdpwssd with AVX512-VNNI (inline assembly: the x86-64-v4 build
/// does not assume the extension; the caller checked the CPU), else vpmaddwd and an add.
template <bool kVnni>
__attribute__((always_inline)) inline __m512i dot_words(__m512i acc, __m512i t, __m512i s) {
  if constexpr (kVnni) {
    asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(t), "v"(s));
    return acc;
  } else {
    return _mm512_add_epi32(acc, _mm512_madd_epi16(t, s));
  }
}

/// Where an instruction's accumulator comes from.
enum class Acc {
  kZero,     ///< +0 (the first instruction of an overwriting call)
  kLoaded,   ///< the caller's values, or a chain that took rule_block: any FP32 value
  kChained,  ///< the previous instruction's pass-2 output, which needs no range check (below)
};
// NOTE: why a chained accumulator needs no check. Inputs reach this form only with exponents
// from their format's emin to 20 (parts_of), so a product is below 2^42 and a call's at most 256
// deep sum below 2^50; the first instruction's accumulator was checked to be below 2^100, so every
// later one is below 2^101; a nonzero one is at least 2^−100: a multiple of u = 2^(E − F) with E a
// product's exponent (−28 or more), or the checked accumulator alone, cut at its own exponent.
// Fields within [27, 228], inside the [14, 254] where 2^(F − E), u and the sum's conversion are
// exact.

/// One instruction (depth ≤ 32, from k0, even) of R rows against panel p: acc = mma_instruction(...).
/// kNonNegativeA: no A value of the row block has its sign bit set. Returns false, having written
/// nothing, where the instruction needs the scalar rule and `panel` (B's floats) is null; sets
/// *scalar where it took the scalar rule.
template <int R, bool kNonNegativeA, bool kVnni, Acc kAcc>
__attribute__((always_inline)) inline bool panel_block(const float* a, int64_t lda, const RowSide<R>& rows,
                                                       const PanelSide& side, int p, const float* panel, int k0,
                                                       int depth, float* acc, int64_t ldacc,
                                                       const arch::MmaRule& rule, bool* scalar) {
  // Pass 1: E of the products, as bytes: per row, lanes 4c .. 4c + 3 hold column c's maximum
  // over the depths of each quad position, A's four exponent bytes of a quad broadcast as a dword.
  __m512i e8[R];
  {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) e8[r] = _mm512_setzero_si512();
    const uint8_t* b_exp = side.exp + (p * side.stride + k0) * kWidth;
    const uint8_t* a_exp = rows.row_exp + k0;
    auto sum_at = [&](int r, int j) {
      int32_t a4;
      std::memcpy(&a4, a_exp + r * rows.stride + 4 * j, 4);
      return _mm512_subs_epu8(_mm512_set1_epi32(a4), _mm512_load_si512(b_exp + j * 64));
    };
    // NOTE: two quads per step, their sums' max first: with one, GCC 12 copied each row's maximum
    // to another register every step.
    const int quads = (depth + 3) / 4;
    int j = 0;
    for (; j + 2 <= quads; j += 2) {
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) e8[r] = _mm512_max_epu8(e8[r], _mm512_max_epu8(sum_at(r, j), sum_at(r, j + 1)));
    }
    if (j < quads) {
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) e8[r] = _mm512_max_epu8(e8[r], sum_at(r, j));
    }
  }
  // E per row and column as FP32's biased exponent field, in integers; the sums start from the
  // accumulator cut to a multiple of u, in units of u.
  // NOTE: the field and not the float 2^E: E, 2^(F − E), u = 2^(E − F) and the words of the shift
  // come from it by an add or a shift each (about 17 operations per row and instruction where the
  // float form took 27, a sixth of pass 2's).
  __m512i sum[R], e_words[R];
  __m512 unit[R];
  __mmask16 bad = 0;
  // Each dword's low byte (the field, below 256) copied to its upper word: E in both words.
  const __m512i both_words =
      _mm512_broadcast_i32x4(_mm_setr_epi8(0, -128, 0, -128, 4, -128, 4, -128, 8, -128, 8, -128, 12, -128, 12, -128));
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    // NOTE: byte maxima over each dword's four bytes, then against the accumulator's field (its
    // bits shifted down: the low byte) and kLeastField; only the low byte is kept.
    __m512i e4 = _mm512_max_epu8(e8[r], _mm512_srli_epi32(e8[r], 16));
    e4 = _mm512_max_epu8(e4, _mm512_srli_epi32(e4, 8));
    __m512i field_bytes = _mm512_max_epu8(e4, _mm512_set1_epi8(kLeastField));
    __m512 c = _mm512_setzero_ps();
    if constexpr (kAcc != Acc::kZero) {
      c = _mm512_loadu_ps(acc + r * ldacc);
      field_bytes = _mm512_max_epu8(field_bytes, _mm512_srli_epi32(_mm512_castps_si512(c), 23));
    }
    const __m512i field = _mm512_and_si512(field_bytes, _mm512_set1_epi32(0xFF));
    // NOTE: the lanes the float form sent to rule_block: an accumulator at or above 2^100 (or inf,
    // NaN), or a nonzero one below 2^−100 (subnormals too) where no product is nonzero. A chained
    // accumulator is neither (Acc::kChained), so only the caller's values are checked.
    if constexpr (kAcc == Acc::kLoaded) {
      const __m512i c_bits = _mm512_castps_si512(c);
      const __m512i c_field = _mm512_and_si512(_mm512_srli_epi32(c_bits, 23), _mm512_set1_epi32(0xFF));
      const __mmask16 some = _mm512_test_epi32_mask(e4, _mm512_set1_epi32(0xFF));
      const __mmask16 nonzero = _mm512_test_epi32_mask(c_bits, _mm512_set1_epi32(0x7FFFFFFF));
      const __mmask16 high = _mm512_cmpgt_epi32_mask(c_field, _mm512_set1_epi32(kExponentBias + 99));
      const __mmask16 low = _mm512_mask_cmplt_epi32_mask(static_cast<__mmask16>(~some), c_field,
                                                         _mm512_set1_epi32(kExponentBias - 100));
      bad |= nonzero & (high | low);
    }
    const __m512 inv = _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_sub_epi32(_mm512_set1_epi32(2 * kExponentBias + rule.align_bits), field), 23));
    unit[r] = tensor_core_avx512::unit_of(inv);
    sum[r] = kAcc == Acc::kZero ? _mm512_setzero_si512() : _mm512_cvttps_epi32(_mm512_mul_ps(c, inv));
    e_words[r] = _mm512_shuffle_epi8(field, both_words);
  }
  if (bad != 0) {
    if (panel == nullptr) return false;  // B as codes only (build_e4m3): the caller decodes the floats
    rule_block<R, kWidth, float>(a + k0, lda, panel, kWidth, 0, depth, acc, ldacc, false, rule);
    *scalar = true;
    return true;
  }
  // Pass 2: per pair of k, the cut products of 32 word lanes into the int32 sums.
  // NOTE: A's dwords read from one pointer at constant offsets (row stride kRowPairs).
  const int16_t* b_words = side.words + (p * (side.stride / 2) + k0 / 2) * 96;
  const uint32_t* a_m = rows.pairs + k0 / 2;
  for (int j = 0; j < (depth + 1) / 2; ++j, b_words += 96, ++a_m) {
    const __m512i mb = _mm512_load_si512(b_words), eb = _mm512_load_si512(b_words + 32);
    const __m512i sb = _mm512_load_si512(b_words + 64);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512i ma = _mm512_set1_epi32(static_cast<int32_t>(a_m[r * kRowPairs]));
      const __m512i ea = _mm512_set1_epi32(static_cast<int32_t>(a_m[(8 + r) * kRowPairs]));
      const __m512i d = _mm512_sub_epi16(e_words[r], _mm512_add_epi16(ea, eb));
      const __m512i t = _mm512_srlv_epi16(_mm512_mullo_epi16(ma, mb), d);
      const __m512i s =
          kNonNegativeA ? sb : _mm512_xor_si512(sb, _mm512_set1_epi32(static_cast<int32_t>(a_m[(16 + r) * kRowPairs])));
      sum[r] = dot_words<kVnni>(sum[r], t, s);
    }
  }
  const __m512i keep = _mm512_set1_epi32(static_cast<int32_t>(~((1u << (arch::kFp32MantissaBits - rule.result_bits)) - 1u)));
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const __m512 scaled = _mm512_mul_ps(_mm512_cvtepi32_ps(sum[r]), unit[r]);  // exact: |sum| < 2^24
    _mm512_storeu_ps(acc + r * ldacc, _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(scaled), keep)));
  }
  return true;
}

/// R rows of A against every panel, each panel's instructions in order (panel_gemm.hpp's
/// panel_rows for this form). Returns false, having written nothing, when A holds a value the form
/// does not take; with `panels` null (B prepared from codes), also false, having written part of
/// acc, when an instruction needs the scalar rule.
template <int R>
inline bool panel_rows(const float* a, int64_t lda, const float* panels, int64_t panel_stride, int panels_count,
                       float* acc, int64_t ldacc, int depth_total, int mma_k, bool overwrite, const arch::MmaRule& rule,
                       const Prepared& prepared) {
  static_assert(R <= 8, "the scratch holds 8 rows");
  const PanelSide& side = prepared.side;
  RowSide<R> rows{prepared.row_exp, prepared.pairs};
  if (side.special || !rows.build(a, lda, depth_total, rule.emin_a, rule.align_bits)) return false;
  // NOTE: an instruction whose accumulator is the previous one's pass-2 output skips the
  // accumulator's range checks (Acc::kChained); once any block took the scalar rule, every later
  // instruction checks its accumulator.
  bool scalar = false;
  auto each_block = [&](auto non_negative, auto vnni) {
    constexpr bool kNonNegative = decltype(non_negative)::value, kV = decltype(vnni)::value;
    for (int k0 = 0; k0 < depth_total; k0 += mma_k) {
      const int depth = k0 + mma_k <= depth_total ? mma_k : depth_total - k0;
      auto block = [&]<Acc kAcc>(int p) {
        const float* panel =
            panels == nullptr ? nullptr : panels + p * panel_stride + static_cast<int64_t>(k0) * kWidth;
        return panel_block<R, kNonNegative, kV, kAcc>(a, lda, rows, side, p, panel, k0, depth, acc + p * kWidth,
                                                       ldacc, rule, &scalar);
      };
      for (int p = 0; p < panels_count; ++p) {
        const bool ok = k0 == 0   ? (overwrite ? block.template operator()<Acc::kZero>(p)
                                               : block.template operator()<Acc::kLoaded>(p))
                        : scalar ? block.template operator()<Acc::kLoaded>(p)
                                 : block.template operator()<Acc::kChained>(p);
        if (!ok) return false;
      }
    }
    return true;
  };
  if (prepared.vnni)
    return rows.any_negative ? each_block(std::false_type{}, std::true_type{})
                             : each_block(std::true_type{}, std::true_type{});
  return rows.any_negative ? each_block(std::false_type{}, std::false_type{})
                           : each_block(std::true_type{}, std::false_type{});
}

}  // namespace fp8attn::engine::tensor_core_fp8_avx512

#pragma GCC diagnostic pop
