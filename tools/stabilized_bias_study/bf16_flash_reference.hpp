// FlashAttention-2's forward written the way the stabilized softmax's source paper ran it: a
// PyTorch-style BF16 implementation in which every operation's result is rounded to BF16 (S, P̄,
// the row sums, P̄·V, the running O and the final division), with FP32 accumulation inside each
// matrix product and sum. fp8attn's kernels keep O and the row sums in FP32; this reference
// shows how much of the paper's bias comes from the BF16 accumulators. Batch 1, heads_q ==
// heads_kv, no mask; blocks of block_n keys in forward order.
#pragma once

#include <vector>

#include "tools/common/attention_inputs.hpp"

namespace fp8attn::study {

/// O [rows][heads][head_dim] as floats (BF16 values). `stabilized` applies the block max shift
/// of kernels/sm90/softmax_math.hpp (β = 2, τ = 1e-3, cap 2^-16), the same rule as the engine.
std::vector<float> bf16_flash_forward(const workloads::AttentionShape& shape, const workloads::DequantizedInputs& in,
                                      int block_n, bool stabilized);

}  // namespace fp8attn::study
