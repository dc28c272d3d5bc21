#include "lib/attention/engine/tile_engine.hpp"

#include <algorithm>
#include <cmath>

#include "lib/core/checked_math.hpp"
#include "lib/core/error.hpp"

#include "kernels/sm90/kv_schedule.hpp"
#include "kernels/sm90/mask.hpp"
#include "kernels/sm90/softmax_math.hpp"
#include "lib/attention/engine/query_tile.hpp"
#include "lib/numerics/element_io.hpp"

namespace fp8attn::engine {
namespace {

constexpr size_t kAlign = 64;

size_t round_up(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

/// One worker's share of the workspace: its tile scratch, then its KvBlockCache.
struct WorkerLayout {
  size_t scratch = 0, k = 0, v = 0, ready = 0, stride = 0;
  int64_t slots = 0;
};

WorkerLayout worker_layout(const AttentionConfig& c, int64_t max_seqlen_k) {
  WorkerLayout l;
  l.slots = sm90::kv_descale_slots(max_seqlen_k, c.sink_tokens, c.tile.block_n);
  const size_t slot_floats = static_cast<size_t>(c.tile.block_n);
  l.k = round_up(query_tile_scratch_bytes(c));
  const size_t k_bytes =
      checked_mul(checked_mul(static_cast<size_t>(l.slots), slot_floats * c.head_dim, "K cache"), sizeof(float), "K cache");
  const size_t v_bytes =
      checked_mul(checked_mul(static_cast<size_t>(l.slots), slot_floats * c.head_dim_v, "V cache"), sizeof(float), "V cache");
  l.v = checked_add(l.k, round_up(k_bytes), "K cache");
  l.ready = checked_add(l.v, round_up(v_bytes), "V cache");
  l.stride = checked_add(l.ready, round_up(static_cast<size_t>(l.slots)), "KV cache");
  return l;
}

/// Query tiles per work item: enough items for about four per worker (dynamic balance), as few
/// as possible otherwise, since each item decodes its KV blocks once for all its tiles.
int64_t tiles_per_item(int64_t tile_units, int workers) {
  return std::clamp<int64_t>(tile_units / (4 * static_cast<int64_t>(workers)), 1, 16);
}

/// Whether `tiles` consecutive query tiles from `at` can run as one call with the same bits as one
/// call each: every tile meets its blocks in its own order in the call's walk (TileGroupWalk), and
/// each block's tiles are a contiguous run, so that their rows are one range. Nothing else may
/// depend on which tile a row belongs to: no per-tile Q descale, no P-cast hook (its calls would
/// come in another order). NOTE: why run them as one: the products prepare B (K and V of a block)
/// once per call for all its rows, so the tiles share that work.
bool query_tiles_run_together(const AttentionConfig& c, const AttentionProblem& p, const QueryTileCoord& at,
                              int tiles, const EngineHooks& hooks) {
  if (tiles < 1 || tiles > kMaxTilesPerCall) return false;
  if (tiles == 1) return true;
  if (p.q_block_descale.present() || hooks.on_p_cast) return false;
  const SeqSpan span = p.span(at.batch);
  const int64_t bm = c.tile.block_m;
  if (at.row_begin + (tiles - 1) * bm >= span.seqlen_q) return false;
  const int rows = static_cast<int>(std::min(tiles * bm, span.seqlen_q - at.row_begin));
  TileGroupWalk walk(c, span, at.row_begin, rows);
  for (int64_t step = 0; step < walk.all.count(); ++step) {
    sm90::KeyBlock block;
    int lo = 0, hi = 0;
    if (!walk.visit(step, &block, &lo, &hi)) return false;
  }
  return walk.finished();
}

}  // namespace

TileGroupWalk::TileGroupWalk(const AttentionConfig& c, const SeqSpan& span, int64_t row_begin, int rows) {
  const sm90::MaskParams mask{c.causal, c.window_left, c.window_right, span.seqlen_q, span.seqlen_k};
  const bool reverse = c.kv_order == FP8ATTN_KV_ORDER_REVERSE;
  const int bm = c.tile.block_m, bn = c.tile.block_n;
  const int64_t row_end = row_begin + rows;
  // NOTE: reverse order (the default) visits the last block first, so a sink at the start of
  // the sequence is met last and cannot flush earlier blocks' P̃ to zero (P-cast paper).
  all = sm90::make_kv_schedule(mask, row_begin, row_end, bn, c.sink_tokens, reverse);
  tiles = (rows + bm - 1) / bm;
  for (int i = 0; i < tiles; ++i)
    own[i] = sm90::make_kv_schedule(mask, row_begin + static_cast<int64_t>(i) * bm,
                                    std::min(row_begin + static_cast<int64_t>(i + 1) * bm, row_end), bn, c.sink_tokens,
                                    reverse);
}

bool TileGroupWalk::visit(int64_t step, sm90::KeyBlock* block, int* lo, int* hi) {
  *block = all.at(step);
  *lo = tiles;
  *hi = -1;
  int next_of[kMaxTilesPerCall] = {};
  int active = 0;
  for (int i = 0; i < tiles; ++i) {
    if (done[i] >= own[i].count()) continue;
    const sm90::KeyBlock mine = own[i].at(done[i]);
    if (mine.key_begin != block->key_begin || mine.key_end != block->key_end || mine.index != block->index) continue;
    next_of[active++] = i;
    *lo = std::min(*lo, i);
    *hi = i;
  }
  if (active > 0 && active != *hi - *lo + 1) return false;
  for (int k = 0; k < active; ++k) ++done[next_of[k]];
  return true;
}

bool TileGroupWalk::finished() const {
  for (int i = 0; i < tiles; ++i)
    if (done[i] != own[i].count()) return false;
  return true;
}

size_t tile_engine_workspace_size(const AttentionConfig& c, int workers, int64_t batch, int64_t max_seqlen_k) {
  // Layout: per-worker tile scratch and KV block cache, per-worker telemetry and cache
  // descriptors, then the work-item table (batch + 1 offsets). NOTE: the table lives here rather
  // than on the heap, so that a forward call allocates nothing.
  const size_t per_worker = checked_mul(worker_layout(c, max_seqlen_k).stride, static_cast<size_t>(workers), "workers");
  const size_t telemetry = round_up(sizeof(TileTelemetry) * static_cast<size_t>(workers)) +
                           round_up(sizeof(KvBlockCache) * static_cast<size_t>(workers));
  const size_t table = checked_mul(sizeof(int64_t), static_cast<size_t>(checked_add(batch, int64_t{1}, "batch + 1")),
                                   "work-item table");
  return checked_add(checked_add(per_worker, telemetry, "engine workspace"), round_up(table), "engine workspace");
}

void tile_engine_forward(const AttentionConfig& c, const AttentionProblem& p, ThreadPool& pool, void* workspace,
                         const EngineHooks& hooks) {
  const int bm = c.tile.block_m;
  const int group = c.heads_per_kv();
  const WorkerLayout layout = worker_layout(c, p.max_seqlen_k);
  auto* base = static_cast<unsigned char*>(workspace);
  auto* telemetry = reinterpret_cast<TileTelemetry*>(base + layout.stride * static_cast<size_t>(pool.size()));
  auto* caches = reinterpret_cast<KvBlockCache*>(reinterpret_cast<unsigned char*>(telemetry) +
                                                 round_up(sizeof(TileTelemetry) * static_cast<size_t>(pool.size())));
  for (int w = 0; w < pool.size(); ++w) {
    telemetry[w] = TileTelemetry{};
    unsigned char* mine = base + layout.stride * static_cast<size_t>(w);
    // batch −1: the first tile a worker runs finds no (sequence, KV head) cached and clears `ready`.
    caches[w] = KvBlockCache{reinterpret_cast<float*>(mine + layout.k), reinterpret_cast<float*>(mine + layout.v),
                             mine + layout.ready, layout.slots, -1, -1};
  }
  // Work items: (sequence, KV head, a run of `chunk` query tiles), numbered sequence-major; an
  // item computes its tiles for every query head of the KV group, which share the decoded blocks.
  int64_t* item_begin = reinterpret_cast<int64_t*>(reinterpret_cast<unsigned char*>(caches) +
                                                   round_up(sizeof(KvBlockCache) * static_cast<size_t>(pool.size())));
  int64_t tile_units = 0;
  for (int64_t b = 0; b < p.batch; ++b) tile_units += ceil_div(p.span(b).seqlen_q, bm) * c.num_heads_kv;
  const int64_t chunk = tiles_per_item(tile_units, pool.size());
  item_begin[0] = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    // NOTE: batch ≤ 2^24, seqlen ≤ 2^30 and heads < 2^31 keep this sum below 2^61.
    const int64_t chunks = ceil_div(ceil_div(p.span(b).seqlen_q, bm), chunk);
    item_begin[b + 1] = item_begin[b] + chunks * c.num_heads_kv;
  }

