// The CPU engine's attention backward: BF16 inputs, FlashAttention-2's algorithm on the
// backward's tiles (attention_bwd_tile, shared with the sm_90a kernel) and the forward's masks
// and block schedule (kernels/sm90/tile_config.hpp, mask.hpp, kv_schedule.hpp),
// with P recomputed from the LSE and the kernel's BF16 casts of P and dS.
//
// Two parallel passes over the context's workers:
// 1. key blocks (sequence, KV head, block of block_n keys) → dK, dV, and dS·K added into an F32
//    dQ accumulator in ascending key-block order (backward_tile.hpp);
// 2. query blocks (sequence, query head, block of block_m rows) → dq = softmax_scale·accumulator.
// NOTE: FlashAttention-2's other deterministic schedule, a separate dQ pass over query blocks,
// recomputes S and dP there: 7 tile products per (query block, key block) instead of 5, 40 % more
// work for the same bits-on-any-thread-count promise. The ordered adds cost a wait only when a key
// block catches up with the one before it. The result does not depend on args.deterministic.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/attention/attention_backward_problem.hpp"
#include "lib/attention/attention_config.hpp"
#include "lib/core/thread_pool.hpp"

namespace fp8attn::engine {

/// `config` with the backward's tiles (sm90::attention_bwd_tile), which both passes use.
AttentionConfig with_backward_tile(const AttentionConfig& config);

/// Bytes of workspace for `workers` workers and up to `batch` sequences of up to `max_seqlen_q`
/// queries: every per-call buffer, the dQ accumulator (batch·max_seqlen_q·heads_q·head_dim F32)
/// included.
size_t backward_engine_workspace_size(const AttentionConfig& config, int workers, int64_t batch,
                                      int64_t max_seqlen_q);

/// Runs the backward; writes problem.dq, dk and dv. Throws NUMERICS (after writing) when a
/// gradient is not finite.
void backward_engine_run(const AttentionConfig& config, const AttentionBackwardProblem& problem, ThreadPool& pool,
                         void* workspace);

}  // namespace fp8attn::engine
