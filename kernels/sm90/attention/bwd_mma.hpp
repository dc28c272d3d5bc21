// The tile GEMMs of a consumer warpgroup of the attention backward, all HGMMA (m64nNk16, BF16 in,
// F32 accumulate), for 64 keys of the block (the warpgroup's own, or all of a shared block):
//   Sᵀ  = K·Qᵀ     SS: K rows K-major, Q K-major          (N = kQueryCols)
//   dPᵀ = V·dOᵀ    SS: V rows K-major, dO K-major         (N = kQueryCols)
//   dV += Pᵀ·dO    RS: Pᵀ from registers, dO N-major      (N = head_dim; key halves)
//                  SS: Pᵀ (no swizzle) K-major, dO N-major (N = head_dim / 2; shared keys)
//   dK += dSᵀ·Q    as dV, with dSᵀ and Q
//   dQ  = dS·K     SS: dS (no swizzle) K-major, K N-major (N = 64, one part of head_dim)
// Computing Sᵀ and dPᵀ rather than S and dP leaves Pᵀ and dSᵀ in the accumulator layout whose
// 16-column slices are the A fragments of dV and dK (FlashAttention-3's SdP_swapAB).
#pragma once

#include <cstdint>

#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/wgmma.hpp"
#include "kernels/sm90/attention/bwd_config.hpp"

