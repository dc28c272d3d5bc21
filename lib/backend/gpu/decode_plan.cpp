#include "lib/backend/gpu/decode_plan.hpp"

#include <algorithm>
#include <string>

#include "kernels/sm90/decode/decode_config.hpp"
#include "kernels/sm90/decode_schedule.hpp"
#include "lib/backend/gpu/attention_fwd_plan.hpp"
#include "lib/core/checked_math.hpp"
#include "lib/core/error.hpp"

namespace fp8attn::gpu {
namespace {

int64_t row_tiles(const AttentionConfig& c, int64_t max_q) {
  return sm90::decode_row_tiles(max_q, c.heads_per_kv(), c.tile.block_m);
}

/// The engine's split count (sm90::decode_num_splits).
int num_splits(const AttentionConfig& c, int64_t batch, int64_t max_q, int64_t max_k) {
  return sm90::decode_num_splits(c.num_splits, c.num_heads_kv, c.heads_per_kv(), c.tile.block_m, c.tile.block_n,
                                 c.sink_tokens, batch, max_q, max_k);
}

}  // namespace

void check_decode_supported(const AttentionConfig& c) {
  require(c.pv_promote_interval <= 1, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          "desc.decode = 1 with pv_promote_interval " + std::to_string(c.pv_promote_interval) +
              ": the Hopper decode kernels promote P·V after every block or not at all; use 0 or 1 (or the CPU "
              "backend)");
  require(!c.telemetry, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          "desc.decode = 1 with telemetry (desc.telemetry, amax_o or a scale state): the Hopper decode kernels keep "
          "no counters; use the CPU backend for a measured decode");
  const int group = c.heads_per_kv();
  // NOTE: the Q box of a tile is {dim, heads, tokens} = BlockM packed rows, which needs the group
  // to divide BlockM or BlockM to divide the group (every power of two does).
  require(c.tile.block_m % group == 0 || group % c.tile.block_m == 0, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          "desc.decode = 1 with " + std::to_string(group) + " query heads per KV head: the Hopper decode kernels load " +
              std::to_string(c.tile.block_m) + " packed rows with one TMA box and need the group to divide " +
              std::to_string(c.tile.block_m) + " or be a multiple of it");
}

size_t decode_partials_bytes(const AttentionConfig& c, int64_t batch, int64_t max_q, int64_t max_k) {
  const int splits = num_splits(c, batch, max_q, max_k);
  if (splits <= 1) return 0;
  const size_t rows = checked_mul(checked_mul(static_cast<size_t>(splits), static_cast<size_t>(batch), "partials"),
                                  static_cast<size_t>(max_q) * c.num_heads_q, "partials");
  const size_t o = checked_mul(rows, static_cast<size_t>(c.head_dim_v) * sizeof(float), "partial O");
  return checked_add((o + 255) / 256 * 256, checked_mul(rows, sizeof(float), "partial LSE"), "partials");
}

void plan_decode(const AttentionConfig& c, const AttentionProblem& p, void* partials, int sm_count,
                 sm90::FwdLaunch& l) {
  check_decode_supported(c);
  const int group = c.heads_per_kv();
  require(group == 1 || !p.q_block_descale.present(), FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          "desc.decode = 1 with per-block Q descales and " + std::to_string(group) +
              " query heads per KV head: a packed tile's rows have different Q descales, which the Hopper decode "
              "kernels do not apply per row");
  l.key.decode = true;
  const sm90::FwdKernelShape shape = sm90::fwd_kernel_shape(l.key);
  require(shape.threads > 0, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          "no Hopper decode kernel for head_dim " + std::to_string(c.head_dim));
  l.threads = shape.threads;
  l.smem_bytes = shape.smem_bytes;

  // Q: BlockM packed rows per box, {chunk, heads, tokens}: heads min(group, BlockM).
  const bool bf16 = !c.fp8();
  const arch::TmaDataType type = bf16 ? arch::TmaDataType::BFloat16 : arch::TmaDataType::UInt8;
  const uint32_t chunk = l.q.box_dims[0];
  const uint32_t box_heads = static_cast<uint32_t>(std::min(group, c.tile.block_m));
  l.q = attention_tensor_map("q", p.q, type, p.varlen ? p.total_q : p.padded_seqlen_q, c.num_heads_q,
                             p.varlen ? 1 : p.batch, c.head_dim, chunk, static_cast<uint32_t>(c.tile.block_m) / box_heads,
                             l.q.swizzle, box_heads);

  const int workers = std::max(sm_count, 1);
  const int max_splits = num_splits(c, p.batch, p.max_seqlen_q, p.max_seqlen_k);
  sm90::FwdDecode& d = l.args.decode;
  d.group = group;
  d.num_splits = c.num_splits;
  d.max_splits = max_splits;
  d.row_tiles = static_cast<int32_t>(row_tiles(c, p.max_seqlen_q));
  const int64_t items = p.batch * c.num_heads_kv * row_tiles(c, p.max_seqlen_q);
  d.want = sm90::decode_heuristic_want(items);
  d.max_q = static_cast<int32_t>(p.max_seqlen_q);
  const int64_t tiles = items * max_splits;
  require(tiles <= INT32_MAX, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          "more than 2^31 - 1 decode tiles: the Hopper kernel's tile scheduler counts in 32 bits");
  l.args.num_tiles = static_cast<int32_t>(tiles);
  l.grid = static_cast<unsigned>(std::clamp<int64_t>(tiles, 1, workers));
  l.merge = max_splits > 1;
  if (!l.merge) return;
  const size_t rows = static_cast<size_t>(max_splits) * p.batch * p.max_seqlen_q * c.num_heads_q;
  auto* base = static_cast<unsigned char*>(partials);
  d.part_o = reinterpret_cast<float*>(base);
  d.part_lse = reinterpret_cast<float*>(base + (rows * c.head_dim_v * sizeof(float) + 255) / 256 * 256);

  // The merge: the parts [split][batch · max_q][head][dim], rows mapped back to the sequences.
  sm90::combine::CombineParams& m = l.merge_params;
  m.partial_out = d.part_o;
  const int64_t tokens = p.batch * p.max_seqlen_q, heads = c.num_heads_q, dv = c.head_dim_v;
  m.po_stride[0] = tokens * heads * dv, m.po_stride[1] = heads * dv, m.po_stride[2] = dv, m.po_stride[3] = 1;
  m.partial_lse = d.part_lse;
  m.pl_stride[0] = tokens * heads, m.pl_stride[1] = heads, m.pl_stride[2] = 1;
  m.out = p.out.data;
  m.out_bf16 = p.out.dtype == FP8ATTN_DTYPE_BF16;
  m.out_e4m3 = p.out.dtype == FP8ATTN_DTYPE_E4M3;
  m.out_scale = p.out_scale;
  m.out_batch_stride = p.out.batch_stride;
  m.out_stride[0] = p.out.seq_stride, m.out_stride[1] = p.out.head_stride, m.out_stride[2] = p.out.dim_stride;
  m.lse = static_cast<float*>(p.lse.data);
  m.lse_batch_stride = p.lse.batch_stride;
  m.lse_stride[0] = p.lse.seq_stride, m.lse_stride[1] = p.lse.head_stride;
  m.num_parts = max_splits;
  m.tokens = tokens;
  m.heads = heads;
  m.head_dim = dv;
  m.seq_tokens = p.max_seqlen_q;
  m.cu_seqlens_q = p.varlen ? p.cu_seqlens_q : nullptr;
  m.seqlen_q = p.padded_seqlen_q;
}

}  // namespace fp8attn::gpu