  pool.parallel_for(item_begin[p.batch], [&](int64_t item, int worker) {
    const int64_t b = std::upper_bound(item_begin, item_begin + p.batch + 1, item) - item_begin - 1;
    const int64_t local = item - item_begin[b];
    const int head_kv = static_cast<int>(local % c.num_heads_kv);
    const int64_t first_tile = (local / c.num_heads_kv) * chunk;
    const int64_t tiles = std::min(chunk, ceil_div(p.span(b).seqlen_q, bm) - first_tile);
    unsigned char* mine = base + layout.stride * static_cast<size_t>(worker);
    // NOTE: consecutive items of one worker on the same (sequence, KV head) keep its blocks.
    KvBlockCache& kv = caches[worker];
    for (int64_t t = 0; t < tiles;) {
      QueryTileCoord at;
      at.batch = b;
      at.row_begin = (first_tile + t) * bm;
      at.tiles = static_cast<int>(std::min<int64_t>(kMaxTilesPerCall, tiles - t));
      while (at.tiles > 1 && !query_tiles_run_together(c, p, at, at.tiles, hooks)) --at.tiles;
      for (int g = 0; g < group; ++g) {
        at.head = head_kv * group + g;
        run_query_tile(c, p, at, mine, kv, telemetry[worker], hooks);
      }
      t += at.tiles;
    }
  });

  TileTelemetry total;
  for (int w = 0; w < pool.size(); ++w) total.merge(telemetry[w]);
  if (p.telemetry) {
    p.telemetry->p_positive = total.p_positive;
    p.telemetry->p_underflow = total.p_underflow;
    p.telemetry->max_abs_scaled_logit = total.max_abs_scaled_logit;
  }
  // NOTE: the logit figure is measured only when c.telemetry is on; the C API turns it on for a
  // call with a scale state (capi/forward_api.cpp). Written before the NUMERICS check, as `out`
  // is; the C API reads it only after success.
  if (p.amax) *p.amax = ForwardAmax{total.max_abs_o, total.max_abs_scaled_logit};
  FP8ATTN_REQUIRE(total.nonfinite == 0, FP8ATTN_STATUS_NUMERICS,
                  std::to_string(total.nonfinite) +
                      " output values are NaN or infinite: products of the inputs overflow FP32 (BF16 inputs; "
                      "descales that could are refused before the call) or an input holds a NaN or infinite code");
}

}  // namespace fp8attn::engine