namespace fp8attn::sm90 {

/// acc = A·Bᵀ over head_dim for A = 64 rows of a [rows][head_dim] tile starting at row `a_row0`
/// and B = N rows of a [BlockM][head_dim] tile starting at row `b_row0`, both as TMA loads them
/// (128 B chunks, 128B swizzle): head_dim/16 wgmmas stepping K by 32 bytes, to the next chunk
/// every four (PTX_FACTS.md §3b). Row offsets are multiples of 8, whole swizzle atoms.
template <class Cfg, int N>
FP8ATTN_ARCH_FN void mm_rows_by_rows(arch::WgmmaAccF32<N>& acc, const uint8_t (&a)[Cfg::kChunks][Cfg::kKChunkBytes],
                                     int a_row0, const uint8_t (&b)[Cfg::kChunks][Cfg::kQChunkBytes], int b_row0 = 0) {
  FP8ATTN_UNROLL
  for (int kb = 0; kb < Cfg::kHdSteps; ++kb) {
    const int chunk = kb * 32 / static_cast<int>(Cfg::kChunkBytes);
    const uint32_t offset = (kb * 32) % Cfg::kChunkBytes;
    const uint64_t da = arch::make_wgmma_descriptor(arch::smem_address(a[chunk] + a_row0 * Cfg::kChunkBytes), 0,
                                                    Cfg::kAtomBytes, arch::Swizzle::B128);
    const uint64_t db = arch::make_wgmma_descriptor(arch::smem_address(b[chunk] + b_row0 * Cfg::kChunkBytes), 0,
                                                    Cfg::kAtomBytes, arch::Swizzle::B128);
    arch::wgmma_bf16<N>(acc, arch::wgmma_descriptor_advance(da, offset), arch::wgmma_descriptor_advance(db, offset),
                        kb > 0);
  }
}

/// The descriptor of a TMA-loaded tile ([chunk][row][64 dims], 128B swizzle, `chunk_bytes` per
/// chunk) read N-major as a B operand: dims [n0, ..) (n0 a multiple of 64) and rows [16·kb, 16·kb
/// + 16) as K (PTX_FACTS.md §3b, MN-major 128B: 64 dims per swizzle row, the next 64 one chunk
/// further (LBO), the next 8 rows 8 rows further (SBO)); the forward's v_descriptor_bf16.
template <class Cfg>
FP8ATTN_ARCH_FN uint64_t n_major_descriptor(const uint8_t* tile, uint32_t chunk_bytes, int n0, int kb) {
  const uint8_t* start = tile + (n0 / Cfg::kChunkElements) * chunk_bytes + kb * Cfg::kMmaK * Cfg::kChunkBytes;
  return arch::make_wgmma_descriptor(arch::smem_address(start), chunk_bytes, Cfg::kAtomBytes, arch::Swizzle::B128);
}

/// acc += Aᵀ·B over the step's BlockM query rows: A from registers (Pᵀ or dSᵀ, BlockM/16
/// fragments), B = dO or Q of the stage read N-major, N = head_dim.
template <class Cfg>
FP8ATTN_ARCH_FN void mma_over_rows(arch::WgmmaAccF32<Cfg::kHeadDim>& acc,
                                   const arch::WgmmaAFragment (&a)[Cfg::kBlockM / 16],
                                   const uint8_t (&b)[Cfg::kChunks][Cfg::kQChunkBytes]) {
  FP8ATTN_UNROLL
  for (int kb = 0; kb < Cfg::kBlockM / 16; ++kb)
    arch::wgmma_bf16<Cfg::kHeadDim, arch::WgmmaMajor::MN>(acc, a[kb], n_major_descriptor<Cfg>(b[0], Cfg::kQChunkBytes, 0, kb),
                                                          true);
}

/// acc += Aᵀ·B[:, n0 : n0 + kDkvCols] over the step's BlockM query rows, A from shared memory:
/// Pᵀ or dSᵀ [BlockN keys][BlockM rows] (no swizzle, K-major, bwd_exchange.hpp), B = dO or Q of the
/// stage read N-major. The shared-keys split's dV and dK: the same products, in the same order
/// over 16-row chunks, as mma_over_rows.
template <class Cfg>
FP8ATTN_ARCH_FN void mma_over_rows_smem(arch::WgmmaAccF32<Cfg::kDkvCols>& acc, const uint8_t* a,
                                        const uint8_t (&b)[Cfg::kChunks][Cfg::kQChunkBytes], int n0) {
  FP8ATTN_UNROLL
  for (int kb = 0; kb < Cfg::kBlockM / 16; ++kb) {
    const uint64_t da = arch::make_wgmma_descriptor(arch::smem_address(a + kb * 2 * Cfg::kDsLeadingBytes),
                                                    Cfg::kDsLeadingBytes, Cfg::kPtStrideBytes, arch::Swizzle::None);
    arch::wgmma_bf16<Cfg::kDkvCols, arch::WgmmaMajor::K, arch::WgmmaMajor::MN>(
        acc, da, n_major_descriptor<Cfg>(b[0], Cfg::kQChunkBytes, n0, kb), true);
  }
}

/// Byte offset of dS(row, key) in the canonical no-swizzle K-major layout of bwd_config.hpp.
template <class Cfg>
FP8ATTN_HOST_DEVICE constexpr uint32_t ds_offset(uint32_t row, uint32_t key) {
  return (row >> 3) * Cfg::kDsStrideBytes + (row & 7u) * 16u + (key >> 3) * Cfg::kDsLeadingBytes + (key & 7u) * 2u;
}

/// dQ part = dS·K[:, n0 : n0 + 64] over the block's BlockN keys: A = dS (no swizzle, K-major),
/// B = K read N-major. The first wgmma overwrites (scale-d = 0), as the engine's fresh dQ tile.
template <class Cfg>
FP8ATTN_ARCH_FN void mm_dq(arch::WgmmaAccF32<Cfg::kDqPartN>& acc, const uint8_t* ds,
                           const uint8_t (&k)[Cfg::kChunks][Cfg::kKChunkBytes], int n0) {
  FP8ATTN_UNROLL
  for (int kb = 0; kb < Cfg::kBlockN / 16; ++kb) {
    const uint64_t da = arch::make_wgmma_descriptor(arch::smem_address(ds + kb * 2 * Cfg::kDsLeadingBytes),
                                                    Cfg::kDsLeadingBytes, Cfg::kDsStrideBytes, arch::Swizzle::None);
    arch::wgmma_bf16<Cfg::kDqPartN, arch::WgmmaMajor::K, arch::WgmmaMajor::MN>(
        acc, da, n_major_descriptor<Cfg>(k[0], Cfg::kKChunkBytes, n0, kb), kb > 0);
  }
}

template <int N>
FP8ATTN_ARCH_FN void fill_acc(arch::WgmmaAccF32<N>& acc, float value) {
  FP8ATTN_UNROLL
  for (int i = 0; i < N / 2; ++i) acc[i] = value;
}

}  // namespace fp8attn::sm90
