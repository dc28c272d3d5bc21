"""ctypes mirrors of include/fp8attn/fp8attn.h: the one copy of the ABI's structs, enums and
prototypes on the Python side. tests/test_layout.py checks every size and field offset against a
C probe compiled against the installed header."""
from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char, c_double, c_float, c_int32, c_int64, c_size_t, c_uint32, c_uint64, c_void_p

MAX_RANK = 8
ERROR_MESSAGE_LEN = 512
NUM_TENSOR_KINDS = 8
E4M3_MAX = 448.0

# Enums: the header's numbers (never reused); the binding speaks their lower-case names.
DTYPES = {"float32": 1, "float64": 2, "bfloat16": 3, "float16": 4, "float8_e4m3fn": 5, "float8_e5m2": 6,
          "int32": 7, "int64": 8}
DEVICE_HOST, DEVICE_CUDA = 0, 1
# NOTE: "emulator" (4) is the backend the next header adds (FP8ATTN_BACKEND_EMULATOR); a library
# without it answers FP8ATTN_STATUS_BAD_OPTION.
BACKENDS = {"auto": 0, "cpu": 1, "cuda": 2, "reference": 3, "emulator": 4}
LOG_LEVELS = {"default": 0, "error": 1, "warn": 2, "info": 3, "debug": 4, "trace": 5, "off": 6}
KV_ORDERS = {"reverse": 0, "forward": 1}
SOFTMAX_VARIANTS = {"standard": 0, "stabilized": 1}
# fp8attn_accumulator_model: FP8ATTN_ACCUMULATOR_FP32 = 0, FP8ATTN_ACCUMULATOR_TENSOR_CORE = 1 (default).
ACCUMULATOR_MODELS = {"fp32": 0, "tensor_core": 1}
GRANULARITIES = {"tensor": 0, "head": 1, "block": 2}
KV_SCALE_GRANULARITIES = {"none": 0, "head": 1, "token_head": 2}
TENSOR_KINDS = {"q": 0, "k": 1, "v": 2, "o": 3, "p": 4, "do": 5, "dp": 6, "logit": 7}
RECIPES = {"default": 0, "delayed": 1, "current": 2, "geometry": 3}
AMAX_ALGOS = {"max": 0, "most_recent": 1}
STRUCT_TYPE_PAGED_KV = 1  # fp8attn_struct_type
# fp8attn_kv_scale_granularity: a paged cache's descales.
KV_SCALE_GRANULARITIES = {"none": 0, "head": 1, "token_head": 2}


class ErrorStruct(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("status", c_int32), ("message", c_char * ERROR_MESSAGE_LEN)]


class Tensor(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("next", c_void_p), ("data", c_void_p), ("dtype", c_int32),
                ("device", c_int32), ("rank", c_int32), ("shape", c_int64 * MAX_RANK),
                ("stride", c_int64 * MAX_RANK)]


# void (*)(void* user_data, int32_t level, const char* msg, size_t len); msg is not NUL-terminated.
LogCallback = ctypes.CFUNCTYPE(None, c_void_p, c_int32, POINTER(c_char), c_size_t)


class ContextOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("next", c_void_p), ("backend", c_int32), ("device_ordinal", c_int32),
                ("num_threads", c_int32), ("log_level", c_int32), ("log_callback", LogCallback),
                ("log_user_data", c_void_p)]


class AttentionDesc(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("next", c_void_p), ("input_dtype", c_int32), ("output_dtype", c_int32),
                ("head_dim", c_int32), ("head_dim_v", c_int32), ("num_heads_q", c_int32), ("num_heads_kv", c_int32),
                ("causal", c_uint32), ("window_left", c_int32), ("window_right", c_int32),
                ("softmax_scale", c_float), ("kv_order", c_int32), ("p_scale_log2", c_int32),
                ("pv_promote_interval", c_int32), ("softmax_variant", c_int32), ("stabilized_beta", c_float),
                ("stabilized_tie_tol", c_float), ("telemetry", c_uint32), ("stabilized_shift_cap_log2", c_float),
                ("sink_tokens", c_int32), ("accumulator_model", c_uint32), ("accumulator_mantissa_bits", c_int32),
                ("page_size", c_int32), ("kv_dtype", c_int32), ("decode", c_uint32), ("num_splits", c_int32)]


class Telemetry(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("p_positive", c_uint64), ("p_underflow", c_uint64),
                ("max_abs_scaled_logit", c_float)]


class AttentionArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("next", c_void_p), ("q", Tensor), ("k", Tensor), ("v", Tensor),
                ("out", Tensor), ("lse", Tensor), ("cu_seqlens_q", Tensor), ("cu_seqlens_k", Tensor),
                ("q_descale", Tensor), ("k_descale", Tensor), ("v_descale", Tensor),
                ("telemetry", POINTER(Telemetry)), ("q_block_descale", Tensor), ("k_block_descale", Tensor),
                ("v_block_descale", Tensor), ("out_scale", POINTER(c_float)), ("amax_o", POINTER(c_float)),
                ("scale_state", c_void_p), ("scale_state_layer", c_int32)]


