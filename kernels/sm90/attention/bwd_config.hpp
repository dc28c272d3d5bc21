// Compile-time configuration of the BF16 attention backward kernel (attention_bwd_kernel.hpp) for
// one head dimension: tiles from the shared tile_config.hpp (attention_bwd_tile, which the CPU
// engine's backward reads too), warp roles, register budgets and the typed shared storage.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/arch/platform.hpp"
#include "kernels/arch/registers.hpp"
#include "kernels/ptx/wgmma_descriptor.hpp"
#include "kernels/sm90/tile_config.hpp"

namespace fp8attn::sm90 {

/// A planted bug, for the seeded-failure test only (tests/kernels): the emulator must report it.
/// Every kernel the library instantiates has None, and `if constexpr` removes the hook.
enum class BwdFault : int {
  None = 0,
  DropDsReadyBarrier,  ///< consumer 1 skips the barrier that publishes dS before dQ = dS·K
};

/// How the consumer warpgroups divide a key block.
enum class BwdSplit : int {
  /// Each owns 64 of the block's keys (BlockN = 64 · consumers; head dims 64 and 128): Sᵀ, dPᵀ,
  /// dK and dV of its keys stay in its registers, and only dS is shared (for dQ).
  KeyHalves = 0,
  /// They share the block's 64 keys and split along N (head dim 256): Sᵀ and dPᵀ by query
  /// columns, dK, dV and dQ by head-dim parts; P and dS go through shared memory.
  /// NOTE: dK and dV of 64 keys × 256 dims would take 256 registers per thread in one warpgroup;
  /// a head-dim half takes 128. FlashAttention-3's hdim-256 backward (hopper/
  /// flash_bwd_launch_template.h: BlockM 64, two MMA warpgroups, AtomLayoutMSdP 1, dKV_swapAB)
  /// likewise splits S and dP along N and gives each warpgroup a head-dim half of dKᵀ and dVᵀ;
  /// its BlockN is 80 in current sources, ours 64, the CPU engine's tile (tile_config.hpp).
  SharedKeys = 1,
};

template <int kHeadDimT, BwdFault kFaultT = BwdFault::None>
struct BwdConfig {
  static constexpr BwdFault kFault = kFaultT;
  static constexpr int kHeadDim = kHeadDimT;
  static constexpr AttentionTile kTile = attention_bwd_tile(kHeadDim);
  static constexpr int kBlockM = kTile.block_m;  ///< query rows per step (the N of Sᵀ = K·Qᵀ)
  static constexpr int kBlockN = kTile.block_n;  ///< keys of the CTA's key block
  static constexpr int kConsumers = kTile.consumer_warpgroups;
  static constexpr int kStages = kTile.stages;   ///< Q/dO pipeline depth
  static constexpr int kThreads = 128 * (1 + kConsumers);  // warpgroup 0 is the producer
  static constexpr int kMmaK = 16;                        ///< BF16 wgmma: m64nNk16
  static_assert(kTile.mma_k_qk == kMmaK && kTile.mma_k_pv == kMmaK, "BF16 wgmma K");
  static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "head dims 64, 128 and 256");
  static_assert(kBlockM == 64, "one dQ wgmma M (64 query rows) per step");
  static constexpr BwdSplit kSplit = kBlockN == 64 * kConsumers ? BwdSplit::KeyHalves : BwdSplit::SharedKeys;
  static_assert(kSplit == BwdSplit::KeyHalves || kBlockN == 64,
                "shared keys: the block's keys are one wgmma M (64) of Sᵀ, dPᵀ, dV and dK");
  /// Query columns of a consumer's Sᵀ and dPᵀ (their N), its first at kQueryCols · consumer when
  /// the keys are shared.
  static constexpr int kQueryCols = kSplit == BwdSplit::KeyHalves ? kBlockM : kBlockM / kConsumers;
  /// Head-dim columns of a consumer's dK and dV (their N), its first at kDkvCols · consumer.
  static constexpr int kDkvCols = kSplit == BwdSplit::KeyHalves ? kHeadDim : kHeadDim / kConsumers;
  static_assert(kQueryCols % 16 == 0 && kDkvCols % 64 == 0, "wgmma N, and whole 64-dim chunks of dO and Q");

  // Q, dO, K and V tiles as TMA loads them: chunks of 64 head-dim elements (128 B rows), 128B
  // swizzle, the forward's BF16 layout (fwd_config.hpp).
  static constexpr uint32_t kRowBytes = kHeadDim * 2;
  static constexpr uint32_t kChunkBytes = 128;
  static constexpr int32_t kChunkElements = 64;
  static constexpr int kChunks = static_cast<int>(kRowBytes / kChunkBytes);
  static constexpr uint32_t kAtomBytes = 8 * kChunkBytes;  ///< 8 rows of one swizzle span
  static constexpr int kHdSteps = kHeadDim / kMmaK;        ///< wgmmas over head_dim (Sᵀ, dPᵀ)
  static constexpr uint32_t kQChunkBytes = kBlockM * kChunkBytes;
  static constexpr uint32_t kKChunkBytes = kBlockN * kChunkBytes;
  static constexpr uint32_t kQBytes = kChunks * kQChunkBytes;
  static constexpr uint32_t kKBytes = kChunks * kKChunkBytes;

