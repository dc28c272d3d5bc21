#include "lib/attention/attention_problem.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "kernels/sm90/kv_schedule.hpp"
#include "kernels/sm90/softmax_math.hpp"
#include "lib/core/checked_math.hpp"
#include "lib/core/error.hpp"
#include "lib/core/tensor.hpp"
#include "lib/attention/paged_kv_problem.hpp"

namespace fp8attn {
namespace {

SeqTensor padded_view(const fp8attn_tensor& t) {
  return {t.data, t.dtype, t.stride[0], t.stride[1], t.stride[2], t.stride[3]};
}

SeqTensor packed_view(const fp8attn_tensor& t) { return {t.data, t.dtype, 0, t.stride[0], t.stride[1], t.stride[2]}; }

/// Extent of a dim as validation walks it: a stride-0 dim holds one value, checked once, so
/// the cost follows the memory a descriptor covers, not its logical size.
int64_t distinct(int64_t extent, int64_t stride) { return stride == 0 && extent > 0 ? 1 : extent; }

/// Checks a descale tensor: F32 [batch, heads_kv], finite and positive values (host only).
Descale read_descale(const fp8attn_tensor& t, std::string_view what, int64_t batch, int heads_kv, int32_t device) {
  if (!check_tensor(t, what, {2, FP8ATTN_DTYPE_F32, device, true})) return {};
  require_extent(t, what, 0, batch, "batch");
  require_extent(t, what, 1, heads_kv, "num_heads_kv");
  Descale d{static_cast<const float*>(t.data), t.stride[0], t.stride[1]};
  if (device == FP8ATTN_DEVICE_HOST) {
    for (int64_t b = 0; b < distinct(batch, t.stride[0]); ++b)
      for (int64_t h = 0; h < distinct(heads_kv, t.stride[1]); ++h) {
        const float x = d.at(b, h);
        FP8ATTN_REQUIRE(std::isfinite(x) && x > 0.0f, FP8ATTN_STATUS_BAD_SCALE,
                        std::string(what) + "[" + std::to_string(b) + ", " + std::to_string(h) +
                            "] must be finite and > 0, got " + std::to_string(x));
      }
  }
  return d;
}

/// Checks a per-block descale: F32 [batch, heads, blocks], finite and > 0.
/// `blocks` is the descale tensor's block extent; `blocks_meaning` says how it is computed.
BlockDescale read_block_descale(const fp8attn_tensor& t, std::string_view what, int64_t batch, int heads,
                                int64_t blocks, std::string_view blocks_meaning, int32_t device) {
  if (!check_tensor(t, what, {3, FP8ATTN_DTYPE_F32, device, true})) return {};
  require_extent(t, what, 0, batch, "batch");
  require_extent(t, what, 1, heads, "heads");
  require_extent(t, what, 2, blocks, blocks_meaning);
  BlockDescale d{static_cast<const float*>(t.data), t.stride[0], t.stride[1], t.stride[2]};
  if (device == FP8ATTN_DEVICE_HOST) {
    d.largest = 0.0f;
    for (int64_t b = 0; b < distinct(batch, t.stride[0]); ++b)
      for (int64_t h = 0; h < distinct(heads, t.stride[1]); ++h)
        for (int64_t n = 0; n < distinct(blocks, t.stride[2]); ++n) {
          const float x = d.at(b, h, n);
          FP8ATTN_REQUIRE(std::isfinite(x) && x > 0.0f, FP8ATTN_STATUS_BAD_SCALE,
                          std::string(what) + "[" + std::to_string(b) + ", " + std::to_string(h) + ", " +
                              std::to_string(n) + "] must be finite and > 0, got " + std::to_string(x));
          d.largest = std::max(d.largest, x);
        }
  }
  return d;
}

/// Checks cu_seqlens: I32 [batch+1], starts at 0, non-decreasing, ends at `total`.
const int32_t* read_cu_seqlens(const fp8attn_tensor& t, std::string_view what, int64_t total, int64_t* batch,
                               int64_t* max_len) {
  check_tensor(t, what, {1, FP8ATTN_DTYPE_I32, FP8ATTN_DEVICE_HOST, false});
  FP8ATTN_REQUIRE(t.shape[0] >= 2, FP8ATTN_STATUS_BAD_SHAPE, std::string(what) + " needs batch + 1 ≥ 2 entries");
  require_at_most(t.shape[0] - 1, FP8ATTN_MAX_BATCH, "the batch (cu_seqlens entries − 1)", FP8ATTN_STATUS_BAD_SHAPE);
  const int32_t* c = static_cast<const int32_t*>(t.data);
  const int64_t s = t.stride[0];
  FP8ATTN_REQUIRE(s == 1, FP8ATTN_STATUS_BAD_STRIDE, std::string(what) + " must be contiguous (stride 1)");
  FP8ATTN_REQUIRE(c[0] == 0, FP8ATTN_STATUS_BAD_SEQLENS,
                  std::string(what) + "[0] must be 0, got " + std::to_string(c[0]));
  *max_len = 0;
  for (int64_t i = 1; i < t.shape[0]; ++i) {
    FP8ATTN_REQUIRE(c[i] >= c[i - 1], FP8ATTN_STATUS_BAD_SEQLENS,
                    std::string(what) + " must be non-decreasing: [" + std::to_string(i - 1) + "] = " +
                        std::to_string(c[i - 1]) + " > [" + std::to_string(i) + "] = " + std::to_string(c[i]));
    *max_len = std::max<int64_t>(*max_len, int64_t{c[i]} - c[i - 1]);
  }
  FP8ATTN_REQUIRE(c[t.shape[0] - 1] == total, FP8ATTN_STATUS_BAD_SEQLENS,
                  std::string(what) + " ends at " + std::to_string(c[t.shape[0] - 1]) +
                      " but the packed tensor holds " + std::to_string(total) + " rows");
  *batch = t.shape[0] - 1;
  return c;
}

}  // namespace

void require_scales_in_range(const AttentionConfig& c, const AttentionProblem& p, int32_t device) {
  const bool host = device == FP8ATTN_DEVICE_HOST;
  // NOTE: a descale tensor in device memory is not read here (the CUDA backend): only its
  // by-value and host-resident descales are checked, the others count as 1.
  auto read = [&](const Descale& d, int64_t b, int64_t h) { return d.data == nullptr || host ? d.at(b, h) : 1.0f; };
  auto varies = [&](const Descale& d, int dim) {
    return d.data != nullptr && host && (dim == 0 ? d.batch_stride : d.head_stride) != 0;
  };
  const int64_t batches = varies(p.q_descale, 0) || varies(p.k_descale, 0) || varies(p.v_descale, 0) ? p.batch : 1;
  const int64_t heads = varies(p.q_descale, 1) || varies(p.k_descale, 1) || varies(p.v_descale, 1) ? c.num_heads_kv : 1;
  if (p.batch == 0) return;
  // The largest |S| = |Q·Kᵀ| an input format can hold, before any scale: head_dim · max|code|²
  // for E4M3 (448). BF16 codes reach FP32's range, so only the scale itself is checked for them.
  const bool fp8 = c.input_dtype == FP8ATTN_DTYPE_E4M3;
  const double code_max = 448.0;
  const double s_max = fp8 ? static_cast<double>(c.head_dim) * code_max * code_max : 0.0;
  // NOTE: a quarter of FLT_MAX leaves room for the exp2 step's difference of two scaled logits
  // (S·scale_log2 − max·scale_log2 + log2 S_p) and for the rescale, both in FP32.
  const double logit_limit = std::numeric_limits<float>::max() / 4.0;
  // NOTE: per-token K and V descales of a paged cache act as per-block ones do: their largest.
  const bool per_token = p.paged.present && p.paged.scale_granularity == FP8ATTN_KV_SCALE_PER_TOKEN_HEAD;
  const double k_token = per_token ? p.paged.k_scale.largest : 1.0, v_token = per_token ? p.paged.v_scale.largest : 1.0;
  const double blocks = static_cast<double>(p.q_block_descale.largest) * p.k_block_descale.largest * k_token;
  FP8ATTN_REQUIRE(blocks * s_max <= logit_limit, FP8ATTN_STATUS_BAD_SCALE,
                  "args.q_block_descale and args.k_block_descale: their largest values (" +
                      std::to_string(p.q_block_descale.largest) + ", " + std::to_string(p.k_block_descale.largest) +
                      ") can carry a logit Q·Kᵀ of E4M3 codes out of FP32's range");
  // O is a convex combination of V's rows times v_descale (and a V block's descale): bounded by
  // max|code| · v_descale; twice that for the rounding of P and of the sums.
  const double out_max = p.out.dtype == FP8ATTN_DTYPE_BF16 ? 3.3895313892515355e38 : std::numeric_limits<float>::max();
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      const float qd = read(p.q_descale, b, h), kd = read(p.k_descale, b, h), vd = read(p.v_descale, b, h);
      const float scale_log2 = sm90::logit_scale_log2(c.softmax_scale, qd, kd);
      auto where = [&] { return "[" + std::to_string(b) + ", " + std::to_string(h) + "]"; };
      FP8ATTN_REQUIRE(std::isfinite(scale_log2) && scale_log2 >= std::numeric_limits<float>::min(),
                      FP8ATTN_STATUS_BAD_SCALE,
                      "the logit scale softmax_scale · args.q_descale" + where() + " · args.k_descale" + where() +
                          " · log2(e) = " + std::to_string(c.softmax_scale) + " · " + std::to_string(qd) + " · " +
                          std::to_string(kd) + " · 1.4427 " +
                          (std::isfinite(scale_log2) ? "underflows FP32's normal range (below 2^-126)"
                                                     : "overflows FP32") +
                          ": softmax_scale from desc.softmax_scale (0 = 1/sqrt(head_dim))");
      FP8ATTN_REQUIRE(blocks * s_max * scale_log2 <= logit_limit, FP8ATTN_STATUS_BAD_SCALE,
                      "the logit scale softmax_scale · args.q_descale" + where() + " · args.k_descale" + where() +
                          " = " + std::to_string(c.softmax_scale) + " · " + std::to_string(qd) + " · " +
                          std::to_string(kd) + " can carry a logit Q·Kᵀ of E4M3 codes (up to head_dim · 448²) " +
                          "out of FP32's range");
      const bool v_fp8 = c.kv_dtype == FP8ATTN_DTYPE_E4M3;
      const double o_bound = 2.0 * (v_fp8 ? code_max : 1.0) * vd * p.v_block_descale.largest * v_token;
      FP8ATTN_REQUIRE(!v_fp8 || o_bound <= out_max, FP8ATTN_STATUS_BAD_SCALE,
                      "args.v_descale" + where() + " = " + std::to_string(vd) +
                          " (times the largest args.v_block_descale, " + std::to_string(p.v_block_descale.largest) +
                          ", and the largest per-token paged_kv.v_descale, " + std::to_string(v_token) + ") can carry O = P·V of E4M3 codes (up to 448 · v_descale) out of the " +
                          dtype_name(p.out.dtype) + " output's range");
    }
}

