/**
 * @file fp8attn.h
 * @brief The fp8attn C ABI: FP8 attention on Hopper GPUs with a kernel-faithful CPU backend.
 *
 * This is the only public header. It is C99, uses only `<stdint.h>` and `<stddef.h>` types,
 * and includes no CUDA header.
 *
 * ## Conventions
 * - **Status.** Every fallible call returns an `int32_t` status (::FP8ATTN_OK is 0) and takes an
 *   optional ::fp8attn_error as its last argument. The categories are: 1xxx bad argument,
 *   2xxx unsupported, 3xxx resource, 4xxx device or driver, 5xxx internal, 6xxx numerics.
 * - **Error detail in the same call.** When the `err` argument is non-NULL and its `struct_size`
 *   covers the `status` field, the call writes the status and a NUL-terminated message there.
 *   The message is truncated to the caller's buffer.
 * - **Outputs untouched on failure.** A call that fails writes nothing to its outputs.
 * - **Extensible structs.** Every struct passed in starts with `size_t struct_size` and
 *   `const void* next`. Set `struct_size = sizeof(the struct)` and `next = NULL`. The library
 *   reads only the fields that `struct_size` covers and uses defaults for the rest, so a caller
 *   compiled against an older header keeps working. New fields are only ever appended.
 * - **Enums** are explicitly numbered; a number is never reused. Enum-typed fields are `int32_t`;
 *   booleans are `uint32_t`.
 * - **Handles** are opaque pointers. Destroy functions accept NULL.
 * - **Streams and workspaces are per call.** An execute call allocates nothing and never
 *   synchronizes. On the CPU backend the stream must be NULL.
 * - **No exception, abort or exit** crosses this ABI.
 *
 * ## Versioning
 * The major version changes only on an ABI break, and the SONAME carries it
 * (`libfp8attn.so.<major>`). Minor versions append fields, enum values and functions.
 */
#ifndef FP8ATTN_FP8ATTN_H_
#define FP8ATTN_FP8ATTN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @def FP8ATTN_API
 * Marks an exported function: default visibility while the library itself is built, empty for
 * callers. */
#if defined(FP8ATTN_BUILDING_LIBRARY)
#define FP8ATTN_API __attribute__((visibility("default")))
#else
#define FP8ATTN_API
#endif

/** Major version of this header. */
#define FP8ATTN_VERSION_MAJOR 0
/** Minor version of this header. */
#define FP8ATTN_VERSION_MINOR 1
/** Patch version of this header. */
#define FP8ATTN_VERSION_PATCH 0

/** A CUDA stream; the same type as `cudaStream_t`. NULL is the legacy default stream. */
struct CUstream_st;

/* ------------------------------------------------------------------------------------------ */
/** @name Status codes
 * @{ */
/* ------------------------------------------------------------------------------------------ */

