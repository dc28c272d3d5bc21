package fp8attn

/*
#include "fp8attn/fp8attn.h"
*/
import "C"

import "unsafe"

// cLayout lists unsafe.Sizeof and unsafe.Offsetof of every ABI struct as cgo translated it,
// keyed "<struct> <field>" ("<struct> sizeof" for sizes); layout_test.go compares it with the C
// probe. (cgo cannot be used in _test.go files, so the table lives here.)
func cLayout() map[string]uintptr {
	m := map[string]uintptr{}
	var e C.fp8attn_error
	m["fp8attn_error sizeof"], m["fp8attn_error struct_size"] = unsafe.Sizeof(e), unsafe.Offsetof(e.struct_size)
	m["fp8attn_error status"], m["fp8attn_error message"] = unsafe.Offsetof(e.status), unsafe.Offsetof(e.message)
	var t C.fp8attn_tensor
	for k, v := range map[string]uintptr{"sizeof": unsafe.Sizeof(t), "struct_size": unsafe.Offsetof(t.struct_size),
		"next": unsafe.Offsetof(t.next), "data": unsafe.Offsetof(t.data), "dtype": unsafe.Offsetof(t.dtype),
		"device": unsafe.Offsetof(t.device), "rank": unsafe.Offsetof(t.rank), "shape": unsafe.Offsetof(t.shape),
		"stride": unsafe.Offsetof(t.stride)} {
		m["fp8attn_tensor "+k] = v
	}
	var o C.fp8attn_context_options
	for k, v := range map[string]uintptr{"sizeof": unsafe.Sizeof(o), "struct_size": unsafe.Offsetof(o.struct_size),
		"next": unsafe.Offsetof(o.next), "backend": unsafe.Offsetof(o.backend),
		"device_ordinal": unsafe.Offsetof(o.device_ordinal), "num_threads": unsafe.Offsetof(o.num_threads),
		"log_level": unsafe.Offsetof(o.log_level), "log_callback": unsafe.Offsetof(o.log_callback),
		"log_user_data": unsafe.Offsetof(o.log_user_data)} {
		m["fp8attn_context_options "+k] = v
	}
	var d C.fp8attn_attention_desc
	for k, v := range map[string]uintptr{"sizeof": unsafe.Sizeof(d), "struct_size": unsafe.Offsetof(d.struct_size),
		"next": unsafe.Offsetof(d.next), "input_dtype": unsafe.Offsetof(d.input_dtype),
		"output_dtype": unsafe.Offsetof(d.output_dtype), "head_dim": unsafe.Offsetof(d.head_dim),
		"head_dim_v": unsafe.Offsetof(d.head_dim_v), "num_heads_q": unsafe.Offsetof(d.num_heads_q),
		"num_heads_kv": unsafe.Offsetof(d.num_heads_kv), "causal": unsafe.Offsetof(d.causal),
		"window_left": unsafe.Offsetof(d.window_left), "window_right": unsafe.Offsetof(d.window_right),
		"softmax_scale": unsafe.Offsetof(d.softmax_scale), "kv_order": unsafe.Offsetof(d.kv_order),
		"p_scale_log2": unsafe.Offsetof(d.p_scale_log2), "pv_promote_interval": unsafe.Offsetof(d.pv_promote_interval),
		"softmax_variant": unsafe.Offsetof(d.softmax_variant), "stabilized_beta": unsafe.Offsetof(d.stabilized_beta),
		"stabilized_tie_tol": unsafe.Offsetof(d.stabilized_tie_tol), "telemetry": unsafe.Offsetof(d.telemetry),
		"stabilized_shift_cap_log2": unsafe.Offsetof(d.stabilized_shift_cap_log2),
		"sink_tokens":               unsafe.Offsetof(d.sink_tokens), "accumulator_model": unsafe.Offsetof(d.accumulator_model),
		"accumulator_mantissa_bits": unsafe.Offsetof(d.accumulator_mantissa_bits),
		"page_size":                 unsafe.Offsetof(d.page_size), "kv_dtype": unsafe.Offsetof(d.kv_dtype),
		"decode": unsafe.Offsetof(d.decode), "num_splits": unsafe.Offsetof(d.num_splits)} {
		m["fp8attn_attention_desc "+k] = v
	}
	var pk C.fp8attn_paged_kv
	for k, v := range map[string]uintptr{"sizeof": unsafe.Sizeof(pk), "struct_size": unsafe.Offsetof(pk.struct_size),
		"next": unsafe.Offsetof(pk.next), "struct_type": unsafe.Offsetof(pk.struct_type),
		"scale_granularity": unsafe.Offsetof(pk.scale_granularity), "k_cache": unsafe.Offsetof(pk.k_cache),
		"v_cache": unsafe.Offsetof(pk.v_cache), "block_table": unsafe.Offsetof(pk.block_table),
		"seqused_k": unsafe.Offsetof(pk.seqused_k), "max_seqlen_k": unsafe.Offsetof(pk.max_seqlen_k),
		"k_descale": unsafe.Offsetof(pk.k_descale), "v_descale": unsafe.Offsetof(pk.v_descale)} {
		m["fp8attn_paged_kv "+k] = v
	}
	var tl C.fp8attn_telemetry
	for k, v := range map[string]uintptr{"sizeof": unsafe.Sizeof(tl), "struct_size": unsafe.Offsetof(tl.struct_size),
		"p_positive": unsafe.Offsetof(tl.p_positive), "p_underflow": unsafe.Offsetof(tl.p_underflow),
		"max_abs_scaled_logit": unsafe.Offsetof(tl.max_abs_scaled_logit)} {
		m["fp8attn_telemetry "+k] = v
	}
	var a C.fp8attn_attention_args
	for k, v := range map[string]uintptr{"sizeof": unsafe.Sizeof(a), "struct_size": unsafe.Offsetof(a.struct_size),
		"next": unsafe.Offsetof(a.next), "q": unsafe.Offsetof(a.q), "k": unsafe.Offsetof(a.k),
		"v": unsafe.Offsetof(a.v), "out": unsafe.Offsetof(a.out), "lse": unsafe.Offsetof(a.lse),
		"cu_seqlens_q": unsafe.Offsetof(a.cu_seqlens_q), "cu_seqlens_k": unsafe.Offsetof(a.cu_seqlens_k),
		"q_descale": unsafe.Offsetof(a.q_descale), "k_descale": unsafe.Offsetof(a.k_descale),
		"v_descale": unsafe.Offsetof(a.v_descale), "telemetry": unsafe.Offsetof(a.telemetry),
		"q_block_descale": unsafe.Offsetof(a.q_block_descale), "k_block_descale": unsafe.Offsetof(a.k_block_descale),
		"v_block_descale": unsafe.Offsetof(a.v_block_descale), "out_scale": unsafe.Offsetof(a.out_scale),
		"amax_o": unsafe.Offsetof(a.amax_o), "scale_state": unsafe.Offsetof(a.scale_state),
		"scale_state_layer": unsafe.Offsetof(a.scale_state_layer)} {
		m["fp8attn_attention_args "+k] = v
	}
	var ba C.fp8attn_attention_bwd_args
	for k, v := range map[string]uintptr{"sizeof": unsafe.Sizeof(ba), "struct_size": unsafe.Offsetof(ba.struct_size),
		"next": unsafe.Offsetof(ba.next), "q": unsafe.Offsetof(ba.q), "k": unsafe.Offsetof(ba.k),
		"v": unsafe.Offsetof(ba.v), "out": unsafe.Offsetof(ba.out), "dout": unsafe.Offsetof(ba.dout),
		"lse": unsafe.Offsetof(ba.lse), "dq": unsafe.Offsetof(ba.dq), "dk": unsafe.Offsetof(ba.dk),
		"dv": unsafe.Offsetof(ba.dv), "cu_seqlens_q": unsafe.Offsetof(ba.cu_seqlens_q),
		"cu_seqlens_k": unsafe.Offsetof(ba.cu_seqlens_k), "deterministic": unsafe.Offsetof(ba.deterministic)} {
		m["fp8attn_attention_bwd_args "+k] = v
	}
	var s C.fp8attn_sink_model
	for k, v := range map[string]uintptr{"sizeof": unsafe.Sizeof(s), "struct_size": unsafe.Offsetof(s.struct_size),
		"next": unsafe.Offsetof(s.next), "sink_strength": unsafe.Offsetof(s.sink_strength),
		"k_sink": unsafe.Offsetof(s.k_sink), "p_scale": unsafe.Offsetof(s.p_scale),
		"kv_order": unsafe.Offsetof(s.kv_order), "block_n": unsafe.Offsetof(s.block_n),
		"seqlen_k": unsafe.Offsetof(s.seqlen_k)} {
		m["fp8attn_sink_model "+k] = v
	}
	var p C.fp8attn_power_iteration_options
	for k, v := range map[string]uintptr{"sizeof": unsafe.Sizeof(p), "struct_size": unsafe.Offsetof(p.struct_size),
		"next": unsafe.Offsetof(p.next), "max_iterations": unsafe.Offsetof(p.max_iterations),
		"tolerance": unsafe.Offsetof(p.tolerance), "seed": unsafe.Offsetof(p.seed),
		"warm_start": unsafe.Offsetof(p.warm_start), "iterations_out": unsafe.Offsetof(p.iterations_out),
		"residual_out": unsafe.Offsetof(p.residual_out), "wq_descale": unsafe.Offsetof(p.wq_descale),
		"wk_descale": unsafe.Offsetof(p.wk_descale)} {
		m["fp8attn_power_iteration_options "+k] = v
	}
	var r C.fp8attn_rope_options
	for k, v := range map[string]uintptr{"sizeof": unsafe.Sizeof(r), "struct_size": unsafe.Offsetof(r.struct_size),
		"next": unsafe.Offsetof(r.next), "theta_base": unsafe.Offsetof(r.theta_base),
		"layout": unsafe.Offsetof(r.layout), "min_offset": unsafe.Offsetof(r.min_offset),
		"max_offset": unsafe.Offsetof(r.max_offset), "max_iterations": unsafe.Offsetof(r.max_iterations),
		"tolerance": unsafe.Offsetof(r.tolerance), "seed": unsafe.Offsetof(r.seed)} {
		m["fp8attn_rope_options "+k] = v
	}
	var so C.fp8attn_scale_state_options
	for k, v := range map[string]uintptr{"sizeof": unsafe.Sizeof(so), "struct_size": unsafe.Offsetof(so.struct_size),
		"next": unsafe.Offsetof(so.next), "num_layers": unsafe.Offsetof(so.num_layers),
		"recipe": unsafe.Offsetof(so.recipe), "amax_history_len": unsafe.Offsetof(so.amax_history_len),
		"amax_algo": unsafe.Offsetof(so.amax_algo), "margin": unsafe.Offsetof(so.margin),
		"burn_in_steps": unsafe.Offsetof(so.burn_in_steps), "token_norm_bound": unsafe.Offsetof(so.token_norm_bound),
		"alpha_margin": unsafe.Offsetof(so.alpha_margin), "alpha_decay": unsafe.Offsetof(so.alpha_decay),
		"grad_dtype": unsafe.Offsetof(so.grad_dtype)} {
		m["fp8attn_scale_state_options "+k] = v
	}
	var qo C.fp8attn_quantize_options
	for k, v := range map[string]uintptr{"sizeof": unsafe.Sizeof(qo), "struct_size": unsafe.Offsetof(qo.struct_size),
		"next": unsafe.Offsetof(qo.next), "granularity": unsafe.Offsetof(qo.granularity),
		"block_rows": unsafe.Offsetof(qo.block_rows), "head_group": unsafe.Offsetof(qo.head_group),
		"rotate": unsafe.Offsetof(qo.rotate), "seed": unsafe.Offsetof(qo.seed), "margin": unsafe.Offsetof(qo.margin),
		"leading_rows": unsafe.Offsetof(qo.leading_rows)} {
		m["fp8attn_quantize_options "+k] = v
	}
	var ca C.fp8attn_combine_args
	for k, v := range map[string]uintptr{"sizeof": unsafe.Sizeof(ca), "struct_size": unsafe.Offsetof(ca.struct_size),
		"next": unsafe.Offsetof(ca.next), "partial_out": unsafe.Offsetof(ca.partial_out),
		"partial_lse": unsafe.Offsetof(ca.partial_lse), "out": unsafe.Offsetof(ca.out), "lse": unsafe.Offsetof(ca.lse)} {
		m["fp8attn_combine_args "+k] = v
	}
	var ka C.fp8attn_kv_append_args
	for k, v := range map[string]uintptr{"sizeof": unsafe.Sizeof(ka), "struct_size": unsafe.Offsetof(ka.struct_size),
		"next": unsafe.Offsetof(ka.next), "k": unsafe.Offsetof(ka.k), "v": unsafe.Offsetof(ka.v),
		"k_cache": unsafe.Offsetof(ka.k_cache), "v_cache": unsafe.Offsetof(ka.v_cache),
		"slot_mapping": unsafe.Offsetof(ka.slot_mapping), "scale_granularity": unsafe.Offsetof(ka.scale_granularity),
		"rotate": unsafe.Offsetof(ka.rotate), "seed": unsafe.Offsetof(ka.seed),
		"k_descale": unsafe.Offsetof(ka.k_descale), "v_descale": unsafe.Offsetof(ka.v_descale)} {
		m["fp8attn_kv_append_args "+k] = v
	}
	return m
}
