// The shared-keys split's exchange of P and dS through shared memory (bwd_mainloop_shared_keys.hpp):
// each consumer warpgroup holds Pᵀ and dSᵀ of all the block's 64 keys for its kQueryCols query
// columns, and every consumer's dV, dK and dQ products need all BlockM columns. It writes its
// columns of
//   Pᵀ  [key][row]  (A of dV += Pᵀ·dO),
//   dSᵀ [key][row]  (A of dK += dSᵀ·Q),
//   dS  [row][key]  (A of dQ  = dS·K),
// each in the canonical no-swizzle K-major layout of bwd_config.hpp (8 × 16 B core matrices,
// adjacent along K, 128 B apart; 8-row groups 16 B · K-extent apart).
// NOTE: dS is stored twice, transposed, rather than read MN-major for one of dK and dQ: the
// 8 KB fits the 227 KB (bwd_config.hpp), and every operand then uses the layout that the key
// halves' dQ already reads.
#pragma once

#include <cstdint>

#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/wgmma.hpp"
#include "kernels/sm90/attention/bwd_config.hpp"
#include "kernels/sm90/attention/bwd_mma.hpp"

namespace fp8attn::sm90 {

/// Byte offset of (m, k) in a no-swizzle K-major tile whose K extent is `k_extent` elements.
FP8ATTN_HOST_DEVICE constexpr uint32_t k_major_offset(uint32_t m, uint32_t k, uint32_t k_extent) {
  return (m >> 3) * 16u * k_extent + (m & 7u) * 16u + (k >> 3) * 128u + (k & 7u) * 2u;
}

template <class Cfg>
FP8ATTN_ARCH_FN uint8_t* exchange_tile(uint8_t (&ds)[Cfg::kExchangeTiles][Cfg::kDsBytes], BwdExchangeTile tile) {
  return ds[static_cast<int>(tile)];
}

/// Writes this thread's Pᵀ and dSᵀ fragments (rows: keys key_lo and key_lo + 8; columns: query
/// rows row_base + 8c + 2q + {0, 1}) into the three exchange tiles.
template <class Cfg>
FP8ATTN_ARCH_FN void store_exchange(uint8_t (&ds)[Cfg::kExchangeTiles][Cfg::kDsBytes],
                                    const arch::WgmmaAFragment (&pf)[Cfg::kQueryCols / 16],
                                    const arch::WgmmaAFragment (&dsf)[Cfg::kQueryCols / 16], int key_lo, int row_base) {
  static_assert(Cfg::kExchangeTiles == 3, "Pᵀ and dSᵀ are exchanged only when the consumers share the keys");
  static_assert(Cfg::kDsStrideBytes == 16u * Cfg::kBlockN && Cfg::kPtStrideBytes == 16u * Cfg::kBlockM, "layouts");
  uint8_t* pt = exchange_tile<Cfg>(ds, BwdExchangeTile::Pt);
  uint8_t* dst = exchange_tile<Cfg>(ds, BwdExchangeTile::DsT);
  uint8_t* dsr = exchange_tile<Cfg>(ds, BwdExchangeTile::Ds);
  const int q = static_cast<int>(arch::thread_idx_in_warpgroup() % 4);
  FP8ATTN_UNROLL
  for (int pr = 0; pr < Cfg::kQueryCols / 4; ++pr) {  // registers 2pr, 2pr + 1: rows c, c + 1 of key h
    const uint32_t key = static_cast<uint32_t>(key_lo + 8 * (pr & 1));
    const uint32_t row = static_cast<uint32_t>(row_base + 8 * (pr >> 1) + 2 * q);
    const uint32_t p_pair = pf[pr >> 2].reg[pr & 3], ds_pair = dsf[pr >> 2].reg[pr & 3];
    // Adjacent rows of one key: one 32-bit store into each transposed tile (row is even).
    const uint32_t t_at = k_major_offset(key, row, Cfg::kBlockM);
    arch::smem_store(reinterpret_cast<uint32_t*>(pt + t_at), p_pair);
    arch::smem_store(reinterpret_cast<uint32_t*>(dst + t_at), ds_pair);
    arch::smem_store(reinterpret_cast<uint16_t*>(dsr + k_major_offset(row, key, Cfg::kBlockN)),
                     static_cast<uint16_t>(ds_pair & 0xffffu));
    arch::smem_store(reinterpret_cast<uint16_t*>(dsr + k_major_offset(row + 1, key, Cfg::kBlockN)),
                     static_cast<uint16_t>(ds_pair >> 16));
  }
}

}  // namespace fp8attn::sm90
