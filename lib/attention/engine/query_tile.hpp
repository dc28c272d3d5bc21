// One query tile of the CPU engine (or up to four consecutive ones, in one call): the mainloop over
// its KV blocks, the online softmax and the epilogue, in the order the Hopper kernel runs them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/sm90/kv_schedule.hpp"
#include "lib/attention/attention_config.hpp"
#include "lib/attention/attention_problem.hpp"
#include "lib/attention/engine/tile_engine.hpp"

namespace fp8attn::engine {

/// The most consecutive query tiles one run_query_tile call takes (tile_engine.cpp's
/// query_tiles_run_together says when).
// NOTE: 4 and not 2: measured on a 2-core Zen 4 (head_dim 64 to 256, both accumulation modes),
// two tiles per call gained about half of what four did; four tiles' S, O and Q (about 1.2 MB at
// head_dim 128) are small beside a worker's decoded KV cache.
inline constexpr int kMaxTilesPerCall = 4;

/// Which tile: sequence, query head, first row (a multiple of BlockM), and how many consecutive
/// tiles from it the call runs as one (1 to kMaxTilesPerCall).
struct QueryTileCoord {
  int64_t batch = 0;
  int head = 0;
  int64_t row_begin = 0;
  int tiles = 1;
};

/// The KV blocks of one call of up to kMaxTilesPerCall consecutive query tiles: the union of the
/// tiles' own schedules, walked in order, each block run for the tiles whose next block it is.
/// Defined in tile_engine.cpp (compiled once, for the baseline ISA) and used by every ISA build
/// of run_query_tile and by the grouping check, so both walk the blocks the same way.
struct TileGroupWalk {
  sm90::KvSchedule all;                  ///< the union: the schedule of all the call's rows
  sm90::KvSchedule own[kMaxTilesPerCall];  ///< each tile's own schedule
  int64_t done[kMaxTilesPerCall] = {};   ///< each tile's blocks visited so far
  int tiles = 0;

  /// The call's `rows` rows from row_begin (tiles of block_m rows, the last one ragged).
  TileGroupWalk(const AttentionConfig& config, const SeqSpan& span, int64_t row_begin, int rows);
  /// Union step `step`: its block, and the tiles [*lo, *hi] whose next block it is (none: *hi <
  /// *lo), each counted past it. Returns false, counting none, where those tiles are not a
  /// contiguous run.
  bool visit(int64_t step, sm90::KeyBlock* block, int* lo, int* hi);
  /// Whether every tile has visited all its blocks.
  bool finished() const;
};

/// Per-worker telemetry counters; merged after the parallel loop.
struct TileTelemetry {
  uint64_t p_positive = 0;
  uint64_t p_underflow = 0;
  float max_abs_scaled_logit = 0.0f;
  float max_abs_o = 0.0f;  ///< max |O| before the output scale (amax_o)
  uint64_t nonfinite = 0;  ///< outputs (and LSEs other than an empty row's −inf) not finite
  void merge(const TileTelemetry& o) {
    max_abs_o = max_abs_o > o.max_abs_o ? max_abs_o : o.max_abs_o;
    nonfinite += o.nonfinite;
    p_positive += o.p_positive;
    p_underflow += o.p_underflow;
    max_abs_scaled_logit = max_abs_scaled_logit > o.max_abs_scaled_logit ? max_abs_scaled_logit : o.max_abs_scaled_logit;
  }
};

/// One worker's decoded K and V blocks of one (sequence, KV head): each block is decoded to FP32
/// on first use and kept while the worker's tiles stay on that (sequence, KV head), so the query
/// tiles and the GQA heads of one KV group share one decode (decoding K and V again for
/// every query tile was 8% of the engine's time). Carved from the workspace by tile_engine.cpp.
struct KvBlockCache {
  float* k = nullptr;         ///< [slots][block_n / 16][head_dim][16]: each block's K in panels
  float* v = nullptr;         ///< [slots][head_dim_v / 16][block_n][16] (panel_gemm.hpp)
  uint8_t* ready = nullptr;   ///< [slots]: 1 where the slot holds its block
  int64_t slots = 0;          ///< sm90::kv_descale_slots(max_seqlen_k, ...): one per KV block
  int64_t batch = -1;         ///< the (sequence, KV head) the ready slots belong to
  int head_kv = -1;
};

/// Scratch bytes one worker needs for one call (kMaxTilesPerCall tiles).
size_t query_tile_scratch_bytes(const AttentionConfig& config);

/// Computes at.tiles query tiles from at.row_begin and writes their rows of out and lse.
void run_query_tile(const AttentionConfig& config, const AttentionProblem& problem, const QueryTileCoord& at,
                    void* scratch, KvBlockCache& kv, TileTelemetry& telemetry, const EngineHooks& hooks);

}  // namespace fp8attn::engine
