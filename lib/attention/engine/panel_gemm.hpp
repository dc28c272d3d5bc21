// The forward engine's two tile products over B operands packed in column panels: the K and V
// blocks of the worker's KvBlockCache are stored as panels of kPanelWidth columns, each panel
// [depth][kPanelWidth] contiguous, so the product streams B from memory in order and keeps one row
// block of A in L1 while it walks the panels (the packing of GotoBLAS-style GEMMs).
//
// Same arithmetic as tile_ops.hpp's gemm_in_mma_order, bit for bit: per output element and per
// instruction of depth mma_k, arch::mma_instruction (kernels/ptx/mma_order.hpp): the tensor
// core's rule through tile_ops.hpp's rule_block, or the Fp32 chunk sum from +0 with k ascending
// (std::fma, exact products) then one FP32 add. Only the loop nest and B's layout differ, and
// neither changes any element's result.
//
// NOTE: why a layout of its own: with K transposed as [head_dim][block_n], the products
// kept each chunk's 32 rows of B in L1 across row blocks but re-read and re-wrote the whole
// accumulator tile (S or O, beyond L1) once per instruction; the panel order touches each
// accumulator block only while it is in L1. Measured alone on the project's AVX2 machine, the two
// products of a head_dim-128 E4M3 tile ran about 25 % faster (min of repetitions).
//
// Included by query_tile.cpp inside its per-ISA namespace (isa/query_tile_in_isa.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/ptx/mma_order.hpp"
#include "lib/attention/engine/panel_gemm_scratch.hpp"
#include "lib/attention/engine/tile_ops.hpp"

#if defined(__AVX2__) && defined(__FMA__) && !defined(__AVX512F__)
#include <immintrin.h>
#define FP8ATTN_PANEL_GEMM_AVX2 1
#else
#define FP8ATTN_PANEL_GEMM_AVX2 0
#endif
// NOTE: the tensor core's addition runs panel_gemm_tensor_core.hpp's AVX2 block on AVX2 and its
// AVX-512 form (panel_gemm_tensor_core_avx512.hpp, 16 lanes) in the AVX-512 build: the generic
// rule_block ran the E4M3 forward at under 0.1 of sgemm there. Both share A's exponents
// (exponents_of_rows) and the AVX2 file's scalar helpers. FP8 inputs in the AVX-512 build take
// panel_gemm_tensor_core_fp8_avx512.hpp first when panel_gemm is given scratch (E on bytes, the
// cut products and their sums in 16-bit and 32-bit integers); it hands back to the 16-lane form
// for operands it does not take (NaN, ±inf).
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define FP8ATTN_PANEL_GEMM_TC_AVX2 1
#include "lib/attention/engine/panel_gemm_tensor_core.hpp"  // IWYU pragma: export
#else
#define FP8ATTN_PANEL_GEMM_TC_AVX2 0
#endif
#if defined(__AVX512F__)
#include "lib/attention/engine/panel_gemm_tensor_core_avx512.hpp"  // IWYU pragma: export
#include "lib/attention/engine/panel_gemm_tensor_core_fp8_avx512.hpp"  // IWYU pragma: export
// NOTE: the FP32 accumulation of the AVX-512 build runs on vdpbf16ps when the caller says the CPU
// has AVX512-BF16 (panel_gemm's avx512_bf16): same bits, twice the products per cycle.
#include "lib/attention/engine/panel_gemm_fp32_bf16_avx512.hpp"  // IWYU pragma: export
#endif

