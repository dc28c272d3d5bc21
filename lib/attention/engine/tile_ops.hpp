// Tile operations of the CPU engine, named for the math as in ThunderKittens: `mm_` overwrites,
// `mma_` accumulates. Each follows the emulated wgmma's documented order
// (kernels/arch/mma_order.hpp): per instruction of depth K a chunk sum from +0 with k
// ascending, then one add into the accumulator.
//
// NOTE: loops run over output columns innermost so they vectorize; std::fma is used because the
// products of E4M3 or BF16 values are exact in FP32, so a fused multiply-add rounds exactly like
// the multiply-then-add of the documented order.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/arch/mma_order.hpp"

namespace fp8attn::engine {

/// Upper bounds of the tiles, for stack buffers.
inline constexpr int kMaxBlockN = 256;
inline constexpr int kMaxHeadDim = 256;

/// S[r][j] = Σ_k q[r][k]·kt[k][j] for j < cols, as wgmma m64nNk(mma_k) instructions over k.
/// q: [rows][head_dim] (stride head_dim); kt: [head_dim][ld_kt]; s: [rows][ld_s].
inline void mm_qkt(const float* q, const float* kt, float* s, int rows, int cols, int head_dim, int ld_kt, int ld_s,
                   int mma_k, arch::MmaPrecisionModel model) {
  alignas(64) float chunk[kMaxBlockN];
  for (int r = 0; r < rows; ++r) {
    const float* qr = q + static_cast<int64_t>(r) * head_dim;
    float* sr = s + static_cast<int64_t>(r) * ld_s;
    for (int j = 0; j < cols; ++j) sr[j] = 0.0f;  // scale-d = 0 on the first instruction: 0 + chunk
    for (int k0 = 0; k0 < head_dim; k0 += mma_k) {
      for (int j = 0; j < cols; ++j) chunk[j] = 0.0f;
      for (int k = k0; k < k0 + mma_k; ++k) {
        const float a = qr[k];
        const float* b = kt + static_cast<int64_t>(k) * ld_kt;
        for (int j = 0; j < cols; ++j) chunk[j] = std::fma(a, b[j], chunk[j]);
      }
      for (int j = 0; j < cols; ++j) sr[j] = arch::mma_chunk_accumulate(sr[j], chunk[j], model);
    }
  }
}

/// o[r][e] += Σ_j p[r][j]·v[j][e], as wgmma instructions of depth mma_k over the block's keys
/// j < keys. A zero p contributes an exact ±0 to a chunk that starts at +0, so it is skipped.
/// p: [rows][ld_p]; v: [keys][head_dim_v]; o: [rows][head_dim_v].
inline void mma_pv(const float* p, const float* v, float* o, int rows, int keys, int head_dim_v, int ld_p, int mma_k,
                   arch::MmaPrecisionModel model) {
  alignas(64) float chunk[kMaxHeadDim];
  for (int r = 0; r < rows; ++r) {
    const float* pr = p + static_cast<int64_t>(r) * ld_p;
    float* orow = o + static_cast<int64_t>(r) * head_dim_v;
    for (int j0 = 0; j0 < keys; j0 += mma_k) {
      for (int e = 0; e < head_dim_v; ++e) chunk[e] = 0.0f;
      const int j1 = j0 + mma_k < keys ? j0 + mma_k : keys;
      for (int j = j0; j < j1; ++j) {
        const float a = pr[j];
        if (a == 0.0f) continue;
        const float* vj = v + static_cast<int64_t>(j) * head_dim_v;
        for (int e = 0; e < head_dim_v; ++e) chunk[e] = std::fma(a, vj[e], chunk[e]);
      }
      for (int e = 0; e < head_dim_v; ++e) orow[e] = arch::mma_chunk_accumulate(orow[e], chunk[e], model);
    }
  }
}

}  // namespace fp8attn::engine
