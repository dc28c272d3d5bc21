// The E4M3 V transpose of the attention forward's producer (warps 1-3): V as TMA loads it
// ([key][head_dim] bytes, no swizzle) into Vᵀ in the canonical no-swizzle K-major layout that the
// P·V wgmma reads as its B operand (fwd_config.hpp; fwd_mma.hpp, vt_descriptor). An FP8 wgmma has
// no transposed B (PTX ISA 9.0 §9.7.15.5.2), so the producer moves the bytes.
//
// Vᵀ's columns are in the P·V key order (kernels/sm90/pv_key_order.hpp): column pv_slot_of_key(k)
// holds key k, so the consumers use their cast Q·Kᵀ registers as P's A fragment as they are.
// A lane moves items of 4 keys x 4 dims: four 32-bit loads (one key row each: keys key0, key0 + 1,
// key0 + 8, key0 + 9 for the item's Vᵀ columns 4kg..4kg+3), eight byte permutes, four 32-bit
// stores (one dim each, 4 columns). Each warp instruction is one wavefront
// (the bank model of kernels/emu/bank_conflicts.hpp):
// - a load of row `key`, dims 4dg..4dg+3, is word key·head_dim/4 + dg. At head_dim ≥ 128 its bank
//   is dg mod 32, so the warp's 32 lanes take 32 consecutive dim groups (of any key groups). At
//   head_dim 64 it is 16·(key & 1) + dg: the lanes take 16 dim groups twice, and the upper
//   half-warp loads its key rows pairwise swapped (1, 0, 3, 2), so odd and even rows meet (the
//   item's keys alternate in parity as 4 consecutive keys do).
// - a store of dim n, Vᵀ columns 4kg..4kg+3 is word (n & 7)·4 + (kg & 3) mod 32 (the 8·BlockN-byte
//   stride of 8-dim groups is a multiple of 128 B). All lanes' j-th dims share n & 3 = j, which
//   left at most 8 banks for 32 lanes (2, 16-way, at head_dim ≥ 128). So a lane stores its
//   columns rotated: store j writes column j ^ rot with rot = (lane >> 1) & 3, and the lanes of a
//   warp differ in (dg & 1, rot, kg & 3) = (lane & 1, (lane >> 1) & 3, lane >> 3): 32 banks.
// NOTE: the rotation adds no load, store or permute: it lives in the first round's byte-permute
// selectors (two per lane, a few integer ops per item) and in one XOR per store address, where
// ldmatrix.trans would need V in a swizzled layout (its 8 rows of one 16-byte column are head_dim
// bytes apart: 8-way conflicts), and so a new TMA layout for V.
#pragma once

#include <cstdint>

#include "kernels/arch/barrier.hpp"
#include "kernels/arch/mbarrier.hpp"
#include "kernels/arch/platform.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/warp.hpp"
#include "kernels/sm90/attention/fwd_config.hpp"
#include "kernels/sm90/attention/fwd_params.hpp"
#include "kernels/sm90/pv_key_order.hpp"

