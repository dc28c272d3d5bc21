#include "lib/attention/engine/decode_engine.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "kernels/sm90/combine/combine_math.hpp"
#include "kernels/sm90/decode_schedule.hpp"
#include "kernels/sm90/kv_schedule.hpp"
#include "lib/attention/engine/decode_fp32.hpp"
#include "lib/attention/engine/decode_tile.hpp"
#include "lib/combine/combine_rows.hpp"
#include "lib/core/checked_math.hpp"
#include "lib/core/error.hpp"

namespace fp8attn::engine {

static_assert(sm90::kMaxDecodeQLen == FP8ATTN_MAX_DECODE_Q_LEN && sm90::kMaxDecodeSplits == FP8ATTN_MAX_COMBINE_PARTS,
              "kernels/sm90/decode_schedule.hpp's limits are the header's");

namespace {

constexpr size_t kAlign = 64;
size_t round_up(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

/// The workspace: per-worker [tile scratch | K block | V block], then telemetry and caches per
/// worker, the item table (batch + 1), the partials' O and LSE, and the merged rows' O and LSE.
struct Layout {
  size_t k = 0, v = 0, stride = 0;
  size_t telemetry = 0, caches = 0, table = 0, part_o = 0, part_lse = 0, merged_o = 0, merged_lse = 0, total = 0;
};

Layout layout(const AttentionConfig& c, int workers, int64_t batch, int64_t max_q, int splits) {
  Layout l;
  const size_t w = static_cast<size_t>(workers);
  // NOTE: one KV block's panels per worker: the tensor-core tile decodes every block of an item
  // into the same panels (decode_tile.cpp), the FP32 tile none.
  const size_t bn = static_cast<size_t>(c.tile.block_n);
  l.k = round_up(std::max(decode_tile_scratch_bytes(c), decode_fp32_scratch_bytes(c)));
  l.v = checked_add(l.k, round_up(checked_mul(bn, c.head_dim * sizeof(float), "K block")), "K block");
  l.stride = checked_add(l.v, round_up(checked_mul(bn, c.head_dim_v * sizeof(float), "V block")), "V block");
  l.telemetry = checked_mul(l.stride, w, "workers");
  l.caches = l.telemetry + round_up(sizeof(TileTelemetry) * w);
  l.table = l.caches + round_up(sizeof(KvBlockCache) * w);
  l.part_o = checked_add(l.table, round_up(checked_mul(sizeof(int64_t), static_cast<size_t>(batch) + 1, "table")),
                         "engine workspace");
  // NOTE: one split writes the output directly (the forward's epilogue): no partials.
  const size_t rows = splits > 1 ? checked_mul(checked_mul(static_cast<size_t>(splits), static_cast<size_t>(batch),
                                                           "partials"),
                                               static_cast<size_t>(max_q) * c.num_heads_q, "partials")
                                 : 0;
  l.part_lse = checked_add(l.part_o, round_up(checked_mul(rows, c.head_dim_v * sizeof(float), "partial O")),
                           "partial O");
  l.merged_o = checked_add(l.part_lse, round_up(checked_mul(rows, sizeof(float), "partial LSE")), "partial LSE");
  const size_t merged = splits > 1 ? rows / static_cast<size_t>(splits) : 0;
  l.merged_lse = checked_add(l.merged_o, round_up(checked_mul(merged, c.head_dim_v * sizeof(float), "merged O")),
                             "merged O");
  l.total = checked_add(l.merged_lse, round_up(checked_mul(merged, sizeof(float), "merged LSE")), "merged LSE");
  return l;
}

int64_t row_tiles(const AttentionConfig& c, int64_t q_len) {
  return ceil_div(sm90::decode_rows(q_len, c.heads_per_kv()), c.tile.block_m);
}

}  // namespace

int decode_num_splits(const AttentionConfig& c, int64_t batch, int64_t max_q, int64_t max_k) {
  return sm90::decode_num_splits(c.num_splits, c.num_heads_kv, c.heads_per_kv(), c.tile.block_m, c.tile.block_n,
                                 c.sink_tokens, batch, max_q, max_k);
}

size_t decode_engine_workspace_size(const AttentionConfig& c, int workers, int64_t batch, int64_t max_q,
                                    int64_t max_k) {
  return layout(c, workers, batch, max_q, decode_num_splits(c, batch, max_q, max_k)).total;
}

void decode_engine_forward(const AttentionConfig& c, const AttentionProblem& p, ThreadPool& pool, void* workspace) {
  int64_t longest_k = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    const SeqSpan span = p.span(b);
    FP8ATTN_REQUIRE(span.seqlen_q <= sm90::kMaxDecodeQLen, FP8ATTN_STATUS_BAD_SHAPE,
                    "desc.decode = 1: sequence " + std::to_string(b) + " has " + std::to_string(span.seqlen_q) +
                        " queries, above FP8ATTN_MAX_DECODE_Q_LEN = 8");
    longest_k = std::max(longest_k, span.seqlen_k);
  }
  const int splits = decode_num_splits(c, p.batch, p.max_seqlen_q, longest_k);
  const Layout l = layout(c, pool.size(), p.batch, p.max_seqlen_q, splits);
  auto* base = static_cast<unsigned char*>(workspace);
  auto* telemetry = reinterpret_cast<TileTelemetry*>(base + l.telemetry);
  auto* caches = reinterpret_cast<KvBlockCache*>(base + l.caches);
  for (int w = 0; w < pool.size(); ++w) {
    telemetry[w] = TileTelemetry{};
    unsigned char* mine = base + l.stride * static_cast<size_t>(w);
    // NOTE: no ready flags: the decode tile keeps no decoded block (decode_block_panels).
    caches[w] = KvBlockCache{reinterpret_cast<float*>(mine + l.k), reinterpret_cast<float*>(mine + l.v), nullptr, 1,
                             -1, -1};
  }
  DecodePartials parts;
  if (splits > 1) {
    parts = {reinterpret_cast<float*>(base + l.part_o), reinterpret_cast<float*>(base + l.part_lse), p.batch,
             p.max_seqlen_q, c.num_heads_q, c.head_dim_v};
  }
  // The one choice of tile: FP32 accumulation's own (decode_fp32.hpp) where it applies.
  const bool fp32_tile = decode_fp32_applies(c, p);
  // Items: (sequence, KV head, split, row tile), sequence-major. The FP32 tile takes every KV
  // head in one item, up to 8 (its cache reads cover whole pages): its items are (sequence, group
  // of KV heads, split, row tile).
  const int heads_per_item = fp32_tile ? decode_fp32_heads_per_item(c) : 1;
  const int item_heads = static_cast<int>(ceil_div(c.num_heads_kv, heads_per_item));
  auto* item_begin = reinterpret_cast<int64_t*>(base + l.table);
  item_begin[0] = 0;
  for (int64_t b = 0; b < p.batch; ++b)
    item_begin[b + 1] = item_begin[b] + row_tiles(c, p.span(b).seqlen_q) * item_heads * splits;

