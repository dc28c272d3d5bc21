// One backward call's tensors after validation (make_attention_backward_problem): the forward's
// validated view of q, k, v, out, lse and the sequence lengths, plus the incoming gradient dout
// and the outputs dq, dk, dv. Backends read only this, never the caller's struct.
#pragma once

#include <cstdint>

#include "fp8attn/fp8attn.h"
#include "lib/attention/attention_config.hpp"
#include "lib/attention/attention_problem.hpp"

namespace fp8attn {

struct AttentionBackwardProblem {
  /// q, k, v, out, lse (required here) and the sequence spans, checked as the forward checks
  /// them; its descales are absent (1) and its telemetry NULL.
  AttentionProblem fwd;
  SeqTensor dout;        ///< the layout of out, the plan's output dtype
  SeqTensor dq;          ///< the layout of q; BF16 or F32
  SeqTensor dk, dv;      ///< the layouts of k and v; BF16
  bool deterministic = true;

  int64_t batch() const { return fwd.batch; }
  SeqSpan span(int64_t b) const { return fwd.span(b); }
};

/// Validates args against the config for a backend whose tensors live on `device`. Throws Error
/// with the status of the first problem found; reads no output.
AttentionBackwardProblem make_attention_backward_problem(const AttentionConfig& config,
                                                         const fp8attn_attention_bwd_args& args, int32_t device);

}  // namespace fp8attn
