// Compile-time configuration of the attention forward kernel for one head dimension and input
// type (E4M3 on QGMMA, BF16 on HGMMA): tile sizes from the shared tile_config.hpp (so the CPU
// engine visits the same tiles), the warp roles, register budgets and the typed shared storage.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/arch/platform.hpp"
#include "kernels/arch/registers.hpp"
#include "kernels/ptx/wgmma_descriptor.hpp"
#include "kernels/sm90/tile_config.hpp"

namespace fp8attn::sm90 {

// PvPromotion (tile_config.hpp): two-level accumulation of P·V as compiled into a kernel.
// NOTE: EveryN keeps a second FP32 tile of O alive across blocks; it fits next to S and O at
// head_dim 64 and at head_dim 128 with its own smaller BlockN (tile_config.hpp); at head_dim 256,
// where O alone is 128 registers, the two consumer warpgroups share 64 query rows and split the
// head dim (kHeadDimSplit below). EveryBlock needs the fresh tile only during P·V, in 64-column
// parts, and fits every head dim.

/// A planted bug, for the seeded-failure tests only (tests/kernels): the emulator must report each
/// one. Every kernel the library instantiates has None, and `if constexpr` removes the hooks.
enum class FwdFault : int {
  None = 0,
  DropTurnBarrier,     ///< a consumer never hands the tensor-core turn to the next one
  WrongFullPhase,      ///< the consumers wait on the wrong parity of the K "full" barrier
  RewritePBeforeWait,  ///< P's A registers are rewritten before the P·V wgmma's wait
};

/// Input element type of a kernel: Q, K, V and the cast of P share it.
enum class FwdInput : int { E4M3 = 0, BF16 = 1 };

/// kDecodeTileT: the decode path's tile (decode_attention_tile), which kernels/sm90/decode's
/// configs are built on.
template <int kHeadDimT, PvPromotion kPromotionT, bool kTelemetryT, FwdInput kInputT = FwdInput::E4M3,
          bool kDecodeTileT = false>
struct FwdConfig {
  static constexpr FwdFault kFault = FwdFault::None;
  static constexpr bool kDecode = false;  ///< decode tiles (kernels/sm90/decode/decode_config.hpp)
  static constexpr int kHeadDim = kHeadDimT;
  static constexpr PvPromotion kPromotion = kPromotionT;
  static constexpr bool kTelemetry = kTelemetryT;  ///< off costs nothing: the code is not compiled
  static constexpr FwdInput kInput = kInputT;
  static constexpr bool kBf16 = kInput == FwdInput::BF16;
  static constexpr uint32_t kElementBytes = kBf16 ? 2 : 1;
  static constexpr AttentionTile kTile = path_tile(kHeadDim, !kBf16, kPromotion, kDecodeTileT);
  static constexpr int kBlockM = kTile.block_m;
  static constexpr int kBlockN = kTile.block_n;
  static constexpr int kConsumers = kTile.consumer_warpgroups;
  /// Consumer warpgroups per 64 query rows (tile_config.hpp): with 2 (FP8 head_dim 256 every-N),
  /// both compute the rows' S and softmax, and each owns kHeadDimO columns of O, from column
  /// kHeadDimO · (consumer % kHeadDimSplit); only the first of them writes the LSE and counts P̃.
  static constexpr int kHeadDimSplit = kTile.head_dim_split;
  static constexpr int kHeadDimO = kHeadDim / kHeadDimSplit;  ///< columns of O per warpgroup
  static constexpr int kStages = kTile.stages;
  /// Buffers of V's rows as loaded. BF16 V is P·V's operand itself: one per stage. E4M3 V is
  /// transposed into Vᵀ (a buffer per stage) as soon as it lands, so one buffer of raw rows
  /// serves every stage: the next V lands there once the last one's Vᵀ is complete (run_loads).
  /// NOTE: the 32 KB a second raw buffer took at head_dim 256 are what a BlockN of 128 needs.
  static constexpr int kVStages = kBf16 ? kStages : 1;
  static constexpr int kThreads = 128 * (1 + kConsumers);  // warpgroup 0 is the producer
  static constexpr int kMmaK = kTile.mma_k_pv;  ///< keys per P·V wgmma: 32 (E4M3) or 16 (BF16)
  static_assert(kTile.mma_k_qk == kMmaK, "one wgmma K for both products");
  static_assert(kBlockM * kHeadDimSplit == 64 * kConsumers, "each 64 query rows have kHeadDimSplit warpgroups");
  static_assert(kHeadDimSplit == 1 || (kPromotion == PvPromotion::EveryN && !kBf16),
                "the head-dim split is the FP8 every-N tile's (its overlapped main loop)");
  static_assert(kHeadDimO % 64 == 0, "a warpgroup's O columns are whole 64-column wgmma parts");
  static_assert(kBlockN % kMmaK == 0 && kBlockN <= 256, "BlockN is the N of Q·Kᵀ and the K of P·V");
  static_assert(kHeadDim % 32 == 0 && kHeadDim <= 256, "head_dim is the K of Q·Kᵀ and the N of P·V");
  static_assert(!kBf16 || kPromotion == PvPromotion::Off,
                "BF16 HGMMA accumulates in full FP32: two-level accumulation is for FP8's accumulator");

