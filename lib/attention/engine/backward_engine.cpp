#include "lib/attention/engine/backward_engine.hpp"

#include <algorithm>
#include <string>

#include "lib/attention/engine/backward_tile.hpp"
#include "lib/core/checked_math.hpp"
#include "lib/core/error.hpp"

namespace fp8attn::engine {
namespace {

constexpr size_t kAlign = 64;
/// Per-worker counters sit a cache line apart so that workers do not share one.
constexpr size_t kCounterStride = kAlign / sizeof(uint64_t);

size_t round_up(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

size_t table_bytes(int64_t batch) {
  return round_up(checked_mul(sizeof(int64_t), static_cast<size_t>(checked_add(batch, int64_t{1}, "batch + 1")),
                              "work-item table"));
}

/// item_begin[b] = first work item of sequence b; item_begin[batch] = the total.
void number_items(int64_t batch, int64_t* item_begin, auto&& items_of) {
  item_begin[0] = 0;
  // NOTE: batch ≤ 2^24, seqlen ≤ 2^30 and heads < 2^31 keep this sum below 2^61.
  for (int64_t b = 0; b < batch; ++b) item_begin[b + 1] = item_begin[b] + items_of(b);
}

int64_t sequence_of(const int64_t* item_begin, int64_t batch, int64_t item) {
  return std::upper_bound(item_begin, item_begin + batch + 1, item) - item_begin - 1;
}

}  // namespace

size_t backward_engine_workspace_size(const AttentionConfig& c, int workers, int64_t batch) {
  // Layout: per-worker tile scratch, per-worker non-finite counters, then the two passes'
  // work-item tables. NOTE: the tables live here rather than on the heap, so that a backward
  // call allocates nothing (as the forward, issue 15).
  const size_t w = static_cast<size_t>(workers);
  const size_t scratch = checked_mul(round_up(backward_tile_scratch_bytes(c)), w, "backward tile scratch");
  const size_t counters = round_up(checked_mul(kAlign, w, "backward counters"));
  const size_t tables = checked_mul(table_bytes(batch), size_t{2}, "work-item tables");
  return checked_add(checked_add(scratch, counters, "backward workspace"), tables, "backward workspace");
}

void backward_engine_run(const AttentionConfig& c, const AttentionBackwardProblem& p, ThreadPool& pool,
                         void* workspace) {
  const size_t scratch_stride = round_up(backward_tile_scratch_bytes(c));
  const size_t workers = static_cast<size_t>(pool.size());
  auto* base = static_cast<unsigned char*>(workspace);
  auto* nonfinite = reinterpret_cast<uint64_t*>(base + scratch_stride * workers);
  auto* key_items = reinterpret_cast<int64_t*>(reinterpret_cast<unsigned char*>(nonfinite) + round_up(kAlign * workers));
  auto* query_items = reinterpret_cast<int64_t*>(reinterpret_cast<unsigned char*>(key_items) + table_bytes(p.batch()));
  for (size_t w = 0; w < workers; ++w) nonfinite[w * kCounterStride] = 0;
  const int bm = c.tile.block_m, bn = c.tile.block_n;
  const int64_t batch = p.batch();
  number_items(batch, key_items, [&](int64_t b) { return ceil_div(p.span(b).seqlen_k, bn) * c.num_heads_kv; });
  number_items(batch, query_items, [&](int64_t b) { return ceil_div(p.span(b).seqlen_q, bm) * c.num_heads_q; });

  // Pass 1: dK and dV, one item per (sequence, KV head, key block).
  pool.parallel_for(key_items[batch], [&](int64_t item, int worker) {
    const int64_t b = sequence_of(key_items, batch, item);
    const int64_t local = item - key_items[b];
    const KeyBlockCoord at{b, static_cast<int>(local % c.num_heads_kv), (local / c.num_heads_kv) * bn};
    nonfinite[static_cast<size_t>(worker) * kCounterStride] +=
        run_key_block_backward(c, p, at, base + scratch_stride * static_cast<size_t>(worker));
  });
  // Pass 2: dQ, one item per (sequence, query head, query block).
  pool.parallel_for(query_items[batch], [&](int64_t item, int worker) {
    const int64_t b = sequence_of(query_items, batch, item);
    const int64_t local = item - query_items[b];
    const QueryBlockCoord at{b, static_cast<int>(local % c.num_heads_q), (local / c.num_heads_q) * bm};
    nonfinite[static_cast<size_t>(worker) * kCounterStride] +=
        run_query_block_backward(c, p, at, base + scratch_stride * static_cast<size_t>(worker));
  });

  uint64_t total = 0;
  for (size_t w = 0; w < workers; ++w) total += nonfinite[w * kCounterStride];
  FP8ATTN_REQUIRE(total == 0, FP8ATTN_STATUS_NUMERICS,
                  std::to_string(total) +
                      " gradient values are NaN or infinite although the checks passed: an lse that does not "
                      "belong to q and k, or values whose products overflow FP32 or BF16");
}

}  // namespace fp8attn::engine
