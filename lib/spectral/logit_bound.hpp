// The per-layer logit bound of geometry-aware scaling, kept in one place (DESIGN §3):
// L = α·max_h σ_h·B_X²/√d_h, and the FP8 logit scale 448 / L.
#pragma once

#include <cmath>
#include <cstdint>

namespace fp8attn {

/// E4M3's largest finite value: the scaled logit bound lands exactly on it.
inline constexpr float kE4M3Max = 448.0f;
/// E5M2's largest finite value.
inline constexpr float kE5M2Max = 57344.0f;

/// L = α·σ_max·B_X²/√d_h. For ‖x_i‖, ‖x_j‖ ≤ B_X: |x_iᵀ·M_h·x_j|/√d_h ≤ σ_h·B_X²/√d_h, with
/// equality for x_i = B_X·u_1, x_j = B_X·v_1 (M_h's top singular pair), so α = 1 is a tight,
/// guaranteed bound.
inline double logit_bound(double sigma_max, int32_t head_dim, double token_norm_bound, double alpha) {
  return alpha * sigma_max * token_norm_bound * token_norm_bound / std::sqrt(static_cast<double>(head_dim));
}

/// 448 / L: maps the bound onto the top of E4M3's range.
inline double logit_scale_from_bound(double bound) { return static_cast<double>(kE4M3Max) / bound; }

}  // namespace fp8attn