  // Q and K tiles are K-major with rows of one swizzle span: 64 B rows (64B swizzle) for E4M3 at
  // head_dim 64, else 128 B rows (128B swizzle) in row_bytes / 128 chunks, as TMA boxes allow.
  static constexpr uint32_t kRowBytes = kHeadDim * kElementBytes;
  static constexpr uint32_t kChunkBytes = kRowBytes == 64 ? 64 : 128;
  static constexpr int32_t kChunkElements = static_cast<int32_t>(kChunkBytes / kElementBytes);
  static constexpr arch::Swizzle kSwizzle = kRowBytes == 64 ? arch::Swizzle::B64 : arch::Swizzle::B128;
  static constexpr int kChunks = static_cast<int>(kRowBytes / kChunkBytes);
  static constexpr uint32_t kAtomBytes = 8 * kChunkBytes;  // SBO: 8 rows of one swizzle span
  /// Q·Kᵀ wgmmas per block: each covers 32 bytes of K (32 E4M3 or 16 BF16 elements).
  static constexpr int kQkSteps = static_cast<int>(kRowBytes / 32);
  /// P as A fragments, one per P·V wgmma, cast from FP32 P̃ after the previous P·V's wait
  /// (fwd_softmax.hpp: cast_p_e4m3, cast_p_bf16).
  static constexpr int kPFragments = kBlockN / kMmaK;

  // Vᵀ ([head_dim][BlockN], keys contiguous) in the canonical no-swizzle K-major layout: 8x16 B
  // core matrices, adjacent along K (LBO 128 B), 8-row groups BlockN·8 B apart (SBO).
  static constexpr uint32_t kVtLeadingBytes = 128;
  static constexpr uint32_t kVtStrideBytes = 8u * kBlockN;
  // Vᵀ loaded by TMA from keys-contiguous V: BlockN/32 slabs of [head_dim][32 keys], each one
  // wgmma's K, with the 32B swizzle (a box row of 32 bytes is the span; SBO 8 rows x 32 B).
  static constexpr uint32_t kVtSlabBytes = 32u * kHeadDim;
  static constexpr uint32_t kVtSlabStrideBytes = 8u * 32u;

  /// FlashAttention-3's intra-warpgroup overlap (fwd_mainloop.hpp): the softmax of block j runs
  /// while P·V of block j − 1 is on the tensor cores. EveryBlock promotion runs serially, since its
  /// fresh tile would then live across the softmax too.
  /// NOTE: at head_dim 128 the overlapped consumers hold S (112 registers at BlockN 224), O (64)
  /// and the previous block's P (28) through the softmax, within 240 only because the mask is two
  /// bounds per row and telemetry keeps only the tile's counts in registers (fwd_softmax.hpp).
  /// The every-N kernel there adds the fresh tile (64) and so runs at BlockN 128 (tile_config.hpp):
  /// S 64 + P 16 + O 64 + fresh 64 = 208, spill-free (tools/check_attention_sm90a.sh). At
  /// head_dim 256 it splits the head dim: S 48 + P 12 + O 64 + fresh 64 = 188 (tile_config.hpp).
  /// NOTE: the BF16 kernels overlap too, except head_dim 64 (three consumers of 160 registers) and
  /// head_dim 256 with telemetry, which spilled with the previous block's P live through the
  /// softmax (ptxas -warn-spills: 20 to 32 bytes at 64, 8 at 256); pingpong still overlaps one
  /// consumer's softmax with another's wgmmas there. E4M3 at head_dim 256 with telemetry and no
  /// promotion runs serially too: at BlockN 128 (S 64 + O 128 + P 16) the tile's three counters
  /// spilled 12 bytes.
  static constexpr bool kIntraWgOverlap =
      kPromotion != PvPromotion::EveryBlock &&
      !((kBf16 && kHeadDim == 64) || (kHeadDim == 256 && kTelemetry && kPromotion == PvPromotion::Off));

  /// Columns of O per P·V wgmma when the fresh tile lives only during P·V (EveryBlock).
  /// NOTE: 64 columns (32 registers): with 128, head_dim 128 spilled next to O and P.
  /// At head_dim 256 with telemetry 32 (16 registers): with 64, O (128), P and the tile's counters
  /// spilled 48 bytes. Every O element still gets its own fresh sum and promotion: same bits.
  static constexpr int kPvSplitN = kHeadDim == 256 && kTelemetry ? 32 : 64;

