// Inputs of the stabilized-softmax bias study: BF16 attention rows whose KV blocks each hold a
// tied row maximum, with V drawn around a negative mean (docs/design.md §3, "Stabilized safe
// softmax"). Per head h a random direction u_h; every query row is u_h + N(0, 0.1²); in every
// KV block of BlockN keys, `ties` keys are the same vector α·u_h (logit ≈ `tied_logit` natural
// units), the others N(0, 0.3²); V ~ N(v_mean, 1), the tied keys of a block sharing one V row.
#pragma once

#include <cstdint>

#include "tools/common/attention_inputs.hpp"

namespace fp8attn::study {

struct TiedMaxOptions {
  int ties = 3;             ///< tied keys per KV block (≥ 2 makes every block's max a tie)
  float tied_logit = 6.0f;  ///< the tied keys' logit, natural units after the softmax scale
  float v_mean = -0.5f;     ///< mean of V
  /// The tied keys are one token repeated: they share one V row per (block, head), drawn once.
  bool tied_share_v = true;
};

workloads::AttentionInputs tied_max_inputs(const workloads::AttentionShape& shape, int block_n,
                                           const TiedMaxOptions& options, uint64_t seed);

}  // namespace fp8attn::study
