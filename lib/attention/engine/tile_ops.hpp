// Tile operations of the CPU engine, named for the math as in ThunderKittens: `mm_` overwrites,
// `mma_` accumulates. Each follows the emulated wgmma's documented order
// (kernels/arch/mma_order.hpp): per instruction of depth K a chunk sum from +0 with k
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

#include "kernels/arch/mma_order.hpp"

namespace fp8attn::engine {

// NOTE: the register block is chosen per ISA build (lib/attention/engine/isa): its R × C chunk
// sums must fit the vector registers with room for a row of b and a broadcast of a, or the
// compiler spills them and the products run at a third of their speed (issue 16: 4 × 64 on AVX2
// spilled, and the engine ran at 0.2 of sgemm). AVX-512 (32 registers of 16 floats): 4 × 64,
// 16 registers. AVX2 (16 registers of 8 floats): 4 × 16, 8 registers; measured faster than 4 × 24.
inline constexpr int kRowBlock = 4;
#if defined(__AVX512F__)
inline constexpr int kColBlock = 64;
#else
inline constexpr int kColBlock = 16;
#endif

/// For rows [r0, r0 + R) and columns [c0, c0 + C): acc[r][c] = mma_chunk_accumulate(acc[r][c],
/// Σ_{k<depth} a[r][k]·b[k][c]) where a(r, k) and b(k) give row pointers; with `overwrite`
/// (scale-d = 0) the accumulator's old value is not read and +0 stands in for it.
/// R, C are compile-time so the chunk sums stay in registers.
template <int R, int C>
inline void chunk_block(const float* const* a_rows, int a_k0, const float* const* b_rows, int c0, int depth,
                        float* const* acc_rows, bool overwrite, arch::MmaPrecisionModel model) {
  float chunk[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) chunk[r][c] = 0.0f;
  for (int k = 0; k < depth; ++k) {
    const float* b = b_rows[k] + c0;
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const float a = a_rows[r][a_k0 + k];
#pragma GCC ivdep
      for (int c = 0; c < C; ++c) chunk[r][c] = std::fma(a, b[c], chunk[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c)
      acc_rows[r][c0 + c] = arch::mma_chunk_accumulate(overwrite ? 0.0f : acc_rows[r][c0 + c], chunk[r][c], model);
}

/// The same for a runtime-sized remainder (rows < R or columns < C), same order.
inline void chunk_block_tail(const float* const* a_rows, int rows, int a_k0, const float* const* b_rows, int c0,
                             int cols, int depth, float* const* acc_rows, bool overwrite,
                             arch::MmaPrecisionModel model) {
  for (int r = 0; r < rows; ++r)
    for (int c = c0; c < c0 + cols; ++c) {
      float chunk = 0.0f;
      for (int k = 0; k < depth; ++k) chunk = std::fma(a_rows[r][a_k0 + k], b_rows[k][c], chunk);
      acc_rows[r][c] = arch::mma_chunk_accumulate(overwrite ? 0.0f : acc_rows[r][c], chunk, model);
    }
}

/// acc[r][c] ⊕= Σ_k a[r][k]·b[k][c] as instructions of depth `mma_k` over k ∈ [0, depth_total),
/// the first instruction overwriting (scale-d = 0) when `overwrite`.
/// a: rows × lda; b: depth_total × ldb; acc: rows × ldacc.
inline void gemm_in_mma_order(const float* a, int lda, const float* b, int ldb, float* acc, int ldacc, int rows,
                              int cols, int depth_total, int mma_k, bool overwrite, arch::MmaPrecisionModel model) {
  const float* b_rows[256];
  for (int k0 = 0; k0 < depth_total; k0 += mma_k) {
    const int depth = k0 + mma_k <= depth_total ? mma_k : depth_total - k0;
    const bool first = overwrite && k0 == 0;  // NOTE: no zero fill of acc: the first chunk stores 0 + chunk
    for (int k = 0; k < depth; ++k) b_rows[k] = b + static_cast<int64_t>(k0 + k) * ldb;
    for (int r0 = 0; r0 < rows; r0 += kRowBlock) {
      const int rr = rows - r0 < kRowBlock ? rows - r0 : kRowBlock;
      const float* a_rows[kRowBlock];
      float* acc_rows[kRowBlock];
      for (int r = 0; r < rr; ++r) {
        a_rows[r] = a + static_cast<int64_t>(r0 + r) * lda;
        acc_rows[r] = acc + static_cast<int64_t>(r0 + r) * ldacc;
      }
      int c0 = 0;
      if (rr == kRowBlock) {
        for (; c0 + kColBlock <= cols; c0 += kColBlock)
          chunk_block<kRowBlock, kColBlock>(a_rows, k0, b_rows, c0, depth, acc_rows, first, model);
        for (; c0 + 16 <= cols; c0 += 16) chunk_block<kRowBlock, 16>(a_rows, k0, b_rows, c0, depth, acc_rows, first, model);
        for (; c0 + 8 <= cols; c0 += 8) chunk_block<kRowBlock, 8>(a_rows, k0, b_rows, c0, depth, acc_rows, first, model);
      }
      if (c0 < cols) chunk_block_tail(a_rows, rr, k0, b_rows, c0, cols - c0, depth, acc_rows, first, model);
    }
  }
}

/// S = Q·Kᵀ: q [rows][head_dim], kt [head_dim][ld_kt] (K transposed), s [rows][ld_s].
inline void mm_qkt(const float* q, const float* kt, float* s, int rows, int cols, int head_dim, int ld_kt, int ld_s,
                   int mma_k, arch::MmaPrecisionModel model) {
  gemm_in_mma_order(q, head_dim, kt, ld_kt, s, ld_s, rows, cols, head_dim, mma_k, true, model);
}

/// O += P·V: p [rows][ld_p] over the block's `keys`, v [keys][head_dim_v], o [rows][head_dim_v].
inline void mma_pv(const float* p, const float* v, float* o, int rows, int keys, int head_dim_v, int ld_p, int mma_k,
                   arch::MmaPrecisionModel model) {
  gemm_in_mma_order(p, ld_p, v, head_dim_v, o, head_dim_v, rows, head_dim_v, keys, mma_k, false, model);
}

}  // namespace fp8attn::engine
