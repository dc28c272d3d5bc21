// Per-row arithmetic of the online softmax, written once for the Hopper kernel and the CPU
// tile engine. Every rounding step of the forward's softmax is a call below, so both sides make
// the same choices in the same order (DESIGN §3 "FP8 attention forward").
//
// Units: the running max is kept in raw S units (before any scale), as FlashAttention-3 does;
// `scale_log2` = softmax_scale · q_descale · k_descale · log2(e) turns S into the exp2 domain.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/arch/ex2.hpp"
#include "kernels/ptx/mma_order.hpp"
#include "kernels/sm90/tile_config.hpp"

namespace fp8attn::sm90 {

inline constexpr float kLog2e = 1.4426950408889634f;
inline constexpr float kLn2 = 0.6931471805599453f;
inline constexpr float kNegInf = -INFINITY;

/// scale_log2 = softmax_scale · log2(e) · q_descale · k_descale, folded in this order once per
/// (sequence, KV head), as the kernel's Params do.
FP8ATTN_HOST_DEVICE float logit_scale_log2(float softmax_scale, float q_descale, float k_descale) {
  return softmax_scale * kLog2e * q_descale * k_descale;
}

/// The logit scales of one (sequence, KV head), folded once per tile from the host's arguments
/// by the CPU engine's tiles and the kernels' consumers alike.
struct LogitScales {
  float scale_log2;     ///< raw S to the exp2 domain (logit_scale_log2)
  float natural_scale;  ///< raw S to natural logits: softmax_scale · q_descale · k_descale
  float tie_tol_raw;    ///< the stabilized variant's tie tolerance τ (natural units) in raw S units
};

FP8ATTN_HOST_DEVICE LogitScales logit_scales(float softmax_scale, float q_descale, float k_descale,
                                             float tie_tol) {
  const float natural = softmax_scale * q_descale * k_descale;
  return {logit_scale_log2(softmax_scale, q_descale, k_descale), natural, tie_tol / natural};
}

/// The max used for a row in the exp2 step: −inf (no visible key yet) becomes 0, so that
/// exp2(−inf − 0) = 0 rather than NaN.
/// One step of a block's row max: fmaxf, which a NaN never wins (as a compare-and-select that
/// keeps the running value, from −inf, would) and which the GPU runs as one FMNMX.
FP8ATTN_HOST_DEVICE float score_max(float running, float x) { return fmaxf(running, x); }

/// A block's row max once every step is in: +0 for a zero of either sign.
/// NOTE: fmaxf of +0 and −0 may return either, and the engine's vector max and the kernel's
/// quad butterfly take their steps in different orders; all that can tell them apart is the sign
/// of a zero max, so it is made +0 (x + 0 is x for any other x, −inf and NaN included).
FP8ATTN_HOST_DEVICE float block_max_of(float max_of_steps) { return max_of_steps + 0.0f; }

FP8ATTN_HOST_DEVICE float finite_or_zero(float row_max) { return row_max == kNegInf ? 0.0f : row_max; }

/// Factor that rescales O and l when the running max moves from `old_max` to `new_max`.
FP8ATTN_HOST_DEVICE float rescale_factor(float old_max, float new_max, float scale_log2) {
  return arch::ex2_approx((old_max - finite_or_zero(new_max)) * scale_log2);
}

/// The subtrahend of the exp2 step: max·scale_log2 − log2(S_p).
/// NOTE: the static P scale S_p = 2^p_scale_log2 enters as an offset in the exp2 domain, so P̃
/// lies in [0, S_p] and small P stay above E4M3's round-to-zero point 2⁻¹⁰ (P-cast paper;
/// FlashAttention-3 uses the same offset of 8).
FP8ATTN_HOST_DEVICE float max_scaled(float row_max, float scale_log2, float p_scale_log2) {
  return finite_or_zero(row_max) * scale_log2 - p_scale_log2;
}

/// P̃ = exp2(S·scale_log2 − max_scaled), one fused multiply-add then ex2.approx (on the host its
/// model, kernels/arch/ex2.hpp), as FlashAttention-3 computes it.
FP8ATTN_HOST_DEVICE float p_tilde(float s, float scale_log2, float max_scaled_value) {
  return arch::ex2_approx(fmaf(s, scale_log2, -max_scaled_value));
}

/// The stabilized variant's max for one block (DESIGN §3, "Stabilized safe softmax").
/// `block_max` is the block's row max r_m (raw units), `ties` the number of entries within the
/// tie tolerance of it. With ties, the max used for exp is shifted so that no P̄ equals 1:
/// β·r_m when r_m > 0, and 0 otherwise. NOTE: beyond the paper, the shift is capped so that
/// exp2((r_m − m′)·scale_log2) ≥ 2^−cap; a large β then cannot underflow l to zero.
FP8ATTN_HOST_DEVICE float stabilized_block_max(float block_max, int ties, float beta, float cap_log2,
                                                      float scale_log2) {
  if (ties <= 1 || block_max == kNegInf) return block_max;
  float shifted = block_max > 0.0f ? beta * block_max : 0.0f;
  const float capped = block_max + cap_log2 / scale_log2;
  if (shifted > capped) shifted = capped;
  return shifted > block_max ? shifted : block_max;
}

/// Final row sum from the four per-thread partial sums of a quad (columns 2q, 2q+1, 8+2q, ...
/// belong to partial q, per the wgmma D fragment): the butterfly of shfl_xor 2 then 1.
FP8ATTN_HOST_DEVICE float quad_sum(float p0, float p1, float p2, float p3) { return (p0 + p2) + (p1 + p3); }

/// Which quad partial a column of the S tile belongs to (wgmma D fragment, PTX_FACTS §1).
FP8ATTN_HOST_DEVICE constexpr int quad_partial_of_column(int col) { return (col >> 1) & 3; }

/// O's epilogue factor: v_descale / l, with l = 0 (no visible key) or NaN giving v_descale
/// (O is zero there).
FP8ATTN_HOST_DEVICE float output_factor(float row_sum, float v_descale) {
  const float inv = (row_sum == 0.0f || row_sum != row_sum) ? 1.0f : 1.0f / row_sum;
  return inv * v_descale;
}

/// Log-sum-exp in natural-log units: (m·scale_log2 − log2 S_p)·ln 2 + ln l; −inf for an empty row.
FP8ATTN_HOST_DEVICE float row_lse(float row_max, float row_sum, float scale_log2, float p_scale_log2) {
  if (row_sum == 0.0f || row_sum != row_sum) return kNegInf;
  return max_scaled(row_max, scale_log2, p_scale_log2) * kLn2 + logf(row_sum);
}

/// A decode split's partial LSE, for the merge of the splits: row_lse, but NaN for a NaN row sum.
/// NOTE: row_lse makes a NaN sum −inf, the LSE of an empty row, and the merge leaves a −inf part
/// out (combine_math.hpp): a NaN input would vanish from the result with several splits, where
/// one split gives NaN. A NaN partial LSE poisons the merged row instead.
FP8ATTN_HOST_DEVICE float partial_row_lse(float row_max, float row_sum, float scale_log2, float p_scale_log2) {
  return row_sum != row_sum ? row_sum : row_lse(row_max, row_sum, scale_log2, p_scale_log2);
}

/// The backward's D = rowsum(dO∘O) = Σ_e g(e)·o(e) over `dim` elements, added as the BF16 tile
/// product that forms dP = dO·Vᵀ adds (kernels/ptx/mma_order.hpp): instructions of `mma_k`
/// elements, each by arch::mma_instruction under `model`, chained from +0.
/// NOTE: a row that sees a single key has O = V bit for bit (P = 1 and a BF16 output), so dP and D
/// are then the same instructions over the same products: dS = P·(dP − D) is exactly 0, and so are
/// that row's dQ and its key's dK. Added any other way they differ by rounding (~1e-6).
template <class G, class O>
FP8ATTN_HOST_DEVICE float row_delta(int dim, int mma_k, arch::MmaPrecisionModel model, G&& g, O&& o) {
  const arch::MmaFormat format = mma_k == arch::kMmaKBf16 ? arch::MmaFormat::BF16 : arch::MmaFormat::E4M3;
  const arch::MmaRule rule = arch::mma_rule(model, format, format);
  float sum = 0.0f;
  for (int k0 = 0; k0 < dim; k0 += mma_k) {
    const int len = k0 + mma_k <= dim ? mma_k : dim - k0;
    sum = arch::mma_instruction(sum, len, [&](int k) { return g(k0 + k); }, [&](int k) { return o(k0 + k); }, rule);
  }
  return sum;
}

}  // namespace fp8attn::sm90
