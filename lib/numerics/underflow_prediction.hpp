// Predictions of P-cast underflow under the sink model (DESIGN §3, "P-underflow prediction"):
// k sink keys with logit Δ + z, all other keys z, z ~ N(0, 1) in natural-log units.
#pragma once

#include <cstdint>

namespace fp8attn {

/// Standard normal CDF Φ.
double normal_cdf(double x);

/// δ_k = E[max of k i.i.d. N(0,1)], by numerical integration (δ₁ = 0, δ₂ ≈ 0.5642, δ₄ ≈ 1.0294).
double expected_max_of_normals(int k);

struct UnderflowPrediction {
  double leading_order;  ///< Φ(Δ + δ_k − ln 2¹⁰ − ln S_p), times the reverse share
  double expected;       ///< ∫ f_k(x)·Φ(Δ + x − ln 2¹⁰ − ln S_p) dx, times the reverse share
};

/// The in-block share for reverse order: (min(block_n, seqlen_k) − k) / (seqlen_k − k).
double reverse_order_share(int k_sink, int block_n, int64_t seqlen_k);

/// Both predictions. `reverse` multiplies them by reverse_order_share().
UnderflowPrediction predict_p_underflow(double sink_strength, int k_sink, double p_scale, bool reverse, int block_n,
                                        int64_t seqlen_k);

}  // namespace fp8attn