namespace fp8attn::sm90 {

/// Byte offset of Vᵀ(n, k) (n: head-dim index, k: column, the slot of a key) in the canonical
/// no-swizzle K-major layout of fwd_config.hpp: 8x16 B core matrices, LBO 128 B, SBO 8·BlockN B.
template <class Cfg>
FP8ATTN_HOST_DEVICE constexpr uint32_t vt_offset(uint32_t n, uint32_t k) {
  return (n >> 3) * Cfg::kVtStrideBytes + (n & 7u) * 16u + (k >> 4) * Cfg::kVtLeadingBytes + (k & 15u);
}

/// The producer threads that transpose V: warps 1-3 of the producer warpgroup.
inline constexpr uint32_t kTransposeThreads = 96;

/// The first round's byte-permute selector of a transposing lane: from rows a (bytes 0-3) and b
/// (4-7), bytes column c0 of a, of b, column c0 ^ 1 of a, of b, where a and b hold keys 0 and 1
/// (2 and 3) of the item, or 1 and 0 when `swapped`.
FP8ATTN_HOST_DEVICE constexpr uint32_t vt_row_selector(uint32_t c0, bool swapped) {
  const uint32_t lo = swapped ? 4u : 0u, hi = 4u - lo, c1 = c0 ^ 1u;
  return (c0 + lo) | (c0 + hi) << 4 | (c1 + lo) << 8 | (c1 + hi) << 12;
}

/// Vᵀ of one stage, by the transposing threads (`thread` in [0, 96)); each fences its
/// generic-proxy writes for the consumers' wgmma (async proxy), and once all have, one arrives
/// on vt_full.
/// Keys at or past `keys` are written as zeros (a paged cache's slots past the sequence: stale,
/// maybe NaN, and 0 · NaN would reach O through P·V).
template <class Cfg>
FP8ATTN_ARCH_FN void transpose_v(uint32_t thread, const uint8_t* v, uint8_t* vt, uint64_t* vt_full,
                                 uint32_t keys = Cfg::kBlockN) {
  constexpr uint32_t kHeadDim = Cfg::kHeadDim;
  static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "the lane map below covers these");
  static_assert(Cfg::kBlockN % 16 == 0 && Cfg::kVtStrideBytes % 128 == 0, "whole 4-key-group sets; 128 B rows");
  // A wave is one warp instruction's 32 items (item = 32·wave + lane); kWavesPerSet of them cover
  // 16 keys x head_dim.
  constexpr uint32_t kWavesPerSet = kHeadDim / 32, kDimChunks = kHeadDim >= 128 ? kHeadDim / 128 : 1;
  constexpr uint32_t kWaves = Cfg::kBlockN / 16 * kWavesPerSet;
  // NOTE: the lane's constants come from the loop's item, inside the loop: computed once before it,
  // ptxas kept them live through the paged block loop around this one (run_paged_kv) and spilled
  // the producer's 24 registers (-warn-spills: 40 to 52 bytes).
  FP8ATTN_NO_UNROLL
  for (uint32_t item = thread; item < 32 * kWaves; item += kTransposeThreads) {
    const uint32_t lane = item % 32, wave = item / 32, rot = (lane >> 1) & 3u;
    const uint32_t swap = kHeadDim == 64 ? lane >> 4 : 0u;  // head_dim 64: rows 1, 0, 3, 2
    const uint32_t sel_lo = vt_row_selector(rot, swap != 0), sel_hi = sel_lo ^ 0x2222u;  // columns rot^2, rot^3
    const uint32_t set = wave / kWavesPerSet, r = wave % kWavesPerSet;
    const uint32_t dg = kHeadDim == 64 ? lane & 15u : 32 * (r % kDimChunks) + lane;
    const uint32_t kg = 4 * set + (((lane >> 3) + r / kDimChunks) & 3u);
    // Vᵀ columns 4kg..4kg+3 hold keys key0 + {0, 1, 8, 9} (pv_key_order.hpp).
    const uint32_t key0 = static_cast<uint32_t>(pv_key_of_slot(static_cast<int>(4 * kg)));
    const uint8_t* rows = v + key0 * kHeadDim + 4 * dg;
    uint32_t w[4];
    FP8ATTN_UNROLL
    for (uint32_t i = 0; i < 4; ++i) {
      const uint32_t row = ((i ^ swap) & 1u) + 8u * ((i ^ swap) >> 1);
      w[i] = key0 + row < keys ? arch::smem_load(reinterpret_cast<const uint32_t*>(rows + row * kHeadDim)) : 0u;
    }
    const uint32_t t0 = arch::byte_perm(w[0], w[1], sel_lo), t1 = arch::byte_perm(w[0], w[1], sel_hi);
    const uint32_t t2 = arch::byte_perm(w[2], w[3], sel_lo), t3 = arch::byte_perm(w[2], w[3], sel_hi);
    // c[j]: keys 4kg..4kg+3 of dim 4dg + (j ^ rot).
    const uint32_t c[4] = {arch::byte_perm(t0, t2, 0x5410u), arch::byte_perm(t0, t2, 0x7632u),
                           arch::byte_perm(t1, t3, 0x5410u), arch::byte_perm(t1, t3, 0x7632u)};
    // NOTE: dims 4dg..4dg+3 share one core matrix, 16 B apart, and the item's offset has bits 4-5
    // clear, so dim 4dg + (j ^ rot) is at (offset | 16·rot) ^ 16·j.
    const uint32_t at = vt_offset<Cfg>(4 * dg, 4 * kg) | 16u * rot;
    FP8ATTN_UNROLL
    for (uint32_t j = 0; j < 4; ++j) arch::smem_store(reinterpret_cast<uint32_t*>(vt + (at ^ 16u * j)), c[j]);
  }
  arch::fence_proxy_async_shared_cta();
  arch::named_barrier_sync(barrier_id(FwdBarrier::kProducerVt), kTransposeThreads);
  if (thread == 0) arch::mbarrier_arrive(vt_full);  // every warp's reads of V are done too
}

/// 16 bytes of Vᵀ: one 128-bit shared-memory load or store.
struct alignas(16) VtChunk {
  uint32_t w[4];
};

/// Vᵀ as TMA loads it for V given keys-contiguous (32-key slabs in the 32B swizzle:
/// fwd_mma.hpp, vt_descriptor), put into the P·V key order in place; then, as transpose_v, the
/// fence and one arrival on vt_full.
/// NOTE: each 16-byte chunk of a slab is 16 consecutive keys of one dim, and the order moves keys
/// only inside their 16 (pv_key_order.hpp), so every chunk is reordered on its own, wherever the
/// swizzle put it: byte a of the new chunk is byte pv_key_of_slot(a) of the old, so word u is
/// bytes 2u, 2u + 1, 8 + 2u, 9 + 2u. Consecutive lanes take consecutive chunks (8 per wavefront).
template <class Cfg>
FP8ATTN_ARCH_FN void order_vt_slabs(uint32_t thread, uint8_t* vt, uint64_t* vt_full) {
  static_assert(Cfg::kVBytes % sizeof(VtChunk) == 0, "whole chunks");
  VtChunk* chunks = reinterpret_cast<VtChunk*>(vt);
  FP8ATTN_NO_UNROLL
  for (uint32_t i = thread; i < Cfg::kVBytes / sizeof(VtChunk); i += kTransposeThreads) {
    const VtChunk in = arch::smem_load(chunks + i);
    const VtChunk out{{arch::byte_perm(in.w[0], in.w[2], 0x5410u), arch::byte_perm(in.w[0], in.w[2], 0x7632u),
                       arch::byte_perm(in.w[1], in.w[3], 0x5410u), arch::byte_perm(in.w[1], in.w[3], 0x7632u)}};
    arch::smem_store(chunks + i, out);
  }
  arch::fence_proxy_async_shared_cta();
  arch::named_barrier_sync(barrier_id(FwdBarrier::kProducerVt), kTransposeThreads);
  if (thread == 0) arch::mbarrier_arrive(vt_full);
}

}  // namespace fp8attn::sm90
