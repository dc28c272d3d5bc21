// The FP64 oracle: attention in exact math, written plainly. It dequantizes the inputs with
// their descales, computes a softmax in double with the same masks, casts nothing, and is the
// ground truth of the tests and the REFERENCE backend.
#pragma once

#include <cstddef>
#include <functional>

#include "lib/attention/attention_config.hpp"
#include "lib/attention/attention_problem.hpp"
#include "lib/core/thread_pool.hpp"

namespace fp8attn {

/// Receives one output row: sequence b, row index within the sequence, query head, the
/// head_dim_v outputs and the LSE (natural log; −inf for a row with no visible key).
using OracleRowSink = std::function<void(int64_t b, int64_t row, int head, const double* out, double lse)>;

/// Workspace bytes for oracle_attention with the pool's worker count.
size_t oracle_workspace_size(const AttentionConfig& config, int64_t max_seqlen_k, int workers);

/// Runs the oracle over every (sequence, head, row); `sink` may be called from any worker.
void oracle_attention(const AttentionConfig& config, const AttentionProblem& problem, ThreadPool& pool,
                      void* workspace, const OracleRowSink& sink);

}  // namespace fp8attn
