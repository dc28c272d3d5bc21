#include "lib/attention/engine/tile_engine.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "lib/core/checked_math.hpp"
#include "lib/core/error.hpp"

#include "kernels/sm90/mask.hpp"
#include "kernels/sm90/softmax_math.hpp"
#include "lib/attention/engine/query_tile.hpp"
#include "lib/numerics/element_io.hpp"

namespace fp8attn::engine {
namespace {

constexpr size_t kAlign = 64;

size_t round_up(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

}  // namespace

size_t tile_engine_workspace_size(const AttentionConfig& c, int workers, int64_t batch) {
  // Layout: per-worker tile scratch, per-worker telemetry, then the work-item table (batch + 1
  // offsets). NOTE: the table lives here rather than on the heap, so that a forward call
  // allocates nothing (issue 15, finding 8).
  const size_t scratch =
      checked_mul(round_up(query_tile_scratch_bytes(c)), static_cast<size_t>(workers), "tile scratch");
  const size_t telemetry = round_up(sizeof(TileTelemetry) * static_cast<size_t>(workers));
  const size_t table = checked_mul(sizeof(int64_t), static_cast<size_t>(checked_add(batch, int64_t{1}, "batch + 1")),
                                   "work-item table");
  return checked_add(checked_add(scratch, telemetry, "engine workspace"), round_up(table), "engine workspace");
}

void tile_engine_forward(const AttentionConfig& c, const AttentionProblem& p, ThreadPool& pool, void* workspace,
                         const EngineHooks& hooks) {
  const int bm = c.tile.block_m;
  const size_t scratch_stride = round_up(query_tile_scratch_bytes(c));
  auto* base = static_cast<unsigned char*>(workspace);
  auto* telemetry = reinterpret_cast<TileTelemetry*>(base + scratch_stride * static_cast<size_t>(pool.size()));
  for (int w = 0; w < pool.size(); ++w) telemetry[w] = TileTelemetry{};
  // Work items: (sequence, query head, query tile), numbered sequence-major.
  int64_t* item_begin = reinterpret_cast<int64_t*>(reinterpret_cast<unsigned char*>(telemetry) +
                                                   round_up(sizeof(TileTelemetry) * static_cast<size_t>(pool.size())));
  item_begin[0] = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    // NOTE: batch ≤ 2^24, seqlen ≤ 2^30 and heads < 2^31 keep this sum below 2^61.
    const int64_t tiles = ceil_div(p.span(b).seqlen_q, bm);
    item_begin[b + 1] = item_begin[b] + tiles * c.num_heads_q;
  }

  pool.parallel_for(item_begin[p.batch], [&](int64_t item, int worker) {
    const int64_t b = std::upper_bound(item_begin, item_begin + p.batch + 1, item) - item_begin - 1;
    const int64_t local = item - item_begin[b];
    QueryTileCoord at;
    at.batch = b;
    at.head = static_cast<int>(local % c.num_heads_q);
    at.row_begin = (local / c.num_heads_q) * bm;
    run_query_tile(c, p, at, base + scratch_stride * static_cast<size_t>(worker), telemetry[worker], hooks);
  });

  TileTelemetry total;
  for (int w = 0; w < pool.size(); ++w) total.merge(telemetry[w]);
  if (p.telemetry) {
    p.telemetry->p_positive = total.p_positive;
    p.telemetry->p_underflow = total.p_underflow;
    p.telemetry->max_abs_scaled_logit = total.max_abs_scaled_logit;
  }
  FP8ATTN_REQUIRE(total.nonfinite == 0, FP8ATTN_STATUS_NUMERICS,
                  std::to_string(total.nonfinite) +
                      " output values are NaN or infinite although every input is finite: the descales or the "
                      "softmax scale overflow FP32");
}

}  // namespace fp8attn::engine