/** Status codes. The thousands digit is the category. */
typedef enum fp8attn_status_code {
  FP8ATTN_OK = 0, /**< Success. */

  FP8ATTN_STATUS_INVALID_ARGUMENT = 1000, /**< A bad argument not covered below. */
  FP8ATTN_STATUS_NULL_POINTER = 1001,     /**< A required pointer was NULL. */
  FP8ATTN_STATUS_BAD_STRUCT_SIZE = 1002,  /**< `struct_size` is 0 or smaller than the oldest layout. */
  FP8ATTN_STATUS_BAD_EXTENSION = 1003,    /**< `next` is not NULL; no extension is defined yet. */
  FP8ATTN_STATUS_BAD_DTYPE = 1004,        /**< Unknown dtype, or a dtype the argument cannot take. */
  FP8ATTN_STATUS_BAD_SHAPE = 1005,        /**< Rank or shape does not match the description. */
  FP8ATTN_STATUS_BAD_STRIDE = 1006,       /**< A negative stride, or strides that overlap outputs. */
  FP8ATTN_STATUS_BAD_SCALE = 1007,        /**< A scale that is NaN, infinite or out of range. */
  FP8ATTN_STATUS_BAD_SEQLENS = 1008,      /**< cu_seqlens not starting at 0 or not monotone. */
  FP8ATTN_STATUS_BAD_HEADS = 1009,        /**< Head counts: zero, or heads_q not a multiple of heads_kv. */
  FP8ATTN_STATUS_BAD_OPTION = 1010,       /**< An enum or option value out of its range. */
  FP8ATTN_STATUS_BAD_DEVICE = 1011,       /**< A tensor's device does not match the backend. */
  FP8ATTN_STATUS_BAD_HANDLE = 1012,       /**< A handle that is NULL where one is required. */
  FP8ATTN_STATUS_BAD_STREAM = 1013,       /**< A non-NULL stream given to the CPU backend. */

  FP8ATTN_STATUS_UNSUPPORTED = 2000,          /**< A valid request this build does not support. */
  FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM = 2001, /**< head_dim not in {64, 128, 256}. */
  FP8ATTN_STATUS_UNSUPPORTED_DTYPE = 2002,    /**< A valid dtype this operation does not take. */
  FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND = 2003, /**< The context's backend lacks this operation. */

  FP8ATTN_STATUS_OUT_OF_MEMORY = 3000,       /**< Host allocation failed. */
  FP8ATTN_STATUS_WORKSPACE_TOO_SMALL = 3001, /**< The workspace is smaller than the query said. */
  FP8ATTN_STATUS_BUFFER_TOO_SMALL = 3002,    /**< A caller buffer (for example a blob) is too small. */

  FP8ATTN_STATUS_DEVICE_ERROR = 4000,         /**< A CUDA runtime or driver call failed. */
  FP8ATTN_STATUS_CUDA_BACKEND_MISSING = 4001, /**< libfp8attn_cuda could not be loaded. */
  FP8ATTN_STATUS_NO_CUDA_DEVICE = 4002,       /**< No CUDA driver or no device at the ordinal. */
  FP8ATTN_STATUS_UNSUPPORTED_DEVICE = 4003,   /**< The device is not a Hopper GPU (sm_90). */

  FP8ATTN_STATUS_INTERNAL = 5000, /**< A bug in fp8attn; the message says where. */

  FP8ATTN_STATUS_NUMERICS = 6000,          /**< A numerics failure not covered below. */
  FP8ATTN_STATUS_CHECKSUM_MISMATCH = 6001, /**< A serialized blob failed its checksum. */
  FP8ATTN_STATUS_BAD_BLOB_VERSION = 6002,  /**< A serialized blob has an unknown version or magic. */
  FP8ATTN_STATUS_TRUNCATED_BLOB = 6003     /**< A serialized blob is shorter than it says. */
} fp8attn_status_code;

/** Length of the message buffer in ::fp8attn_error. */
#define FP8ATTN_ERROR_MESSAGE_LEN 512

/**
 * Error detail, filled by the call that takes it. Caller-owned.
 * Set `struct_size = sizeof(fp8attn_error)` before the call. On success `status` is set to
 * ::FP8ATTN_OK and `message` to the empty string.
 */
typedef struct fp8attn_error {
  size_t struct_size;                       /**< sizeof(fp8attn_error). */
  int32_t status;                           /**< Out: the status the call returned. */
  char message[FP8ATTN_ERROR_MESSAGE_LEN];  /**< Out: NUL-terminated detail. */
} fp8attn_error;

/**
 * Returns the library version as major·10000 + minor·100 + patch.
 * @return The version number.
 * Thread-safe; never fails.
 */
FP8ATTN_API int32_t fp8attn_get_version(void);

/**
 * Returns the name of a status code, such as "FP8ATTN_STATUS_BAD_SHAPE", as a static string.
 * Unknown codes give "FP8ATTN_STATUS_UNKNOWN". Thread-safe; never fails; never NULL.
 * @param status Any value.
 * @return A static NUL-terminated string; the caller must not free it.
 */
