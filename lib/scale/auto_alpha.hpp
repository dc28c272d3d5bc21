// auto-α of geometry-aware scaling (DESIGN §3): start at α = 1, a guaranteed bound. During a
// burn-in of W steps record ρ = observed max|S| / (σ_max·B_X²/√d_h) as a running max with
// decay (O(1) memory); then fix α = min(1, ρ_max·(1 + margin)).
#pragma once

#include <cstdint>

namespace fp8attn {

struct AutoAlpha {
  float alpha = 1.0f;
  float rho_max = 0.0f;
  int32_t steps_seen = 0;  ///< burn-in steps with a known σ
  bool done = false;

  /// One step's observation. `unit_bound` is σ_max·B_X²/√d_h (the α = 1 bound) and
  /// `observed` the step's max|S| (0 when none was reported, which still counts as a step).
  /// `burn_in_steps` < 0 disables auto-α: α stays 1.
  void observe(double observed, double unit_bound, int32_t burn_in_steps, float margin, float decay);
};

}  // namespace fp8attn
