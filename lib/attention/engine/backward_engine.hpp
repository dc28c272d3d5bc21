// The CPU engine's attention backward (issue 12): BF16 inputs, FlashAttention-2's algorithm on the
// forward's tiles, masks and block schedule (kernels/sm90/tile_config.hpp, mask.hpp,
// kv_schedule.hpp), with P recomputed from the LSE and the kernel's BF16 casts of P and dS.
//
// Two parallel passes over the context's workers:
// 1. key blocks (sequence, KV head, block of block_n keys) → dK, dV;
// 2. query blocks (sequence, query head, block of block_m rows) → dQ.
// NOTE: the separate dQ pass (FlashAttention-2's deterministic variant) recomputes S and dP once
// more, 7 tile products per (query block, key block) instead of 5, but gives every output element
// to one worker: no atomics and no per-block dQ partials, so results are the same bits on any
// thread count, whatever args.deterministic says.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/attention/attention_backward_problem.hpp"
#include "lib/attention/attention_config.hpp"
#include "lib/core/thread_pool.hpp"

namespace fp8attn::engine {

/// Bytes of workspace for `workers` workers and up to `batch` sequences: every per-call buffer.
size_t backward_engine_workspace_size(const AttentionConfig& config, int workers, int64_t batch);

/// Runs the backward; writes problem.dq, dk and dv. Throws NUMERICS (after writing) when a
/// gradient is not finite.
void backward_engine_run(const AttentionConfig& config, const AttentionBackwardProblem& problem, ThreadPool& pool,
                         void* workspace);

}  // namespace fp8attn::engine
