/* Prints the size of every ABI struct and the offset of every field, as the C compiler lays
 * them out, one "<struct> <field> <offset>" line each ("<struct> sizeof <size>" for sizes).
 * The ctypes test compares its mirrors against this. */
#include <stddef.h>
#include <stdio.h>

#include "fp8attn/fp8attn.h"

#define FIELD(T, f) printf("%s %s %zu\n", #T, #f, offsetof(T, f))
#define SIZE(T) printf("%s sizeof %zu\n", #T, sizeof(T))

int main(void) {
  SIZE(fp8attn_error);
  FIELD(fp8attn_error, status);
  FIELD(fp8attn_error, message);

  SIZE(fp8attn_tensor);
  FIELD(fp8attn_tensor, next);
  FIELD(fp8attn_tensor, data);
  FIELD(fp8attn_tensor, dtype);
  FIELD(fp8attn_tensor, device);
  FIELD(fp8attn_tensor, rank);
  FIELD(fp8attn_tensor, shape);
  FIELD(fp8attn_tensor, stride);

  SIZE(fp8attn_context_options);
  FIELD(fp8attn_context_options, next);
  FIELD(fp8attn_context_options, backend);
  FIELD(fp8attn_context_options, device_ordinal);
  FIELD(fp8attn_context_options, num_threads);
  FIELD(fp8attn_context_options, log_level);
  FIELD(fp8attn_context_options, log_callback);
  FIELD(fp8attn_context_options, log_user_data);

  SIZE(fp8attn_attention_desc);
  FIELD(fp8attn_attention_desc, next);
  FIELD(fp8attn_attention_desc, input_dtype);
  FIELD(fp8attn_attention_desc, output_dtype);
  FIELD(fp8attn_attention_desc, head_dim);
  FIELD(fp8attn_attention_desc, head_dim_v);
  FIELD(fp8attn_attention_desc, num_heads_q);
  FIELD(fp8attn_attention_desc, num_heads_kv);
  FIELD(fp8attn_attention_desc, causal);
  FIELD(fp8attn_attention_desc, window_left);
  FIELD(fp8attn_attention_desc, window_right);
  FIELD(fp8attn_attention_desc, softmax_scale);
  FIELD(fp8attn_attention_desc, kv_order);
  FIELD(fp8attn_attention_desc, p_scale_log2);
  FIELD(fp8attn_attention_desc, pv_promote_interval);
  FIELD(fp8attn_attention_desc, softmax_variant);
  FIELD(fp8attn_attention_desc, stabilized_beta);
  FIELD(fp8attn_attention_desc, stabilized_tie_tol);
  FIELD(fp8attn_attention_desc, telemetry);
  FIELD(fp8attn_attention_desc, stabilized_shift_cap_log2);
  FIELD(fp8attn_attention_desc, sink_tokens);
  FIELD(fp8attn_attention_desc, accumulator_model);
  FIELD(fp8attn_attention_desc, accumulator_mantissa_bits);

  SIZE(fp8attn_telemetry);
  FIELD(fp8attn_telemetry, p_positive);
  FIELD(fp8attn_telemetry, p_underflow);
  FIELD(fp8attn_telemetry, max_abs_scaled_logit);

  SIZE(fp8attn_attention_args);
  FIELD(fp8attn_attention_args, next);
  FIELD(fp8attn_attention_args, q);
  FIELD(fp8attn_attention_args, k);
  FIELD(fp8attn_attention_args, v);
  FIELD(fp8attn_attention_args, out);
  FIELD(fp8attn_attention_args, lse);
  FIELD(fp8attn_attention_args, cu_seqlens_q);
  FIELD(fp8attn_attention_args, cu_seqlens_k);
  FIELD(fp8attn_attention_args, q_descale);
  FIELD(fp8attn_attention_args, k_descale);
  FIELD(fp8attn_attention_args, v_descale);
  FIELD(fp8attn_attention_args, telemetry);
  FIELD(fp8attn_attention_args, q_block_descale);
  FIELD(fp8attn_attention_args, k_block_descale);
  FIELD(fp8attn_attention_args, v_block_descale);
  return 0;
}
