// Tile configuration of the warp-specialized TN GEMM, C[M][N] (F32) = A[M][K] · B[N][K]ᵀ, with A
// and B K-major (FP8 E4M3 or BF16). One table of numbers read by the kernel, the host launcher
// and the tests.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/arch/platform.hpp"
#include "kernels/arch/registers.hpp"
#include "kernels/ptx/wgmma_descriptor.hpp"

namespace fp8attn::sm90 {

/// Input element type of the GEMM.
enum class GemmInput : int { E4M3 = 0, BF16 = 1 };

template <GemmInput kInput>
struct GemmConfig {
  static constexpr GemmInput kType = kInput;
  static constexpr uint32_t kElementBytes = kInput == GemmInput::BF16 ? 2 : 1;
  // NOTE: a K tile of 128 bytes is one row of the 128-byte swizzle, so a TMA box row fills the
  // swizzle span exactly and wgmma steps K inside the atom (DeepGEMM and FA3 use the same
  // 128B-swizzled K-major tiles).
  static constexpr uint32_t kTileKBytes = 128;
  static constexpr uint32_t kTileK = kTileKBytes / kElementBytes;       // 128 FP8 or 64 BF16
  static constexpr uint32_t kMmaKBytes = 32;                            // one wgmma: K = 32 bytes
  static constexpr uint32_t kMmasPerTile = kTileKBytes / kMmaKBytes;   // 4
  static constexpr arch::Swizzle kSwizzle = arch::Swizzle::B128;
  // Two consumer warpgroups of 64 rows each share one B tile: the CTA tile is 128 x 128.
  static constexpr uint32_t kConsumerWarpgroups = 2;
  static constexpr uint32_t kTileM = 64 * kConsumerWarpgroups;
  static constexpr uint32_t kTileN = 128;  // the N of each wgmma (m64n128)
  // NOTE: two stages, the smallest pipeline that overlaps: one load is in flight while the
  // other stage is consumed.
  static constexpr uint32_t kStages = 2;
  // Warpgroup 0 is the producer (one elected thread issues TMA); warpgroups 1-2 consume.
  static constexpr uint32_t kThreads = 128 * (1 + kConsumerWarpgroups);
  // NOTE: register budgets as in FA3's 3-warpgroup kernels: the producer needs few registers,
  // the consumers hold a 64-register accumulator each; 128*40 + 256*232 fill the 384 threads'
  // launch pool of 168 each (64512).
  static constexpr uint32_t kProducerRegisters = 40;
  static constexpr uint32_t kConsumerRegisters = 232;
  static_assert(arch::register_budgets_fit(kThreads, kProducerRegisters, kConsumerWarpgroups, kConsumerRegisters),
                "register budgets over the CTA's launch pool: setmaxnreg.inc would wait forever");

  static constexpr uint32_t kTileABytes = kTileM * kTileKBytes;  // 16 KiB
  static constexpr uint32_t kTileBBytes = kTileN * kTileKBytes;  // 16 KiB
  // Swizzle atom of 8 rows x 128 bytes: the stride between 8-row groups (SBO) of both operands.
  static constexpr uint32_t kAtomBytes = 8 * kTileKBytes;
};

/// The shared memory of one CTA. Tiles first: each must start on the 1024-byte period of the
/// 128-byte swizzle (PTX ISA 9.0 §5.5.7), which their sizes keep.
template <class Cfg>
struct GemmSharedStorage {
  alignas(1024) uint8_t a[Cfg::kStages][Cfg::kTileABytes];
  alignas(1024) uint8_t b[Cfg::kStages][Cfg::kTileBBytes];
  uint64_t full[Cfg::kStages];   // TMA -> consumers: the stage holds data
  uint64_t empty[Cfg::kStages];  // consumers -> producer: the stage may be overwritten
};

/// Extra dynamic shared memory for aligning the storage to the 128-byte swizzle period.
inline constexpr uint32_t kSmemSlack = 1024;

/// Dynamic shared memory a launch of gemm_tn_kernel<Cfg> needs.
template <class Cfg>
constexpr size_t gemm_smem_bytes() {
  return sizeof(GemmSharedStorage<Cfg>) + kSmemSlack;
}

}  // namespace fp8attn::sm90
