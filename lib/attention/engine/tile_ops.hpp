// The tile products of the CPU engine's backward (backward_tile.cpp), and the generic register
// block (chunk_block) under the forward's products over K and V packed in panels (panel_gemm.hpp)
// wherever those have no intrinsic block. They follow the emulated wgmma's documented order
// (kernels/ptx/mma_order.hpp): per instruction of depth K a chunk sum from +0 with k
// ascending, then one add into the accumulator.
//
// NOTE: the loops are register-blocked (kRowBlock rows × kColBlock columns of chunk sums held
// in registers while k runs) and vectorize over columns. std::fma is used because products of
// E4M3 or BF16 values are exact in FP32, so a fused multiply-add rounds exactly like the
// multiply-then-add of the documented order; a zero product adds an exact ±0 to a chunk that
// starts at +0 and so changes no bit, which lets padded rows and columns run unmasked.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/ptx/mma_order.hpp"

namespace fp8attn::engine {

// NOTE: the register block is chosen per ISA build (lib/attention/engine/isa): its R × C chunk
// sums must fit the vector registers with room for a row of b and a broadcast of a, or the
// compiler spills them and the products run at a third of their speed (4 × 64 on AVX2
// spilled, and the engine ran at 0.2 of sgemm). AVX-512 (32 registers of 16 floats): 4 × 64,
// 16 registers. AVX2 (16 registers of 8 floats): 4 × 16, 8 registers (6 × 16 would fit in
// principle, but GCC 12 then spills three of its twelve chunk registers in the k loop).
inline constexpr int kRowBlock = 4;
#if defined(__AVX512F__)
inline constexpr int kColBlock = 64;
#else
inline constexpr int kColBlock = 16;
#endif

/// For rows [0, R) and columns [c0, c0 + C) of one instruction of depth `depth`:
/// acc[r][c] = mma_chunk_accumulate(acc[r][c], Σ_{k<depth} a[r][k]·b[k][c]); with `overwrite`
/// (scale-d = 0) the accumulator's old value is not read and +0 stands in for it.
/// a: R rows of stride lda starting at the instruction's first k; b: depth rows of stride ldb.
/// R, C are compile-time so the chunk sums stay in registers.
template <int R, int C>
inline void chunk_block(const float* a, int64_t lda, const float* b, int64_t ldb, int c0, int depth, float* acc,
                        int64_t ldacc, bool overwrite, arch::MmaPrecisionModel model) {
  float chunk[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) chunk[r][c] = 0.0f;
  const float* b_row = b + c0;
  for (int k = 0; k < depth; ++k, b_row += ldb) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const float a_rk = a[r * lda + k];
#pragma GCC ivdep
      for (int c = 0; c < C; ++c) chunk[r][c] = std::fma(a_rk, b_row[c], chunk[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      float& out = acc[r * ldacc + c0 + c];
      out = arch::mma_chunk_accumulate(overwrite ? 0.0f : out, chunk[r][c], model);
    }
}

/// The same for the columns [c0, c0 + cols) left over by the vector blocks, same order.
template <int R>
inline void chunk_block_tail(const float* a, int64_t lda, const float* b, int64_t ldb, int c0, int cols, int depth,
                             float* acc, int64_t ldacc, bool overwrite, arch::MmaPrecisionModel model) {
  for (int r = 0; r < R; ++r)
    for (int c = c0; c < c0 + cols; ++c) {
      float chunk = 0.0f;
      for (int k = 0; k < depth; ++k) chunk = std::fma(a[r * lda + k], b[k * ldb + c], chunk);
      float& out = acc[r * ldacc + c];
      out = arch::mma_chunk_accumulate(overwrite ? 0.0f : out, chunk, model);
    }
}

/// One instruction's chunk for R rows and every column: C-wide blocks, then 16, 8, then scalar.
template <int R>
inline void chunk_rows(const float* a, int64_t lda, const float* b, int64_t ldb, int cols, int depth, float* acc,
                       int64_t ldacc, bool overwrite, arch::MmaPrecisionModel model) {
  int c0 = 0;
  for (; c0 + kColBlock <= cols; c0 += kColBlock)
    chunk_block<R, kColBlock>(a, lda, b, ldb, c0, depth, acc, ldacc, overwrite, model);
  for (; c0 + 16 <= cols; c0 += 16) chunk_block<R, 16>(a, lda, b, ldb, c0, depth, acc, ldacc, overwrite, model);
  for (; c0 + 8 <= cols; c0 += 8) chunk_block<R, 8>(a, lda, b, ldb, c0, depth, acc, ldacc, overwrite, model);
  if (c0 < cols) chunk_block_tail<R>(a, lda, b, ldb, c0, cols - c0, depth, acc, ldacc, overwrite, model);
}

/// acc[r][c] ⊕= Σ_k a[r][k]·b[k][c] as instructions of depth `mma_k` over k ∈ [0, depth_total),
/// the first instruction overwriting (scale-d = 0) when `overwrite`.
/// a: rows × lda; b: depth_total × ldb; acc: rows × ldacc.
inline void gemm_in_mma_order(const float* a, int lda, const float* b, int ldb, float* acc, int ldacc, int rows,
                              int cols, int depth_total, int mma_k, bool overwrite, arch::MmaPrecisionModel model) {
  for (int k0 = 0; k0 < depth_total; k0 += mma_k) {
    const int depth = k0 + mma_k <= depth_total ? mma_k : depth_total - k0;
    const bool first = overwrite && k0 == 0;  // NOTE: no zero fill of acc: the first chunk stores 0 + chunk
    const float* b_k0 = b + static_cast<int64_t>(k0) * ldb;
    int r0 = 0;
    // Rows in register blocks of kRowBlock, the remainder in pairs, then one.
    for (; r0 + kRowBlock <= rows; r0 += kRowBlock)
      chunk_rows<kRowBlock>(a + static_cast<int64_t>(r0) * lda + k0, lda, b_k0, ldb, cols, depth,
                            acc + static_cast<int64_t>(r0) * ldacc, ldacc, first, model);
    for (; r0 + 2 <= rows; r0 += 2)
      chunk_rows<2>(a + static_cast<int64_t>(r0) * lda + k0, lda, b_k0, ldb, cols, depth,
                    acc + static_cast<int64_t>(r0) * ldacc, ldacc, first, model);
    if (r0 < rows)
      chunk_rows<1>(a + static_cast<int64_t>(r0) * lda + k0, lda, b_k0, ldb, cols, depth,
                    acc + static_cast<int64_t>(r0) * ldacc, ldacc, first, model);
  }
}

}  // namespace fp8attn::engine
