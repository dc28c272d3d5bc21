// The FP64 oracle of the attention backward: exact math, written plainly, for tests and tools.
// It runs on dense double tensors (not on a validated problem), so that a test can perturb its
// inputs for finite differences: the forward here is the loss's own forward, and the backward is
// the gradient of L = Σ dout∘out with respect to q, k and v, with the masks of kernels/sm90/mask.hpp.
//
// Layouts (rows of all sequences stacked; cu_q / cu_k hold batch + 1 row offsets):
//   q, dq [rows_q][heads_q][head_dim]     k, dk [rows_k][heads_kv][head_dim]
//   v, dv [rows_k][heads_kv][head_dim_v]  out, dout [rows_q][heads_q][head_dim_v]
//   lse   [rows_q][heads_q], natural log, −inf for a row with no visible key.
// Uses config's head dims and counts, causal, window and softmax_scale; nothing else applies
// (the forward's rounding options have no meaning in exact math).
#pragma once

#include <cstdint>
#include <vector>

#include "lib/attention/attention_config.hpp"

namespace fp8attn {

/// batch + 1 offsets of `batch` sequences of `len` rows each: the padded layout's rows.
std::vector<int64_t> uniform_row_offsets(int64_t batch, int64_t len);

/// out = softmax(scale·Q·Kᵀ + mask)·V and its LSE, in double. `lse` may be null.
void oracle_forward_dense(const AttentionConfig& config, const std::vector<int64_t>& cu_q,
                          const std::vector<int64_t>& cu_k, const double* q, const double* k, const double* v,
                          double* out, double* lse);

/// dq, dk, dv (overwritten) of L = Σ dout∘out, out the attention of q, k, v above. With GQA, dk and
/// dv of a KV head sum over its query heads. Rows with no visible key, and keys that no row sees,
/// get zero gradients.
void oracle_backward_dense(const AttentionConfig& config, const std::vector<int64_t>& cu_q,
                           const std::vector<int64_t>& cu_k, const double* q, const double* k, const double* v,
                           const double* dout, double* dq, double* dk, double* dv);

}  // namespace fp8attn
