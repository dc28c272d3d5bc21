#include "lib/backend/gpu/attention_bwd_plan.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "lib/backend/gpu/attention_fwd_plan.hpp"
#include "lib/core/checked_math.hpp"
#include "lib/core/error.hpp"

namespace fp8attn::gpu {
namespace {

constexpr size_t kAlign = 256;

size_t round_up(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

/// The workspace's parts, in order.
struct BwdWorkspace {
  size_t row_stats;  ///< lse_log2 and delta: 2 · rows · heads_q floats
  size_t partials;   ///< slots · rows · heads_q · head_dim floats
  size_t total;
};

BwdWorkspace workspace_layout(const AttentionConfig& c, int64_t batch, int64_t max_seqlen_q, int64_t max_seqlen_k) {
  const sm90::BwdKernelShape shape = sm90::bwd_kernel_shape({c.head_dim});
  const int64_t rows = checked_mul(batch, max_seqlen_q, "backward workspace rows");
  const int64_t row_heads = checked_mul(rows, int64_t{c.num_heads_q}, "backward workspace rows");
  const int64_t slots = std::max<int64_t>(1, ceil_div(max_seqlen_k, int64_t{shape.block_n}));  // atomic: slot 0
  BwdWorkspace w{};
  w.row_stats = round_up(checked_mul(sizeof(float) * 2, static_cast<size_t>(row_heads), "backward row statistics"));
  const int64_t slot = checked_mul(row_heads, int64_t{c.head_dim}, "dQ slot");
  w.partials = round_up(checked_mul(sizeof(float), static_cast<size_t>(checked_mul(slot, slots, "dQ slots")), "dQ slots"));
  w.total = checked_add(w.row_stats, w.partials, "backward workspace");
  return w;
}

void require_unit_dim(const SeqTensor& t, const char* name) {
  require(t.dim_stride == 1, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          std::string(name) + ": the Hopper backward reads and writes rows with a dim stride of 1, got " +
              std::to_string(t.dim_stride));
}

}  // namespace

void check_attention_bwd_supported(const AttentionConfig& c) {
  require(c.head_dim == c.head_dim_v, FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM,
          "the Hopper backward needs head_dim_v = head_dim");
  require(sm90::bwd_kernel_exists({c.head_dim}), FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          "the Hopper BF16 backward has kernels for head_dim 64, 128 and 256 only (got " + std::to_string(c.head_dim) +
              "); other head dims run on the CPU backend");
  require(c.output_dtype == FP8ATTN_DTYPE_BF16, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          "the Hopper backward takes O and dO in BF16 (its wgmmas read dO as BF16); this plan's output_dtype is " +
              std::to_string(c.output_dtype) + " (F32 O and dO run on the CPU backend)");
}

size_t attention_bwd_workspace_bytes(const AttentionConfig& c, int64_t batch, int64_t max_seqlen_q,
                                     int64_t max_seqlen_k) {
  check_attention_bwd_supported(c);
  return workspace_layout(c, batch, max_seqlen_q, max_seqlen_k).total;
}

sm90::BwdLaunch plan_attention_bwd(const AttentionConfig& c, const AttentionBackwardProblem& bp, void* workspace) {
  check_attention_bwd_supported(c);
  const AttentionProblem& p = bp.fwd;
  sm90::BwdLaunch l;
  l.key = {c.head_dim};
  const sm90::BwdKernelShape shape = sm90::bwd_kernel_shape(l.key);
  require(shape.threads > 0, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          "no Hopper backward kernel for head_dim " + std::to_string(c.head_dim));
  for (const auto& [t, name] : {std::pair{&p.out, "out"}, std::pair{&bp.dout, "dout"}, std::pair{&bp.dq, "dq"},
                                std::pair{&bp.dk, "dk"}, std::pair{&bp.dv, "dv"}})
    require_unit_dim(*t, name);
  const int64_t batch = p.varlen ? 1 : p.batch;
  const int64_t rows_q = p.varlen ? p.total_q : p.padded_seqlen_q;
  const int64_t rows_k = p.varlen ? p.total_k : p.padded_seqlen_k;
  constexpr uint32_t kChunk = 64;  // BF16 elements of one 128-byte swizzle row
  const auto type = arch::TmaDataType::BFloat16;
  const auto sw = arch::Swizzle::B128;
  const auto bm = static_cast<uint32_t>(shape.block_m), bn = static_cast<uint32_t>(shape.block_n);
  l.q = attention_tensor_map("q", p.q, type, rows_q, c.num_heads_q, batch, c.head_dim, kChunk, bm, sw);
  l.dout = attention_tensor_map("dout", bp.dout, type, rows_q, c.num_heads_q, batch, c.head_dim, kChunk, bm, sw);
  l.k = attention_tensor_map("k", p.k, type, rows_k, c.num_heads_kv, batch, c.head_dim, kChunk, bn, sw);
  l.v = attention_tensor_map("v", p.v, type, rows_k, c.num_heads_kv, batch, c.head_dim, kChunk, bn, sw);

  sm90::BwdArguments& a = l.args;
  a.out = static_cast<const uint16_t*>(p.out.data);
  copy_strides(p.out, a.out_batch_stride, a.out_seq_stride, a.out_head_stride);
  a.dout = static_cast<const uint16_t*>(bp.dout.data);
  copy_strides(bp.dout, a.dout_batch_stride, a.dout_seq_stride, a.dout_head_stride);
  a.dq = bp.dq.data;
  a.dq_type = bp.dq.dtype == FP8ATTN_DTYPE_F32 ? sm90::BwdDqType::F32 : sm90::BwdDqType::BF16;
  copy_strides(bp.dq, a.dq_batch_stride, a.dq_seq_stride, a.dq_head_stride);
  a.dk = static_cast<uint16_t*>(bp.dk.data);
  copy_strides(bp.dk, a.dk_batch_stride, a.dk_seq_stride, a.dk_head_stride);
  a.dv = static_cast<uint16_t*>(bp.dv.data);
  copy_strides(bp.dv, a.dv_batch_stride, a.dv_seq_stride, a.dv_head_stride);
  copy_sequence_args(c, p, a);
  a.head_dim = c.head_dim;
  // NOTE: at least one: the kernels divide by it (a call whose sequences have no keys still runs the
  // dQ kernel, which stores dq = 0).
  a.n_blocks = static_cast<int32_t>(std::max<int64_t>(1, ceil_div(p.max_seqlen_k, int64_t{shape.block_n})));
  a.rows = p.varlen ? p.total_q : p.batch * p.padded_seqlen_q;
  a.softmax_scale = c.softmax_scale;
  a.causal = c.causal;
  a.window_left = c.window_left;
  a.window_right = c.window_right;
  // The workspace, carved as attention_bwd_workspace_bytes sized it for this problem.
  // NOTE: its F32 parts are read and written by every CTA (atomically in atomic mode): a misaligned
  // base would fault on the device, so it is refused here.
  require(reinterpret_cast<uintptr_t>(workspace) % 16 == 0, FP8ATTN_STATUS_INVALID_ARGUMENT,
          "the Hopper backward's workspace must be 16-byte aligned (cudaMalloc gives 256)");
  const BwdWorkspace w = workspace_layout(c, p.batch, p.max_seqlen_q, p.max_seqlen_k);
  auto* base = static_cast<unsigned char*>(workspace);
  const int64_t row_heads = p.batch * p.max_seqlen_q * c.num_heads_q;
  a.lse_log2 = reinterpret_cast<float*>(base);
  a.delta = a.lse_log2 + row_heads;
  a.dq_partials = reinterpret_cast<float*>(base + w.row_stats);
  a.partial_slot_stride = row_heads * c.head_dim;
  a.atomic_dq = !bp.deterministic;

  const int64_t key_items = static_cast<int64_t>(a.n_blocks) * a.heads_kv * a.batch;
  const int64_t row_items = a.rows * a.heads_q;
  require(key_items < (int64_t{1} << 31) && row_items / sm90::kBwdRowThreads < (int64_t{1} << 31),
          FP8ATTN_STATUS_BAD_SHAPE, "the Hopper backward's grid is limited to 2^31 - 1 CTAs");
  l.grid = static_cast<unsigned>(key_items > 0 ? key_items : 1);
  l.row_grid = static_cast<unsigned>((row_items + sm90::kBwdRowThreads - 1) / sm90::kBwdRowThreads);
  if (l.row_grid == 0) l.row_grid = 1;
  l.threads = shape.threads;
  l.smem_bytes = shape.smem_bytes;
  return l;
}

}  // namespace fp8attn::gpu
