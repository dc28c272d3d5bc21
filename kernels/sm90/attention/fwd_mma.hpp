// The tile GEMMs of a consumer warpgroup of the attention forward: S = Q·Kᵀ (SS wgmma, both
// operands in shared memory), O (+)= P·V (RS wgmma, P from registers, Vᵀ K-major in shared
// memory), and the FP32 promotion of two-level P·V accumulation on the CUDA cores.
#pragma once

#include <cstdint>

#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/wgmma.hpp"
#include "kernels/sm90/attention/fwd_config.hpp"

namespace fp8attn::sm90 {

/// S = Q·Kᵀ for the warpgroup's 64 rows: head_dim/32 wgmmas stepping K by 32 bytes, moving to the
/// next 128-byte chunk every four (PTX_FACTS.md §3b: the start advances by the unswizzled offset).
template <class Cfg>
FP8ATTN_ARCH_FN void mm_qk(arch::WgmmaAccF32<Cfg::kBlockN>& s, const uint8_t (&q)[Cfg::kChunks][Cfg::kQChunkBytes],
                           const uint8_t (&k)[Cfg::kChunks][Cfg::kKChunkBytes], unsigned consumer) {
  FP8ATTN_UNROLL
  for (int kb = 0; kb < Cfg::kHeadDim / 32; ++kb) {
    const int chunk = kb * 32 / static_cast<int>(Cfg::kChunkBytes);
    const uint32_t offset = (kb * 32) % Cfg::kChunkBytes;
    const uint64_t da = arch::make_wgmma_descriptor(arch::smem_address(q[chunk] + consumer * 64 * Cfg::kChunkBytes), 0,
                                                    Cfg::kAtomBytes, Cfg::kSwizzle);
    const uint64_t db = arch::make_wgmma_descriptor(arch::smem_address(k[chunk]), 0, Cfg::kAtomBytes, Cfg::kSwizzle);
    arch::wgmma_fp8<Cfg::kBlockN>(s, arch::wgmma_descriptor_advance(da, offset), arch::wgmma_descriptor_advance(db, offset),
                                  kb > 0);
  }
}

/// The descriptor of Vᵀ rows [n0, ..) and keys [32·kb, 32·kb + 32): the producer's transpose
/// (canonical no-swizzle layout) or TMA's 32-key slabs (32B swizzle).
template <class Cfg>
FP8ATTN_ARCH_FN uint64_t vt_descriptor(const uint8_t* vt, int n0, int kb, bool tma_slabs) {
  if (tma_slabs)
    return arch::make_wgmma_descriptor(arch::smem_address(vt + kb * Cfg::kVtSlabBytes + n0 * 32), 0,
                                       Cfg::kVtSlabStrideBytes, arch::Swizzle::B32);
  return arch::make_wgmma_descriptor(arch::smem_address(vt + (n0 / 8) * Cfg::kVtStrideBytes + kb * 2 * Cfg::kVtLeadingBytes),
                                     Cfg::kVtLeadingBytes, Cfg::kVtStrideBytes, arch::Swizzle::None);
}

/// acc (+)= P·V[:, n0 : n0 + N] over the block's keys: BlockN/32 wgmmas with P from registers
/// and Vᵀ K-major; the first overwrites acc unless `accumulate`.
template <class Cfg, int N>
FP8ATTN_ARCH_FN void mma_pv(arch::WgmmaAccF32<N>& acc, const arch::WgmmaAFragment (&p)[Cfg::kBlockN / 32],
                            const uint8_t* vt, int n0, bool accumulate, bool tma_slabs) {
  FP8ATTN_UNROLL
  for (int kb = 0; kb < Cfg::kBlockN / 32; ++kb)
    arch::wgmma_fp8<N>(acc, p[kb], vt_descriptor<Cfg>(vt, n0, kb, tma_slabs), accumulate || kb > 0);
}

template <int N>
FP8ATTN_ARCH_FN void fill(arch::WgmmaAccF32<N>& acc, float value) {
  FP8ATTN_UNROLL
  for (int i = 0; i < N / 2; ++i) acc[i] = value;
}

/// The promotion of two-level accumulation: O[first + i] += part[i] (or part·vb with per-block V
/// descales, fused as the engine does). `first` is the part's first register in O's fragment.
/// NOTE: two-level accumulation (DESIGN §3): the FP32 sum on the CUDA cores bounds how many
/// truncated tensor-core additions an output sees; a per-block V descale promotes each block.
template <int N, int M>
FP8ATTN_ARCH_FN void promote_into(arch::WgmmaAccF32<N>& o, const arch::WgmmaAccF32<M>& part, int first, bool scaled,
                                  float vb) {
  // NOTE: the branch stays outside the loop, so ptxas does not keep both results of all registers.
  if (scaled) {
    FP8ATTN_UNROLL
    for (int i = 0; i < M / 2; ++i) o[first + i] = fmaf(part[i], vb, o[first + i]);
  } else {
    FP8ATTN_UNROLL
    for (int i = 0; i < M / 2; ++i) o[first + i] = o[first + i] + part[i];
  }
}

}  // namespace fp8attn::sm90
