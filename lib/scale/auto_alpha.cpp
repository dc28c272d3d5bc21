#include "lib/scale/auto_alpha.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace fp8attn {

void AutoAlpha::observe(double observed, double unit_bound, int32_t burn_in_steps, float margin, float decay) {
  if (done || burn_in_steps < 0 || unit_bound <= 0.0) return;
  const double rho = observed / unit_bound;
  // NOTE: held at FLT_MAX: a ratio past FP32's range (a huge max|S| over a tiny bound) would make
  // ρ_max infinite, a state its own blob could not restore; α is min(1, …) either way.
  rho_max = static_cast<float>(std::min(std::max(static_cast<double>(rho_max) * decay, rho),
                                        static_cast<double>(std::numeric_limits<float>::max())));
  // NOTE: a restored state is checked to have steps_seen < burn_in_steps while not done, so this
  // cannot overflow; the guard keeps it so for any caller.
  if (steps_seen < INT32_MAX) ++steps_seen;
  if (steps_seen >= burn_in_steps) {
    done = true;
    // NOTE: no logit seen in the whole burn-in gives ρ_max = 0; α then stays at the
    // guaranteed 1 rather than collapsing the bound to 0.
    if (rho_max > 0.0f) alpha = std::min(1.0f, rho_max * (1.0f + margin));
  }
}

}  // namespace fp8attn