  // NOTE: FlashAttention-3's budgets for a TMA producer and two consumers are 24 and 240. The
  // overlapped consumers need the 240 (head_dim 128: S 112 + O 64 + P of the previous block 28
  // registers during the softmax); 24 + 2 x 240 fill the 384 threads' launch pool of 168 each
  // (register_budgets_fit: a producer at 32 hung the consumers' setmaxnreg.inc on an H200).
  // NOTE: with three consumers (head_dim 64, BlockM 192) FlashAttention-3's budget is 160, and
  // 32 + 3 x 160 fill the 512 threads' pool of 128 each. BF16 (S 64 + O 32 + P 32 registers)
  // fits without spills only in the serial schedule (kIntraWgOverlap above); E4M3 at BlockN 96
  // (S 48, O 32, P 12, the every-N fresh tile 32) fits overlapped.
  static_assert(kConsumers == 2 || kConsumers == 3, "register budgets for two or three consumer warpgroups");
  static constexpr uint32_t kProducerRegisters = kConsumers == 2 ? 24 : 32;
  static constexpr uint32_t kConsumerRegisters = kConsumers == 2 ? 240 : 160;
  static_assert(arch::register_budgets_fit(kThreads, kProducerRegisters, kConsumers, kConsumerRegisters),
                "register budgets over the CTA's launch pool: setmaxnreg.inc would wait forever");
  static_assert(kConsumerRegisters <= 240, "the consumers' budget: at most 240 registers per consumer thread");

  static constexpr uint32_t kQChunkBytes = kBlockM * kChunkBytes;
  static constexpr uint32_t kKChunkBytes = kBlockN * kChunkBytes;
  static constexpr uint32_t kVBytes = kBlockN * kRowBytes;
  /// NOTE: BF16 wgmma reads B N-major through the descriptor's transpose bit (PTX ISA 9.0
  /// §9.7.15.5.2, PTX_FACTS.md §3c), so BF16 V is loaded like K (128 B chunks of head_dim, 128B
  /// swizzle) and used as it is: no Vᵀ buffer (a 16-byte placeholder keeps one storage type).
  static constexpr uint32_t kVtBytes = kBf16 ? 16 : kVBytes;

