// The FP64 oracle of the Table 3 study: softmax(Q·Kᵀ/√d)·V computed in double on the real-valued
// (unquantized) F32 inputs, so the error it measures includes the quantization of Q, K and V.
#pragma once

#include <vector>

#include "tools/common/attention_inputs.hpp"

namespace fp8attn::table3 {

/// Non-causal attention of every (batch, query head) with GQA head sharing, padded layout;
/// output [batch, seqlen_q, heads_q, head_dim] as float (rounded once from double). Runs on
/// `threads` host threads (0 = all cores).
std::vector<float> exact_attention(const workloads::AttentionInputs& in, int threads);

}  // namespace fp8attn::table3
