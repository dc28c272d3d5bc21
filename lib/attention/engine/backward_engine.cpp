#include "lib/attention/engine/backward_engine.hpp"

#include <algorithm>
#include <atomic>
#include <new>
#include <string>

#include "kernels/numerics/bfloat16.hpp"
#include "lib/attention/engine/backward_tile.hpp"
#include "lib/core/checked_math.hpp"
#include "lib/core/error.hpp"
#include "lib/numerics/element_io.hpp"

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

/// The workspace's parts, in order.
struct BackwardWorkspace {
  size_t scratch_stride, scratch, counters, tables, turns, accumulator, total;
};

BackwardWorkspace workspace_layout(const AttentionConfig& c, int workers, int64_t batch, int64_t max_seqlen_q) {
  BackwardWorkspace w{};
  const size_t n = static_cast<size_t>(workers);
  w.scratch_stride = round_up(backward_tile_scratch_bytes(c));
  w.scratch = checked_mul(w.scratch_stride, n, "backward tile scratch");
  w.counters = round_up(checked_mul(kAlign, n, "backward counters"));
  w.tables = checked_mul(table_bytes(batch), size_t{2}, "work-item tables");
  const int64_t q_blocks = ceil_div(max_seqlen_q, c.tile.block_m);
  const int64_t heads_blocks = checked_mul(int64_t{c.num_heads_q}, q_blocks, "dQ turns");
  w.turns = round_up(checked_mul(sizeof(std::atomic<int64_t>),
                                 static_cast<size_t>(checked_mul(batch, heads_blocks, "dQ turns")), "dQ turns"));
  const int64_t rows = checked_mul(batch, max_seqlen_q, "dQ accumulator");
  w.accumulator = round_up(checked_mul(
      sizeof(float), static_cast<size_t>(checked_mul(rows, int64_t{c.num_heads_q} * c.head_dim, "dQ accumulator")),
      "dQ accumulator"));
  size_t total = 0;
  for (size_t part : {w.scratch, w.counters, w.tables, w.turns, w.accumulator})
    total = checked_add(total, part, "backward workspace");
  w.total = total;
  return w;
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

/// dq of one query block: softmax_scale × the accumulator (zeros for a sequence without keys,
/// which no key block wrote). Returns the count of values that are not finite.
uint64_t store_dq_block(const AttentionConfig& c, const AttentionBackwardProblem& p, const DqAccumulator& acc,
                        int64_t b, int head, int64_t row0) {
  const SeqSpan span = p.span(b);
  const int64_t rows = std::min<int64_t>(c.tile.block_m, span.seqlen_q - row0);
  const bool bf16 = p.dq.dtype == FP8ATTN_DTYPE_BF16;
  uint64_t nonfinite = 0;
  for (int64_t r = row0; r < row0 + rows; ++r) {
    const float* a = acc.data + (DqAccumulator::row(p, b, r) * c.num_heads_q + head) * c.head_dim;
    const int64_t off = element_offset(p.dq, b, span.q_offset + r, head, 0);
    for (int e = 0; e < c.head_dim; ++e) {
      const float x = span.seqlen_k > 0 ? a[e] * c.softmax_scale : 0.0f;
      if (!std::isfinite(x) || (bf16 && !std::isfinite(num::round_to_bf16(x)))) ++nonfinite;
      num::store_from_float(p.dq.data, p.dq.dtype, off + e * p.dq.dim_stride, x);
    }
  }
  return nonfinite;
}

}  // namespace

AttentionConfig with_backward_tile(const AttentionConfig& config) {
  AttentionConfig c = config;
  c.tile = sm90::attention_bwd_tile(c.head_dim);
  return c;
}

size_t backward_engine_workspace_size(const AttentionConfig& config, int workers, int64_t batch, int64_t max_seqlen_q) {
  const AttentionConfig c = with_backward_tile(config);
  // NOTE: every buffer lives here rather than on the heap, so that a backward call allocates
  // nothing, as the forward does.
  return workspace_layout(c, workers, batch, max_seqlen_q).total;
}

void backward_engine_run(const AttentionConfig& config, const AttentionBackwardProblem& p, ThreadPool& pool,
                         void* workspace) {
  // NOTE: the backward's own tiles (tile_config.hpp), shared with the sm_90a backward kernel.
  const AttentionConfig c = with_backward_tile(config);
  const int64_t batch = p.batch();
  const BackwardWorkspace w = workspace_layout(c, pool.size(), batch, p.fwd.max_seqlen_q);
  const size_t workers = static_cast<size_t>(pool.size());
  auto* base = static_cast<unsigned char*>(workspace);
  auto* nonfinite = reinterpret_cast<uint64_t*>(base + w.scratch);
  auto* key_items = reinterpret_cast<int64_t*>(base + w.scratch + w.counters);
  auto* query_items = key_items + table_bytes(batch) / sizeof(int64_t);
  unsigned char* turns_at = base + w.scratch + w.counters + w.tables;
  DqAccumulator acc;
  acc.q_blocks = ceil_div(p.fwd.max_seqlen_q, c.tile.block_m);
  acc.turns = reinterpret_cast<std::atomic<int64_t>*>(turns_at);
  acc.data = reinterpret_cast<float*>(turns_at + w.turns);
  for (int64_t i = 0; i < batch * c.num_heads_q * acc.q_blocks; ++i) new (&acc.turns[i]) std::atomic<int64_t>(0);
  for (size_t i = 0; i < workers; ++i) nonfinite[i * kCounterStride] = 0;

  const int bm = c.tile.block_m, bn = c.tile.block_n;
  number_items(batch, key_items, [&](int64_t b) { return ceil_div(p.span(b).seqlen_k, bn) * c.num_heads_kv; });
  number_items(batch, query_items, [&](int64_t b) { return ceil_div(p.span(b).seqlen_q, bm) * c.num_heads_q; });

  // Pass 1: dK, dV and the dQ accumulator; one item per (sequence, key block, KV head), numbered
  // so that the key blocks of one (sequence, KV head) are handed out in ascending order.
  pool.parallel_for(key_items[batch], [&](int64_t item, int worker) {
    const int64_t b = sequence_of(key_items, batch, item);
    const int64_t local = item - key_items[b];
    const KeyBlockCoord at{b, static_cast<int>(local % c.num_heads_kv), (local / c.num_heads_kv) * bn};
    nonfinite[static_cast<size_t>(worker) * kCounterStride] +=
        run_key_block_backward(c, p, at, acc, base + w.scratch_stride * static_cast<size_t>(worker));
  });
  // Pass 2: dq from the accumulator, one item per (sequence, query head, query block).
  pool.parallel_for(query_items[batch], [&](int64_t item, int worker) {
    const int64_t b = sequence_of(query_items, batch, item);
    const int64_t local = item - query_items[b];
    nonfinite[static_cast<size_t>(worker) * kCounterStride] +=
        store_dq_block(c, p, acc, b, static_cast<int>(local % c.num_heads_q), (local / c.num_heads_q) * bm);
  });

  uint64_t total = 0;
  for (size_t i = 0; i < workers; ++i) total += nonfinite[i * kCounterStride];
  FP8ATTN_REQUIRE(total == 0, FP8ATTN_STATUS_NUMERICS,
                  std::to_string(total) +
                      " gradient values are NaN or infinite although the checks passed: an lse that does not "
                      "belong to q and k, or values whose products overflow FP32 or BF16");
}

}  // namespace fp8attn::engine
