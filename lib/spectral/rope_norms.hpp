// Logit norms under rotary position embeddings (DESIGN §3, "RoPE needs care"). The rotation
// R_Δ sits between the projections, S = x_iᵀ·W_Q,hᵀ·R_Δ·W_K,g·x_j/√d_h with Δ = j − i, so the
// norm of the interaction matrix depends on Δ and can exceed the un-rotated σ_h.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/spectral/qk_weights.hpp"

namespace fp8attn {

class ThreadPool;

/// Rotary embedding: pair p of a head turns by Δ·θ_p with θ_p = base^(−2p/d_h).
struct RopeSpec {
  double theta_base = 10000.0;
  bool interleaved = false;  ///< pairs (2p, 2p+1); else (p, p + d_h/2)
  int64_t min_offset = 0;
  int64_t max_offset = 0;
  int32_t max_iterations = 100;
  double tolerance = 1e-6;
  uint64_t seed = 0;
};

struct RopeNorms {
  std::vector<float> naive;     ///< ‖W_Q,h‖₂·‖W_K,g‖₂ per query head
  std::vector<float> pair_sum;  ///< Σ_p ‖W_Q,h,p‖₂·‖W_K,g,p‖₂ per query head
  std::vector<float> safe;      ///< min(naive, pair_sum)
  std::vector<float> exact;     ///< max over Δ in [min_offset, max_offset] of ‖W_Q,hᵀ·R_Δ·W_K,g‖₂
};

/// The two coordinates of a head that pair p rotates together.
void rope_pair(int32_t head_dim, bool interleaved, int32_t p, int32_t* first, int32_t* second);

/// Writes A = R_Δᵀ·G·R_Δ (n × n, row-major) for the symmetric G of one head.
void rotate_gram(const float* g, int32_t n, const RopeSpec& rope, int64_t offset, float* a);

/// Computes every figure of RopeNorms for all query heads; the exact maximum runs one power
/// iteration per (head, offset), warm-started from the previous offset, heads in parallel.
RopeNorms cpu_qk_rope_norms(const WeightMatrix& wq, const WeightMatrix& wk, const QkShape& shape,
                            const RopeSpec& rope, ThreadPool& pool);

}  // namespace fp8attn
