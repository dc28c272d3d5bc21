// The host plan of the Hopper BF16 attention backward, written once for every device runtime:
// which kernels run, the TMA maps of Q, K, V and dO, the launch geometry, the workspace carving
// and the kernels' arguments (STYLE §7: host arguments become device parameters here).
//
// Workspace (caller-owned; the call allocates nothing): per (row, query head) the LSE in log2
// units and D (2 floats), then the dQ shares: deterministic mode keeps one F32 slot of dQ's size
// per key block (ceil(max_seqlen_k / BlockN) slots, summed in key-block order by the dQ kernel),
// i.e. batch · max_seqlen_q · heads_q · head_dim · 4 bytes per 128 keys; atomic mode uses slot 0.
// The size is the deterministic one, since the query does not know the call's mode.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/sm90/attention/bwd_launch.hpp"
#include "lib/attention/attention_backward_problem.hpp"
#include "lib/attention/attention_config.hpp"

namespace fp8attn::gpu {

/// Throws Error(UNSUPPORTED_ON_BACKEND, UNSUPPORTED_HEAD_DIM or UNSUPPORTED_DTYPE) when the
/// backward kernel cannot run `config`.
void check_attention_bwd_supported(const AttentionConfig& config);

/// Workspace bytes of one backward call for problems up to these sizes.
size_t attention_bwd_workspace_bytes(const AttentionConfig& config, int64_t batch, int64_t max_seqlen_q,
                                     int64_t max_seqlen_k);

/// The launches of one backward call; `workspace` holds attention_bwd_workspace_bytes() for the
/// problem's sizes. Throws Error with a specific status when a tensor breaks a kernel rule.
sm90::BwdLaunch plan_attention_bwd(const AttentionConfig& config, const AttentionBackwardProblem& problem,
                                   void* workspace);

}  // namespace fp8attn::gpu