FP8ATTN_API const char* fp8attn_status_name(int32_t status);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @name Enumerations
 * @{ */
/* ------------------------------------------------------------------------------------------ */

/** Element types. */
typedef enum fp8attn_dtype {
  FP8ATTN_DTYPE_F32 = 1,  /**< IEEE binary32. */
  FP8ATTN_DTYPE_F64 = 2,  /**< IEEE binary64. */
  FP8ATTN_DTYPE_BF16 = 3, /**< bfloat16. */
  FP8ATTN_DTYPE_F16 = 4,  /**< IEEE binary16. */
  FP8ATTN_DTYPE_E4M3 = 5, /**< OCP FP8 E4M3 ("e4m3fn"): max 448, no infinity. */
  FP8ATTN_DTYPE_E5M2 = 6, /**< OCP FP8 E5M2: max 57344, with infinities. */
  FP8ATTN_DTYPE_I32 = 7   /**< int32_t. */
} fp8attn_dtype;

/** Where a tensor's memory lives. */
typedef enum fp8attn_device {
  FP8ATTN_DEVICE_HOST = 0, /**< Host memory. */
  FP8ATTN_DEVICE_CUDA = 1  /**< CUDA device memory of the context's device. */
} fp8attn_device;

/** Backends. */
typedef enum fp8attn_backend {
  FP8ATTN_BACKEND_AUTO = 0,     /**< CUDA if libfp8attn_cuda loads and an sm_90 device exists; else CPU. */
  FP8ATTN_BACKEND_CPU = 1,      /**< The kernel-faithful CPU tile engine. */
  FP8ATTN_BACKEND_CUDA = 2,     /**< The Hopper kernels in libfp8attn_cuda. */
  FP8ATTN_BACKEND_REFERENCE = 3 /**< The FP64 oracle: exact softmax, no casts; slow by design. */
} fp8attn_backend;

/** Log levels. 0 picks the default (::FP8ATTN_LOG_WARN). */
typedef enum fp8attn_log_level {
  FP8ATTN_LOG_DEFAULT = 0, /**< ::FP8ATTN_LOG_WARN. */
  FP8ATTN_LOG_ERROR = 1,   /**< Errors only. */
  FP8ATTN_LOG_WARN = 2,    /**< Errors and warnings. */
  FP8ATTN_LOG_INFO = 3,    /**< Plus backend choice and plan summaries. */
  FP8ATTN_LOG_DEBUG = 4,   /**< Plus per-call detail. */
  FP8ATTN_LOG_TRACE = 5,   /**< Everything. */
  FP8ATTN_LOG_OFF = 6      /**< Nothing. */
} fp8attn_log_level;

/** KV-block iteration order of the attention main loop. */
typedef enum fp8attn_kv_order {
  FP8ATTN_KV_ORDER_REVERSE = 0, /**< Last KV block first (default; the P-cast fix). */
  FP8ATTN_KV_ORDER_FORWARD = 1  /**< First KV block first; for study. */
} fp8attn_kv_order;

/** Softmax variants. */
typedef enum fp8attn_softmax_variant {
  FP8ATTN_SOFTMAX_STANDARD = 0,  /**< Online safe softmax. */
  FP8ATTN_SOFTMAX_STABILIZED = 1 /**< Shift the max where a block's row max is tied. */
} fp8attn_softmax_variant;

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @name Tensors
 * @{ */
/* ------------------------------------------------------------------------------------------ */

/** Maximum rank of ::fp8attn_tensor. */
#define FP8ATTN_MAX_RANK 8

/**
 * A strided tensor view. Caller-owned; the library keeps no reference after the call returns.
 * An optional tensor is absent when `data` is NULL.
 */
typedef struct fp8attn_tensor {
  size_t struct_size; /**< sizeof(fp8attn_tensor). */
  const void* next;   /**< Extension chain; must be NULL. */
  void* data;         /**< Borrowed. Element [i0,..,ir-1] is at data + Σ i_k·stride[k] elements. */
  int32_t dtype;      /**< An ::fp8attn_dtype. */
  int32_t device;     /**< An ::fp8attn_device. */
  int32_t rank;       /**< 1..::FP8ATTN_MAX_RANK. */
  int64_t shape[FP8ATTN_MAX_RANK];  /**< Extents; the first `rank` are read. */
  int64_t stride[FP8ATTN_MAX_RANK]; /**< In elements, ≥ 0; a stride of 0 broadcasts. */
} fp8attn_tensor;

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @name Context
 * @{ */
/* ------------------------------------------------------------------------------------------ */

/** An opaque context: a backend, its threads and its logger. */
typedef struct fp8attn_context_t* fp8attn_context;

/**
 * Log callback. `msg` is not NUL-terminated; it holds `len` bytes and is valid only during the
 * call. It may be called from any thread that uses the context, concurrently.
 */
typedef void (*fp8attn_log_callback)(void* user_data, int32_t level, const char* msg, size_t len);

/** Context options. Zero-initialize, then set `struct_size`; zeros are the defaults. */
typedef struct fp8attn_context_options {
  size_t struct_size;  /**< sizeof(fp8attn_context_options). */
  const void* next;    /**< Extension chain; must be NULL. */
  int32_t backend;     /**< An ::fp8attn_backend; default ::FP8ATTN_BACKEND_AUTO. */
  int32_t device_ordinal; /**< CUDA device ordinal; default 0. Ignored by CPU backends. */
  int32_t num_threads; /**< CPU worker threads; 0 = all cores. */
  int32_t log_level;   /**< An ::fp8attn_log_level; default ::FP8ATTN_LOG_WARN. */
  fp8attn_log_callback log_callback; /**< NULL: messages go to stderr. */
  void* log_user_data; /**< Passed to `log_callback`; borrowed for the context's lifetime. */
} fp8attn_context_options;

/**
 * Creates a context.
 * @param options NULL for defaults. Borrowed for the call.
 * @param out     Out: the new context; written only on success.
 * @param err     Optional error detail.
 * @retval FP8ATTN_OK
 * @retval FP8ATTN_STATUS_NULL_POINTER          `out` is NULL.
 * @retval FP8ATTN_STATUS_BAD_STRUCT_SIZE       `options->struct_size` is too small.
 * @retval FP8ATTN_STATUS_BAD_EXTENSION         `options->next` is not NULL.
 * @retval FP8ATTN_STATUS_BAD_OPTION            Unknown backend or log level, or negative threads.
 * @retval FP8ATTN_STATUS_CUDA_BACKEND_MISSING  CUDA asked for and libfp8attn_cuda not loadable.
 * @retval FP8ATTN_STATUS_NO_CUDA_DEVICE        CUDA asked for and no driver or device found.
 * @retval FP8ATTN_STATUS_UNSUPPORTED_DEVICE    CUDA asked for and the device is not sm_90.
 * @retval FP8ATTN_STATUS_OUT_OF_MEMORY
 *
 * ::FP8ATTN_BACKEND_AUTO never fails for lack of a GPU: it falls back to the CPU and logs why
 * at ::FP8ATTN_LOG_INFO. The CUDA backend is looked up next to libfp8attn, and first at the path
 * in the environment variable `FP8ATTN_CUDA_BACKEND` when that is set.
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_context_create(const fp8attn_context_options* options,
                                           fp8attn_context* out, fp8attn_error* err);

/**
 * Destroys a context. NULL is allowed. Every plan and scale state created from it must be
 * destroyed first. Not thread-safe with respect to other calls on the same context.
 * @param ctx The context to destroy, or NULL.
 */
FP8ATTN_API void fp8attn_context_destroy(fp8attn_context ctx);

/**
 * Reports the backend the context runs on (never ::FP8ATTN_BACKEND_AUTO).
 * @param ctx     The context.
 * @param backend Out: an ::fp8attn_backend; written only on success.
 * @param err     Optional error detail.
 * @retval FP8ATTN_OK
 * @retval FP8ATTN_STATUS_BAD_HANDLE   `ctx` is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER `backend` is NULL.
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_context_get_backend(fp8attn_context ctx, int32_t* backend,
                                                fp8attn_error* err);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @name Attention description and plan
 * @{ */
/* ------------------------------------------------------------------------------------------ */

/**
 * What an attention plan computes. Fill with fp8attn_attention_desc_init(), then change fields.
 */
typedef struct fp8attn_attention_desc {
  size_t struct_size;   /**< sizeof(fp8attn_attention_desc). */
  const void* next;     /**< Extension chain; must be NULL. */
  int32_t input_dtype;  /**< ::FP8ATTN_DTYPE_E4M3 (default) or ::FP8ATTN_DTYPE_BF16, for Q, K, V. */
  int32_t output_dtype; /**< ::FP8ATTN_DTYPE_BF16 (default) or ::FP8ATTN_DTYPE_F32. */
  int32_t head_dim;     /**< Q/K head dimension: 64, 128 or 256. Default 128. */
  int32_t head_dim_v;   /**< V/O head dimension; 0 means head_dim. Must equal head_dim for now. */
  int32_t num_heads_q;  /**< Query heads; a multiple of num_heads_kv. Default 1. */
  int32_t num_heads_kv; /**< Key/value heads (GQA when fewer than num_heads_q). Default 1. */
  uint32_t causal;      /**< 1: causal mask aligned bottom-right (FlashAttention ≥ 2.1). */
  int32_t window_left;  /**< Sliding window, keys to the left of the diagonal; −1 = unbounded. */
  int32_t window_right; /**< Keys to the right of the diagonal; −1 = unbounded. */
  float softmax_scale;  /**< Logit scale; 0 means 1/√head_dim. Finite and ≥ 0. */
  int32_t kv_order;     /**< An ::fp8attn_kv_order; default ::FP8ATTN_KV_ORDER_REVERSE. */
  int32_t p_scale_log2; /**< log2 of the static P scale S_p, 0..8; default 8 (S_p = 256). E4M3 only;
                             BF16 inputs always use S_p = 1. */
  int32_t pv_promote_interval; /**< Add the PV tile into O every N blocks; 0 = accumulate in O. */
  int32_t softmax_variant;     /**< An ::fp8attn_softmax_variant; default standard. */
  float stabilized_beta;       /**< Shift factor β of the stabilized variant; default 2. */
  float stabilized_tie_tol;    /**< Tie tolerance τ in natural logit units; default 1e-3. */
  uint32_t telemetry;          /**< 1: the forward call fills `fp8attn_attention_args.telemetry`. */
  /* Fields below were appended after the first layout; callers whose struct_size stops before
     them get the defaults. */
  float stabilized_shift_cap_log2; /**< Cap on the stabilized shift: the shifted max m′ is at
                                        most r_m + cap in log2 units, so exp2(r_m − m′) ≥ 2^−cap
                                        and l cannot underflow to 0. Default 16; must be > 0. */
} fp8attn_attention_desc;

/**
 * Fills `desc` with defaults, including `struct_size`. Fields beyond the caller's
 * `struct_size` are not written when `desc->struct_size` is already set to a smaller nonzero
 * value; a zero `struct_size` is treated as sizeof(fp8attn_attention_desc).
 * @param desc In/out: the description to fill; caller-owned.
 * @retval FP8ATTN_OK
 * @retval FP8ATTN_STATUS_NULL_POINTER `desc` is NULL.
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_attention_desc_init(fp8attn_attention_desc* desc);

/** An opaque, immutable attention plan. It may be shared across threads. */
typedef struct fp8attn_plan_t* fp8attn_plan;

/**
 * Validates a description and prepares a plan on the context's backend.
 * @param ctx  The context; it must outlive the plan.
 * @param desc Borrowed for the call.
 * @param out  Out: the plan; written only on success.
 * @param err  Optional error detail.
 * @retval FP8ATTN_OK
 * @retval FP8ATTN_STATUS_BAD_HANDLE, FP8ATTN_STATUS_NULL_POINTER, FP8ATTN_STATUS_BAD_STRUCT_SIZE,
 *         FP8ATTN_STATUS_BAD_EXTENSION
 * @retval FP8ATTN_STATUS_BAD_DTYPE           input or output dtype not allowed.
 * @retval FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM head_dim not in {64, 128, 256}, or head_dim_v differs.
 * @retval FP8ATTN_STATUS_BAD_HEADS           head counts not positive, or not divisible.
 * @retval FP8ATTN_STATUS_BAD_SCALE           softmax_scale NaN, infinite or negative; bad β, τ, cap.
 * @retval FP8ATTN_STATUS_BAD_OPTION          kv_order, p_scale_log2, variant, window, interval.
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_plan_create(fp8attn_context ctx, const fp8attn_attention_desc* desc,
                                        fp8attn_plan* out, fp8attn_error* err);

/** Destroys a plan. NULL is allowed. No forward call may be running on it.
 * @param plan The plan to destroy, or NULL. */
FP8ATTN_API void fp8attn_plan_destroy(fp8attn_plan plan);

/**
 * Workspace bytes a forward call needs for problems up to these sizes.
 * @param plan  The plan.
 * @param batch Number of sequences, > 0.
 * @param max_seqlen_q Longest query sequence, > 0.
 * @param max_seqlen_k Longest key sequence, > 0.
 * @param bytes Out: the size; written only on success. May be 0.
 * @param err   Optional error detail.
 * @retval FP8ATTN_OK
 * @retval FP8ATTN_STATUS_BAD_HANDLE, FP8ATTN_STATUS_NULL_POINTER
 * @retval FP8ATTN_STATUS_BAD_SHAPE  a size that is not positive.
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_plan_workspace_size(fp8attn_plan plan, int64_t batch,
                                                int64_t max_seqlen_q, int64_t max_seqlen_k,
                                                size_t* bytes, fp8attn_error* err);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @name Forward
 * @{ */
/* ------------------------------------------------------------------------------------------ */

/** Numerics measured by the forward call itself (DESIGN §3). Caller-owned output. */
typedef struct fp8attn_telemetry {
  size_t struct_size;         /**< sizeof(fp8attn_telemetry); set by the caller. */
  uint64_t p_positive;        /**< Out: count of P̃ > 0 (FP32, before the cast). */
  uint64_t p_underflow;       /**< Out: those among them whose cast (E4M3, or BF16) is 0. */
  float max_abs_scaled_logit; /**< Out: max |S·softmax_scale·q_descale·k_descale| over visible
                                   entries, in natural-log units. */
} fp8attn_telemetry;

/**
 * Arguments of one forward call. Tensors are borrowed for the call (on CUDA, until the stream
 * reaches the work).
 *
 * Layouts:
 * - Padded: `q` [batch, seqlen_q, heads_q, head_dim], `k` [batch, seqlen_k, heads_kv, head_dim],
 *   `v` [batch, seqlen_k, heads_kv, head_dim_v], `out` [batch, seqlen_q, heads_q, head_dim_v];
 *   any non-negative strides. `lse` [batch, heads_q, seqlen_q].
 * - Packed (varlen): rank-3 `q`, `k`, `v`, `out` of [total, heads, dim] with `cu_seqlens_q` and
 *   `cu_seqlens_k` (I32 [batch + 1], starting at 0, non-decreasing, last = total).
 *   `lse` is [heads_q, total_q].
 * - Descales: F32 [batch, heads_kv]; stride 0 broadcasts (per-tensor scale). Absent means 1.
 */
typedef struct fp8attn_attention_args {
  size_t struct_size;           /**< sizeof(fp8attn_attention_args). */
  const void* next;             /**< Extension chain; must be NULL. */
  fp8attn_tensor q;             /**< Queries, dtype = desc.input_dtype. */
  fp8attn_tensor k;             /**< Keys. */
  fp8attn_tensor v;             /**< Values. */
  fp8attn_tensor out;           /**< Out: dtype = desc.output_dtype; written only on success. */
  fp8attn_tensor lse;           /**< Optional out: F32 log-sum-exp, natural-log units. */
  fp8attn_tensor cu_seqlens_q;  /**< Optional I32 [batch+1]; present iff packed layout. */
  fp8attn_tensor cu_seqlens_k;  /**< Optional I32 [batch+1]; present iff packed layout. */
  fp8attn_tensor q_descale;     /**< Optional F32 [batch, heads_kv]. */
  fp8attn_tensor k_descale;     /**< Optional F32 [batch, heads_kv]. */
  fp8attn_tensor v_descale;     /**< Optional F32 [batch, heads_kv]. */
  fp8attn_telemetry* telemetry; /**< Optional out; filled when desc.telemetry is 1. Borrowed. */
} fp8attn_attention_args;

/**
 * Computes attention: out = softmax(scale·Q·Kᵀ + mask)·V, per DESIGN §3.
 * @param plan      From fp8attn_plan_create().
 * @param args      Borrowed for the call.
 * @param workspace Caller-owned scratch of at least the queried size; may be NULL if that is 0.
 * @param workspace_bytes Its size.
 * @param stream    CUDA stream; must be NULL on CPU backends.
 * @param err       Optional error detail.
 * @retval FP8ATTN_OK
 * @retval FP8ATTN_STATUS_BAD_HANDLE, FP8ATTN_STATUS_NULL_POINTER, FP8ATTN_STATUS_BAD_STRUCT_SIZE,
 *         FP8ATTN_STATUS_BAD_EXTENSION
 * @retval FP8ATTN_STATUS_BAD_DTYPE     a tensor's dtype is unknown or not the plan's.
 * @retval FP8ATTN_STATUS_BAD_SHAPE     a rank or extent mismatch.
 * @retval FP8ATTN_STATUS_BAD_STRIDE    a negative stride.
 * @retval FP8ATTN_STATUS_BAD_SEQLENS   cu_seqlens not starting at 0, decreasing, or past total.
 * @retval FP8ATTN_STATUS_BAD_SCALE     a descale that is NaN, infinite or ≤ 0.
 * @retval FP8ATTN_STATUS_BAD_DEVICE    a tensor not on the backend's device.
 * @retval FP8ATTN_STATUS_BAD_STREAM    a stream given to a CPU backend.
 * @retval FP8ATTN_STATUS_WORKSPACE_TOO_SMALL
 * Thread-safe: concurrent calls on one plan are allowed (CPU calls on one context run one at a
 * time on its worker threads).
 */
FP8ATTN_API int32_t fp8attn_attention_forward(fp8attn_plan plan, const fp8attn_attention_args* args,
                                              void* workspace, size_t workspace_bytes,
                                              struct CUstream_st* stream, fp8attn_error* err);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @name P-underflow prediction (DESIGN §3)
 * @{ */
/* ------------------------------------------------------------------------------------------ */

/**
 * The sink model: `k_sink` keys have logit Δ + z, all others z, with z ~ N(0, 1) in natural-log
 * units after the softmax scale.
 */
typedef struct fp8attn_sink_model {
  size_t struct_size;   /**< sizeof(fp8attn_sink_model). */
  const void* next;     /**< Extension chain; must be NULL. */
  double sink_strength; /**< Δ, finite. */
  int32_t k_sink;       /**< Number of sink keys, ≥ 1. */
  double p_scale;       /**< S_p, > 0 (for example 256). */
  int32_t kv_order;     /**< An ::fp8attn_kv_order. */
  int32_t block_n;      /**< KV block size; used for the reverse order's in-block share. */
  int64_t seqlen_k;     /**< Keys per row, > k_sink. */
} fp8attn_sink_model;

/**
 * Predicts the fraction of non-sink P̃ whose E4M3 cast underflows to zero.
 * @param model         The sink model; borrowed for the call.
 * @param leading_order Out: Φ(Δ + δ_k − ln 2¹⁰ − ln S_p), δ_k = E[max of k N(0,1)].
 * @param expected      Out: ∫ f_k(x)·Φ(Δ + x − ln 2¹⁰ − ln S_p) dx, f_k the density of the max.
 * For ::FP8ATTN_KV_ORDER_REVERSE both are multiplied by the share of non-sink keys in the sink's
 * block, (min(block_n, seqlen_k) − k_sink) / (seqlen_k − k_sink). Both by numerical integration.
 * Either output may be NULL; neither is written on failure.
 * @param err           Optional error detail.
 * @retval FP8ATTN_OK
 * @retval FP8ATTN_STATUS_NULL_POINTER, FP8ATTN_STATUS_BAD_STRUCT_SIZE, FP8ATTN_STATUS_BAD_EXTENSION
 * @retval FP8ATTN_STATUS_INVALID_ARGUMENT  a field out of range.
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_predict_p_underflow(const fp8attn_sink_model* model,
                                                double* leading_order, double* expected,
                                                fp8attn_error* err);

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FP8ATTN_FP8ATTN_H_ */