class PagedKv(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("next", c_void_p), ("struct_type", c_int32),
                ("scale_granularity", c_int32), ("k_cache", Tensor), ("v_cache", Tensor), ("block_table", Tensor),
                ("seqused_k", Tensor), ("max_seqlen_k", c_int64), ("k_descale", Tensor), ("v_descale", Tensor)]


class AttentionBwdArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("next", c_void_p), ("q", Tensor), ("k", Tensor), ("v", Tensor),
                ("out", Tensor), ("dout", Tensor), ("lse", Tensor), ("dq", Tensor), ("dk", Tensor), ("dv", Tensor),
                ("cu_seqlens_q", Tensor), ("cu_seqlens_k", Tensor), ("deterministic", c_int32)]


class SinkModel(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("next", c_void_p), ("sink_strength", c_double), ("k_sink", c_int32),
                ("p_scale", c_double), ("kv_order", c_int32), ("block_n", c_int32), ("seqlen_k", c_int64)]


class PowerIterationOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("next", c_void_p), ("max_iterations", c_int32), ("tolerance", c_float),
                ("seed", c_uint64), ("warm_start", POINTER(c_float)), ("iterations_out", POINTER(c_int32)),
                ("residual_out", POINTER(c_float)), ("wq_descale", c_float), ("wk_descale", c_float)]


class RopeOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("next", c_void_p), ("theta_base", c_float), ("layout", c_int32),
                ("min_offset", c_int64), ("max_offset", c_int64), ("max_iterations", c_int32),
                ("tolerance", c_float), ("seed", c_uint64)]


class ScaleStateOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("next", c_void_p), ("num_layers", c_int32),
                ("recipe", c_int32 * NUM_TENSOR_KINDS), ("amax_history_len", c_int32), ("amax_algo", c_int32),
                ("margin", c_float), ("burn_in_steps", c_int32), ("token_norm_bound", c_float),
                ("alpha_margin", c_float), ("alpha_decay", c_float), ("grad_dtype", c_int32)]


class QuantizeOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("next", c_void_p), ("granularity", c_int32), ("block_rows", c_int32),
                ("head_group", c_int32), ("rotate", c_uint32), ("seed", c_uint64), ("margin", c_int32),
                ("leading_rows", c_int32)]


class CombineArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("next", c_void_p), ("partial_out", Tensor), ("partial_lse", Tensor),
                ("out", Tensor), ("lse", Tensor)]


class KvAppendArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("next", c_void_p), ("k", Tensor), ("v", Tensor), ("k_cache", Tensor),
                ("v_cache", Tensor), ("slot_mapping", Tensor), ("scale_granularity", c_int32), ("rotate", c_uint32),
                ("seed", c_uint64), ("k_descale", Tensor), ("v_descale", Tensor)]


# The header's struct names, for the layout check.
STRUCTS = {
    "fp8attn_error": ErrorStruct, "fp8attn_tensor": Tensor, "fp8attn_context_options": ContextOptions,
    "fp8attn_attention_desc": AttentionDesc, "fp8attn_telemetry": Telemetry,
    "fp8attn_attention_args": AttentionArgs, "fp8attn_attention_bwd_args": AttentionBwdArgs,
    "fp8attn_paged_kv": PagedKv,
    "fp8attn_sink_model": SinkModel,
    "fp8attn_power_iteration_options": PowerIterationOptions, "fp8attn_rope_options": RopeOptions,
    "fp8attn_scale_state_options": ScaleStateOptions, "fp8attn_quantize_options": QuantizeOptions,
    "fp8attn_combine_args": CombineArgs,
    "fp8attn_kv_append_args": KvAppendArgs,
}


def new(struct_type):
    """A zeroed struct with struct_size set: the header's "zero-initialize, then set struct_size"."""
    s = struct_type()
    s.struct_size = ctypes.sizeof(struct_type)
    return s


_E = POINTER(ErrorStruct)
_T = POINTER(Tensor)
_P = c_void_p  # every opaque handle
_i32, _i64, _sz = c_int32, c_int64, c_size_t