AttentionProblem make_attention_problem(const AttentionConfig& cfg, const fp8attn_attention_args& a, int32_t device) {
  AttentionProblem p;
  const ForwardExtensions ext = read_forward_extensions(cfg, a.next);
  const int32_t in = cfg.input_dtype;
  check_tensor(a.q, "args.q", {0, in, device, false});
  const bool varlen = a.q.rank == 3;
  FP8ATTN_REQUIRE(a.q.rank == 3 || a.q.rank == 4, FP8ATTN_STATUS_BAD_SHAPE,
          "args.q must have rank 4 [batch, seqlen, heads, dim] or 3 [total, heads, dim], got rank " +
              std::to_string(a.q.rank));
  const int32_t rank = a.q.rank;
  const int hd = varlen ? 1 : 2;  // index of the head dimension
  if (!ext.paged) {
    check_tensor(a.k, "args.k", {rank, cfg.kv_dtype, device, false});
    check_tensor(a.v, "args.v", {rank, cfg.kv_dtype, device, false});
    require_extent(a.k, "args.k", hd, cfg.num_heads_kv, "num_heads_kv");
    require_extent(a.k, "args.k", hd + 1, cfg.head_dim, "head_dim");
    require_extent(a.v, "args.v", hd, cfg.num_heads_kv, "num_heads_kv");
    require_extent(a.v, "args.v", hd + 1, cfg.head_dim_v, "head_dim_v");
    require_extent(a.v, "args.v", hd - 1, a.k.shape[hd - 1], "args.k's sequence extent");
  }
  check_tensor(a.out, "args.out", {rank, cfg.output_dtype, device, false});
  require_extent(a.q, "args.q", hd, cfg.num_heads_q, "num_heads_q");
  require_extent(a.q, "args.q", hd + 1, cfg.head_dim, "head_dim");
  require_extent(a.out, "args.out", hd - 1, a.q.shape[hd - 1], "args.q's sequence extent");
  require_extent(a.out, "args.out", hd, cfg.num_heads_q, "num_heads_q");
  require_extent(a.out, "args.out", hd + 1, cfg.head_dim_v, "head_dim_v");
  require_no_overlap(a.out, "args.out");

  p.varlen = varlen;
  if (varlen) {
    int64_t batch_q = 0;
    p.cu_seqlens_q = read_cu_seqlens(a.cu_seqlens_q, "args.cu_seqlens_q", a.q.shape[0], &batch_q, &p.max_seqlen_q);
    p.batch = batch_q;
    p.total_q = a.q.shape[0];
    p.q = packed_view(a.q);
    p.out = packed_view(a.out);
    if (!ext.paged) {
      int64_t batch_k = 0;
      p.cu_seqlens_k = read_cu_seqlens(a.cu_seqlens_k, "args.cu_seqlens_k", a.k.shape[0], &batch_k, &p.max_seqlen_k);
      FP8ATTN_REQUIRE(batch_q == batch_k, FP8ATTN_STATUS_BAD_SHAPE,
              "args.cu_seqlens_q and cu_seqlens_k describe " + std::to_string(batch_q) + " and " +
                  std::to_string(batch_k) + " sequences");
      p.total_k = a.k.shape[0];
      p.k = packed_view(a.k);
      p.v = packed_view(a.v);
    }
  } else {
    FP8ATTN_REQUIRE(a.cu_seqlens_q.data == nullptr && a.cu_seqlens_k.data == nullptr, FP8ATTN_STATUS_BAD_SHAPE,
            "args.cu_seqlens_q/k are only for rank-3 packed tensors");
    p.batch = a.q.shape[0];
    require_extent(a.out, "args.out", 0, p.batch, "batch");
    p.padded_seqlen_q = p.max_seqlen_q = a.q.shape[1];
    p.q = padded_view(a.q);
    p.out = padded_view(a.out);
    if (!ext.paged) {
      require_extent(a.k, "args.k", 0, p.batch, "batch");
      require_extent(a.v, "args.v", 0, p.batch, "batch");
      p.padded_seqlen_k = p.max_seqlen_k = a.k.shape[1];
      p.k = padded_view(a.k);
      p.v = padded_view(a.v);
    }
  }
  require_at_most(p.batch, FP8ATTN_MAX_BATCH, "the batch", FP8ATTN_STATUS_BAD_SHAPE);
  if (ext.paged) fill_paged_kv(cfg, ext.paged_kv, a, &p, device);

  require_at_most(p.max_seqlen_q, FP8ATTN_MAX_SEQLEN, "seqlen_q", FP8ATTN_STATUS_BAD_SHAPE);
  require_at_most(p.max_seqlen_k, FP8ATTN_MAX_SEQLEN, "seqlen_k", FP8ATTN_STATUS_BAD_SHAPE);

  if (check_tensor(a.lse, "args.lse", {varlen ? 2 : 3, FP8ATTN_DTYPE_F32, device, true})) {
    if (varlen) {
      require_extent(a.lse, "args.lse", 0, cfg.num_heads_q, "num_heads_q");
      require_extent(a.lse, "args.lse", 1, a.q.shape[0], "total_q");
      p.lse = {a.lse.data, a.lse.dtype, 0, a.lse.stride[1], a.lse.stride[0], 0};
    } else {
      require_extent(a.lse, "args.lse", 0, p.batch, "batch");
      require_extent(a.lse, "args.lse", 1, cfg.num_heads_q, "num_heads_q");
      require_extent(a.lse, "args.lse", 2, p.padded_seqlen_q, "seqlen_q");
      p.lse = {a.lse.data, a.lse.dtype, a.lse.stride[0], a.lse.stride[2], a.lse.stride[1], 0};
    }
    require_no_overlap(a.lse, "args.lse");
  }
  p.q_descale = read_descale(a.q_descale, "args.q_descale", p.batch, cfg.num_heads_kv, device);
  p.k_descale = read_descale(a.k_descale, "args.k_descale", p.batch, cfg.num_heads_kv, device);
  p.v_descale = read_descale(a.v_descale, "args.v_descale", p.batch, cfg.num_heads_kv, device);
  if (ext.paged) apply_paged_descales(&p);
  const int64_t q_blocks = ceil_div(p.max_seqlen_q, cfg.tile.block_m);
  p.q_block_descale = read_block_descale(a.q_block_descale, "args.q_block_descale", p.batch, cfg.num_heads_q,
                                         q_blocks, "ceil(max_seqlen_q / block_m)", device);
  // NOTE: with sink isolation the KV blocks are the sink block and then blocks of block_n from key
  // sink_tokens, and the descales follow them (kernels/sm90/kv_schedule.hpp).
  const int64_t kv_blocks = sm90::kv_descale_slots(p.max_seqlen_k, cfg.sink_tokens, cfg.tile.block_n);
  const std::string_view kv_meaning = cfg.sink_tokens == 0 ? "ceil(max_seqlen_k / block_n)"
                                                           : "1 + ceil((max_seqlen_k − sink_tokens) / block_n), the "
                                                             "sink block first (desc.sink_tokens > 0)";
  p.k_block_descale = read_block_descale(a.k_block_descale, "args.k_block_descale", p.batch, cfg.num_heads_kv,
                                         kv_blocks, kv_meaning, device);
  p.v_block_descale = read_block_descale(a.v_block_descale, "args.v_block_descale", p.batch, cfg.num_heads_kv,
                                         kv_blocks, kv_meaning, device);
  if (cfg.telemetry && a.telemetry) {
    FP8ATTN_REQUIRE(a.telemetry->struct_size >= sizeof(fp8attn_telemetry), FP8ATTN_STATUS_BAD_STRUCT_SIZE,
            "args.telemetry->struct_size is " + std::to_string(a.telemetry->struct_size) + ", expected " +
                std::to_string(sizeof(fp8attn_telemetry)));
    p.telemetry = a.telemetry;
  }
  return p;
}

}  // namespace fp8attn
