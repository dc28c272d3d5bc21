// The tile GEMMs of a consumer warpgroup of the attention forward: S = Q·Kᵀ (SS wgmma, both
// operands in shared memory), O (+)= P·V (RS wgmma, P from registers; E4M3: Vᵀ K-major, BF16: V
// N-major, in shared memory), and the FP32 promotion of two-level P·V accumulation on the CUDA
// cores. E4M3 runs QGMMA (m64nNk32), BF16 HGMMA (m64nNk16).
#pragma once

#include <cstdint>

#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/wgmma.hpp"
#include "kernels/sm90/attention/fwd_config.hpp"

namespace fp8attn::sm90 {

/// S = Q·Kᵀ for the warpgroup's 64 rows (the tile's rows-th 64; with the head-dim split two
/// warpgroups compute the same S): row_bytes/32 wgmmas stepping K by 32 bytes (32 E4M3 or 16 BF16
/// elements), moving to the next 128-byte chunk every four (PTX_FACTS.md §3b: the start advances
/// by the unswizzled offset).
template <class Cfg>
FP8ATTN_ARCH_FN void mm_qk(arch::WgmmaAccF32<Cfg::kBlockN>& s, const uint8_t (&q)[Cfg::kChunks][Cfg::kQChunkBytes],
                           const uint8_t (&k)[Cfg::kChunks][Cfg::kKChunkBytes], unsigned rows) {
  FP8ATTN_UNROLL
  for (int kb = 0; kb < Cfg::kQkSteps; ++kb) {
    const int chunk = kb * 32 / static_cast<int>(Cfg::kChunkBytes);
    const uint32_t offset = (kb * 32) % Cfg::kChunkBytes;
    const uint64_t da = arch::make_wgmma_descriptor(arch::smem_address(q[chunk] + rows * 64 * Cfg::kChunkBytes), 0,
                                                    Cfg::kAtomBytes, Cfg::kSwizzle);
    const uint64_t db = arch::make_wgmma_descriptor(arch::smem_address(k[chunk]), 0, Cfg::kAtomBytes, Cfg::kSwizzle);
    const uint64_t a = arch::wgmma_descriptor_advance(da, offset), b = arch::wgmma_descriptor_advance(db, offset);
    if constexpr (Cfg::kBf16) arch::wgmma_bf16<Cfg::kBlockN>(s, a, b, kb > 0);
    else arch::wgmma_fp8<Cfg::kBlockN>(s, a, b, kb > 0);
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

/// The descriptor of BF16 V (as loaded: [chunk][key][64 dims], 128B swizzle) for dims [n0, ..)
/// (n0 a multiple of 64: the BF16 kernels use 0) and keys [16·kb, 16·kb + 16), read N-major (PTX_FACTS.md §3b, MN-major 128B: 64 dims per
/// swizzle row, the next 64 dims one chunk further (LBO), the next 8 keys 8 rows further (SBO)).
template <class Cfg>
FP8ATTN_ARCH_FN uint64_t v_descriptor_bf16(const uint8_t* v, int n0, int kb) {
  const uint8_t* start = v + (n0 / Cfg::kChunkElements) * Cfg::kKChunkBytes + kb * Cfg::kMmaK * Cfg::kChunkBytes;
  return arch::make_wgmma_descriptor(arch::smem_address(start), Cfg::kKChunkBytes, Cfg::kAtomBytes, arch::Swizzle::B128);
}

/// acc (+)= P·V[:, n0 : n0 + N] over the block's keys: BlockN/K wgmmas with P from registers and
/// V from shared memory (E4M3: Vᵀ K-major; BF16: V N-major); the first overwrites acc unless
/// `accumulate`.
template <class Cfg, int N>
FP8ATTN_ARCH_FN void mma_pv(arch::WgmmaAccF32<N>& acc, const arch::WgmmaAFragment (&p)[Cfg::kPFragments],
                            const uint8_t* v, int n0, bool accumulate, bool tma_slabs) {
  FP8ATTN_UNROLL
  for (int kb = 0; kb < Cfg::kPFragments; ++kb) {
    if constexpr (Cfg::kBf16)
      arch::wgmma_bf16<N, arch::WgmmaMajor::MN>(acc, p[kb], v_descriptor_bf16<Cfg>(v, n0, kb), accumulate || kb > 0);
    else
      arch::wgmma_fp8<N>(acc, p[kb], vt_descriptor<Cfg>(v, n0, kb, tma_slabs), accumulate || kb > 0);
  }
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
