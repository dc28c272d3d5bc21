#include "lib/attention/engine/tile_engine.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/sm90/mask.hpp"
#include "kernels/sm90/softmax_math.hpp"
#include "lib/attention/engine/query_tile.hpp"
#include "lib/numerics/element_io.hpp"

namespace fp8attn::engine {
namespace {

constexpr size_t kAlign = 64;

size_t round_up(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

}  // namespace

size_t tile_engine_workspace_size(const AttentionConfig& c, int workers) {
  return round_up(query_tile_scratch_bytes(c)) * static_cast<size_t>(workers) +
         round_up(sizeof(TileTelemetry) * static_cast<size_t>(workers));
}

void tile_engine_forward(const AttentionConfig& c, const AttentionProblem& p, ThreadPool& pool, void* workspace,
                         const EngineHooks& hooks) {
  const int bm = c.tile.block_m;
  // Work items: (sequence, query head, query tile), numbered sequence-major.
  std::vector<int64_t> item_begin(p.batch + 1, 0);
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t tiles = (p.span(b).seqlen_q + bm - 1) / bm;
    item_begin[b + 1] = item_begin[b] + tiles * c.num_heads_q;
  }
  const size_t scratch_stride = round_up(query_tile_scratch_bytes(c));
  auto* base = static_cast<unsigned char*>(workspace);
  auto* telemetry = reinterpret_cast<TileTelemetry*>(base + scratch_stride * static_cast<size_t>(pool.size()));
  for (int w = 0; w < pool.size(); ++w) telemetry[w] = TileTelemetry{};

  pool.parallel_for(item_begin[p.batch], [&](int64_t item, int worker) {
    const int64_t b = std::upper_bound(item_begin.begin(), item_begin.end(), item) - item_begin.begin() - 1;
    const int64_t local = item - item_begin[b];
    QueryTileCoord at;
    at.batch = b;
    at.head = static_cast<int>(local % c.num_heads_q);
    at.row_begin = (local / c.num_heads_q) * bm;
    run_query_tile(c, p, at, base + scratch_stride * static_cast<size_t>(worker), telemetry[worker], hooks);
  });

  if (p.telemetry) {
    TileTelemetry total;
    for (int w = 0; w < pool.size(); ++w) total.merge(telemetry[w]);
    p.telemetry->p_positive = total.p_positive;
    p.telemetry->p_underflow = total.p_underflow;
    p.telemetry->max_abs_scaled_logit = total.max_abs_scaled_logit;
  }
}

}  // namespace fp8attn::engine