namespace fp8attn::engine {

/// Columns per panel; every block_n and head_dim of kernels/sm90/tile_config.hpp is a multiple.
inline constexpr int kPanelWidth = 16;

/// What panel_gemm prepares once from B for all its row blocks, in the caller's scratch: B's
/// exponent bytes and sign words for the AVX-512 form of the tensor core's FP8 addition (panel_gemm_tensor_core_fp8_avx512.hpp).
#if defined(__AVX512F__)
using PreparedPanels = tensor_core_fp8_avx512::Prepared;
#else
struct PreparedPanels {};
#endif

/// Rows of A per register block. AVX2 (16 registers of 8 floats): 6 rows × 2 registers = 12
/// chunk sums, one row of the panel (2) and a broadcast (1). AVX-512 (32 registers of 16
/// floats): 8 rows × 1 register, so 8 independent FMA chains cover the FMA latency. The
/// baseline (SSE2, 4 floats): 4 rows × 4 registers.
#if FP8ATTN_PANEL_GEMM_AVX2
inline constexpr int kPanelRows = 6;
#elif defined(__AVX512F__)
inline constexpr int kPanelRows = 8;
#else
inline constexpr int kPanelRows = 4;
#endif

#if FP8ATTN_PANEL_GEMM_AVX2
/// panel_block's Fp32 accumulation for AVX2 with intrinsics: GCC 12 spills a 6 × 16 block of the generic code
/// (tile_ops.hpp's chunk_block), and 4 × 16 leaves the FMA units waiting on latency.
/// NOTE: always_inline and fully unrolled row loops: otherwise GCC 12 keeps lo and hi as arrays on
/// the stack and stores every chunk sum after each FMA (measured: 0.3 of sgemm instead of 0.7).
template <int R>
__attribute__((always_inline)) inline void panel_block_avx2(const float* a, int64_t lda, const float* panel, int depth,
                                                            float* acc, int64_t ldacc, bool overwrite) {
  __m256 lo[R], hi[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    lo[r] = _mm256_setzero_ps();
    hi[r] = _mm256_setzero_ps();
  }
  for (int k = 0; k < depth; ++k, panel += kPanelWidth) {
    const __m256 b_lo = _mm256_loadu_ps(panel), b_hi = _mm256_loadu_ps(panel + 8);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 a_rk = _mm256_broadcast_ss(a + r * lda + k);
      lo[r] = _mm256_fmadd_ps(a_rk, b_lo, lo[r]);
      hi[r] = _mm256_fmadd_ps(a_rk, b_hi, hi[r]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    float* out = acc + r * ldacc;
    // NOTE: the chunk alone for 0 + chunk: a chunk summed from +0 is never −0, so no bit differs.
    const __m256 o_lo = overwrite ? lo[r] : _mm256_add_ps(_mm256_loadu_ps(out), lo[r]);
    const __m256 o_hi = overwrite ? hi[r] : _mm256_add_ps(_mm256_loadu_ps(out + 8), hi[r]);
    _mm256_storeu_ps(out, o_lo);
    _mm256_storeu_ps(out + 8, o_hi);
  }
}
#endif

#if defined(__AVX512F__)
/// panel_block's Fp32 accumulation for AVX-512 over P ≤ 2 adjacent panels (the second at
/// panel + panel_stride, its columns at acc + kPanelWidth): one zmm of chunk sums per row and
/// panel, the panels' rows loaded once per k and each a[r][k] broadcast once for all of them.
/// NOTE: the generic chunk_block<8, 16> kept its chunk sums in memory under GCC 12, re-loading and
/// re-storing them around each FMA. With one panel the 8 FMA chains of R = 8 only just cover the
/// FMA latency (4 cycles on two ports) and every FMA brings its own broadcast; two panels make 16
/// chains and a broadcast feeds two FMAs. Each column's chunk is summed in the same order either
/// way, so the bits are the same.
template <int R, int P>
__attribute__((always_inline)) inline void panel_block_avx512(const float* a, int64_t lda, const float* panel,
                                                              int64_t panel_stride, int depth, float* acc,
                                                              int64_t ldacc, bool overwrite) {
  static_assert(P >= 1 && P <= 3, "one to three panels");
  __m512 c[P][R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < P; ++q) c[q][r] = _mm512_setzero_ps();
  for (int k = 0; k < depth; ++k, panel += kPanelWidth) {
    __m512 b[P];
    for (int q = 0; q < P; ++q) b[q] = _mm512_loadu_ps(panel + q * panel_stride);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 a_rk = _mm512_set1_ps(a[r * lda + k]);
      for (int q = 0; q < P; ++q) c[q][r] = _mm512_fmadd_ps(a_rk, b[q], c[q][r]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < P; ++q) {
      float* out = acc + r * ldacc + q * kPanelWidth;
      // NOTE: the chunk alone for 0 + chunk, as in panel_block_avx2: a chunk from +0 is never −0.
      _mm512_storeu_ps(out, overwrite ? c[q][r] : _mm512_add_ps(_mm512_loadu_ps(out), c[q][r]));
    }
}
#endif

/// Calls block(k0, depth) for each instruction of a depth_total-deep product, k0 = 0, mma_k, ...
template <class Block>
__attribute__((always_inline)) inline void for_each_instruction(int depth_total, int mma_k, Block&& block) {
  for (int k0 = 0; k0 < depth_total; k0 += mma_k) block(k0, k0 + mma_k <= depth_total ? mma_k : depth_total - k0);
}

/// acc[r][c] for R rows of A and the kPanelWidth columns of one panel, over one instruction of
/// depth `depth`: acc = mma_instruction(overwrite ? +0 : acc, a[r][·], panel[·][c]).
template <int R>
inline void panel_block(const float* a, int64_t lda, const float* panel, int depth, float* acc, int64_t ldacc,
                        bool overwrite, const arch::MmaRule& rule) {
#if FP8ATTN_PANEL_GEMM_AVX2
  if (!rule.tensor_core) return panel_block_avx2<R>(a, lda, panel, depth, acc, ldacc, overwrite);
#endif
#if defined(__AVX512F__)
  if (!rule.tensor_core) return panel_block_avx512<R, 1>(a, lda, panel, 0, depth, acc, ldacc, overwrite);
#endif
  // A panel is a B operand of row stride kPanelWidth: the backward's generic register block.
  chunk_block<R, kPanelWidth>(a, lda, panel, kPanelWidth, 0, depth, acc, ldacc, overwrite, rule);
}

/// R rows of A against every panel: for each panel, its instructions k0 = 0, mma_k, ... in order.
/// `prepared`: what panel_gemm prepared in its scratch (null: the forms that need none).
template <int R>
inline void panel_rows(const float* a, int64_t lda, const float* panels, int64_t panel_stride, int panels_count,
                       float* acc, int64_t ldacc, int depth_total, int mma_k, bool overwrite,
                       const arch::MmaRule& rule, const PreparedPanels* prepared = nullptr) {
#if defined(__AVX512F__)
  if (prepared != nullptr && tensor_core_fp8_avx512::applies(rule, mma_k, depth_total) &&
      tensor_core_fp8_avx512::panel_rows<R>(a, lda, panels, panel_stride, panels_count, acc, ldacc, depth_total, mma_k,
                                            overwrite, rule, *prepared))
    return;
#else
  (void)prepared;
#endif
#if FP8ATTN_PANEL_GEMM_TC_AVX2
  // The tensor core's addition (panel_gemm_tensor_core.hpp): A's exponents once for all panels.
  // A NaN or ±inf in A of BF16 products takes the generic block below.
  alignas(32) float a_exp[R * tensor_core_avx2::kMaxDepth];
  if (rule.tensor_core && depth_total <= tensor_core_avx2::kMaxDepth &&
      !(tensor_core_avx2::exponents_of_rows<R>(a, lda, depth_total, rule.emin_a, a_exp) && rule.wide_sum)) {
    for (int p = 0; p < panels_count; ++p) {
      const float* panel = panels + p * panel_stride;
      float* acc_p = acc + p * kPanelWidth;
      for_each_instruction(depth_total, mma_k, [&](int k0, int depth) {
#if defined(__AVX512F__)
        tensor_core_avx512::panel_block<R>(a + k0, lda, a_exp + k0, depth_total,
                                           panel + static_cast<int64_t>(k0) * kPanelWidth, depth, acc_p, ldacc,
                                           overwrite && k0 == 0, rule);
#else
        tensor_core_avx2::panel_block<R>(a + k0, lda, a_exp + k0, depth_total,
                                         panel + static_cast<int64_t>(k0) * kPanelWidth, depth, acc_p, ldacc,
                                         overwrite && k0 == 0, rule);
#endif
      });
    }
    return;
  }
#endif
  int p0 = 0;
#if defined(__AVX512F__)
  // The Fp32 accumulation two panels at a time (panel_block_avx512); an odd last one below.
  if (!rule.tensor_core) {
    auto panels_at_once = [&](auto count) {
      constexpr int P = decltype(count)::value;
      for (; p0 + P <= panels_count; p0 += P) {
        const float* panel = panels + p0 * panel_stride;
        float* acc_p = acc + p0 * kPanelWidth;
        for_each_instruction(depth_total, mma_k, [&](int k0, int depth) {
          panel_block_avx512<R, P>(a + k0, lda, panel + static_cast<int64_t>(k0) * kPanelWidth, panel_stride, depth,
                                   acc_p, ldacc, overwrite && k0 == 0);
        });
      }
    };
    if constexpr (R <= 8) panels_at_once(std::integral_constant<int, 3>{});
    panels_at_once(std::integral_constant<int, 2>{});
  }
#endif
  for (int p = p0; p < panels_count; ++p) {
    const float* panel = panels + p * panel_stride;
    float* acc_p = acc + p * kPanelWidth;
    for_each_instruction(depth_total, mma_k, [&](int k0, int depth) {
      panel_block<R>(a + k0, lda, panel + static_cast<int64_t>(k0) * kPanelWidth, depth, acc_p, ldacc,
                     overwrite && k0 == 0, rule);
    });
  }
}

/// panel_gemm's preparation of B in `scratch`, for a caller that drives panel_rows itself:
/// returns `out`, or null when no form of this build needs it or the scratch is too small.
/// `avx512_bf16`: as panel_gemm's.
inline const PreparedPanels* prepare_panels(PreparedPanels& out, const float* panels, int64_t panel_stride,
                                            int panels_count, int depth_total, int mma_k, const arch::MmaRule& rule,
                                            void* scratch, size_t scratch_bytes, bool avx512_bf16 = false) {
#if defined(__AVX512F__)
  if (tensor_core_fp8_avx512::applies(rule, mma_k, depth_total) &&
      out.carve(scratch, scratch_bytes, panels, panel_stride, panels_count, depth_total, rule.emin_b, avx512_bf16))
    return &out;
#else
  (void)out, (void)panels, (void)panel_stride, (void)panels_count, (void)depth_total, (void)mma_k, (void)rule;
  (void)scratch, (void)scratch_bytes, (void)avx512_bf16;
#endif
  return nullptr;
}

#if defined(__AVX512F__)
/// The fewest rows panel_gemm_bf16_dot takes (four 8-row blocks).
inline constexpr int kBf16DotMinRows = 32;

/// panel_gemm's Fp32 accumulation on vdpbf16ps (panel_gemm_fp32_bf16_avx512.hpp) for every row
/// block whose A it takes, panel_rows' FMAs for the others. Returns the rows whose products ran
/// on vdpbf16ps, or −1, having written nothing, when the form does not apply to the call (the
/// rule, the depth, too little scratch, or a B value: a NaN, ±inf, a value BF16 does not hold).
inline int panel_gemm_bf16_dot(const float* a, int64_t lda, const float* panels, int64_t panel_stride,
                                int panels_count, float* acc, int64_t ldacc, int rows, int depth_total, int mma_k,
                                bool overwrite, const arch::MmaRule& rule, void* scratch, size_t scratch_bytes) {
  namespace bf = fp32_bf16_avx512;
  // NOTE: an even mma_k keeps every pair inside one instruction (a pair is one vdpbf16ps lane).
  // Below kBf16DotMinRows rows the FMAs stay: B's conversion to pairs (about 14 operations per
  // pair and panel) is made once per call and pays for itself only over several row blocks (a
  // row block saves 8 of its 16 multiply-add instructions per pair and panel).
  if (rule.tensor_core || rows < kBf16DotMinRows || depth_total > bf::kMaxDepth || mma_k % 2 != 0) return -1;
  void* regions = panel_scratch_regions(scratch, scratch_bytes, panels_count, depth_total);
  if (regions == nullptr) return -1;
  bf::PairPanels b;
  b.pairs = static_cast<uint32_t*>(regions);
  uint32_t* a_pairs = b.pairs + round_up_64(static_cast<size_t>(panels_count) * ((depth_total + 1) / 2) * 64) / 4;
  if (panels_count <= 0 || !b.build(panels, panel_stride, panels_count, depth_total)) return -1;
  int on_dot = 0;
  auto row_block = [&](auto rows_in_block, int r0) {
    constexpr int R = decltype(rows_in_block)::value;
    int least = 0, most = 0;
    if (bf::build_rows<R>(a + r0 * lda, lda, depth_total, a_pairs, &least, &most) &&
        bf::ranges_fit(least, most, b.least, b.most)) {
      bf::rows_against_panels<R>(a_pairs, b, panels_count, acc + r0 * ldacc, ldacc, depth_total, mma_k, overwrite);
      on_dot += R;
    } else {
      panel_rows<R>(a + r0 * lda, lda, panels, panel_stride, panels_count, acc + r0 * ldacc, ldacc, depth_total, mma_k,
                    overwrite, rule);
    }
  };
  int r0 = 0;
  for (; r0 + kPanelRows <= rows; r0 += kPanelRows) row_block(std::integral_constant<int, kPanelRows>{}, r0);
  for (; r0 + 2 <= rows; r0 += 2) row_block(std::integral_constant<int, 2>{}, r0);
  if (r0 < rows) row_block(std::integral_constant<int, 1>{}, r0);
  return on_dot;
}
#endif

#if defined(__AVX512F__)
/// panel_gemm for B given as E4M3 codes in panels, codes[(p · depth_total + k) · 16 + c] (no NaN
/// code), on the integer form of the tensor core's FP8 addition alone, its B prepared from the
/// codes (PanelSide::build_e4m3) with no float panels. Returns false when the form does not apply
/// or an instruction needs the scalar rule (an A value the form does not take, or without
/// overwrite an accumulator out of the form's range; acc may then be partly written): the caller
/// restores acc if it read it, decodes the floats and calls panel_gemm.
/// NOTE: with overwrite and FP8 operands every instruction's E lies in [2^-12, 2^16] or is 0, so
/// only A can send it to the scalar rule.
inline bool panel_gemm_e4m3_codes(const float* a, int64_t lda, const uint8_t* codes, int panels_count, float* acc,
                                  int64_t ldacc, int rows, int depth_total, int mma_k, bool overwrite,
                                  const arch::MmaRule& rule, void* scratch, size_t scratch_bytes, bool vnni) {
  namespace tc = tensor_core_fp8_avx512;
  PreparedPanels prepared;
  if (!tc::applies(rule, mma_k, depth_total) || rule.emin_b != -6 ||
      !prepared.carve_regions(scratch, scratch_bytes, panels_count, depth_total, vnni))
    return false;
  prepared.side.build_e4m3(codes, panels_count, depth_total);
  int r0 = 0;
  for (; r0 + kPanelRows <= rows; r0 += kPanelRows)
    if (!tc::panel_rows<kPanelRows>(a + r0 * lda, lda, nullptr, 0, panels_count, acc + r0 * ldacc, ldacc, depth_total,
                                    mma_k, overwrite, rule, prepared))
      return false;
  for (; r0 + 2 <= rows; r0 += 2)
    if (!tc::panel_rows<2>(a + r0 * lda, lda, nullptr, 0, panels_count, acc + r0 * ldacc, ldacc, depth_total, mma_k,
                           overwrite, rule, prepared))
      return false;
  return r0 == rows || tc::panel_rows<1>(a + r0 * lda, lda, nullptr, 0, panels_count, acc + r0 * ldacc, ldacc,
                                         depth_total, mma_k, overwrite, rule, prepared);
}
#endif

/// acc[r][c] ⊕= Σ_k a[r][k]·B[k][c] in the mma order, for r < rows and c < panels_count·kPanelWidth,
/// k < depth_total; B's panel p is panels[p·panel_stride + k·kPanelWidth + c − p·kPanelWidth].
/// With `overwrite` the first instruction does not read acc (scale-d = 0). `scratch`: at least
/// panel_gemm_scratch_bytes(panels_count, depth_total) bytes the call may overwrite, for the
/// AVX-512 form of the tensor core's FP8 addition and the FP32 accumulation on vdpbf16ps; with
/// less (or null) the call takes the other forms, same bits, no allocation either way.
/// `avx512_bf16`: the CPU has AVX512-BF16 and AVX512-VNNI (the caller checks: lib/cpu_isa's
/// avx512bf16 level, which needs both), and the AVX-512 build may use them: the FP32
/// accumulation's products on vdpbf16ps, the tensor core's FP8 sums on vpdpwssd. Ignored by the
/// other builds.
inline void panel_gemm(const float* a, int64_t lda, const float* panels, int64_t panel_stride, int panels_count,
                       float* acc, int64_t ldacc, int rows, int depth_total, int mma_k, bool overwrite,
                       const arch::MmaRule& rule, void* scratch = nullptr, size_t scratch_bytes = 0,
                       bool avx512_bf16 = false) {
#if defined(__AVX512F__)
  if (avx512_bf16 && panel_gemm_bf16_dot(a, lda, panels, panel_stride, panels_count, acc, ldacc, rows, depth_total,
                                         mma_k, overwrite, rule, scratch, scratch_bytes) >= 0)
    return;
#endif
  PreparedPanels here;
  const PreparedPanels* prepared = prepare_panels(here, panels, panel_stride, panels_count, depth_total, mma_k, rule,
                                                  scratch, scratch_bytes, avx512_bf16);
  int r0 = 0;
  for (; r0 + kPanelRows <= rows; r0 += kPanelRows)
    panel_rows<kPanelRows>(a + r0 * lda, lda, panels, panel_stride, panels_count, acc + r0 * ldacc, ldacc,
                           depth_total, mma_k, overwrite, rule, prepared);
  for (; r0 + 2 <= rows; r0 += 2)
    panel_rows<2>(a + r0 * lda, lda, panels, panel_stride, panels_count, acc + r0 * ldacc, ldacc, depth_total, mma_k,
                  overwrite, rule, prepared);
  if (r0 < rows)
    panel_rows<1>(a + r0 * lda, lda, panels, panel_stride, panels_count, acc + r0 * ldacc, ldacc, depth_total, mma_k,
                  overwrite, rule, prepared);
}

}  // namespace fp8attn::engine
