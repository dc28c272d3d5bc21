// The host plan of the Hopper attention forward, written once for every device runtime (the
// CUDA runtime and the emulator): which kernel runs, the TMA tensor-map parameters of Q, K and
// V, the launch geometry, the workspace carving and the kernel's arguments. Host arguments become
// device parameters here, in one validating function (STYLE §7).
#pragma once

#include <cstddef>

#include "kernels/sm90/attention/fwd_launch.hpp"
#include "lib/attention/attention_config.hpp"
#include "lib/attention/attention_problem.hpp"

namespace fp8attn::gpu {

/// Rows of a [batch, seq, head, dim] tensor as a 4D TMA map {dim, head, seq, batch} with a box of
/// `box_dim` x 1 head x `box_rows` rows (packed tensors: batch 1). Throws
/// Error(UNSUPPORTED_ON_BACKEND) when the tensor breaks a TMA rule. The backward's plan uses it too.
arch::TensorMapSpec attention_tensor_map(const char* name, const SeqTensor& t, arch::TmaDataType type, int64_t rows,
                                         int64_t heads, int64_t batch, int head_dim, uint32_t box_dim, uint32_t box_rows,
                                         arch::Swizzle swizzle);

/// Workspace bytes of one forward call: the telemetry counters and amaxes (always: a call's
/// amax_o or scale state runs the telemetry kernel whatever the plan says).
size_t attention_fwd_workspace_bytes(const AttentionConfig& config);

/// Throws Error(UNSUPPORTED_ON_BACKEND or UNSUPPORTED_DTYPE) when the kernel cannot run `config`.
void check_attention_fwd_supported(const AttentionConfig& config);

/// The kernel input type of `config`: E4M3 (QGMMA) or BF16 (HGMMA).
sm90::FwdInput attention_fwd_input(const AttentionConfig& config);

/// The launch of one forward call. `workspace` holds attention_fwd_workspace_bytes(); `sm_count`
/// bounds the persistent grid. Throws Error with a specific status when a tensor breaks a TMA
/// rule (16-byte aligned base and strides, unit dim stride).
sm90::FwdLaunch plan_attention_fwd(const AttentionConfig& config, const AttentionProblem& problem, void* workspace,
                                   int sm_count);

}  // namespace fp8attn::gpu