  /// The BF16 output through shared memory and TMA stores (fwd_epilogue.hpp, store_output_tma):
  /// each consumer warpgroup stages its 64 rows × kHeadDimO columns in boxes of 64 columns (128 B
  /// rows, 128B swizzle), where the shared memory has room for a stage of its own.
  /// NOTE: the BF16 kernels at head_dims 128 and 256 have no room for a stage (15 and 0 KB free
  /// under the CTA's 227 KB, for 32 and 64 KB): they stage O in Q's buffer (kOStageInQ), where a
  /// warpgroup's 64 rows of a 128-byte Q chunk are exactly one box of BF16 O, and free Q only once
  /// the stores have read it. E4M3's off and every-block kernels at 256 store a half and a
  /// quarter of O at a time (kORounds): at BlockN 128 they have 34 and 18 KB free for 64 KB.
  /// E4M3's every-N kernels at 64 and 128 have no register room (their fresh tile
  /// fills the consumers' budget; the stage's path spilled 4 bytes without telemetry: ptxas
  /// -warn-spills): they store O from registers, as does every call whose output is not a BF16
  /// tensor TMA can write (fwd_params.hpp, FwdArguments::tma_out).
  static constexpr bool kOStageInQ = kBf16 && kHeadDim > 64;
  static constexpr bool kTmaOut = kHeadDim == 256 || kBf16 || kPromotion != PvPromotion::EveryN;
  /// Rounds of the stores through a stage that holds 1 / kORounds of a warpgroup's O: E4M3's off
  /// and every-block kernels at 256 have room for half (32 KB) and a quarter (16 KB; the
  /// every-block kernel also holds a paged cache's per-token descales) of their 64 KB.
  static constexpr int kORounds = kHeadDim != 256 || kBf16 || kPromotion == PvPromotion::EveryN ? 1
                                  : kPromotion == PvPromotion::EveryBlock                        ? 4
                                                                                                 : 2;
  static constexpr uint32_t kOBoxBytes = 64u * 128u;  ///< one box: 64 rows × 64 BF16 columns
  static constexpr int kOBoxes = kHeadDimO / 64;      ///< boxes per warpgroup
  /// Bytes from one of a warpgroup's boxes to the next: adjacent in a stage of its own, a Q chunk
  /// apart in Q's buffer.
  static constexpr uint32_t kOBoxStride = kOStageInQ ? kQChunkBytes : kOBoxBytes;
  static constexpr uint32_t kOStageBytes = kConsumers * (kOBoxes / kORounds) * kOBoxBytes;
};

/// O's stage (FwdConfig::kTmaOut): consumer c's boxes from o_stage + c · kOBoxes · kOBoxBytes.
/// NOTE: a base class, empty in the kernels without one: a placeholder member would take 16 bytes
/// and move the swizzled tiles after it off their 1024-byte period.
template <class Cfg, bool = Cfg::kTmaOut && !Cfg::kOStageInQ>
struct FwdOStage {};
template <class Cfg>
struct FwdOStage<Cfg, true> {
  alignas(16) uint8_t o_stage[Cfg::kOStageBytes];
};

/// Shared memory of one CTA, placed by the kernel on a 1024-byte boundary. The swizzled tiles
/// start on their 1024-byte period because every tile before them is a whole number of periods
/// (checked below), O's stage first when the kernel has one; raw V and Vᵀ only need 16-byte
/// alignment.
/// NOTE: no member is alignas(1024): that would round the storage's size up to a whole 1024 bytes
/// (and the kernel's storage, with the telemetry slots after it, once more), which is the room the
/// BF16 head_dim-256 kernel's per-token descales need under the 227 KB limit.
template <class Cfg>
struct FwdSharedStorage : FwdOStage<Cfg> {
  alignas(16) uint8_t q[Cfg::kChunks][Cfg::kQChunkBytes];
  alignas(16) uint8_t k[Cfg::kStages][Cfg::kChunks][Cfg::kKChunkBytes];
  alignas(16) uint8_t v[Cfg::kVStages][Cfg::kVBytes];  // V rows as loaded (BF16: in K's chunks, N-major B of P·V)
  alignas(16) uint8_t vt[Cfg::kStages][Cfg::kVtBytes];  // Vᵀ, written by the producer (E4M3 only)
  uint64_t q_full, q_empty;
  uint64_t k_full[Cfg::kStages], v_full[Cfg::kStages], vt_full[Cfg::kStages], kv_empty[Cfg::kStages];
  /// The stage's K read: the consumers' Q·Kᵀ of its block has completed (kv_empty: P·V too, so V,
  /// Vᵀ and the whole stage are free).
  uint64_t k_empty[Cfg::kStages];
  /// A paged cache (fwd_paged_kv.hpp): the stage's block {batch, KV head, first key}, posted by
  /// the loading thread with one arrival on kv_request for warps 1-3.
  uint64_t kv_request[Cfg::kStages];
  int32_t kv_block[Cfg::kStages][4];
  /// A paged cache's per-(token, head) descales of the stage's block: K's [0, BlockN), V's
  /// [BlockN, 2·BlockN) (fwd_kv_token_scales.hpp), written by warps 1-3 before k_full.
  /// NOTE: the kernels that take them: E4M3's every-block ones (E4M3 P's descales promote every
  /// block) and every BF16 one (V's whole on P̃); the plan picks no other kernel for them, and the
  /// others keep a one-float placeholder.
  static constexpr bool kTokenScales = Cfg::kBf16 || Cfg::kPromotion == PvPromotion::EveryBlock;
  float kv_token_scale[Cfg::kStages][kTokenScales ? 2 * Cfg::kBlockN : 1];
  /// A decode launch's split count, decided once per CTA from device memory before any role
  /// starts (kernels/sm90/decode/decode_tile_scheduler.hpp).
  int32_t decode_splits;

  // The swizzle's base offset is 0 only on a 1024-byte period (PTX_FACTS.md): Q and K's chunks
  // (Q·Kᵀ's operands, 64B or 128B swizzle), V (BF16: P·V's B through 128B swizzle) and Vᵀ (32B
  // swizzle when loaded by TMA).
  /// The raw V rows of stage `stage` (FwdConfig::kVStages).
  FP8ATTN_HOST_DEVICE uint8_t* v_rows(int stage) { return v[Cfg::kVStages == 1 ? 0 : stage]; }
  FP8ATTN_HOST_DEVICE const uint8_t* v_rows(int stage) const { return v[Cfg::kVStages == 1 ? 0 : stage]; }

  static_assert(Cfg::kQChunkBytes % 1024 == 0 && Cfg::kKChunkBytes % 1024 == 0 && Cfg::kVBytes % 1024 == 0 &&
                    (!Cfg::kTmaOut || Cfg::kOStageInQ || Cfg::kOStageBytes % 1024 == 0),
                "each tile a whole number of 1024-byte periods, so the next starts on one");
};

/// Extra dynamic shared memory to align the storage to the 1024-byte swizzle period.
inline constexpr uint32_t kFwdSmemSlack = 1024;

}  // namespace fp8attn::sm90