# name: (restype, argtypes). Every fallible call takes the error struct last.
PROTOTYPES = {
    "fp8attn_get_version": (_i32, []),
    "fp8attn_status_name": (ctypes.c_char_p, [_i32]),
    "fp8attn_context_create": (_i32, [POINTER(ContextOptions), POINTER(_P), _E]),
    "fp8attn_context_destroy": (None, [_P]),
    "fp8attn_context_get_backend": (_i32, [_P, POINTER(_i32), _E]),
    "fp8attn_context_set_log_level": (_i32, [_P, _i32, _E]),
    "fp8attn_attention_desc_init": (_i32, [POINTER(AttentionDesc)]),
    "fp8attn_plan_create": (_i32, [_P, POINTER(AttentionDesc), POINTER(_P), _E]),
    "fp8attn_plan_destroy": (None, [_P]),
    "fp8attn_plan_workspace_size": (_i32, [_P, _i64, _i64, _i64, POINTER(_sz), _E]),
    "fp8attn_plan_get_tile": (_i32, [_P, POINTER(_i32), POINTER(_i32), _E]),
    "fp8attn_attention_forward": (_i32, [_P, POINTER(AttentionArgs), c_void_p, _sz, c_void_p, _E]),
    "fp8attn_plan_backward_workspace_size": (_i32, [_P, _i64, _i64, _i64, POINTER(_sz), _E]),
    "fp8attn_attention_backward": (_i32, [_P, POINTER(AttentionBwdArgs), c_void_p, _sz, c_void_p, _E]),
    "fp8attn_predict_p_underflow": (_i32, [POINTER(SinkModel), POINTER(c_double), POINTER(c_double), _E]),
    "fp8attn_qk_spectral_norms_workspace_size": (_i32, [_P, _i32, _i32, _i32, _i64, POINTER(_sz), _E]),
    "fp8attn_qk_spectral_norms": (_i32, [_P, _T, _T, _i32, _i32, _i32, POINTER(PowerIterationOptions),
                                         POINTER(c_float), c_void_p, _sz, c_void_p, _E]),
    "fp8attn_logit_bound": (_i32, [POINTER(c_float), _i32, _i32, c_float, c_float, POINTER(c_float),
                                   POINTER(c_float), _E]),
    "fp8attn_qk_rope_norms": (_i32, [_P, _T, _T, _i32, _i32, _i32, POINTER(RopeOptions), POINTER(c_float),
                                     POINTER(c_float), _E]),
    "fp8attn_scale_state_create": (_i32, [_P, POINTER(ScaleStateOptions), POINTER(_P), _E]),
    "fp8attn_scale_state_destroy": (None, [_P]),
    "fp8attn_scale_state_report_amax": (_i32, [_P, _i32, _i32, c_float, _E]),
    "fp8attn_scale_state_report_amax_batch": (_i32, [_P, POINTER(c_float), _sz, _E]),
    "fp8attn_scale_state_report_amax_device": (_i32, [_P, c_int32, POINTER(c_float), _P, _E]),
    "fp8attn_scale_state_step": (_i32, [_P, _E]),
    "fp8attn_scale_state_get_scale": (_i32, [_P, _i32, _i32, POINTER(c_float), POINTER(c_float), _E]),
    "fp8attn_scale_state_set_qk_weights": (_i32, [_P, _i32, _T, _T, _i32, _i32, _i32, _E]),
    "fp8attn_scale_state_set_qk_sigma": (_i32, [_P, _i32, POINTER(c_float), _i32, _i32, _i64, _E]),
    "fp8attn_scale_state_serialize": (_i32, [_P, c_void_p, _sz, POINTER(_sz), _E]),
    "fp8attn_scale_state_deserialize": (_i32, [_P, c_void_p, _sz, _E]),
    "fp8attn_quantize": (_i32, [_P, _T, _T, POINTER(QuantizeOptions), _T, _T, POINTER(c_float), _E]),
    "fp8attn_host_alloc": (_i32, [_sz, _sz, POINTER(c_void_p), _E]),
    "fp8attn_host_free": (None, [c_void_p]),
    # Device execution: the quantizer on a stream, the telemetry copy.
    "fp8attn_quantize_workspace_size": (_i32, [_P, _T, _T, _i64, POINTER(QuantizeOptions), POINTER(_sz), _E]),
    "fp8attn_quantize_async": (_i32, [_P, _T, _T, _i64, POINTER(QuantizeOptions), _T, _T, POINTER(c_float),
                                      c_void_p, _sz, c_void_p, _E]),
    "fp8attn_attention_telemetry_copy_async": (_i32, [_P, c_void_p, _sz, POINTER(Telemetry), c_void_p, _E]),
    # Merging partial results.
    "fp8attn_attention_combine_workspace_size": (_i32, [_P, POINTER(CombineArgs), POINTER(_sz), _E]),
    "fp8attn_attention_combine": (_i32, [_P, POINTER(CombineArgs), c_void_p, _sz, c_void_p, _E]),
    # Serving: the paged KV cache's append.
    "fp8attn_kv_append_async": (_i32, [_P, POINTER(KvAppendArgs), c_void_p, _E]),
}