  // dS [BlockM rows][BlockN keys] for dQ = dS·K (A operand, K-major), written by the consumers
  // from registers in the canonical no-swizzle layout: 8 x 16 B core matrices, adjacent along the
  // keys (LBO 128 B), 8-row groups BlockN·16 B apart (SBO) (PTX_FACTS.md §3b).
  static constexpr uint32_t kDsLeadingBytes = 128;
  static constexpr uint32_t kDsStrideBytes = 16u * kBlockN;
  static constexpr uint32_t kDsBytes = kBlockM * kBlockN * 2;
  // Shared keys only: Pᵀ and dSᵀ [BlockN keys][BlockM rows], the A operands of dV += Pᵀ·dO and
  // dK += dSᵀ·Q, in the same layout with the rows as K (SBO BlockM·16 B); each consumer writes its
  // query columns, and both read all of them (bwd_exchange.hpp).
  static constexpr uint32_t kPtStrideBytes = 16u * kBlockM;
  static constexpr int kExchangeTiles = kSplit == BwdSplit::KeyHalves ? 1 : 3;  ///< dS (, Pᵀ, dSᵀ)

  /// dQ's columns per wgmma: 64 (one N-major B chunk of K). Consumer c computes parts
  /// [c·kDqPartsPerConsumer, ..) below kDqParts: head_dim 64 has one part, which consumer 0
  /// computes.
  static constexpr int kDqPartN = 64;
  static constexpr int kDqParts = kHeadDim / kDqPartN;
  static constexpr int kDqPartsPerConsumer = (kDqParts + kConsumers - 1) / kConsumers;

  // NOTE: FlashAttention-3's budgets for one TMA producer and two MMA warpgroups (24/240). The
  // consumers hold dV and dK (2 · kDkvCols/2 registers) across the whole loop, and Sᵀ and dPᵀ
  // (kQueryCols/2 each) during a step: 192 at head_dim 128 before addresses and the masks; at 256,
  // 128 + 32, and one 64-column dQ part (32) at a time.
  static_assert(kConsumers == 2, "register budgets for two consumer warpgroups");
  static constexpr uint32_t kProducerRegisters = 24;
  static constexpr uint32_t kConsumerRegisters = 240;
  static_assert(arch::register_budgets_fit(kThreads, kProducerRegisters, kConsumers, kConsumerRegisters),
                "register budgets over the CTA's launch pool: setmaxnreg.inc would wait forever");
};

/// The tiles of BwdSharedStorage::ds: dS for dQ (both splits); Pᵀ and dSᵀ for dV and dK (shared
/// keys only).
enum class BwdExchangeTile : int { Ds = 0, Pt = 1, DsT = 2 };

/// Shared memory of one CTA: K and V of the key block (loaded once), kStages of Q and dO, and dS
/// (with Pᵀ and dSᵀ when the consumers share the keys).
template <class Cfg>
struct BwdSharedStorage {
  alignas(1024) uint8_t k[Cfg::kChunks][Cfg::kKChunkBytes];
  alignas(1024) uint8_t v[Cfg::kChunks][Cfg::kKChunkBytes];
  alignas(1024) uint8_t q[Cfg::kStages][Cfg::kChunks][Cfg::kQChunkBytes];
  alignas(1024) uint8_t dout[Cfg::kStages][Cfg::kChunks][Cfg::kQChunkBytes];
  alignas(1024) uint8_t ds[Cfg::kExchangeTiles][Cfg::kDsBytes];  ///< dS (, Pᵀ, dSᵀ: BwdExchangeTile)
  /// Per consumer thread: the rows that see its two keys (first, last of h = 0, then h = 1).
  /// NOTE: in shared memory rather than registers across the loop: 4 fewer live registers, which
  /// the head_dim 128 consumers needed (ptxas -warn-spills).
  int32_t key_rows[128 * Cfg::kConsumers][4];
  uint64_t kv_full;
  uint64_t qdo_full[Cfg::kStages], qdo_empty[Cfg::kStages];
};

/// Extra dynamic shared memory to align the storage to the 1024-byte swizzle period.
inline constexpr uint32_t kBwdSmemSlack = 1024;

template <class Cfg>
constexpr size_t attention_bwd_smem_bytes() {
  return sizeof(BwdSharedStorage<Cfg>) + kBwdSmemSlack;
}

}  // namespace fp8attn::sm90
