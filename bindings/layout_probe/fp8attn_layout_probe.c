/* Prints the size of every ABI struct and the offset of every field as the C compiler lays them
 * out against the header it is compiled with, one "<struct> <field> <offset>" line each
 * ("<struct> sizeof <size>" for sizes). The Python, Rust and Go bindings compare their own
 * layouts with this output, so each binding test fails if a field is added, moved or resized in
 * the header and not in the binding. Build: cc -std=c99 -I<prefix>/include fp8attn_layout_probe.c */
#include <stddef.h>
#include <stdio.h>

#include "fp8attn/fp8attn.h"

#define FIELD(T, f) printf("%s %s %zu\n", #T, #f, offsetof(T, f))
#define SIZE(T) printf("%s sizeof %zu\n", #T, sizeof(T))

static void error_and_tensor(void) {
  SIZE(fp8attn_error);
  FIELD(fp8attn_error, struct_size);
  FIELD(fp8attn_error, status);
  FIELD(fp8attn_error, message);

  SIZE(fp8attn_tensor);
  FIELD(fp8attn_tensor, struct_size);
  FIELD(fp8attn_tensor, next);
  FIELD(fp8attn_tensor, data);
  FIELD(fp8attn_tensor, dtype);
  FIELD(fp8attn_tensor, device);
  FIELD(fp8attn_tensor, rank);
  FIELD(fp8attn_tensor, shape);
  FIELD(fp8attn_tensor, stride);

  SIZE(fp8attn_context_options);
  FIELD(fp8attn_context_options, struct_size);
  FIELD(fp8attn_context_options, next);
  FIELD(fp8attn_context_options, backend);
  FIELD(fp8attn_context_options, device_ordinal);
  FIELD(fp8attn_context_options, num_threads);
  FIELD(fp8attn_context_options, log_level);
  FIELD(fp8attn_context_options, log_callback);
  FIELD(fp8attn_context_options, log_user_data);
}

static void attention(void) {
  SIZE(fp8attn_attention_desc);
  FIELD(fp8attn_attention_desc, struct_size);
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
  FIELD(fp8attn_attention_desc, page_size);
  FIELD(fp8attn_attention_desc, kv_dtype);
  FIELD(fp8attn_attention_desc, decode);
  FIELD(fp8attn_attention_desc, num_splits);

  SIZE(fp8attn_telemetry);
  FIELD(fp8attn_telemetry, struct_size);
  FIELD(fp8attn_telemetry, p_positive);
  FIELD(fp8attn_telemetry, p_underflow);
  FIELD(fp8attn_telemetry, max_abs_scaled_logit);

  SIZE(fp8attn_attention_args);
  FIELD(fp8attn_attention_args, struct_size);
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
  FIELD(fp8attn_attention_args, out_scale);
  FIELD(fp8attn_attention_args, amax_o);
  FIELD(fp8attn_attention_args, scale_state);
  FIELD(fp8attn_attention_args, scale_state_layer);

  SIZE(fp8attn_attention_bwd_args);
  FIELD(fp8attn_attention_bwd_args, struct_size);
  FIELD(fp8attn_attention_bwd_args, next);
  FIELD(fp8attn_attention_bwd_args, q);
  FIELD(fp8attn_attention_bwd_args, k);
  FIELD(fp8attn_attention_bwd_args, v);
  FIELD(fp8attn_attention_bwd_args, out);
  FIELD(fp8attn_attention_bwd_args, dout);
  FIELD(fp8attn_attention_bwd_args, lse);
  FIELD(fp8attn_attention_bwd_args, dq);
  FIELD(fp8attn_attention_bwd_args, dk);
  FIELD(fp8attn_attention_bwd_args, dv);
  FIELD(fp8attn_attention_bwd_args, cu_seqlens_q);
  FIELD(fp8attn_attention_bwd_args, cu_seqlens_k);
  FIELD(fp8attn_attention_bwd_args, deterministic);

  SIZE(fp8attn_sink_model);
  FIELD(fp8attn_sink_model, struct_size);
  FIELD(fp8attn_sink_model, next);
  FIELD(fp8attn_sink_model, sink_strength);
  FIELD(fp8attn_sink_model, k_sink);
  FIELD(fp8attn_sink_model, p_scale);
  FIELD(fp8attn_sink_model, kv_order);
  FIELD(fp8attn_sink_model, block_n);
  FIELD(fp8attn_sink_model, seqlen_k);
}