  pool.parallel_for(item_begin[p.batch], [&](int64_t item, int worker) {
    const int64_t b = std::upper_bound(item_begin, item_begin + p.batch + 1, item) - item_begin - 1;
    const int64_t tiles = row_tiles(c, p.span(b).seqlen_q);
    int64_t local = item - item_begin[b];
    DecodeTileCoord at;
    at.batch = b;
    at.row_begin = (local % tiles) * c.tile.block_m;
    local /= tiles;
    at.split = static_cast<int>(local % splits);
    at.head_kv = static_cast<int>(local / splits) * heads_per_item;
    at.num_splits = splits;
    void* scratch = base + l.stride * static_cast<size_t>(worker);
    if (fp32_tile)
      run_decode_fp32_tile(c, p, at, scratch, telemetry[worker], parts);
    else
      run_decode_tile(c, p, at, scratch, caches[worker], telemetry[worker], parts);
  });

  if (splits > 1) {
    // The merge: fp8attn_attention_combine's CPU row merge (lib/combine, one build per vector ISA,
    // the rule of combine_math.hpp) over the partials as [split][sequence · max_q][heads_q][dv],
    // into F32 rows, then the forward's output store of the rows whose token exists.
    // NOTE: a (sequence, token) per item, one element at a time, merged a batch-1 call's 32 rows
    // on one core, a few percent of the whole decode at 66 splits.
    sm90::combine::CombineParams m;
    const int64_t tokens = p.batch * p.max_seqlen_q, heads = c.num_heads_q, dv = c.head_dim_v;
    m.partial_out = parts.o;
    m.po_stride[0] = tokens * heads * dv;
    m.po_stride[1] = heads * dv;
    m.po_stride[2] = dv;
    m.po_stride[3] = 1;
    m.partial_lse = parts.lse;
    m.pl_stride[0] = tokens * heads;
    m.pl_stride[1] = heads;
    m.pl_stride[2] = 1;
    auto* merged_o = reinterpret_cast<float*>(base + l.merged_o);
    auto* merged_lse = reinterpret_cast<float*>(base + l.merged_lse);
    m.out = merged_o;
    m.out_stride[0] = heads * dv;
    m.out_stride[1] = dv;
    m.out_stride[2] = 1;
    m.lse = merged_lse;
    m.lse_stride[0] = heads;
    m.lse_stride[1] = 1;
    m.num_parts = splits;
    m.tokens = tokens;
    m.heads = heads;
    m.head_dim = dv;
    const combine::CombineRowOps& merge = combine::combine_row_ops();
    // Items: (sequence, 16 of its rows), only the rows of tokens the sequence has (the tiles write
    // no partial row for the others).
    // NOTE: 16, below the merge's 64 rows per call: a batch-1 decode has 32 rows (its query
    // heads), and 64 would leave every core but one idle while that one merges every split.
    constexpr int64_t kMergeRows = 16;
    static_assert(kMergeRows <= combine::kRowsPerItem);
    const int64_t per_seq = p.max_seqlen_q * heads, blocks_per_seq = ceil_div(per_seq, kMergeRows);
    pool.parallel_for(p.batch * blocks_per_seq, [&](int64_t item, int worker) {
      const int64_t b = item / blocks_per_seq, first = item % blocks_per_seq * kMergeRows;
      const SeqSpan span = p.span(b);
      const int64_t rows = span.seqlen_q * heads;
      if (first >= rows) return;
      const int64_t r0 = b * per_seq + first, n = std::min(kMergeRows, rows - first);
      merge.combine_rows(m, r0, n, /*stream_out=*/false);
      for (int64_t r = r0; r < r0 + n; ++r) {
        const int64_t token = (r - b * per_seq) / heads;
        const int h = static_cast<int>(r % heads);
        for (int64_t e = 0; e < dv; ++e)
          store_output(p, b, span.q_offset + token, h, static_cast<int>(e), merged_o[r * dv + e], telemetry[worker]);
        const float lse = merged_lse[r];
        if (p.lse.data) {
          if (std::isnan(lse) || lse == std::numeric_limits<float>::infinity()) ++telemetry[worker].nonfinite;
          static_cast<float*>(p.lse.data)[b * p.lse.batch_stride + (span.q_offset + token) * p.lse.seq_stride +
                                          h * p.lse.head_stride] = lse;
        }
      }
    });
  }

  TileTelemetry total;
  for (int w = 0; w < pool.size(); ++w) total.merge(telemetry[w]);
  if (p.telemetry) {
    p.telemetry->p_positive = total.p_positive;
    p.telemetry->p_underflow = total.p_underflow;
    p.telemetry->max_abs_scaled_logit = total.max_abs_scaled_logit;
  }
  if (p.amax) *p.amax = ForwardAmax{total.max_abs_o, total.max_abs_scaled_logit};
  FP8ATTN_REQUIRE(total.nonfinite == 0, FP8ATTN_STATUS_NUMERICS,
                  std::to_string(total.nonfinite) + " output values are NaN or infinite (decode path)");
}

}  // namespace fp8attn::engine
