// One query tile of the CPU engine: the mainloop over its KV blocks, the online softmax and the
// epilogue, in the order the Hopper kernel runs them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/attention/attention_config.hpp"
#include "lib/attention/attention_problem.hpp"
#include "lib/attention/engine/tile_engine.hpp"

namespace fp8attn::engine {

/// Which tile: sequence, query head, first row (a multiple of BlockM).
struct QueryTileCoord {
  int64_t batch = 0;
  int head = 0;
  int64_t row_begin = 0;
};

/// Per-worker telemetry counters; merged after the parallel loop.
struct TileTelemetry {
  uint64_t p_positive = 0;
  uint64_t p_underflow = 0;
  float max_abs_scaled_logit = 0.0f;
  uint64_t nonfinite = 0;  ///< outputs (and LSEs other than an empty row's −inf) not finite
  void merge(const TileTelemetry& o) {
    nonfinite += o.nonfinite;
    p_positive += o.p_positive;
    p_underflow += o.p_underflow;
    max_abs_scaled_logit = max_abs_scaled_logit > o.max_abs_scaled_logit ? max_abs_scaled_logit : o.max_abs_scaled_logit;
  }
};

/// Scratch bytes one worker needs for one tile.
size_t query_tile_scratch_bytes(const AttentionConfig& config);

/// Computes one query tile and writes its rows of out and lse.
void run_query_tile(const AttentionConfig& config, const AttentionProblem& problem, const QueryTileCoord& at,
                    void* scratch, TileTelemetry& telemetry, const EngineHooks& hooks);

}  // namespace fp8attn::engine
