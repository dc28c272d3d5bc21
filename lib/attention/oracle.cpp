#include "lib/attention/oracle.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/sm90/kv_schedule.hpp"
#include "kernels/sm90/mask.hpp"
#include "lib/core/error.hpp"
#include "lib/numerics/element_io.hpp"
#include "lib/numerics/exact_logits.hpp"

namespace fp8attn {
namespace {

constexpr int64_t kRowsPerItem = 64;

struct OracleScratch {
  double* k;       // [seqlen_k][head_dim], dequantized
  double* v;       // [seqlen_k][head_dim_v]
  double* logits;  // [seqlen_k]
  double* out;     // [head_dim_v]
};

size_t per_worker_doubles(const AttentionConfig& c, int64_t max_seqlen_k) {
  return static_cast<size_t>(max_seqlen_k) * (c.head_dim + c.head_dim_v + 1) + c.head_dim_v + c.head_dim;
}

}  // namespace

size_t oracle_workspace_size(const AttentionConfig& c, int64_t max_seqlen_k, int workers) {
  // NOTE: checked arithmetic: a huge max_seqlen_k must not wrap into a small workspace.
  size_t per_row = 0, bytes = 0;
  const size_t row_doubles = static_cast<size_t>(c.head_dim + c.head_dim_v + 1);
  const bool overflow = __builtin_mul_overflow(static_cast<size_t>(max_seqlen_k), row_doubles, &per_row) ||
                        __builtin_add_overflow(per_row, static_cast<size_t>(c.head_dim + c.head_dim_v), &per_row) ||
                        __builtin_mul_overflow(per_row, sizeof(double) * static_cast<size_t>(workers), &bytes);
  require(!overflow, FP8ATTN_STATUS_BAD_SHAPE,
          "max_seqlen_k = " + std::to_string(max_seqlen_k) + " makes the workspace size overflow size_t");
  return bytes;
}

void oracle_attention(const AttentionConfig& c, const AttentionProblem& p, ThreadPool& pool, void* workspace,
                      const OracleRowSink& sink) {
  // Work items: (sequence, query head, block of 64 rows).
  std::vector<int64_t> item_begin(p.batch + 1, 0);
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t row_blocks = (p.span(b).seqlen_q + kRowsPerItem - 1) / kRowsPerItem;
    item_begin[b + 1] = item_begin[b] + row_blocks * c.num_heads_q;
  }
  const size_t stride = per_worker_doubles(c, p.max_seqlen_k);
  const int d = c.head_dim, dv = c.head_dim_v;

  pool.parallel_for(item_begin[p.batch], [&](int64_t item, int worker) {
    int64_t b = 0;
    while (item >= item_begin[b + 1]) ++b;
    const int64_t local = item - item_begin[b];
    const int h = static_cast<int>(local % c.num_heads_q);
    const int64_t row0 = (local / c.num_heads_q) * kRowsPerItem;
    const int hk = h / c.heads_per_kv();
    const SeqSpan s = p.span(b);
    const int64_t row1 = std::min(row0 + kRowsPerItem, s.seqlen_q);

    double* base = static_cast<double*>(workspace) + stride * static_cast<size_t>(worker);
    OracleScratch w{base, base + s.seqlen_k * d, base + s.seqlen_k * (d + dv), base + s.seqlen_k * (d + dv + 1)};
    double* q = w.out + dv;

    const double qd = p.q_descale.at(b, hk), kd = p.k_descale.at(b, hk), vd = p.v_descale.at(b, hk);
    const bool per_token = p.paged.present && p.paged.scale_granularity == FP8ATTN_KV_SCALE_PER_TOKEN_HEAD;
    for (int64_t j = 0; j < s.seqlen_k; ++j) {
      const int64_t slot = sm90::kv_descale_slot(j, c.sink_tokens, c.tile.block_n);
      double kj = kd * p.k_block_descale.at(b, hk, slot), vj = vd * p.v_block_descale.at(b, hk, slot);
      if (per_token) {  // a paged cache's per-(token, KV head) descales: value = code · descale
        const int64_t page = p.paged.page(b, j), token = j % p.paged.page_size;
        kj *= p.paged.k_scale.at(page, token, hk);
        vj *= p.paged.v_scale.at(page, token, hk);
      }
      for (int e = 0; e < d; ++e)
        w.k[j * d + e] = kj * num::load_as_float(p.k.data, p.k.dtype, p.kv_element_offset(p.k, b, s.k_offset + j, hk, e));
      for (int e = 0; e < dv; ++e)
        w.v[j * dv + e] = vj * num::load_as_float(p.v.data, p.v.dtype, p.kv_element_offset(p.v, b, s.k_offset + j, hk, e));
    }
    const sm90::MaskParams mask{c.causal, c.window_left, c.window_right, s.seqlen_q, s.seqlen_k};
    for (int64_t i = row0; i < row1; ++i) {
      for (int e = 0; e < d; ++e)
        q[e] = qd * p.q_block_descale.at(b, h, i / c.tile.block_m) * num::load_as_float(p.q.data, p.q.dtype, element_offset(p.q, b, s.q_offset + i, h, e));
      const sm90::KeyRange keys = sm90::visible_keys(mask, i);
      num::exact_logits(q, d, keys.first, keys.last, static_cast<double>(c.softmax_scale),
                        [&](int64_t j) { return &w.k[j * d]; }, w.logits);
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t j = keys.first; j <= keys.last; ++j) m = std::max(m, w.logits[j]);
      for (int e = 0; e < dv; ++e) w.out[e] = 0.0;
      double l = 0.0;
      for (int64_t j = keys.first; j <= keys.last; ++j) {
        const double pj = std::exp(w.logits[j] - m);
        l += pj;
        for (int e = 0; e < dv; ++e) w.out[e] += pj * w.v[j * dv + e];
      }
      if (l > 0.0)
        for (int e = 0; e < dv; ++e) w.out[e] /= l;
      const double lse = l > 0.0 ? m + std::log(l) : -std::numeric_limits<double>::infinity();
      sink(b, i, h, w.out, lse);
    }
  });
}

}  // namespace fp8attn
