// σ_h = ‖W_Q,hᵀ·W_K,g(h)‖₂ for every query head, on the CPU: head Grams with OpenBLAS, then a
// warm-startable power iteration per head on the context's threads (DESIGN §3).
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/spectral/qk_weights.hpp"

namespace fp8attn {

class ThreadPool;

/// Power-iteration settings, already defaulted and checked.
struct PowerIterationSettings {
  int32_t max_iterations = 100;
  double tolerance = 1e-6;
  uint64_t seed = 0;
  float* warm_start = nullptr;      ///< optional in/out [heads_q·d_h]
  int32_t* iterations_out = nullptr; ///< optional out [heads_q]
  float* residual_out = nullptr;     ///< optional out [heads_q]
};

/// Workspace bytes of cpu_qk_spectral_norms() for `shape`.
size_t cpu_qk_spectral_workspace_size(const QkShape& shape);

/// Computes σ_h into sigma_out[heads_q]. Writes sigma_out and the settings' outputs only after
/// every head is done (nothing on failure). `workspace` has at least
/// cpu_qk_spectral_workspace_size(shape) bytes.
///
/// Under GQA each key group's Gram is computed once and shared by the group's query heads.
void cpu_qk_spectral_norms(const WeightMatrix& wq, const WeightMatrix& wk, const QkShape& shape,
                           const PowerIterationSettings& settings, float* sigma_out, void* workspace,
                           size_t workspace_bytes, ThreadPool& pool);

}  // namespace fp8attn

namespace fp8attn {

/// The same with a workspace it allocates itself: for callers that own no workspace (the
/// scale state, tools). Outputs as above.
void cpu_qk_spectral_norms_owned(const WeightMatrix& wq, const WeightMatrix& wk, const QkShape& shape,
                                 const PowerIterationSettings& settings, float* sigma_out, ThreadPool& pool);

}  // namespace fp8attn
