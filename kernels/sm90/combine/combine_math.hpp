// The merge rule of fp8attn_attention_combine, written once for the CPU implementation
// (lib/combine/cpu_combine.cpp) and the kernel (combine_kernel.hpp), so both round alike.
//
// For one (token, head) row with partial LSEs lse_p (natural log) and partial outputs O_p:
//   m   = max_p lse_p
//   w_p = 2^((lse_p − m)·log2 e)          (arch::ex2_approx: the forward's own exp2)
//   s   = Σ_p w_p                         (FP32, parts in index order, from +0)
//   lse = m + log(s)                      (arch::natural_log: logf on the device, the host's own
//                                          log_model, the same bits in every host build)
//   out = Σ_p ((w_p · (1/s)) · O_p)       (FP32, parts in index order, from +0, each product and
//                                          sum rounded on its own: arch::mul_rn / add_rn)
// which is out = Σ_p exp(lse_p − lse)·O_p with each weight taken relative to the row's maximum.
// NOTE: the weights are w_p / s rather than exp(lse_p − lse): exp of a difference against the
// rounded lse would carry lse's rounding (an ulp of |lse|, up to ~1e-5 relative for |lse| ~ 100)
// into every weight; w_p / s is within a few ulp of the exact weight whatever the LSE's size.
//
// Special values:
//  - lse_p = −inf marks an empty part: w_p = 0 and its O_p is not read. A part whose weight
//    underflows (lse_p < m − 87.3, where exp2 flushes to 0) is not read either.
//  - every part −inf: out = 0, lse = −inf (no visible key anywhere).
//  - any lse_p NaN or +inf (+inf is no log-sum-exp a forward produces): out and lse are NaN.
//  - NaN or ±inf inside an O_p with a nonzero weight reaches out by IEEE arithmetic.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/arch/ex2.hpp"
#include "kernels/arch/fp_rn.hpp"
#include "kernels/arch/log.hpp"
#include "kernels/sm90/combine/combine_params.hpp"

namespace fp8attn::sm90::combine {

inline constexpr float kCombineLog2e = 1.4426950408889634f;

/// The running maximum over a row's LSEs, NaN once any LSE is NaN or +inf. Starts from −inf;
/// exact and order-free, so lanes may reduce it in any tree.
FP8ATTN_HOST_DEVICE float max_lse(float m, float lse_p) {
  // NOTE: `|`, not `||`: no short circuit, so a loop over rows vectorizes.
  const bool poison = (lse_p != lse_p) | (lse_p == INFINITY) | (m != m);
  return poison ? NAN : (lse_p > m ? lse_p : m);
}

/// w_p: 0 for an empty part (or an all-empty or poisoned row, m = −inf or NaN); else
/// 2^((lse_p − m)·log2 e) ∈ [0, 1], exactly 1 for the maximum.
FP8ATTN_HOST_DEVICE float part_weight(float lse_p, float m) {
  if (lse_p == -INFINITY || m == -INFINITY || m != m) return 0.0f;
  return arch::ex2_approx(arch::mul_rn(lse_p - m, kCombineLog2e));
}

/// The per-row factors from m and s = Σ w_p: `scale` multiplies each w_p, `lse` is the merged
/// LSE. An all-empty row gives scale 0 (out = 0) and −inf; a poisoned row NaN for both.
struct RowFactors {
  float scale, lse;
};
FP8ATTN_HOST_DEVICE RowFactors row_factors(float m, float weight_sum) {
  if (m != m) return {NAN, NAN};
  if (m == -INFINITY) return {0.0f, -INFINITY};
  // NOTE: s ≥ 1 (the maximum's weight is exactly 1), so 1/s and log(s) are finite.
  return {1.0f / weight_sum, arch::add_rn(m, arch::natural_log(weight_sum))};
}

/// One step of out's sum: acc + (w_p · scale) · o, each operation rounded on its own.
FP8ATTN_HOST_DEVICE float accumulate_part(float acc, float weight, float scale, float o) {
  return arch::add_rn(acc, arch::mul_rn(arch::mul_rn(weight, scale), o));
}

/// A poisoned row's out is NaN even where no part is read.
FP8ATTN_HOST_DEVICE float finish_out(float acc, float scale) { return scale != scale ? scale : acc; }

}  // namespace fp8attn::sm90::combine
