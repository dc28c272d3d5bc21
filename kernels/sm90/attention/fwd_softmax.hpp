// The online softmax of one KV block on a consumer warpgroup's S fragment: mask, row max (with
// the stabilized variant's tie count and shift), exp2, FP32 row sums per quad thread, and the
// E4M3 or BF16 cast of P̃, in the order of the CPU engine
// (lib/attention/engine/query_tile.cpp). Every rounding step is a call into the shared
// kernels/sm90/softmax_math.hpp.
//
// Fragment facts (wgmma_fragment.hpp): thread t = 32w + 4g + q holds rows 16w + g (h = 0) and
// 16w + g + 8 (h = 1) of its warpgroup's 64; register i holds column 8(i/4) + 2q + i%2 of row
// h = (i/2)%2. A row is spread over the 4 threads of a quad, so row reductions are two
// butterfly shuffles.
#pragma once

#include <cstdint>

#include "kernels/arch/cvt.hpp"
#include "kernels/arch/warp.hpp"
#include "kernels/arch/wgmma.hpp"
#include "kernels/sm90/attention/fwd_kv_token_scales.hpp"
#include "kernels/sm90/attention/fwd_params.hpp"
#include "kernels/sm90/mask.hpp"
#include "kernels/sm90/softmax_math.hpp"

