// The decode path of the CPU engine (desc.decode): GQA-packed tiles over KV splits, the splits'
// partials merged by the combine rule (kernels/sm90/combine/combine_math.hpp). The work split is
// kernels/sm90/decode_schedule.hpp's, shared with any decode kernel.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/attention/attention_config.hpp"
#include "lib/attention/attention_problem.hpp"
#include "lib/core/thread_pool.hpp"

namespace fp8attn::engine {

/// The splits a call runs: desc.num_splits, or the heuristic's choice for `max_seqlen_k` keys
/// (the longest real sequence at the call; an upper bound when sizing the workspace), which does
/// not depend on the thread count (sm90::kDecodeHeuristicWorkers).
int decode_num_splits(const AttentionConfig& config, int64_t batch, int64_t max_seqlen_q, int64_t max_seqlen_k);

/// Bytes of workspace: per-worker tile scratch and decoded K/V blocks, the work-item table and
/// the splits' partials (O in F32 and LSE per split and row).
size_t decode_engine_workspace_size(const AttentionConfig& config, int workers, int64_t batch, int64_t max_seqlen_q,
                                    int64_t max_seqlen_k);

/// Runs the decode forward; writes problem.out, problem.lse, problem.telemetry and problem.amax.
/// Throws NUMERICS (after writing) when an output is not finite.
void decode_engine_forward(const AttentionConfig& config, const AttentionProblem& problem, ThreadPool& pool,
                           void* workspace);

}  // namespace fp8attn::engine
