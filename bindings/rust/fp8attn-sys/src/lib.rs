//! Raw declarations of libfp8attn's C ABI, written by hand from `include/fp8attn/fp8attn.h`.
//! Every struct is `#[repr(C)]`; `tests/layout.rs` compares each size and field offset with a C
//! probe compiled against the installed header. Enums are `i32` constants, as the header's
//! enum-typed fields are `int32_t`. Use the `fp8attn` crate for a safe API.
#![no_std]
#![allow(non_camel_case_types)]

pub use core::ffi::c_void;
/// C's `char` on the x86-64 targets this library supports (signed). NOTE: an alias rather than
/// `core::ffi::c_char`, which a no_std crate gets only from Rust 1.64 on; Debian 12 ships 1.63.
#[allow(non_camel_case_types)]
pub type c_char = i8;

pub const FP8ATTN_MAX_RANK: usize = 8;
pub const FP8ATTN_ERROR_MESSAGE_LEN: usize = 512;
pub const FP8ATTN_NUM_TENSOR_KINDS: usize = 8;
pub const FP8ATTN_E4M3_MAX: f32 = 448.0;

pub const FP8ATTN_OK: i32 = 0;
pub const FP8ATTN_STATUS_INVALID_ARGUMENT: i32 = 1000;
pub const FP8ATTN_STATUS_NULL_POINTER: i32 = 1001;
pub const FP8ATTN_STATUS_BAD_STRUCT_SIZE: i32 = 1002;
pub const FP8ATTN_STATUS_BAD_EXTENSION: i32 = 1003;
pub const FP8ATTN_STATUS_BAD_DTYPE: i32 = 1004;
pub const FP8ATTN_STATUS_BAD_SHAPE: i32 = 1005;
pub const FP8ATTN_STATUS_BAD_STRIDE: i32 = 1006;
pub const FP8ATTN_STATUS_BAD_SCALE: i32 = 1007;
pub const FP8ATTN_STATUS_BAD_SEQLENS: i32 = 1008;
pub const FP8ATTN_STATUS_BAD_HEADS: i32 = 1009;
pub const FP8ATTN_STATUS_BAD_OPTION: i32 = 1010;
pub const FP8ATTN_STATUS_BAD_DEVICE: i32 = 1011;
pub const FP8ATTN_STATUS_BAD_HANDLE: i32 = 1012;
pub const FP8ATTN_STATUS_BAD_STREAM: i32 = 1013;
pub const FP8ATTN_STATUS_UNSUPPORTED: i32 = 2000;
pub const FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM: i32 = 2001;
pub const FP8ATTN_STATUS_UNSUPPORTED_DTYPE: i32 = 2002;
pub const FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND: i32 = 2003;
pub const FP8ATTN_STATUS_OUT_OF_MEMORY: i32 = 3000;
pub const FP8ATTN_STATUS_WORKSPACE_TOO_SMALL: i32 = 3001;
pub const FP8ATTN_STATUS_BUFFER_TOO_SMALL: i32 = 3002;
pub const FP8ATTN_STATUS_DEVICE_ERROR: i32 = 4000;
pub const FP8ATTN_STATUS_CUDA_BACKEND_MISSING: i32 = 4001;
pub const FP8ATTN_STATUS_NO_CUDA_DEVICE: i32 = 4002;
pub const FP8ATTN_STATUS_UNSUPPORTED_DEVICE: i32 = 4003;
pub const FP8ATTN_STATUS_INTERNAL: i32 = 5000;
pub const FP8ATTN_STATUS_NUMERICS: i32 = 6000;
pub const FP8ATTN_STATUS_CHECKSUM_MISMATCH: i32 = 6001;
pub const FP8ATTN_STATUS_BAD_BLOB_VERSION: i32 = 6002;
pub const FP8ATTN_STATUS_TRUNCATED_BLOB: i32 = 6003;