namespace fp8attn::sm90 {

/// Per-thread running state of its two rows.
struct FwdRowState {
  float max[2];      ///< running max, raw S units (−inf before the first visible key)
  float partial[2];  ///< this quad thread's partial row sum of P̃ (sm90::quad_partial_of_column)
};

/// Per-thread telemetry of the current tile; each warp folds it into its shared-memory slot at
/// the end of the tile (fwd_epilogue.hpp), and the CTA's slots are merged at the end of the kernel.
/// NOTE: only the tile's counts live in registers (32 bits suffice for one tile): 64-bit running
/// totals per thread spilled the overlapped head_dim 128 consumers (ptxas -warn-spills).
struct FwdThreadTelemetry {
  uint32_t tile_positive = 0;
  uint32_t tile_underflow = 0;
  float tile_max_abs_raw = 0.0f;  ///< max |S| of the current tile, raw units
};

/// What the softmax of one block needs to know about the tile and the block (the mask and the
/// stabilized variant's options come from the tile and the kernel's arguments).
struct FwdBlockSoftmax {
  float scale_log2;      ///< softmax_scale · log2 e · q_descale · k_descale
  float block_factor;    ///< per-block descales q_block · k_block, folded into S
  float tie_tol_raw;     ///< the stabilized variant's tie tolerance τ in raw S units
  bool apply_block_factor;
  bool full;             ///< every key of the block visible to every row of the tile
  int32_t key0;          ///< first key of the block
  int32_t keys;          ///< keys in the block (≤ BlockN; the rest of S is padding)
  int32_t row_lo;        ///< sequence row of this thread's h = 0 row
  int32_t vis_first[2];  ///< visible_keys of this thread's rows (h = 0, 1), once per tile
  int32_t vis_last[2];   ///< NOTE: 32-bit, not MaskParams live in the loop: registers (fwd_config.hpp)
  bool valid[2];         ///< this thread's rows lie inside the sequence (telemetry counts them)
};

namespace softmax_detail {

FP8ATTN_ARCH_FN float quad_max(float x) {
  x = score_max(x, arch::shfl_xor_sync(0xffffffffu, x, 1));
  return score_max(x, arch::shfl_xor_sync(0xffffffffu, x, 2));
}

FP8ATTN_ARCH_FN int quad_add(int x) {
  x += arch::shfl_xor_sync(0xffffffffu, x, 1);
  return x + arch::shfl_xor_sync(0xffffffffu, x, 2);
}

/// Each register's mask (kMasked) and the rows' block max; with telemetry, max |S| of the visible
/// scores. Every register of an unmasked block is visible.
/// NOTE: two bounds per row, not a test of key0 + col per register: that form spilled the
/// overlapped head_dim 128 consumers (ptxas -warn-spills).
/// NOTE: padding columns past the block's keys are masked like invisible keys: P̃ = 0 there adds
/// exact zeros to the row sums and to P·V, which the engine never visits.
template <int kBlockN, bool kTelemetry, bool kMasked>
FP8ATTN_ARCH_FN void mask_and_max(arch::WgmmaAccF32<kBlockN>& s, const FwdBlockSoftmax& b, float (&block_max)[2],
                                  float (&tile_abs)[2]) {
  // The visible columns of each row, [lo, hi], less this thread's column offset 2q, so that each
  // register compares its compile-time column 8(i/4) + i%2 against them.
  int32_t lo[2] = {0, 0}, hi[2] = {0, 0};
  if constexpr (kMasked) {
    const int q = static_cast<int>(arch::thread_idx_in_warpgroup() % 4);
    FP8ATTN_UNROLL
    for (int h = 0; h < 2; ++h) {
      lo[h] = (b.full ? 0 : b.vis_first[h] - b.key0) - 2 * q;
      int32_t last = b.keys - 1;
      if (!b.full && b.vis_last[h] - b.key0 < last) last = b.vis_last[h] - b.key0;
      hi[h] = last - 2 * q;
    }
  }
  FP8ATTN_UNROLL
  for (int i = 0; i < kBlockN / 2; ++i) {
    const int h = (i >> 1) & 1;
    const int c = 8 * (i >> 2) + (i & 1);  // the column is c + 2q
    float x = s[i];
    bool visible = true;
    if constexpr (kMasked) {
      visible = c >= lo[h] && c <= hi[h];
      x = visible ? x : kNegInf;
      s[i] = x;
    }
    block_max[h] = score_max(block_max[h], x);
    if constexpr (kTelemetry) {
      const float a = x < 0.0f ? -x : x;
      if (visible && tile_abs[h] < a) tile_abs[h] = a;
    }
  }
}

}  // namespace softmax_detail

/// Runs the softmax of one block on `s` (raw Q·Kᵀ in, FP32 P̃ out), updates `rows`, returns the
/// rescale factor of each row in `rescale`, and leaves FP32 P̃ in `s` for the cast after the P·V
/// wait (cast_p_e4m3, cast_p_bf16), which counts P's telemetry.
/// With `token_scales` (the stage's per-(token, head) descales of a paged cache, shared memory:
/// fwd_kv_token_scales.hpp), K's multiply the logits after the per-block factor, and P̃ is scaled
/// by V's ratios after the row sums; the block's largest V descale goes to `v_largest`. BF16 P
/// takes V's whole instead, in make_p, and leaves `v_largest` (kv_cache_math.hpp).
/// kPlain: the block is a plain one (block_is_plain, fwd_block_step.hpp): the caller has checked that
/// none of the branches the general form takes applies, so this form compiles none of them. Both forms run
/// the same operations on such a block, so the bits do not depend on which one runs.
template <int kBlockN, bool kTelemetry, bool kBf16 = false, bool kPlain = false>
FP8ATTN_ARCH_FN void softmax_block(arch::WgmmaAccF32<kBlockN>& s, const FwdBlockSoftmax& b, const FwdArguments& p,
                                   FwdRowState& rows, float (&rescale)[2],
                                   FwdThreadTelemetry& tel, const float* token_scales = nullptr,
                                   float* v_largest = nullptr) {
  constexpr int kRegs = kBlockN / 2;
  float block_max[2] = {kNegInf, kNegInf};
  float tile_abs[2] = {0.0f, 0.0f};
  // NOTE: the per-block descales fold into S in a pass of their own on the blocks of a call that
  // has them (one uniform branch), not as a select on every element of every block.
  if (!kPlain && b.apply_block_factor) {
    FP8ATTN_UNROLL
    for (int i = 0; i < kRegs; ++i) s[i] *= b.block_factor;
  }
  if (!kPlain && token_scales != nullptr) apply_k_token_scales<kBlockN>(s, token_scales);
  // NOTE: only the blocks that need it are masked (FlashAttention-3 masks its boundary, causal-
  // diagonal and window-edge blocks): one whose keys every row of the tile sees (`full`, from
  // mask.hpp's keys_inside, as the engine decides) and that has no padding columns takes the
  // max alone. Both forms give every score the same value, so the bits do not change.
  if (kPlain || (b.full && b.keys == kBlockN))
    softmax_detail::mask_and_max<kBlockN, kTelemetry, false>(s, b, block_max, tile_abs);
  else
    softmax_detail::mask_and_max<kBlockN, kTelemetry, true>(s, b, block_max, tile_abs);
  FP8ATTN_UNROLL
  for (int h = 0; h < 2; ++h) {
    block_max[h] = block_max_of(softmax_detail::quad_max(block_max[h]));
    if constexpr (kTelemetry)
      if (b.valid[h] && tel.tile_max_abs_raw < tile_abs[h]) tel.tile_max_abs_raw = tile_abs[h];
  }
  if (!kPlain && p.stabilized) {
    // NOTE: two counters and two butterflies, not both rows packed in one word for one: the
    // packed form spilled the overlapped head_dim 128 consumer (ptxas -warn-spills: 56 bytes).
    int ties[2] = {0, 0};
    FP8ATTN_UNROLL
    for (int i = 0; i < kRegs; ++i) {
      const int h = (i >> 1) & 1;
      ties[h] += (block_max[h] - s[i] <= b.tie_tol_raw) ? 1 : 0;
    }
    FP8ATTN_UNROLL
    for (int h = 0; h < 2; ++h) {
      ties[h] = softmax_detail::quad_add(ties[h]);
      if (block_max[h] != kNegInf)
        block_max[h] = stabilized_block_max(block_max[h], ties[h], p.stabilized_beta, p.stabilized_shift_cap_log2,
                                            b.scale_log2);
    }
  }
  float subtrahend[2];
  FP8ATTN_UNROLL
  for (int h = 0; h < 2; ++h) {
    const float old_max = rows.max[h];
    const float new_max = old_max < block_max[h] ? block_max[h] : old_max;
    rescale[h] = rescale_factor(old_max, new_max, b.scale_log2);
    subtrahend[h] = max_scaled(new_max, b.scale_log2, p.p_scale_log2);
    rows.max[h] = new_max;
    rows.partial[h] *= rescale[h];
  }
  // NOTE: the row sum takes FP32 P̃ before the cast (FlashAttention-3), in ascending columns.
  FP8ATTN_UNROLL
  for (int i = 0; i < kRegs; ++i) {
    const int h = (i >> 1) & 1;
    s[i] = p_tilde(s[i], b.scale_log2, subtrahend[h]);
    rows.partial[h] += s[i];
  }
  if (!kPlain && token_scales != nullptr) {
    // NOTE: BF16 P takes V's whole descales in make_p (fwd_block_step.hpp), just before its cast,
    // where the previous block's P is no longer live: here, next to S, O and that P, the
    // overlapped head_dim 128 consumer spilled (ptxas -warn-spills: 32 to 72 bytes).
    if constexpr (!kBf16) {
      *v_largest = v_token_largest<kBlockN>(token_scales, b.keys);
      apply_v_token_ratios<kBlockN>(s, token_scales, b.keys, *v_largest);
    }
  }
}

/// BF16 P for P·V: pair pr of FP32 P̃ (see softmax_block) through cvt.rn.bf16x2 is register
/// pr % 4 of fragment pr / 4, already the RS A layout (PTX_FACTS.md §2a); counts telemetry as
/// the engine's row_cast_p<false> (a positive P̃ whose BF16 is +0 underflowed).
/// NOTE: called after the wait for the previous block's P·V, as FlashAttention-3 converts P: with
/// the cvt inside the softmax, ptxas gave the cvt's results the registers of the P that the
/// in-flight P·V still read and serialized every wgmma of the kernel (C7513).
template <int kBlockN, bool kTelemetry>
FP8ATTN_ARCH_FN void cast_p_bf16(const arch::WgmmaAccF32<kBlockN>& s, const FwdBlockSoftmax& b,
                                 arch::WgmmaAFragment (&pf)[kBlockN / 16], FwdThreadTelemetry& tel) {
  FP8ATTN_UNROLL
  for (int pr = 0; pr < kBlockN / 4; ++pr) {  // pair pr = 2c + h
    const uint32_t halves = arch::cvt_bf16x2(s[2 * pr], s[2 * pr + 1]);
    pf[pr >> 2].reg[pr & 3] = halves;
    if constexpr (kTelemetry) {
      if (b.valid[pr & 1]) {
        tel.tile_positive += (s[2 * pr] > 0.0f) + (s[2 * pr + 1] > 0.0f);
        tel.tile_underflow += (s[2 * pr] > 0.0f && (halves & 0xffffu) == 0) + (s[2 * pr + 1] > 0.0f && (halves >> 16) == 0);
      }
    }
  }
}

/// E4M3 P for P·V: pair pr = 2c + h of FP32 P̃ (columns 8c + 2q, + 1 of row half h) through
/// cvt.rn.satfinite.e4m3x2 is half c % 2 of register 2·((c % 4) / 2) + h of fragment c / 4, which
/// is the A layout because V's rows follow the P·V key order (kernels/sm90/pv_key_order.hpp): no
/// shuffle. Counts telemetry as the engine's row_cast_p<true> (a positive P̃ whose E4M3 is +0
/// underflowed).
/// NOTE: called after the wait for the previous block's P·V (as cast_p_bf16): with the cast in
/// the softmax and P copied into the fragments after the wait, ptxas merged the copy away, gave
/// the cast the registers of the P that the in-flight P·V still read and serialized every wgmma
/// (C7513).
template <int kBlockN, bool kTelemetry>
FP8ATTN_ARCH_FN void cast_p_e4m3(const arch::WgmmaAccF32<kBlockN>& s, const FwdBlockSoftmax& b,
                                 arch::WgmmaAFragment (&pf)[kBlockN / 32], FwdThreadTelemetry& tel) {
  FP8ATTN_UNROLL
  for (int c = 0; c < kBlockN / 8; c += 2)
    FP8ATTN_UNROLL
    for (int h = 0; h < 2; ++h) {
      const int lo = 2 * (2 * c + h), hi = 2 * (2 * (c + 1) + h);  // the pairs of groups c, c + 1
      const uint32_t low = arch::cvt_e4m3x2(s[lo], s[lo + 1]), high = arch::cvt_e4m3x2(s[hi], s[hi + 1]);
      pf[c / 4].reg[2 * ((c % 4) / 2) + h] = low | high << 16;
      if constexpr (kTelemetry) {
        if (b.valid[h]) {
          tel.tile_positive += (s[lo] > 0.0f) + (s[lo + 1] > 0.0f) + (s[hi] > 0.0f) + (s[hi + 1] > 0.0f);
          tel.tile_underflow += (s[lo] > 0.0f && (low & 0xffu) == 0) + (s[lo + 1] > 0.0f && (low >> 8) == 0) +
                                (s[hi] > 0.0f && (high & 0xffu) == 0) + (s[hi + 1] > 0.0f && (high >> 8) == 0);
        }
      }
    }
}

/// One E4M3 A fragment of P, the K slots [32·kb, 32·kb + 32), cast from FP32 P̃ as cast_p_e4m3
/// does (no telemetry): the planted fault's early cast (FwdFault::RewritePBeforeWait).
template <int kBlockN>
FP8ATTN_ARCH_FN arch::WgmmaAFragment p_fragment(const arch::WgmmaAccF32<kBlockN>& s, int kb) {
  arch::WgmmaAFragment a;
  FP8ATTN_UNROLL
  for (int r = 0; r < 4; ++r) {
    const int c = 4 * kb + 2 * (r / 2), h = r % 2;
    const int lo = 2 * (2 * c + h), hi = 2 * (2 * (c + 1) + h);
    a.reg[r] = arch::cvt_e4m3x2(s[lo], s[lo + 1]) | arch::cvt_e4m3x2(s[hi], s[hi + 1]) << 16;
  }
  return a;
}

}  // namespace fp8attn::sm90
