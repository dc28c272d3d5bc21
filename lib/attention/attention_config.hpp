// A validated attention description: what fp8attn_plan_create() checked, with every default
// resolved. Plans hold one; the backends read only this, never the caller's struct.
#pragma once

#include <cstdint>

#include "fp8attn/fp8attn.h"
#include "kernels/ptx/mma_order.hpp"
#include "kernels/sm90/tile_config.hpp"

namespace fp8attn {

struct AttentionConfig {
  int32_t input_dtype;   ///< FP8ATTN_DTYPE_E4M3 or FP8ATTN_DTYPE_BF16
  int32_t output_dtype;  ///< FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_F32 or FP8ATTN_DTYPE_E4M3 (scaled)
  int head_dim;
  int head_dim_v;
  int num_heads_q;
  int num_heads_kv;
  bool causal;
  int64_t window_left;   ///< −1 = unbounded
  int64_t window_right;  ///< −1 = unbounded
  float softmax_scale;   ///< resolved: 0 in the description becomes 1/√head_dim
  int32_t kv_order;
  int p_scale_log2;      ///< resolved: 0 for BF16 inputs
  int pv_promote_interval;
  int32_t softmax_variant;
  float stabilized_beta;
  float stabilized_tie_tol;
  float stabilized_shift_cap_log2;
  bool telemetry;
  int64_t sink_tokens;
  arch::MmaPrecisionModel mma_model;  ///< desc.accumulator_model: the tensor core's addition (default) or FP32
  arch::MmaRule mma_rule;             ///< mma_model resolved for the inputs' format (E4M3 or BF16)
  sm90::AttentionTile tile;
  /// desc.page_size: tokens per page of a paged KV cache (fp8attn_paged_kv); 0 = K and V are
  /// contiguous or packed tensors.
  int64_t page_size;
  /// desc.kv_dtype resolved: the dtype of K and V (or of the paged cache). Equal to input_dtype,
  /// or E4M3 under BF16 Q (the CPU engine then runs the BF16 path on the exactly decoded codes).
  int32_t kv_dtype;
  /// desc.decode: the decode path (at most FP8ATTN_MAX_DECODE_Q_LEN queries per sequence).
  bool decode;
  /// desc.num_splits: KV splits per sequence on the decode path; 0 = the heuristic.
  int num_splits;

  bool fp8() const { return input_dtype == FP8ATTN_DTYPE_E4M3; }
  int heads_per_kv() const { return num_heads_q / num_heads_kv; }
  bool paged() const { return page_size > 0; }
  /// K and V in a dtype other than Q's (BF16 Q over E4M3 K and V).
  bool mixed_kv_dtype() const { return kv_dtype != input_dtype; }
};

/// Fills the defaults of fp8attn_attention_desc_init().
void default_attention_desc(fp8attn_attention_desc* desc);

/// Checks a full-size description and resolves its defaults. Throws Error with the status of
/// the first bad field.
AttentionConfig make_attention_config(const fp8attn_attention_desc& desc);

}  // namespace fp8attn
