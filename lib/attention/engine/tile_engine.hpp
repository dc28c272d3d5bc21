// The CPU tile engine: FP8 (or BF16) attention forward computed exactly as the Hopper kernel
// computes it (DESIGN §3): the same BlockM × BlockN tiles, KV blocks in the same order, the
// same online-softmax arithmetic (kernels/sm90/softmax_math.hpp), the same casts of P̃ and the
// same MMA summation order. Work runs over (sequence, KV head, a run of query tiles) on all
// workers, each item computing its tiles for every query head of the KV group from K and V
// blocks decoded once; each tile is computed by one worker, so results do not depend on the
// thread count.
#pragma once

#include <cstddef>
#include <functional>

#include "kernels/ptx/mma_order.hpp"
#include "lib/attention/attention_config.hpp"
#include "lib/attention/attention_problem.hpp"
#include "lib/core/thread_pool.hpp"

namespace fp8attn::engine {

/// Options that only tests and studies set.
struct EngineHooks {
  /// Called for each (query tile row, KV block) with the cast P values that enter the PV
  /// product (keys [key_begin, key_begin + count)). Used by tests of the stabilized softmax.
  std::function<void(int64_t b, int head, int64_t row, int64_t key_begin, const float* p_cast, int count)> on_p_cast;
};

/// Bytes of workspace for `workers` workers, up to `batch` sequences and up to `max_seqlen_k`
/// keys per sequence: every per-call buffer, including each worker's decoded K and V blocks of
/// one (sequence, KV head) (max_seqlen_k · (head_dim + head_dim_v) floats).
size_t tile_engine_workspace_size(const AttentionConfig& config, int workers, int64_t batch, int64_t max_seqlen_k);

/// Runs the forward; writes problem.out, problem.lse and problem.telemetry. Throws NUMERICS
/// (after writing) when an output is not finite.
void tile_engine_forward(const AttentionConfig& config, const AttentionProblem& problem, ThreadPool& pool,
                         void* workspace, const EngineHooks& hooks = {});

}  // namespace fp8attn::engine
