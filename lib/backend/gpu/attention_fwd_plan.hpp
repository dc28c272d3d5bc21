// The host plan of the Hopper attention forward, written once for every device runtime (the
// CUDA runtime and the emulator): which kernel runs, the TMA tensor-map parameters of Q, K and
// V, the launch geometry, the workspace carving and the kernel's arguments. Host arguments become
// device parameters here, in one validating function (STYLE §7). The backward's plan
// (attention_bwd_plan.cpp) shares its tensor maps and the argument copies below.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/sm90/attention/fwd_launch.hpp"
#include "lib/attention/attention_config.hpp"
#include "lib/attention/attention_problem.hpp"

namespace fp8attn::gpu {

/// Rows of a [batch, seq, head, dim] tensor as a 4D TMA map {dim, head, seq, batch} with a box of
/// `box_dim` x `box_heads` heads x `box_rows` rows (packed tensors: batch 1; the decode path's Q
/// box holds several heads: decode_plan.cpp). Throws
/// Error(UNSUPPORTED_ON_BACKEND) when the tensor breaks a TMA rule. The backward's plan uses it too.
arch::TensorMapSpec attention_tensor_map(const char* name, const SeqTensor& t, arch::TmaDataType type, int64_t rows,
                                         int64_t heads, int64_t batch, int head_dim, uint32_t box_dim, uint32_t box_rows,
                                         arch::Swizzle swizzle, uint32_t box_heads = 1);

/// A tensor's batch, seq and head strides (elements) into the three fields of a kernel argument.
inline void copy_strides(const SeqTensor& t, int64_t& batch_stride, int64_t& seq_stride, int64_t& head_stride) {
  batch_stride = t.batch_stride;
  seq_stride = t.seq_stride;
  head_stride = t.head_stride;
}

/// The kernel arguments the forward and the backward (sm90::FwdArguments, sm90::BwdArguments)
/// take alike from a problem: the LSE and its strides, the sequences (cu_seqlens when packed, the
/// padded lengths), the batch and the head counts.
template <class KernelArgs>
void copy_sequence_args(const AttentionConfig& c, const AttentionProblem& p, KernelArgs& a) {
  a.lse = static_cast<decltype(a.lse)>(p.lse.data);
  copy_strides(p.lse, a.lse_batch_stride, a.lse_seq_stride, a.lse_head_stride);
  a.cu_seqlens_q = p.varlen ? p.cu_seqlens_q : nullptr;
  a.cu_seqlens_k = p.varlen ? p.cu_seqlens_k : nullptr;
  a.seqlen_q = p.padded_seqlen_q;
  a.seqlen_k = p.padded_seqlen_k;
  a.batch = static_cast<int32_t>(p.batch);
  a.heads_q = c.num_heads_q;
  a.heads_kv = c.num_heads_kv;
}

/// Workspace bytes of one forward call: the telemetry counters and amaxes (always: a call's
/// amax_o or scale state runs the telemetry kernel whatever the plan says).
/// A decode plan adds its splits' partials (decode_plan.hpp) for the given bounds.
size_t attention_fwd_workspace_bytes(const AttentionConfig& config, int64_t batch = 0, int64_t max_seqlen_q = 0,
                                     int64_t max_seqlen_k = 0);

/// Throws Error(UNSUPPORTED_ON_BACKEND or UNSUPPORTED_DTYPE) when the kernel cannot run `config`.
void check_attention_fwd_supported(const AttentionConfig& config);

/// The kernel input type of `config`: E4M3 (QGMMA) or BF16 (HGMMA).
sm90::FwdInput attention_fwd_input(const AttentionConfig& config);

/// The launch of one forward call. `workspace` holds attention_fwd_workspace_bytes(); `sm_count`
/// bounds the persistent grid. Throws Error with a specific status when a tensor breaks a TMA
/// rule (16-byte aligned base and strides, unit dim stride). A paged cache (problem.paged) gets
/// its tensor maps over the pages, the table and seqused_k, and the fault words at byte 128 of
/// the workspace (sm90::FwdPagedFaults; docs/kernels.md, "K and V from a paged KV cache").
sm90::FwdLaunch plan_attention_fwd(const AttentionConfig& config, const AttentionProblem& problem, void* workspace,
                                   int sm_count);

}  // namespace fp8attn::gpu