static void scales_and_quantize(void) {
  SIZE(fp8attn_power_iteration_options);
  FIELD(fp8attn_power_iteration_options, struct_size);
  FIELD(fp8attn_power_iteration_options, next);
  FIELD(fp8attn_power_iteration_options, max_iterations);
  FIELD(fp8attn_power_iteration_options, tolerance);
  FIELD(fp8attn_power_iteration_options, seed);
  FIELD(fp8attn_power_iteration_options, warm_start);
  FIELD(fp8attn_power_iteration_options, iterations_out);
  FIELD(fp8attn_power_iteration_options, residual_out);
  FIELD(fp8attn_power_iteration_options, wq_descale);
  FIELD(fp8attn_power_iteration_options, wk_descale);

  SIZE(fp8attn_rope_options);
  FIELD(fp8attn_rope_options, struct_size);
  FIELD(fp8attn_rope_options, next);
  FIELD(fp8attn_rope_options, theta_base);
  FIELD(fp8attn_rope_options, layout);
  FIELD(fp8attn_rope_options, min_offset);
  FIELD(fp8attn_rope_options, max_offset);
  FIELD(fp8attn_rope_options, max_iterations);
  FIELD(fp8attn_rope_options, tolerance);
  FIELD(fp8attn_rope_options, seed);

  SIZE(fp8attn_scale_state_options);
  FIELD(fp8attn_scale_state_options, struct_size);
  FIELD(fp8attn_scale_state_options, next);
  FIELD(fp8attn_scale_state_options, num_layers);
  FIELD(fp8attn_scale_state_options, recipe);
  FIELD(fp8attn_scale_state_options, amax_history_len);
  FIELD(fp8attn_scale_state_options, amax_algo);
  FIELD(fp8attn_scale_state_options, margin);
  FIELD(fp8attn_scale_state_options, burn_in_steps);
  FIELD(fp8attn_scale_state_options, token_norm_bound);
  FIELD(fp8attn_scale_state_options, alpha_margin);
  FIELD(fp8attn_scale_state_options, alpha_decay);
  FIELD(fp8attn_scale_state_options, grad_dtype);

  SIZE(fp8attn_quantize_options);
  FIELD(fp8attn_quantize_options, struct_size);
  FIELD(fp8attn_quantize_options, next);
  FIELD(fp8attn_quantize_options, granularity);
  FIELD(fp8attn_quantize_options, block_rows);
  FIELD(fp8attn_quantize_options, head_group);
  FIELD(fp8attn_quantize_options, rotate);
  FIELD(fp8attn_quantize_options, seed);
  FIELD(fp8attn_quantize_options, margin);
  FIELD(fp8attn_quantize_options, leading_rows);

  SIZE(fp8attn_combine_args);
  FIELD(fp8attn_combine_args, struct_size);
  FIELD(fp8attn_combine_args, next);
  FIELD(fp8attn_combine_args, partial_out);
  FIELD(fp8attn_combine_args, partial_lse);
  FIELD(fp8attn_combine_args, out);
  FIELD(fp8attn_combine_args, lse);
  SIZE(fp8attn_kv_append_args);
  FIELD(fp8attn_kv_append_args, struct_size);
  FIELD(fp8attn_kv_append_args, next);
  FIELD(fp8attn_kv_append_args, k);
  FIELD(fp8attn_kv_append_args, v);
  FIELD(fp8attn_kv_append_args, k_cache);
  FIELD(fp8attn_kv_append_args, v_cache);
  FIELD(fp8attn_kv_append_args, slot_mapping);
  FIELD(fp8attn_kv_append_args, scale_granularity);
  FIELD(fp8attn_kv_append_args, rotate);
  FIELD(fp8attn_kv_append_args, seed);
  FIELD(fp8attn_kv_append_args, k_descale);
  FIELD(fp8attn_kv_append_args, v_descale);
}

static void paged_kv(void) {
  SIZE(fp8attn_paged_kv);
  FIELD(fp8attn_paged_kv, struct_size);
  FIELD(fp8attn_paged_kv, next);
  FIELD(fp8attn_paged_kv, struct_type);
  FIELD(fp8attn_paged_kv, scale_granularity);
  FIELD(fp8attn_paged_kv, k_cache);
  FIELD(fp8attn_paged_kv, v_cache);
  FIELD(fp8attn_paged_kv, block_table);
  FIELD(fp8attn_paged_kv, seqused_k);
  FIELD(fp8attn_paged_kv, max_seqlen_k);
  FIELD(fp8attn_paged_kv, k_descale);
  FIELD(fp8attn_paged_kv, v_descale);
}

int main(void) {
  error_and_tensor();
  attention();
  paged_kv();
  scales_and_quantize();
  return 0;
}