pub const FP8ATTN_DTYPE_F32: i32 = 1;
pub const FP8ATTN_DTYPE_F64: i32 = 2;
pub const FP8ATTN_DTYPE_BF16: i32 = 3;
pub const FP8ATTN_DTYPE_F16: i32 = 4;
pub const FP8ATTN_DTYPE_E4M3: i32 = 5;
pub const FP8ATTN_DTYPE_E5M2: i32 = 6;
pub const FP8ATTN_DTYPE_I32: i32 = 7;
pub const FP8ATTN_DTYPE_I64: i32 = 8;
pub const FP8ATTN_KV_SCALE_NONE: i32 = 0;
pub const FP8ATTN_KV_SCALE_PER_HEAD: i32 = 1;
pub const FP8ATTN_KV_SCALE_PER_TOKEN_HEAD: i32 = 2;
pub const FP8ATTN_DEVICE_HOST: i32 = 0;
pub const FP8ATTN_DEVICE_CUDA: i32 = 1;
pub const FP8ATTN_BACKEND_AUTO: i32 = 0;
pub const FP8ATTN_BACKEND_CPU: i32 = 1;
pub const FP8ATTN_BACKEND_CUDA: i32 = 2;
pub const FP8ATTN_BACKEND_REFERENCE: i32 = 3;
/// The SIMT-emulated Hopper kernels (added after 0.1; older libraries answer BAD_OPTION).
pub const FP8ATTN_BACKEND_EMULATOR: i32 = 4;
pub const FP8ATTN_LOG_DEFAULT: i32 = 0;
pub const FP8ATTN_LOG_ERROR: i32 = 1;
pub const FP8ATTN_LOG_WARN: i32 = 2;
pub const FP8ATTN_LOG_INFO: i32 = 3;
pub const FP8ATTN_LOG_DEBUG: i32 = 4;
pub const FP8ATTN_LOG_TRACE: i32 = 5;
pub const FP8ATTN_LOG_OFF: i32 = 6;
pub const FP8ATTN_KV_ORDER_REVERSE: i32 = 0;
pub const FP8ATTN_KV_ORDER_FORWARD: i32 = 1;
pub const FP8ATTN_SOFTMAX_STANDARD: i32 = 0;
pub const FP8ATTN_SOFTMAX_STABILIZED: i32 = 1;
pub const FP8ATTN_ACCUMULATOR_FP32: u32 = 0;
pub const FP8ATTN_ACCUMULATOR_TENSOR_CORE: u32 = 1;
pub const FP8ATTN_STRUCT_TYPE_PAGED_KV: i32 = 1;
pub const FP8ATTN_ROPE_HALF_SPLIT: i32 = 0;
pub const FP8ATTN_ROPE_INTERLEAVED: i32 = 1;
pub const FP8ATTN_TENSOR_Q: i32 = 0;
pub const FP8ATTN_TENSOR_K: i32 = 1;
pub const FP8ATTN_TENSOR_V: i32 = 2;
pub const FP8ATTN_TENSOR_O: i32 = 3;
pub const FP8ATTN_TENSOR_P: i32 = 4;
pub const FP8ATTN_TENSOR_DO: i32 = 5;
pub const FP8ATTN_TENSOR_DP: i32 = 6;
pub const FP8ATTN_TENSOR_LOGIT: i32 = 7;
pub const FP8ATTN_RECIPE_DEFAULT: i32 = 0;
pub const FP8ATTN_RECIPE_DELAYED: i32 = 1;
pub const FP8ATTN_RECIPE_CURRENT: i32 = 2;
pub const FP8ATTN_RECIPE_GEOMETRY: i32 = 3;
pub const FP8ATTN_AMAX_MAX: i32 = 0;
pub const FP8ATTN_AMAX_MOST_RECENT: i32 = 1;
pub const FP8ATTN_QUANT_PER_TENSOR: i32 = 0;
pub const FP8ATTN_QUANT_PER_HEAD: i32 = 1;
pub const FP8ATTN_QUANT_PER_BLOCK: i32 = 2;

#[repr(C)]
pub struct fp8attn_error {
    pub struct_size: usize,
    pub status: i32,
    pub message: [c_char; FP8ATTN_ERROR_MESSAGE_LEN],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct fp8attn_tensor {
    pub struct_size: usize,
    pub next: *const c_void,
    pub data: *mut c_void,
    pub dtype: i32,
    pub device: i32,
    pub rank: i32,
    pub shape: [i64; FP8ATTN_MAX_RANK],
    pub stride: [i64; FP8ATTN_MAX_RANK],
}

/// Opaque handle targets.
#[repr(C)]
pub struct fp8attn_context_t {
    _private: [u8; 0],
}
#[repr(C)]
pub struct fp8attn_plan_t {
    _private: [u8; 0],
}
#[repr(C)]
pub struct fp8attn_scale_state_t {
    _private: [u8; 0],
}
pub type fp8attn_context = *mut fp8attn_context_t;
pub type fp8attn_plan = *mut fp8attn_plan_t;
pub type fp8attn_scale_state = *mut fp8attn_scale_state_t;
/// `struct CUstream_st*`, the same type as `cudaStream_t`.
pub type cuda_stream = *mut c_void;

pub type fp8attn_log_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, level: i32, msg: *const c_char, len: usize)>;

