#include "lib/attention/attention_config.hpp"

#include <cmath>
#include <string>

#include "lib/core/error.hpp"

namespace fp8attn {

void default_attention_desc(fp8attn_attention_desc* d) {
  d->next = nullptr;
  d->input_dtype = FP8ATTN_DTYPE_E4M3;
  d->output_dtype = FP8ATTN_DTYPE_BF16;
  d->head_dim = 128;
  d->head_dim_v = 0;
  d->num_heads_q = 1;
  d->num_heads_kv = 1;
  d->causal = 0;
  d->window_left = -1;
  d->window_right = -1;
  d->softmax_scale = 0.0f;
  d->kv_order = FP8ATTN_KV_ORDER_REVERSE;
  d->p_scale_log2 = 8;
  d->pv_promote_interval = 0;
  d->softmax_variant = FP8ATTN_SOFTMAX_STANDARD;
  d->stabilized_beta = 2.0f;      // NOTE: the authors' current code; the paper used 7.
  d->stabilized_tie_tol = 1e-3f;  // natural logit units
  d->telemetry = 0;
  d->stabilized_shift_cap_log2 = 16.0f;
  d->sink_tokens = 0;
  // NOTE: the tensor core's addition by default, so the CPU backend predicts the hardware
  // (kernels/ptx/mma_order.hpp; 15,000 measured H100 instructions reproduced bit for bit).
  d->accumulator_model = FP8ATTN_ACCUMULATOR_TENSOR_CORE;
  d->accumulator_mantissa_bits = arch::kFp8ResultBits;
  d->page_size = 0;
  d->kv_dtype = 0;  // input_dtype
  d->decode = 0;
  d->num_splits = 0;
}

AttentionConfig make_attention_config(const fp8attn_attention_desc& d) {
  AttentionConfig c{};
  // NOTE: a description zeroed instead of filled by fp8attn_attention_desc_init() would fail on
  // a field its author never looked at (stabilized_beta); these three defaults are non-zero and
  // no valid description has all three 0, so that case gets its own message.
  require(!(d.stabilized_beta == 0.0f && d.stabilized_shift_cap_log2 == 0.0f && d.accumulator_mantissa_bits == 0),
          FP8ATTN_STATUS_INVALID_ARGUMENT,
          "desc looks zero-initialized (stabilized_beta, stabilized_shift_cap_log2 and accumulator_mantissa_bits "
          "are all 0): fill it with fp8attn_attention_desc_init() first, then set the fields you need");
  require(d.input_dtype == FP8ATTN_DTYPE_E4M3 || d.input_dtype == FP8ATTN_DTYPE_BF16, FP8ATTN_STATUS_BAD_DTYPE,
          "desc.input_dtype must be FP8ATTN_DTYPE_E4M3 or FP8ATTN_DTYPE_BF16, got " + std::to_string(d.input_dtype));
  // NOTE: E5M2 output is refused: cuDNN's sdpa_fp8 and TransformerEngine keep O in E4M3 (E5M2
  // is their gradient format); an E4M3 output needs an output scale at call time.
  require(d.output_dtype == FP8ATTN_DTYPE_BF16 || d.output_dtype == FP8ATTN_DTYPE_F32 ||
              d.output_dtype == FP8ATTN_DTYPE_E4M3,
          FP8ATTN_STATUS_BAD_DTYPE,
          "desc.output_dtype must be FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_F32 or FP8ATTN_DTYPE_E4M3 (with an output "
          "scale), got " + std::to_string(d.output_dtype) +
              (d.output_dtype == FP8ATTN_DTYPE_E5M2 ? " (E5M2 output is not supported)" : ""));
  require(d.head_dim == 64 || d.head_dim == 128 || d.head_dim == 256, FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM,
          "desc.head_dim must be 64, 128 or 256, got " + std::to_string(d.head_dim));
  const int head_dim_v = d.head_dim_v == 0 ? d.head_dim : d.head_dim_v;
  require(head_dim_v == d.head_dim, FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM,
          "desc.head_dim_v must be 0 or equal to head_dim (" + std::to_string(d.head_dim) + "), got " +
              std::to_string(d.head_dim_v));
  require(d.num_heads_q > 0 && d.num_heads_kv > 0, FP8ATTN_STATUS_BAD_HEADS,
          "desc.num_heads_q and num_heads_kv must be positive, got " + std::to_string(d.num_heads_q) + " and " +
              std::to_string(d.num_heads_kv));
  require(d.num_heads_q % d.num_heads_kv == 0, FP8ATTN_STATUS_BAD_HEADS,
          "desc.num_heads_q (" + std::to_string(d.num_heads_q) + ") must be a multiple of num_heads_kv (" +
              std::to_string(d.num_heads_kv) + ")");
  require(d.causal <= 1, FP8ATTN_STATUS_BAD_OPTION, "desc.causal must be 0 or 1");
  require(d.window_left >= -1 && d.window_right >= -1, FP8ATTN_STATUS_BAD_OPTION,
          "desc.window_left and window_right must be ≥ −1 (−1 = unbounded)");
  require(std::isfinite(d.softmax_scale) && d.softmax_scale >= 0.0f, FP8ATTN_STATUS_BAD_SCALE,
          "desc.softmax_scale must be finite and ≥ 0 (0 = 1/sqrt(head_dim)), got " + std::to_string(d.softmax_scale));
  require(d.kv_order == FP8ATTN_KV_ORDER_REVERSE || d.kv_order == FP8ATTN_KV_ORDER_FORWARD, FP8ATTN_STATUS_BAD_OPTION,
          "desc.kv_order must be FP8ATTN_KV_ORDER_REVERSE or FP8ATTN_KV_ORDER_FORWARD, got " + std::to_string(d.kv_order));
  require(d.p_scale_log2 >= 0 && d.p_scale_log2 <= 8, FP8ATTN_STATUS_BAD_OPTION,
          "desc.p_scale_log2 must be in 0..8, got " + std::to_string(d.p_scale_log2));
  require(d.pv_promote_interval >= 0, FP8ATTN_STATUS_BAD_OPTION, "desc.pv_promote_interval must be ≥ 0");
  require(d.softmax_variant == FP8ATTN_SOFTMAX_STANDARD || d.softmax_variant == FP8ATTN_SOFTMAX_STABILIZED,
          FP8ATTN_STATUS_BAD_OPTION, "desc.softmax_variant must be STANDARD or STABILIZED, got " +
                                         std::to_string(d.softmax_variant));
  require(std::isfinite(d.stabilized_beta) && d.stabilized_beta >= 1.0f, FP8ATTN_STATUS_BAD_SCALE,
          "desc.stabilized_beta must be finite and ≥ 1, got " + std::to_string(d.stabilized_beta));
  require(std::isfinite(d.stabilized_tie_tol) && d.stabilized_tie_tol >= 0.0f, FP8ATTN_STATUS_BAD_SCALE,
          "desc.stabilized_tie_tol must be finite and ≥ 0");
  require(std::isfinite(d.stabilized_shift_cap_log2) && d.stabilized_shift_cap_log2 > 0.0f, FP8ATTN_STATUS_BAD_SCALE,
          "desc.stabilized_shift_cap_log2 must be finite and > 0");
  require(d.telemetry <= 1, FP8ATTN_STATUS_BAD_OPTION, "desc.telemetry must be 0 or 1");
  require(d.sink_tokens >= 0, FP8ATTN_STATUS_BAD_OPTION, "desc.sink_tokens must be ≥ 0, got " + std::to_string(d.sink_tokens));
  require(d.accumulator_model == FP8ATTN_ACCUMULATOR_FP32 || d.accumulator_model == FP8ATTN_ACCUMULATOR_TENSOR_CORE,
          FP8ATTN_STATUS_BAD_OPTION,
          "desc.accumulator_model must be FP8ATTN_ACCUMULATOR_FP32 (0) or FP8ATTN_ACCUMULATOR_TENSOR_CORE (1), got " +
              std::to_string(d.accumulator_model));
  // NOTE: the rule's widths are the hardware's (measured), not a knob; 0 stands for the default.
  require(d.accumulator_mantissa_bits == 0 || d.accumulator_mantissa_bits == arch::kFp8ResultBits,
          FP8ATTN_STATUS_BAD_OPTION,
          "desc.accumulator_mantissa_bits must be 13 (the tensor core's FP8 width) or 0 (the same), got " +
              std::to_string(d.accumulator_mantissa_bits));

  require(d.page_size >= 0 && d.page_size <= FP8ATTN_MAX_SEQLEN, FP8ATTN_STATUS_BAD_OPTION,
          "desc.page_size must be ≥ 0 (0: K and V are not paged) and at most FP8ATTN_MAX_SEQLEN, got " +
              std::to_string(d.page_size));
  const int32_t kv_dtype = d.kv_dtype == 0 ? d.input_dtype : d.kv_dtype;
  require(kv_dtype == FP8ATTN_DTYPE_E4M3 || kv_dtype == FP8ATTN_DTYPE_BF16, FP8ATTN_STATUS_BAD_DTYPE,
          "desc.kv_dtype must be 0 (input_dtype), FP8ATTN_DTYPE_E4M3 or FP8ATTN_DTYPE_BF16, got " +
              std::to_string(d.kv_dtype));
  // NOTE: BF16 Q over E4M3 K/V loses nothing (every E4M3 value is a BF16 value); E4M3 Q over BF16
  // K/V would round K and V to E4M3 behind the caller's back, so it is refused.
  require(!(d.input_dtype == FP8ATTN_DTYPE_E4M3 && kv_dtype == FP8ATTN_DTYPE_BF16), FP8ATTN_STATUS_BAD_DTYPE,
          "desc.kv_dtype is FP8ATTN_DTYPE_BF16 but desc.input_dtype is FP8ATTN_DTYPE_E4M3: E4M3 Q over BF16 K and V "
          "is not supported (quantize K and V to E4M3, or use BF16 Q)");

  require(d.decode <= 1, FP8ATTN_STATUS_BAD_OPTION, "desc.decode must be 0 or 1, got " + std::to_string(d.decode));
  require(d.num_splits >= 0 && d.num_splits <= FP8ATTN_MAX_COMBINE_PARTS, FP8ATTN_STATUS_BAD_OPTION,
          "desc.num_splits must be in 0..FP8ATTN_MAX_COMBINE_PARTS = 256 (0: a heuristic), got " +
              std::to_string(d.num_splits));
  require(d.decode == 1 || d.num_splits == 0, FP8ATTN_STATUS_BAD_OPTION,
          "desc.num_splits = " + std::to_string(d.num_splits) +
              " needs desc.decode = 1 (KV splits are a decode-path option); set it or leave num_splits 0");

  c.input_dtype = d.input_dtype;
  c.output_dtype = d.output_dtype;
  c.head_dim = d.head_dim;
  c.head_dim_v = head_dim_v;
  c.num_heads_q = d.num_heads_q;
  c.num_heads_kv = d.num_heads_kv;
  c.causal = d.causal != 0;
  c.window_left = d.window_left;
  c.window_right = d.window_right;
  c.softmax_scale = d.softmax_scale == 0.0f ? 1.0f / std::sqrt(static_cast<float>(d.head_dim)) : d.softmax_scale;
  c.kv_order = d.kv_order;
  // NOTE: BF16 P has 8 exponent bits; it needs no offset, so S_p = 1 for BF16 inputs.
  c.p_scale_log2 = d.input_dtype == FP8ATTN_DTYPE_E4M3 ? d.p_scale_log2 : 0;
  c.pv_promote_interval = d.pv_promote_interval;
  c.softmax_variant = d.softmax_variant;
  c.stabilized_beta = d.stabilized_beta;
  c.stabilized_tie_tol = d.stabilized_tie_tol;
  c.stabilized_shift_cap_log2 = d.stabilized_shift_cap_log2;
  c.telemetry = d.telemetry != 0;
  c.sink_tokens = d.sink_tokens;
  c.mma_model.accumulation = d.accumulator_model == FP8ATTN_ACCUMULATOR_TENSOR_CORE ? arch::MmaAccumulation::TensorCore
                                                                                   : arch::MmaAccumulation::Fp32;
  const arch::MmaFormat format = c.fp8() ? arch::MmaFormat::E4M3 : arch::MmaFormat::BF16;
  c.mma_rule = arch::mma_rule(c.mma_model, format, format);
  // NOTE: the tile depends on the promotion asked for (FP8 every-N promotion has its own BlockN at
  // head_dim 128 and BlockM 64 at 256, tile_config.hpp), decided here once for the engine and the
  // plans.
  c.page_size = d.page_size;
  c.kv_dtype = kv_dtype;
  c.decode = d.decode != 0;
  c.num_splits = d.num_splits;
  c.tile = sm90::path_tile(d.head_dim, c.fp8(), sm90::pv_promotion_of_interval(d.pv_promote_interval), c.decode);
  require(c.sink_tokens <= c.tile.block_n, FP8ATTN_STATUS_BAD_OPTION,
          "desc.sink_tokens (" + std::to_string(c.sink_tokens) + ") must not exceed the KV block size " +
              std::to_string(c.tile.block_n) + " for this head_dim and dtype");
  return c;
}

}  // namespace fp8attn