#[repr(C)]
pub struct fp8attn_context_options {
    pub struct_size: usize,
    pub next: *const c_void,
    pub backend: i32,
    pub device_ordinal: i32,
    pub num_threads: i32,
    pub log_level: i32,
    pub log_callback: fp8attn_log_callback,
    pub log_user_data: *mut c_void,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct fp8attn_attention_desc {
    pub struct_size: usize,
    pub next: *const c_void,
    pub input_dtype: i32,
    pub output_dtype: i32,
    pub head_dim: i32,
    pub head_dim_v: i32,
    pub num_heads_q: i32,
    pub num_heads_kv: i32,
    pub causal: u32,
    pub window_left: i32,
    pub window_right: i32,
    pub softmax_scale: f32,
    pub kv_order: i32,
    pub p_scale_log2: i32,
    pub pv_promote_interval: i32,
    pub softmax_variant: i32,
    pub stabilized_beta: f32,
    pub stabilized_tie_tol: f32,
    pub telemetry: u32,
    pub stabilized_shift_cap_log2: f32,
    pub sink_tokens: i32,
    pub accumulator_model: u32,
    pub accumulator_mantissa_bits: i32,
    pub page_size: i32,
    pub kv_dtype: i32,
    pub decode: u32,
    pub num_splits: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct fp8attn_telemetry {
    pub struct_size: usize,
    pub p_positive: u64,
    pub p_underflow: u64,
    pub max_abs_scaled_logit: f32,
}

#[repr(C)]
pub struct fp8attn_attention_args {
    pub struct_size: usize,
    pub next: *const c_void,
    pub q: fp8attn_tensor,
    pub k: fp8attn_tensor,
    pub v: fp8attn_tensor,
    pub out: fp8attn_tensor,
    pub lse: fp8attn_tensor,
    pub cu_seqlens_q: fp8attn_tensor,
    pub cu_seqlens_k: fp8attn_tensor,
    pub q_descale: fp8attn_tensor,
    pub k_descale: fp8attn_tensor,
    pub v_descale: fp8attn_tensor,
    pub telemetry: *mut fp8attn_telemetry,
    pub q_block_descale: fp8attn_tensor,
    pub k_block_descale: fp8attn_tensor,
    pub v_block_descale: fp8attn_tensor,
    pub out_scale: *const f32,
    pub amax_o: *mut f32,
    pub scale_state: fp8attn_scale_state,
    pub scale_state_layer: i32,
}

/// A paged KV cache, chained on fp8attn_attention_args.next.
#[repr(C)]
pub struct fp8attn_paged_kv {
    pub struct_size: usize,
    pub next: *const c_void,
    pub struct_type: i32,
    pub scale_granularity: i32,
    pub k_cache: fp8attn_tensor,
    pub v_cache: fp8attn_tensor,
    pub block_table: fp8attn_tensor,
    pub seqused_k: fp8attn_tensor,
    pub max_seqlen_k: i64,
    pub k_descale: fp8attn_tensor,
    pub v_descale: fp8attn_tensor,
}

#[repr(C)]
pub struct fp8attn_attention_bwd_args {
    pub struct_size: usize,
    pub next: *const c_void,
    pub q: fp8attn_tensor,
    pub k: fp8attn_tensor,
    pub v: fp8attn_tensor,
    pub out: fp8attn_tensor,
    pub dout: fp8attn_tensor,
    pub lse: fp8attn_tensor,
    pub dq: fp8attn_tensor,
    pub dk: fp8attn_tensor,
    pub dv: fp8attn_tensor,
    pub cu_seqlens_q: fp8attn_tensor,
    pub cu_seqlens_k: fp8attn_tensor,
    pub deterministic: i32,
}

#[repr(C)]
pub struct fp8attn_sink_model {
    pub struct_size: usize,
    pub next: *const c_void,
    pub sink_strength: f64,
    pub k_sink: i32,
    pub p_scale: f64,
    pub kv_order: i32,
    pub block_n: i32,
    pub seqlen_k: i64,
}

#[repr(C)]
pub struct fp8attn_power_iteration_options {
    pub struct_size: usize,
    pub next: *const c_void,
    pub max_iterations: i32,
    pub tolerance: f32,
    pub seed: u64,
    pub warm_start: *mut f32,
    pub iterations_out: *mut i32,
    pub residual_out: *mut f32,
    pub wq_descale: f32,
    pub wk_descale: f32,
}

#[repr(C)]
pub struct fp8attn_rope_options {
    pub struct_size: usize,
    pub next: *const c_void,
    pub theta_base: f32,
    pub layout: i32,
    pub min_offset: i64,
    pub max_offset: i64,
    pub max_iterations: i32,
    pub tolerance: f32,
    pub seed: u64,
}

#[repr(C)]
pub struct fp8attn_scale_state_options {
    pub struct_size: usize,
    pub next: *const c_void,
    pub num_layers: i32,
    pub recipe: [i32; FP8ATTN_NUM_TENSOR_KINDS],
    pub amax_history_len: i32,
    pub amax_algo: i32,
    pub margin: f32,
    pub burn_in_steps: i32,
    pub token_norm_bound: f32,
    pub alpha_margin: f32,
    pub alpha_decay: f32,
    pub grad_dtype: i32,
}

#[repr(C)]
pub struct fp8attn_quantize_options {
    pub struct_size: usize,
    pub next: *const c_void,
    pub granularity: i32,
    pub block_rows: i32,
    pub head_group: i32,
    pub rotate: u32,
    pub seed: u64,
    pub margin: i32,
    pub leading_rows: i32,
}

#[repr(C)]
pub struct fp8attn_combine_args {
    pub struct_size: usize,
    pub next: *const c_void,
    pub partial_out: fp8attn_tensor,
    pub partial_lse: fp8attn_tensor,
    pub out: fp8attn_tensor,
    pub lse: fp8attn_tensor,
}

pub const FP8ATTN_MAX_COMBINE_PARTS: i64 = 256;

#[repr(C)]
pub struct fp8attn_kv_append_args {
    pub struct_size: usize,
    pub next: *const c_void,
    pub k: fp8attn_tensor,
    pub v: fp8attn_tensor,
    pub k_cache: fp8attn_tensor,
    pub v_cache: fp8attn_tensor,
    pub slot_mapping: fp8attn_tensor,
    pub scale_granularity: i32,
    pub rotate: u32,
    pub seed: u64,
    pub k_descale: fp8attn_tensor,
    pub v_descale: fp8attn_tensor,
}

type E = *mut fp8attn_error;
type T = *const fp8attn_tensor;

extern "C" {
    pub fn fp8attn_get_version() -> i32;
    pub fn fp8attn_status_name(status: i32) -> *const c_char;
    pub fn fp8attn_context_create(options: *const fp8attn_context_options, out: *mut fp8attn_context, err: E) -> i32;
    pub fn fp8attn_context_destroy(ctx: fp8attn_context);
    pub fn fp8attn_context_get_backend(ctx: fp8attn_context, backend: *mut i32, err: E) -> i32;
    pub fn fp8attn_context_set_log_level(ctx: fp8attn_context, level: i32, err: E) -> i32;
    pub fn fp8attn_attention_desc_init(desc: *mut fp8attn_attention_desc) -> i32;
    pub fn fp8attn_plan_create(ctx: fp8attn_context, desc: *const fp8attn_attention_desc, out: *mut fp8attn_plan,
                               err: E) -> i32;
    pub fn fp8attn_plan_destroy(plan: fp8attn_plan);
    pub fn fp8attn_plan_workspace_size(plan: fp8attn_plan, batch: i64, max_seqlen_q: i64, max_seqlen_k: i64,
                                       bytes: *mut usize, err: E) -> i32;
    pub fn fp8attn_plan_get_tile(plan: fp8attn_plan, block_m: *mut i32, block_n: *mut i32, err: E) -> i32;
    pub fn fp8attn_attention_forward(plan: fp8attn_plan, args: *const fp8attn_attention_args, workspace: *mut c_void,
                                     workspace_bytes: usize, stream: cuda_stream, err: E) -> i32;
    pub fn fp8attn_plan_backward_workspace_size(plan: fp8attn_plan, batch: i64, max_seqlen_q: i64,
                                                max_seqlen_k: i64, bytes: *mut usize, err: E) -> i32;
    pub fn fp8attn_attention_backward(plan: fp8attn_plan, args: *const fp8attn_attention_bwd_args,
                                      workspace: *mut c_void, workspace_bytes: usize, stream: cuda_stream,
                                      err: E) -> i32;
    pub fn fp8attn_predict_p_underflow(model: *const fp8attn_sink_model, leading_order: *mut f64, expected: *mut f64,
                                       err: E) -> i32;
    pub fn fp8attn_qk_spectral_norms_workspace_size(ctx: fp8attn_context, num_heads_q: i32, num_heads_kv: i32,
                                                    head_dim: i32, d_model: i64, bytes: *mut usize, err: E) -> i32;
    pub fn fp8attn_qk_spectral_norms(ctx: fp8attn_context, wq: T, wk: T, num_heads_q: i32, num_heads_kv: i32,
                                     head_dim: i32, opts: *const fp8attn_power_iteration_options,
                                     sigma_out: *mut f32, workspace: *mut c_void, workspace_bytes: usize,
                                     stream: cuda_stream, err: E) -> i32;
    pub fn fp8attn_logit_bound(sigma: *const f32, num_heads: i32, head_dim: i32, token_norm_bound: f32, alpha: f32,
                               bound: *mut f32, scale: *mut f32, err: E) -> i32;
    pub fn fp8attn_qk_rope_norms(ctx: fp8attn_context, wq: T, wk: T, num_heads_q: i32, num_heads_kv: i32,
                                 head_dim: i32, rope: *const fp8attn_rope_options, safe_out: *mut f32,
                                 exact_out: *mut f32, err: E) -> i32;
    pub fn fp8attn_scale_state_create(ctx: fp8attn_context, options: *const fp8attn_scale_state_options,
                                      out: *mut fp8attn_scale_state, err: E) -> i32;
    pub fn fp8attn_scale_state_destroy(state: fp8attn_scale_state);
    pub fn fp8attn_scale_state_report_amax(state: fp8attn_scale_state, layer: i32, tensor: i32, amax: f32,
                                           err: E) -> i32;
    pub fn fp8attn_scale_state_report_amax_batch(state: fp8attn_scale_state, amax: *const f32, count: usize,
                                                 err: E) -> i32;
    pub fn fp8attn_scale_state_report_amax_device(state: fp8attn_scale_state, layer: i32, device_amax: *const f32,
                                                  stream: cuda_stream, err: E) -> i32;
    pub fn fp8attn_scale_state_step(state: fp8attn_scale_state, err: E) -> i32;
    pub fn fp8attn_scale_state_get_scale(state: fp8attn_scale_state, layer: i32, tensor: i32, scale: *mut f32,
                                         scale_inv: *mut f32, err: E) -> i32;
    pub fn fp8attn_scale_state_set_qk_weights(state: fp8attn_scale_state, layer: i32, wq: T, wk: T,
                                              num_heads_q: i32, num_heads_kv: i32, head_dim: i32, err: E) -> i32;
    pub fn fp8attn_scale_state_set_qk_sigma(state: fp8attn_scale_state, layer: i32, sigma: *const f32,
                                            num_heads: i32, head_dim: i32, d_model: i64, err: E) -> i32;
    pub fn fp8attn_scale_state_serialize(state: fp8attn_scale_state, buf: *mut c_void, capacity: usize,
                                         written: *mut usize, err: E) -> i32;
    pub fn fp8attn_scale_state_deserialize(state: fp8attn_scale_state, buf: *const c_void, len: usize,
                                           err: E) -> i32;
    pub fn fp8attn_quantize(ctx: fp8attn_context, input: T, cu_seqlens: T, options: *const fp8attn_quantize_options,
                            output: T, descale: T, amax: *mut f32, err: E) -> i32;
    pub fn fp8attn_host_alloc(bytes: usize, alignment: usize, out: *mut *mut c_void, err: E) -> i32;
    pub fn fp8attn_host_free(ptr: *mut c_void);
    // Device execution: the quantizer on a stream, the telemetry copy.
    pub fn fp8attn_quantize_workspace_size(ctx: fp8attn_context, input: T, cu_seqlens: T, max_seqlen: i64,
                                           options: *const fp8attn_quantize_options, bytes: *mut usize,
                                           err: E) -> i32;
    pub fn fp8attn_quantize_async(ctx: fp8attn_context, input: T, cu_seqlens: T, max_seqlen: i64,
                                  options: *const fp8attn_quantize_options, output: T, descale: T, amax: *mut f32,
                                  workspace: *mut c_void, workspace_bytes: usize, stream: cuda_stream,
                                  err: E) -> i32;
    // Serving: the paged KV cache's append.
    pub fn fp8attn_kv_append_async(ctx: fp8attn_context, args: *const fp8attn_kv_append_args, stream: cuda_stream,
                                   err: E) -> i32;
    pub fn fp8attn_attention_telemetry_copy_async(plan: fp8attn_plan, workspace: *const c_void,
                                                  workspace_bytes: usize, telemetry: *mut fp8attn_telemetry,
                                                  stream: cuda_stream, err: E) -> i32;
    // Merging partial results.
    pub fn fp8attn_attention_combine_workspace_size(ctx: fp8attn_context, args: *const fp8attn_combine_args,
                                                    bytes: *mut usize, err: E) -> i32;
    pub fn fp8attn_attention_combine(ctx: fp8attn_context, args: *const fp8attn_combine_args,
                                     workspace: *mut c_void, workspace_bytes: usize, stream: cuda_stream,
                                     err: E) -> i32;
}
