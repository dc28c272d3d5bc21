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
 *   synchronizes. On the CPU backend the stream must be NULL. The one exception is
 *   fp8attn_quantize(), a host-memory call without a stream: it allocates a little host scratch
 *   (one float per descale slice, one head-dim row per worker thread, the rotation's signs).
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
  FP8ATTN_STATUS_BAD_EXTENSION = 1003,    /**< `next` is not NULL where nothing may be chained, or
                                               names an unknown ::fp8attn_struct_type. */
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
 *
 * @par Thread safety
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
  FP8ATTN_DTYPE_I32 = 7,  /**< int32_t. */
  FP8ATTN_DTYPE_I64 = 8   /**< int64_t (fp8attn_kv_append_args.slot_mapping). */
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
  FP8ATTN_BACKEND_REFERENCE = 3, /**< The FP64 oracle: exact softmax, no casts; slow by design. */
  FP8ATTN_BACKEND_EMULATOR = 4   /**< The Hopper backend's host code and its sm_90a kernels, run on
                                      the CPU by the SIMT emulator: host tensors, a NULL stream.
                                      Bit-equal to ::FP8ATTN_BACKEND_CPU; slow; for tests,
                                      debugging, and seeing what the GPU kernel computes without a
                                      GPU. FP8ATTN_EMULATOR_SCHEDULE ("round-robin" or
                                      "shuffle:SEED") and FP8ATTN_EMULATOR_SMS (default 4) set
                                      its thread schedule and persistent grid at context creation. */
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

/** How the CPU and emulated backends add a tensor-core instruction's products into the FP32
 *  accumulator (fp8attn_attention_desc.accumulator_model). The CUDA backend runs what the hardware
 *  does whatever this says. */
typedef enum fp8attn_accumulator_model {
  FP8ATTN_ACCUMULATOR_FP32 = 0,       /**< Plain FP32: per instruction the products summed in FP32,
                                           then one FP32 add; the rest of the algorithm unchanged.
                                           For throughput on the CPU, not a prediction of a GPU. */
  FP8ATTN_ACCUMULATOR_TENSOR_CORE = 1 /**< Hopper's exact addition (default), for FP8 and BF16
                                           inputs: per instruction every addend aligned to the
                                           largest one's exponent E and cut toward zero to a
                                           multiple of 2^(E-13) (FP8) or 2^(E-25) (BF16), summed
                                           exactly, the sum cut toward zero to 13 (FP8) or 23 (BF16)
                                           fraction bits. Reproduces 15,000 H100 instructions
                                           measured by Khattak and Mikaitis (arXiv:2512.07004). */
} fp8attn_accumulator_model;

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @name Tensors
 * @{ */
/* ------------------------------------------------------------------------------------------ */

/** Maximum rank of ::fp8attn_tensor. */
#define FP8ATTN_MAX_RANK 8

/**
 * @name Extent limits
 * Every extent a call takes is bounded, so that no call's work or memory is unbounded by a
 * small input (a few bytes of descriptor). A call given more returns the status named here,
 * with the value and the limit in its message. Beyond these, every tensor's reach (the largest
 * element offset, Σ stride·(extent − 1)) must fit in int64 (::FP8ATTN_STATUS_BAD_STRIDE), and
 * every size derived from the extents must fit in size_t (::FP8ATTN_STATUS_BAD_SHAPE or
 * ::FP8ATTN_STATUS_OUT_OF_MEMORY).
 * @{
 */
/** Sequences per call (forward batch, quantizer batch): ::FP8ATTN_STATUS_BAD_SHAPE above. */
#define FP8ATTN_MAX_BATCH (INT64_C(1) << 24)
/** Rows of one sequence (seqlen_q, seqlen_k, quantizer rows): ::FP8ATTN_STATUS_BAD_SHAPE above. */
#define FP8ATTN_MAX_SEQLEN (INT64_C(1) << 30)
/** Heads of a quantizer input or a spectral weight: ::FP8ATTN_STATUS_BAD_HEADS above. */
#define FP8ATTN_MAX_HEADS 4096
/** Head dimension of a quantizer input or a spectral weight: ::FP8ATTN_STATUS_BAD_SHAPE above. */
#define FP8ATTN_MAX_HEAD_DIM 4096
/** Model dimension d of spectral weights: ::FP8ATTN_STATUS_BAD_SHAPE above. */
#define FP8ATTN_MAX_D_MODEL (INT64_C(1) << 20)
/** Head dimension the quantizer's rotation takes on every backend (the kernel's limit):
    ::FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM above. */
#define FP8ATTN_MAX_ROTATION_DIM 256
/** Offsets max_offset − min_offset + 1 of fp8attn_qk_rope_norms(): ::FP8ATTN_STATUS_BAD_OPTION above. */
#define FP8ATTN_MAX_ROPE_OFFSETS (INT64_C(1) << 16)
/** Layers of a scale state: ::FP8ATTN_STATUS_BAD_OPTION above. */
#define FP8ATTN_MAX_LAYERS (1 << 20)
/** amax history length of a scale state: ::FP8ATTN_STATUS_BAD_OPTION above. */
#define FP8ATTN_MAX_AMAX_HISTORY 65536
/** num_layers · amax_history_len of a scale state (128 MiB of history): ::FP8ATTN_STATUS_BAD_OPTION above. */
#define FP8ATTN_MAX_SCALE_STATE_ENTRIES (INT64_C(1) << 22)
/** @} */

/**
 * A strided tensor view. Caller-owned; the library keeps no reference after the call returns.
 *
 * Absent and empty are different things:
 * - an optional tensor is absent when `data` is NULL, whatever its other fields hold (a zeroed
 *   struct is absent); the call then behaves as documented for that argument's absence.
 * - a tensor is empty when one of its first `rank` extents is 0. It addresses no element, so its
 *   `data` may be NULL (PyTorch and DLPack export zero-element tensors so) or any other pointer;
 *   its struct_size, rank, dtype, device, extents and strides are still checked, and a required
 *   tensor that is empty is accepted whatever its data pointer. An optional tensor with NULL data
 *   is absent even when it is also empty.
 * - a required tensor with NULL data and no extent of 0: ::FP8ATTN_STATUS_NULL_POINTER.
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
 * call. It may be called from any thread that uses the context, concurrently, so it must be
 * thread-safe itself.
 *
 * The library holds no lock of its own while it calls the callback. A callback may therefore
 * call any fp8attn_* function, on the same context too (for example
 * fp8attn_context_set_log_level()); calls that log will call it again, recursively. It must not
 * destroy the context (or a plan or scale state) whose call is logging, and it must return:
 * no longjmp and no C++ exception out of it.
 *
 * Levels: ::FP8ATTN_LOG_WARN for fallbacks the caller did not ask for (::FP8ATTN_BACKEND_AUTO on
 * the CPU); ::FP8ATTN_LOG_INFO for the backend chosen; ::FP8ATTN_LOG_DEBUG for each context, plan
 * creation and forward call (shapes, backend, tile, workspace); ::FP8ATTN_LOG_TRACE for each
 * forward call's time in the backend.
 */
typedef void (*fp8attn_log_callback)(void* user_data, int32_t level, const char* msg, size_t len);

/** Context options. Zero-initialize, then set `struct_size`; zeros are the defaults. */
typedef struct fp8attn_context_options {
  size_t struct_size;  /**< sizeof(fp8attn_context_options). */
  const void* next;    /**< Extension chain; must be NULL. */
  int32_t backend;     /**< An ::fp8attn_backend; default ::FP8ATTN_BACKEND_AUTO. */
  int32_t device_ordinal; /**< CUDA device ordinal; default 0. Ignored by CPU backends. */
  int32_t num_threads; /**< CPU worker threads; 0 = all cores. */
  int32_t log_level;   /**< An ::fp8attn_log_level; default (0): the level named by the
                            environment variable `FP8ATTN_LOG_LEVEL` (error, warn, info, debug,
                            trace, off, or 1..6), else ::FP8ATTN_LOG_WARN. */
  fp8attn_log_callback log_callback; /**< NULL: messages go to stderr. */
  void* log_user_data; /**< Passed to `log_callback`; borrowed for the context's lifetime. */
} fp8attn_context_options;

/**
 * Creates a context.
 * @param options NULL for defaults. Borrowed for the call.
 * @param out     Out: the new context; written only on success.
 * @param err     Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_NULL_POINTER          `out` is NULL.
 * @retval FP8ATTN_STATUS_BAD_STRUCT_SIZE       `options->struct_size` is too small.
 * @retval FP8ATTN_STATUS_BAD_EXTENSION         `options->next` is not NULL.
 * @retval FP8ATTN_STATUS_BAD_OPTION            Unknown backend or log level, or negative threads.
 * @retval FP8ATTN_STATUS_CUDA_BACKEND_MISSING  CUDA asked for and libfp8attn_cuda not loadable.
 * @retval FP8ATTN_STATUS_NO_CUDA_DEVICE        CUDA asked for and no driver or device found.
 * @retval FP8ATTN_STATUS_UNSUPPORTED_DEVICE    CUDA asked for and the device is not sm_90.
 * @retval FP8ATTN_STATUS_OUT_OF_MEMORY         Host memory, or a worker thread that could not
 *                                              start (the threads already started are stopped
 *                                              and joined; the message says which one failed).
 *
 * ::FP8ATTN_BACKEND_AUTO never fails for lack of a GPU: it falls back to the CPU and logs why
 * at ::FP8ATTN_LOG_WARN (call fp8attn_context_get_backend() to see which backend runs). The
 * CUDA backend is looked up next to libfp8attn, and first at the path in the environment
 * variable `FP8ATTN_CUDA_BACKEND` when that is set.
 *
 * @par Thread safety
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_context_create(const fp8attn_context_options* options,
                                           fp8attn_context* out, fp8attn_error* err);

/**
 * Destroys a context. NULL is allowed. Every plan and scale state created from it must be
 * destroyed first. Not thread-safe with respect to other calls on the same context. Called on
 * one of the context's own worker threads (from a callback inside a call on it), it does
 * nothing: the context stays alive rather than have its thread pool join the calling thread.
 * @param ctx The context to destroy, or NULL.
 */
FP8ATTN_API void fp8attn_context_destroy(fp8attn_context ctx);

/**
 * Reports the backend the context runs on (never ::FP8ATTN_BACKEND_AUTO).
 * @param ctx     The context.
 * @param backend Out: an ::fp8attn_backend; written only on success.
 * @param err     Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE   `ctx` is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER `backend` is NULL.
 *
 * @par Thread safety
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_context_get_backend(fp8attn_context ctx, int32_t* backend,
                                                fp8attn_error* err);

/**
 * Changes the context's log level from now on; messages already being delivered are not
 * affected.
 * @param ctx   The context.
 * @param level An ::fp8attn_log_level; ::FP8ATTN_LOG_DEFAULT means `FP8ATTN_LOG_LEVEL` from the
 *              environment (read now), else ::FP8ATTN_LOG_WARN.
 * @param err   Optional error detail.
 * @retval FP8ATTN_OK                  The level is set.
 * @retval FP8ATTN_STATUS_BAD_HANDLE   `ctx` is NULL.
 * @retval FP8ATTN_STATUS_BAD_OPTION   `level` is not an ::fp8attn_log_level; the level is
 *         unchanged.
 *
 * @par Thread safety
 * Thread-safe, also from inside the context's log callback.
 */
FP8ATTN_API int32_t fp8attn_context_set_log_level(fp8attn_context ctx, int32_t level,
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
  int32_t output_dtype; /**< ::FP8ATTN_DTYPE_BF16 (default), ::FP8ATTN_DTYPE_F32, or
                             ::FP8ATTN_DTYPE_E4M3 (CPU, emulator and CUDA backends; needs an
                             output scale, see fp8attn_attention_forward()). E5M2 is refused. */
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
  int32_t pv_promote_interval; /**< Add the PV tile into O every N blocks; 0 = accumulate in O.
                                    The Hopper kernel (CUDA and emulator backends) takes any N for
                                    E4M3 (N > 1 has its own tile at head_dim 128, KV blocks of 128
                                    keys, not 224, and at 256, query tiles of 64 rows, not 128:
                                    fp8attn_plan_get_tile(); there it refuses per-block V descales)
                                    and only 0 for BF16 inputs, whose
                                    P·V accumulates in FP32; it also refuses per-block V descales
                                    and V with keys contiguous for BF16 inputs. Refusals are
                                    ::FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND; the CPU backend runs all. */
  int32_t softmax_variant;     /**< An ::fp8attn_softmax_variant; default standard. */
  float stabilized_beta;       /**< Shift factor β of the stabilized variant; default 2. */
  float stabilized_tie_tol;    /**< Tie tolerance τ in natural logit units; default 1e-3. */
  uint32_t telemetry;          /**< 1: the forward call fills `fp8attn_attention_args.telemetry`. */
  /* Fields below were appended after the first layout; callers whose struct_size stops before
     them get the defaults. */
  float stabilized_shift_cap_log2; /**< Cap on the stabilized shift: the shifted max m′ is at
                                        most r_m + cap in log2 units, so exp2(r_m − m′) ≥ 2^−cap
                                        and l cannot underflow to 0. Default 16; must be > 0. */
  int32_t sink_tokens; /**< Sink isolation: the first `sink_tokens` keys of each sequence form a KV
                            block of their own, visited last in reverse order (first in forward
                            order); the other blocks start at key `sink_tokens`. This removes the
                            in-block P underflow residue of reverse order. 0 (default) is off and
                            gives bit-identical results to a description without the field.
                            Per-block K/V descales then follow these blocks: slot 0 is the sink
                            block, slot n + 1 the block from key sink_tokens + n·block_n
                            (fp8attn_quantize with `leading_rows` = sink_tokens makes them). */
  uint32_t accumulator_model; /**< An ::fp8attn_accumulator_model; default
                                   ::FP8ATTN_ACCUMULATOR_TENSOR_CORE (1), so that a CPU or emulated
                                   run predicts the GPU's numbers; 0 is ::FP8ATTN_ACCUMULATOR_FP32.
                                   Other values: FP8ATTN_STATUS_BAD_OPTION. Callers whose
                                   struct_size stops before this field get the default. The CUDA
                                   backend ignores it: the hardware adds as it does. */
  int32_t accumulator_mantissa_bits; /**< The tensor core's fraction bits for FP8 inputs: 13 (the
                                          default) or 0 (the same: 13). Any other value is refused
                                          with FP8ATTN_STATUS_BAD_OPTION: the hardware's width is
                                          fixed, and the rule is not a tunable model. */
  int32_t page_size; /**< Tokens per page of a paged KV cache (::fp8attn_paged_kv, chained on the
                          forward's args), any value ≥ 1; 0 (the default): K and V are contiguous
                          or packed tensors. */
  int32_t kv_dtype;  /**< The dtype of K and V (or of the paged cache): ::FP8ATTN_DTYPE_E4M3 or
                          ::FP8ATTN_DTYPE_BF16; 0 (the default) means input_dtype. BF16 Q over an
                          E4M3 cache is allowed (see docs/numerics.md); E4M3 Q over BF16 K/V is
                          refused with ::FP8ATTN_STATUS_BAD_DTYPE. */
  uint32_t decode;    /**< 1: the decode path, for short queries (generation, speculative
                           decoding): every sequence has at most ::FP8ATTN_MAX_DECODE_Q_LEN
                           queries (more: ::FP8ATTN_STATUS_BAD_SHAPE at the forward call). A KV
                           group's query heads and tokens share the tile's rows (row = token ·
                           group + head in group), so each K/V byte is read once per group, and
                           each sequence's KV blocks are cut into `num_splits` splits whose
                           partial results (O in F32 and LSE, in the workspace) are merged by
                           the rule of fp8attn_attention_combine(). 0 (the default): the plain
                           forward. Other values: ::FP8ATTN_STATUS_BAD_OPTION. Every backend
                           runs it; the GPU backends (CUDA, emulator) with the decode kernels
                           (docs/kernels.md), which refuse with
                           ::FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND: pv_promote_interval > 0,
                           per-block V descales, telemetry (and amax_o or a scale state),
                           per-block Q descales with several query heads per KV head, and a
                           group that neither divides the tile's BlockM nor is a multiple of
                           it (fp8attn_plan_get_tile). */
  int32_t num_splits; /**< Decode only (0 otherwise, else ::FP8ATTN_STATUS_BAD_OPTION): how many
                           splits each sequence's KV blocks are cut into, 1 to
                           ::FP8ATTN_MAX_COMBINE_PARTS. Split s of a sequence with T KV blocks
                           (its per-block descale grid) holds blocks [⌊s·T/n⌋, ⌊(s+1)·T/n⌋): the
                           boundaries depend only on n and the sequence's own length, so a
                           fixed n gives the same bits for a sequence alone or in any batch.
                           n = 1 gives the plain forward's bits; a fixed n also gives the same
                           bits for any thread count. 0 (the default) picks n by a heuristic
                           (kernels/sm90/decode_schedule.hpp) from the longest real KV length
                           (at most the host's max_seqlen_k, which sizes the workspace; on
                           the GPU backends decided on the device from seqused_k), the batch
                           and the query heads: about two work items per worker of a fixed
                           count of 132 (a Hopper's SMs, on every backend), at least two KV
                           blocks per split. Its bits depend on those, so it is not
                           batch-invariant, but it gives the same bits for any thread count
                           and on every backend.
                           Negative or above 256: ::FP8ATTN_STATUS_BAD_OPTION. The workspace
                           (fp8attn_plan_workspace_size()) counts the splits' partial O (F32)
                           and LSE. */
} fp8attn_attention_desc;

/** Queries per sequence the decode path (fp8attn_attention_desc.decode) takes. */
#define FP8ATTN_MAX_DECODE_Q_LEN 8

/**
 * Fills `desc` with defaults, including `struct_size`. Fields beyond the caller's
 * `struct_size` are not written when `desc->struct_size` is already set to a smaller nonzero
 * value; a zero `struct_size` is treated as sizeof(fp8attn_attention_desc).
 * @param desc In/out: the description to fill; caller-owned.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_NULL_POINTER `desc` is NULL.
 *
 * @par Thread safety
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
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE A handle argument is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER A required pointer argument is NULL.
 * @retval FP8ATTN_STATUS_BAD_STRUCT_SIZE A struct's `struct_size` is 0 or smaller than its oldest
 *         layout.
 * @retval FP8ATTN_STATUS_BAD_EXTENSION A struct's `next` is not NULL.
 * @retval FP8ATTN_STATUS_BAD_DTYPE           input or output dtype not allowed; a kv_dtype other
 *         than 0, E4M3 or BF16, or BF16 under E4M3 Q.
 * @retval FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM head_dim not in {64, 128, 256}, or head_dim_v
 *         differs.
 * @retval FP8ATTN_STATUS_BAD_HEADS           head counts not positive, or not divisible.
 * @retval FP8ATTN_STATUS_BAD_SCALE           softmax_scale NaN, infinite or negative; bad β, τ,
 *         cap.
 * @retval FP8ATTN_STATUS_BAD_OPTION          kv_order, p_scale_log2, variant, window, interval;
 *         a negative page_size.
 * @retval FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND page_size ≥ 1, or a kv_dtype other than
 *         input_dtype, on a backend that does not run it (the CPU and reference backends run
 *         both; the emulator and CUDA backends run page_size ≥ 1, and BF16 Q over an E4M3 cache
 *         only with page_size ≥ 1).
 *
 * @par Thread safety
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
 * @param max_seqlen_q Longest query sequence, ≥ 0 (0: every query sequence is empty).
 * @param max_seqlen_k Longest key sequence, ≥ 0 (0: every key sequence is empty).
 * @param bytes Out: the size; written only on success. May be 0.
 * @param err   Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE A handle argument is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER A required pointer argument is NULL.
 * @retval FP8ATTN_STATUS_BAD_SHAPE  a batch that is not positive, a negative length (0 is an
 *                                   empty sequence), or a size above ::FP8ATTN_MAX_BATCH or
 *                                   ::FP8ATTN_MAX_SEQLEN.
 * @retval FP8ATTN_STATUS_OUT_OF_MEMORY  the size does not fit in size_t.
 * The CPU workspace covers every buffer a forward call uses (per-worker tiles, each worker's
 * decoded K and V blocks of one sequence and KV head, max_seqlen_k · (head_dim + head_dim_v)
 * floats, and a table of batch + 1 work offsets): the call itself allocates no memory.
 *
 * @par Thread safety
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_plan_workspace_size(fp8attn_plan plan, int64_t batch,
                                                int64_t max_seqlen_q, int64_t max_seqlen_k,
                                                size_t* bytes, fp8attn_error* err);

/**
 * The tile sizes the plan's kernel and CPU engine use: query rows per tile and keys per KV block.
 * Per-block descales (fp8attn_attention_args) and the quantizer's block sizes follow them. They
 * depend on head_dim, the input dtype and, for E4M3 at head_dims 128 and 256, on whether
 * pv_promote_interval > 1 (128 × 128 then, else 128 × 224, at 128; 64 × 96, else 128 × 96, at 256).
 * @param plan    The plan.
 * @param block_m Out: rows per query tile; written only on success.
 * @param block_n Out: keys per KV block; written only on success.
 * @param err     Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE   `plan` is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER `block_m` or `block_n` is NULL.
 *
 * @par Thread safety
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_plan_get_tile(fp8attn_plan plan, int32_t* block_m, int32_t* block_n,
                                          fp8attn_error* err);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @name Forward
 * @{ */
/* ------------------------------------------------------------------------------------------ */

/** Numerics measured by the forward call itself (docs/design.md §3). Caller-owned output. */
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
  fp8attn_tensor q_descale;     /**< Optional F32 [batch, heads_kv]. Applied for BF16 inputs as
                                     for E4M3 (FlashAttention-3 ignores descales on BF16 inputs;
                                     pass none to match it): the logits are scaled by
                                     softmax_scale · q_descale · k_descale, O by v_descale. */
  fp8attn_tensor k_descale;     /**< Optional F32 [batch, heads_kv]. */
  fp8attn_tensor v_descale;     /**< Optional F32 [batch, heads_kv]. */
  fp8attn_telemetry* telemetry; /**< Optional out; filled when desc.telemetry is 1. Borrowed. */
  /* Fields below were appended after the first layout. */
  fp8attn_tensor q_block_descale; /**< Optional F32 [batch, heads_q, ceil(max_seqlen_q / block_m)]: a
                                       descale per query tile, multiplied with q_descale. Blocks
                                       start at each sequence's first row; see
                                       fp8attn_plan_get_tile() for block_m. */
  fp8attn_tensor k_block_descale; /**< Optional F32 [batch, heads_kv, ceil(max_seqlen_k / block_n)]: a
                                       descale per KV block, multiplied with k_descale; folded into
                                       the logits of its block. With desc.sink_tokens = s > 0 the
                                       extent is 1 + ceil((max_seqlen_k − s) / block_n): the sink
                                       block first, then blocks of block_n from key s. */
  fp8attn_tensor v_block_descale; /**< Optional F32, the shape of k_block_descale: a
                                       descale per KV block, multiplied with v_descale; each block's
                                       PV product is accumulated in a fresh FP32 tile and added into
                                       O scaled by it (pv_promote_interval is then 1). */
  /* FP8 outputs for training, appended to the struct: cuDNN's sdpa_fp8 (scale_o, amax_o) and
     TransformerEngine's delayed scaling. Callers whose struct_size stops before them get NULL / 0. */
  const float* out_scale; /**< Host pointer to one float, read during the call; borrowed. Required
                               for desc.output_dtype = ::FP8ATTN_DTYPE_E4M3 unless `scale_state` is
                               set: the output is round_e4m3_satfinite(O · *out_scale), where O is
                               the FP32 result the F32 output would hold. Finite and > 0
                               (::FP8ATTN_STATUS_BAD_SCALE). With any other output dtype, or
                               together with `scale_state`: ::FP8ATTN_STATUS_BAD_OPTION. NULL
                               with E4M3 output and no state: ::FP8ATTN_STATUS_NULL_POINTER. */
  float* amax_o;          /**< Optional out, host: max |O| over the whole output, F32, before the
                               output scale and the cast (0 for an empty output). Written only on
                               success: by the call on the CPU and emulator backends; on CUDA by
                               a host function on `stream` after the kernel, so it must stay valid
                               until the stream reaches it (synchronize before reading). The
                               reference backend refuses it (::FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND).
                               Borrowed. */
  struct fp8attn_scale_state_t* scale_state; /**< Optional: a scale state (fp8attn_scale_state)
                               the call reads its scales from and reports its amaxes to; borrowed,
                               it must outlive the call (on CUDA, until the stream reaches the
                               call's report). See fp8attn_attention_forward(). The reference
                               backend refuses it (::FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND). */
  int32_t scale_state_layer; /**< The state's layer, 0..num_layers−1
                                  (::FP8ATTN_STATUS_INVALID_ARGUMENT otherwise); must be 0 when
                                  `scale_state` is NULL (::FP8ATTN_STATUS_INVALID_ARGUMENT). */
} fp8attn_attention_args;

/**
 * Computes attention: out = softmax(scale·Q·Kᵀ + mask)·V, per docs/design.md §3.
 * @param plan      From fp8attn_plan_create().
 * @param args      Borrowed for the call.
 * @param workspace Caller-owned scratch of at least the queried size; may be NULL if that is 0.
 * @param workspace_bytes Its size.
 * @param stream    CUDA stream; must be NULL on CPU backends.
 * @param err       Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE A handle argument is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER A required pointer argument is NULL, or a required tensor's
 *         data with elements (a tensor with an extent of 0 may have NULL data: ::fp8attn_tensor).
 * @retval FP8ATTN_STATUS_BAD_STRUCT_SIZE A struct's `struct_size` is 0 or smaller than its oldest
 *         layout.
 * @retval FP8ATTN_STATUS_BAD_EXTENSION `args.next` names a struct other than one
 *                                      ::fp8attn_paged_kv; an ::fp8attn_paged_kv on a plan whose
 *                                      desc.page_size is 0; a plan with page_size ≥ 1 and none.
 * @retval FP8ATTN_STATUS_BAD_DTYPE     a tensor's dtype is unknown or not the plan's.
 * @retval FP8ATTN_STATUS_BAD_SHAPE     a rank or extent mismatch; a batch above ::FP8ATTN_MAX_BATCH
 *                                      or a sequence above ::FP8ATTN_MAX_SEQLEN.
 * @retval FP8ATTN_STATUS_BAD_STRIDE    a negative stride, overlapping output elements, or a tensor
 *                                      whose largest element offset does not fit in int64.
 * @retval FP8ATTN_STATUS_BAD_SEQLENS   cu_seqlens not starting at 0, decreasing, or past total; a
 *                                      paged cache's seqused_k[b] below 0, above max_seqlen_k or
 *                                      above max_pages_per_seq · page_size (host memory).
 * @retval FP8ATTN_STATUS_BAD_SCALE     a descale that is NaN, infinite or ≤ 0 (a stride-0 descale
 *                                      is read once); or finite descales whose products leave
 *                                      FP32's range, checked before anything is written: a logit
 *                                      scale softmax_scale · q_descale · k_descale · log2(e)
 *                                      (per sequence and KV head, in FP32) that is infinite or
 *                                      below FLT_MIN; with E4M3 inputs, one for which a logit of
 *                                      E4M3 codes (head_dim · 448², times the largest per-block
 *                                      Q and K descales) times the logit scale exceeds
 *                                      FLT_MAX / 4; a v_descale (times the largest per-block V
 *                                      descale) above the output dtype's largest finite value /
 *                                      (2 · 448). The message names the fields. Descale tensors
 *                                      in device memory (CUDA) are not read by these checks;
 *                                      a scale state's descales are.
 * @retval FP8ATTN_STATUS_BAD_DEVICE    a tensor not on the backend's device.
 * @retval FP8ATTN_STATUS_BAD_STREAM    a stream given to a CPU backend.
 * @retval FP8ATTN_STATUS_WORKSPACE_TOO_SMALL `workspace_bytes` is below what the workspace query
 *         returns for this problem.
 * @retval FP8ATTN_STATUS_NUMERICS      an output is NaN or infinite although the call's checks
 *                                      passed: BF16 inputs whose products overflow FP32, or NaN
 *                                      input codes. It is found only after computing: unlike every
 *                                      other failure, `out` and `lse` have then been written and
 *                                      hold unspecified values; `amax_o` and the scale state are
 *                                      still untouched. CPU backend only: the Hopper backends
 *                                      (CUDA, emulator) do not scan their outputs and return
 *                                      ::FP8ATTN_OK with the non-finite values written (so do
 *                                      unchecked device-memory descales on CUDA).
 * @retval FP8ATTN_STATUS_INVALID_ARGUMENT `scale_state_layer` out of range, or nonzero without a
 *                                      state; with a paged cache: `k`, `v` or `cu_seqlens_k`
 *                                      given, or a block-table entry a sequence uses outside
 *                                      [0, num_pages) (checked where the host can read the table:
 *                                      the CPU and reference backends).
 * @retval FP8ATTN_STATUS_BAD_OPTION    `out_scale` with an output dtype other than E4M3, or
 *                                      together with `scale_state`; per-tensor descale tensors
 *                                      together with `scale_state`.
 * @retval FP8ATTN_STATUS_UNSUPPORTED   the state's layer holds a logit scale other than 1 (see
 *                                      below).
 * @retval FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND `amax_o` or `scale_state` on the reference
 *                                      backend, which measures no amax.
 * @retval FP8ATTN_STATUS_OUT_OF_MEMORY on a GPU context, all staging slots of the device amax
 *                                      pickup are in flight (256 calls with an amax or a state,
 *                                      or device reports, not yet reached by their streams);
 *                                      nothing was launched.
 *
 * @par FP8 output and the scale state
 * With desc.output_dtype = ::FP8ATTN_DTYPE_E4M3 the output is round_e4m3_satfinite(O · s_O), O
 * being the FP32 value an F32 output would hold, bit for bit, and s_O the output scale: from
 * `args.out_scale`, or from the state. ::FP8ATTN_DTYPE_E5M2 output is refused at plan time
 * (::FP8ATTN_STATUS_BAD_DTYPE). With `args.scale_state` set, for layer L = `scale_state_layer`:
 * - the Q, K and V descales are the state's current scale_inv (= 1/scale) of
 *   ::FP8ATTN_TENSOR_Q, _K and _V, applied per tensor (as stride-0 descale tensors would be).
 *   Per-tensor descale tensors in the args are then refused with ::FP8ATTN_STATUS_BAD_OPTION
 *   (there is no precedence rule to remember); per-block descales still multiply with them.
 * - for E4M3 output, s_O is the state's scale of ::FP8ATTN_TENSOR_O.
 * - the logit scale: the forward computes the logits in FP32 (FP8 Q·Kᵀ with FP32 accumulation)
 *   and casts no logit to FP8, so it has no place to apply one. A layer whose
 *   ::FP8ATTN_TENSOR_LOGIT scale is not 1 (geometry recipe with σ set, or a delayed/current
 *   logit recipe after its first amax) is refused with ::FP8ATTN_STATUS_UNSUPPORTED rather than
 *   silently ignored. The default geometry recipe before any σ keeps the scale at 1.
 * - after a successful call the state receives, as fp8attn_scale_state_report_amax() would, the
 *   amax of O (max |O| before the output scale) for ::FP8ATTN_TENSOR_O and the max |scaled
 *   logit| (the telemetry figure, measured even when desc.telemetry is 0) for
 *   ::FP8ATTN_TENSOR_LOGIT; no other kind's slot changes. Everything is checked before the
 *   computation, and the state is updated only after it succeeded: a failed call leaves the
 *   state as it was. The scales read and the report each take the state's lock once; another
 *   thread's fp8attn_scale_state_step() between them moves the report into the next step.
 * - on the GPU backends (CUDA, emulator) the kernel leaves both amaxes in the workspace; the call
 *   then enqueues on `stream` their copy into page-locked staging and a host function
 *   (cudaLaunchHostFunc) that folds them into the state under its lock and writes `amax_o`: no
 *   host synchronization inside the call. Under the emulator this has happened on return. On
 *   CUDA the report lands when the stream reaches it; as with TransformerEngine, synchronize the
 *   stream before fp8attn_scale_state_step() (or get_scale/serialize) should see it. Each read
 *   sees all of a report or none of it. A non-finite amax (an overflowed output) drops the whole
 *   report: ::FP8ATTN_STATUS_NUMERICS under the emulator, a warning in the context's log on CUDA,
 *   where the call has returned. Such calls cannot be captured in a CUDA graph: the staging slot
 *   is taken per call.
 *
 * @par Thread safety
 * Thread-safe: concurrent calls on one plan are allowed (CPU calls on one context run one at a
 * time on its worker threads). Calls sharing one scale state are safe (its lock).
 */
FP8ATTN_API int32_t fp8attn_attention_forward(fp8attn_plan plan, const fp8attn_attention_args* args,
                                              void* workspace, size_t workspace_bytes,
                                              struct CUstream_st* stream, fp8attn_error* err);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @name Serving: a paged KV cache, appending to it, and merging partial results
 * A serving stack keeps K and V in pages of `page_size` tokens (vLLM's and FlashAttention-3's
 * layout): a cache tensor [num_pages, page_size, heads_kv, head_dim], and per sequence a row of
 * a block table that lists its pages in order. Key j of sequence b is token j % page_size of
 * page block_table[b, j / page_size]. Pages may be shared by several sequences (prefix caching)
 * and lie in any order.
 * @{ */
/* ------------------------------------------------------------------------------------------ */

/** Type tags of the structs that may be chained on an argument struct's `next`. An extension
 *  struct starts with `struct_size`, `next` and `struct_type`; the library reads `struct_type`
 *  to know what it is (::FP8ATTN_STATUS_BAD_EXTENSION for an unknown tag). */
typedef enum fp8attn_struct_type {
  FP8ATTN_STRUCT_TYPE_PAGED_KV = 1 /**< ::fp8attn_paged_kv, on fp8attn_attention_args.next. */
} fp8attn_struct_type;

/** How a paged cache's E4M3 values are scaled back: value = code · descale. */
typedef enum fp8attn_kv_scale_granularity {
  FP8ATTN_KV_SCALE_NONE = 0,          /**< No scale cache; the args' k_descale and v_descale
                                           (per sequence and KV head) apply as without pages. */
  FP8ATTN_KV_SCALE_PER_HEAD = 1,      /**< F32 [heads_kv]: one descale per KV head, for the whole
                                           layer (vLLM's and FlashAttention-3's convention; pages
                                           can be shared between requests). */
  FP8ATTN_KV_SCALE_PER_TOKEN_HEAD = 2 /**< F32 [num_pages, page_size, heads_kv]: a scale cache
                                           beside the pages, one descale per (token, KV head),
                                           written by fp8attn_kv_append_async(). Applied inside
                                           the computation: K's on the logits, V's on P·V
                                           (under BF16 Q: whole on P's columns before its cast,
                                           docs/numerics.md). The emulator and CUDA backends
                                           apply them in their E4M3 forward kernels and, under
                                           BF16 Q over an E4M3 cache at head_dim 64 or 128, in
                                           the BF16 forward and decode kernels; they refuse them
                                           under E4M3 Q with desc.decode = 1 and under BF16 Q at
                                           head_dim 256 at the forward call
                                           (::FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND). */
} fp8attn_kv_scale_granularity;

/**
 * A paged KV cache, chained on fp8attn_attention_args.next (`struct_type` =
 * ::FP8ATTN_STRUCT_TYPE_PAGED_KV) for a plan whose description has `page_size` ≥ 1. The args'
 * `k`, `v` and `cu_seqlens_k` must then be absent (NULL data); `q`, `out`, `lse` and
 * `cu_seqlens_q` keep their layouts. Tensors are borrowed for the call (on CUDA, until the stream
 * reaches the work) and live where the backend's memory lives (device memory on CUDA).
 *
 * Query i of sequence b's q_len-long chunk sees keys ≤ seqused_k[b] − q_len + i when the plan is
 * causal (bottom-right alignment: prefill, chunked prefill and extend), and windows count from
 * the same diagonal.
 *
 * Checks (fp8attn_attention_forward()): the caches' dtype is desc.kv_dtype and their extents
 * match the plan (page_size, heads_kv, head_dim), with the same page count, and no two of a
 * cache's elements share an address (::FP8ATTN_STATUS_BAD_STRIDE); the block table's rows equal
 * the batch; the scale caches are absent without a granularity, need an E4M3 cache and no
 * args.k_descale / v_descale with one (::FP8ATTN_STATUS_BAD_OPTION) and are finite and > 0 for
 * the tokens in use (host memory; ::FP8ATTN_STATUS_BAD_SCALE). The workspace is what
 * fp8attn_plan_workspace_size() returns with max_seqlen_k = this struct's `max_seqlen_k`.
 * Per-token descales: docs/numerics.md, "Paged KV caches".
 */
typedef struct fp8attn_paged_kv {
  size_t struct_size;         /**< sizeof(fp8attn_paged_kv). */
  const void* next;           /**< Extension chain; must be NULL. */
  int32_t struct_type;        /**< ::FP8ATTN_STRUCT_TYPE_PAGED_KV. */
  int32_t scale_granularity;  /**< An ::fp8attn_kv_scale_granularity; default (0) none. */
  fp8attn_tensor k_cache;     /**< [num_pages, page_size, heads_kv, head_dim], dtype desc.kv_dtype;
                                   any non-negative strides. */
  fp8attn_tensor v_cache;     /**< [num_pages, page_size, heads_kv, head_dim_v], the same pages. */
  fp8attn_tensor block_table; /**< I32 [batch, max_pages_per_seq], any strides (a row stride
                                   larger than the row). Entries past a sequence's last page are
                                   not read. */
  fp8attn_tensor seqused_k;   /**< I32 [batch]: keys in each sequence's cache, 0..max_seqlen_k. */
  int64_t max_seqlen_k;       /**< Host upper bound of seqused_k, ≥ 0. */
  fp8attn_tensor k_descale;   /**< With a scale granularity: F32 of the shape it names. */
  fp8attn_tensor v_descale;   /**< Likewise for V. */
} fp8attn_paged_kv;

/**
 * Arguments of fp8attn_kv_append_async(): new tokens' K and V written into a paged cache.
 * Tensors are borrowed for the call (on CUDA, until the stream reaches the work).
 */
typedef struct fp8attn_kv_append_args {
  size_t struct_size;          /**< sizeof(fp8attn_kv_append_args). */
  const void* next;            /**< Extension chain; must be NULL. */
  fp8attn_tensor k;            /**< New keys [tokens, heads_kv, head_dim]: BF16, F32 or E4M3
                                    (E4M3 is copied as it is, into an E4M3 cache only). */
  fp8attn_tensor v;            /**< New values [tokens, heads_kv, head_dim_v], K's dtype. */
  fp8attn_tensor k_cache;      /**< Out: [num_pages, page_size, heads_kv, head_dim], E4M3 or BF16. */
  fp8attn_tensor v_cache;      /**< Out: [num_pages, page_size, heads_kv, head_dim_v], K's dtype. */
  fp8attn_tensor slot_mapping; /**< I64 [tokens]: slot = page · page_size + offset; a negative
                                    slot skips its token (vLLM's padding convention). */
  int32_t scale_granularity;   /**< An ::fp8attn_kv_scale_granularity, for an E4M3 cache from
                                    BF16 or F32 input: PER_HEAD quantizes with the given layer
                                    descales (code = round(x / descale), in FP32); PER_TOKEN_HEAD
                                    computes each (token, head)'s scale = 448 / amax over its
                                    (rotated) row, 1 when the row is all zeros (fp8attn_quantize's
                                    rule with margin 0), code = round(x · scale) and writes
                                    descale = 1 / scale (FP32) into the scale caches; a NaN or
                                    infinite element gives scale 0 and descale +inf. NONE:
                                    descale 1. E4M3 input takes NONE or PER_HEAD (its descales
                                    are the caller's; they are checked, not applied). */
  uint32_t rotate;             /**< 1: multiply each K row by H·D first (the quantizer's
                                    incoherent processing, fp8attn_quantize_options.rotate); Q must
                                    then be rotated with the same seed. V is never rotated. Not
                                    for E4M3 input. */
  uint64_t seed;               /**< Seed of D's signs when `rotate` is 1. */
  fp8attn_tensor k_descale;    /**< PER_HEAD: F32 [heads_kv], read. PER_TOKEN_HEAD: out, F32
                                    [num_pages, page_size, heads_kv], written at the slots. */
  fp8attn_tensor v_descale;    /**< Likewise for V. */
} fp8attn_kv_append_args;

/**
 * Writes new tokens' K and V into a paged cache, as vLLM's reshape_and_cache_flash does, on the
 * context's backend as one pass over the tokens (one kernel on a GPU backend): token t's row of
 * head h goes to page slot_mapping[t] / page_size, offset slot_mapping[t] % page_size. From BF16
 * or F32 into an E4M3 cache it quantizes (round to nearest even, saturating to ±448) with the
 * descales `scale_granularity` names; into a BF16 cache it rounds to BF16.
 * @param ctx    The context.
 * @param args   Borrowed for the call.
 * @param stream CUDA stream; must be NULL on CPU backends.
 * @param err    Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE   `ctx` is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER `args` is NULL, or a required tensor's data with elements.
 * @retval FP8ATTN_STATUS_BAD_STRUCT_SIZE A struct's `struct_size` is 0 or too small.
 * @retval FP8ATTN_STATUS_BAD_EXTENSION `args->next` is not NULL.
 * @retval FP8ATTN_STATUS_BAD_DTYPE    a dtype outside those above, or K and V dtypes that differ.
 * @retval FP8ATTN_STATUS_BAD_SHAPE    ranks or extents that disagree, a page_size of 0.
 * @retval FP8ATTN_STATUS_BAD_STRIDE   a negative stride, a cache whose strides overlap, or an
 *                                     input that overlaps a cache.
 * @retval FP8ATTN_STATUS_BAD_OPTION   an unknown granularity, a granularity other than NONE for a
 *                                     BF16 cache, rotate not 0 or 1, rotate or PER_TOKEN_HEAD
 *                                     with E4M3 input.
 * @retval FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM rotate with a head_dim that is not a power of two
 *                                     ≤ ::FP8ATTN_MAX_ROTATION_DIM.
 * @retval FP8ATTN_STATUS_BAD_SCALE    a PER_HEAD descale (host memory) that is not finite and > 0.
 * @retval FP8ATTN_STATUS_INVALID_ARGUMENT a slot ≥ num_pages · page_size, where the host can read
 *                                     the slots (host memory). On CUDA the kernel skips such a
 *                                     slot instead and writes nothing for it.
 * @retval FP8ATTN_STATUS_BAD_DEVICE   a tensor not on the backend's device.
 * @retval FP8ATTN_STATUS_BAD_STREAM   a stream given to a CPU backend.
 *
 * @par Thread safety
 * Thread-safe; concurrent appends to the same slots race, as any two writers do.
 */
FP8ATTN_API int32_t fp8attn_kv_append_async(fp8attn_context ctx, const fp8attn_kv_append_args* args,
                                            struct CUstream_st* stream, fp8attn_error* err);

/** Most partial results fp8attn_attention_combine() merges in one call. */
#define FP8ATTN_MAX_COMBINE_PARTS 256

/**
 * Arguments of fp8attn_attention_combine(): `num_parts` partial attention results over disjoint
 * key sets (split-KV, a shared prefix and a suffix, context-parallel shards), merged into the
 * result over their union. Tensors are borrowed for the call.
 */
typedef struct fp8attn_combine_args {
  size_t struct_size;        /**< sizeof(fp8attn_combine_args). */
  const void* next;          /**< Extension chain; must be NULL. */
  fp8attn_tensor partial_out; /**< [num_parts, tokens, heads, head_dim], F32 or BF16, any strides:
                                   each part's normalized output. */
  fp8attn_tensor partial_lse; /**< F32 [num_parts, tokens, heads]: each part's natural-log
                                   log-sum-exp; −inf marks a part with no visible key, whose O is
                                   not read. */
  fp8attn_tensor out;         /**< Out: [tokens, heads, head_dim], F32 or BF16:
                                   Σ_p exp(lse_p − lse)·O_p, 0 for a row where every part is empty. */
  fp8attn_tensor lse;         /**< Optional out: F32 [tokens, heads], log Σ_p exp(lse_p); −inf for
                                   a row where every part is empty. */
} fp8attn_combine_args;

/**
 * Workspace bytes fp8attn_attention_combine() needs for these arguments (only shapes and dtypes
 * are read).
 * @param ctx   The context.
 * @param args  The arguments fp8attn_attention_combine() will get; borrowed for the call.
 * @param bytes Out: the size; written only on success.
 * @param err   Optional error detail.
 * @retval FP8ATTN_OK Success; the statuses of fp8attn_attention_combine()'s shape checks otherwise.
 */
FP8ATTN_API int32_t fp8attn_attention_combine_workspace_size(fp8attn_context ctx,
                                                             const fp8attn_combine_args* args,
                                                             size_t* bytes, fp8attn_error* err);

/**
 * Merges partial attention results: for each (token, head), with m = max_p lse_p,
 * lse = m + log Σ_p exp(lse_p − m) and out = Σ_p exp(lse_p − lse)·O_p, in FP32, parts in index
 * order (a fixed order: the result does not depend on the backend's threads). The CPU backend and
 * the kernel (CUDA, emulator) compute each weight as exp(lse_p − m) / Σ_q exp(lse_q − m) with the
 * forward's exp2, the emulator bit-equal to the CPU; the reference backend merges in FP64.
 * Special values: a part with lse_p = −inf is empty and its O is not read (nor is the O of a part
 * whose weight underflows FP32, lse_p < m − 87); a row whose every part is empty gets out 0 and
 * lse −inf; a NaN or +inf lse_p makes its row's out and lse NaN; NaN or ±inf inside a read O
 * reaches out by IEEE arithmetic. The workspace query returns 0 bytes in this version.
 * @param ctx       The context.
 * @param args      Borrowed for the call.
 * @param workspace Caller-owned scratch of at least the queried size; may be NULL if that is 0.
 * @param workspace_bytes Its size.
 * @param stream    CUDA stream; must be NULL on CPU backends.
 * @param err       Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE   `ctx` is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER `args` is NULL, or a required tensor's data with elements.
 * @retval FP8ATTN_STATUS_BAD_STRUCT_SIZE A struct's `struct_size` is 0 or too small.
 * @retval FP8ATTN_STATUS_BAD_EXTENSION `args->next` is not NULL.
 * @retval FP8ATTN_STATUS_BAD_DTYPE    O not F32 or BF16, an LSE not F32.
 * @retval FP8ATTN_STATUS_BAD_SHAPE    ranks or extents that disagree (partial counts of O and LSE
 *                                     among them), num_parts of 0 or above
 *                                     ::FP8ATTN_MAX_COMBINE_PARTS.
 * @retval FP8ATTN_STATUS_BAD_STRIDE   a negative stride, an output that overlaps itself, another
 *                                     output or an input.
 * @retval FP8ATTN_STATUS_BAD_DEVICE   a tensor not on the backend's device.
 * @retval FP8ATTN_STATUS_BAD_STREAM   a stream given to a CPU backend.
 * @retval FP8ATTN_STATUS_WORKSPACE_TOO_SMALL `workspace_bytes` is below the queried size.
 *
 * @par Thread safety
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_attention_combine(fp8attn_context ctx, const fp8attn_combine_args* args,
                                              void* workspace, size_t workspace_bytes,
                                              struct CUstream_st* stream, fp8attn_error* err);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @name Backward
 * @{ */
/* ------------------------------------------------------------------------------------------ */

/**
 * Arguments of one backward call: the gradients of a loss with respect to q, k and v, given the
 * forward's inputs, its output, its log-sum-exp and the loss's gradient with respect to the
 * output. Tensors are borrowed for the call.
 *
 * The plan is the forward's plan; its description must have input_dtype ::FP8ATTN_DTYPE_BF16.
 * Every option of the description applies as in the forward (causal, windows, GQA/MQA, varlen,
 * softmax_scale). sink_tokens, kv_order, p_scale_log2, pv_promote_interval and the stabilized
 * softmax only change the forward's rounding, so the backward ignores them: it recomputes P from
 * `lse` (docs/design.md §3, stabilized safe softmax).
 *
 * Layouts are the forward's (fp8attn_attention_args):
 * - Padded: `q`, `dq` [batch, seqlen_q, heads_q, head_dim]; `k`, `dk` [batch, seqlen_k, heads_kv,
 *   head_dim]; `v`, `dv` [batch, seqlen_k, heads_kv, head_dim_v]; `out`, `dout` [batch, seqlen_q,
 *   heads_q, head_dim_v]; `lse` [batch, heads_q, seqlen_q]. Any non-negative strides.
 * - Packed (varlen): rank-3 tensors [total, heads, dim] with `cu_seqlens_q` and `cu_seqlens_k`;
 *   `lse` [heads_q, total_q].
 *
 * With GQA/MQA, dk and dv of a KV head are summed over the query heads of its group.
 */
typedef struct fp8attn_attention_bwd_args {
  size_t struct_size;          /**< sizeof(fp8attn_attention_bwd_args). */
  const void* next;            /**< Extension chain; must be NULL. */
  fp8attn_tensor q;            /**< Queries, BF16 (the plan's input dtype). */
  fp8attn_tensor k;            /**< Keys, BF16. */
  fp8attn_tensor v;            /**< Values, BF16. */
  fp8attn_tensor out;          /**< The forward's output, desc.output_dtype (BF16 by default). */
  fp8attn_tensor dout;         /**< Gradient of the loss with respect to `out`, desc.output_dtype. */
  fp8attn_tensor lse;          /**< The forward's F32 log-sum-exp (natural log); required. */
  fp8attn_tensor dq;           /**< Out: BF16 or F32; written only on success. */
  fp8attn_tensor dk;           /**< Out: BF16; written only on success. */
  fp8attn_tensor dv;           /**< Out: BF16; written only on success. */
  fp8attn_tensor cu_seqlens_q; /**< Optional I32 [batch+1]; present iff packed layout. */
  fp8attn_tensor cu_seqlens_k; /**< Optional I32 [batch+1]; present iff packed layout. */
  int32_t deterministic;       /**< 1: the same inputs give the same bits whatever the thread count
                                    or schedule. The CPU backend is deterministic in both modes
                                    (dk and dv are summed by one worker each, and the key blocks
                                    add into dq in ascending order); 0 lets a GPU backend
                                    accumulate dq with atomics in any order. The Hopper backends
                                    (CUDA, EMULATOR) with 1 keep each key block's share of dq in
                                    the workspace and sum the shares in ascending key-block order
                                    (the emulator gives the CPU backend's bits); with 0 they add
                                    the shares with F32 atomics. dk and dv never use atomics.
                                    Other values: ::FP8ATTN_STATUS_BAD_OPTION. */
} fp8attn_attention_bwd_args;

/**
 * Workspace bytes a backward call needs for problems up to these sizes.
 * @param plan  The plan.
 * @param batch Number of sequences, > 0.
 * @param max_seqlen_q Longest query sequence, > 0.
 * @param max_seqlen_k Longest key sequence, > 0.
 * @param bytes Out: the size; written only on success. May be 0.
 * @param err   Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE   `plan` is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER `bytes` is NULL.
 * @retval FP8ATTN_STATUS_BAD_SHAPE    a batch that is not positive, a negative length (0 is an
 *                                     empty sequence), or a size above ::FP8ATTN_MAX_BATCH or
 *                                     ::FP8ATTN_MAX_SEQLEN.
 * @retval FP8ATTN_STATUS_UNSUPPORTED_DTYPE the plan's input dtype is not BF16.
 * @retval FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND the context's backend has no backward
 *                                     (::FP8ATTN_BACKEND_REFERENCE), or the Hopper backward
 *                                     (::FP8ATTN_BACKEND_CUDA, ::FP8ATTN_BACKEND_EMULATOR) cannot
 *                                     run the plan: it has kernels for head_dim 64, 128 and
 *                                     256 only, needs head_dim_v = head_dim and BF16 out and
 *                                     dout (desc.output_dtype BF16). The CPU backend runs all of
 *                                     these.
 * The CPU workspace covers every buffer a backward call uses (per-worker tiles, tables of
 * batch + 1 work offsets, and an F32 dq accumulator of batch·max_seqlen_q·heads_q·head_dim with
 * one counter per query block): the call itself allocates no memory. The Hopper workspace holds
 * 2 F32 per (row, query head) (the LSE in log2 units and rowsum(dout∘out)) and one F32 dq share
 * of batch·max_seqlen_q·heads_q·head_dim per key block of 128 keys, 64 at head_dim 256
 * (ceil(max_seqlen_k / 128) of them, for deterministic mode; atomic mode uses the first): dq's
 * size times the key blocks.
 *
 * @par Thread safety
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_plan_backward_workspace_size(fp8attn_plan plan, int64_t batch,
                                                         int64_t max_seqlen_q, int64_t max_seqlen_k,
                                                         size_t* bytes, fp8attn_error* err);

/**
 * Computes dq, dk and dv of attention (FlashAttention-2's backward): with D = rowsum(dout∘out)
 * and P = exp(softmax_scale·Q·Kᵀ − lse) recomputed per tile, dV = Pᵀ·dO, dP = dO·Vᵀ,
 * dS = P∘(dP − D), dQ = softmax_scale·dS·K and dK = softmax_scale·dSᵀ·Q, with P and dS cast to
 * BF16 before their products as the GPU kernel casts them. Rows with no visible key get zero
 * gradients; keys no query sees get zero dk and dv.
 * @param plan      From fp8attn_plan_create(), with BF16 inputs.
 * @param args      Borrowed for the call.
 * @param workspace Caller-owned scratch of at least fp8attn_plan_backward_workspace_size() bytes;
 *                  may be NULL if that is 0.
 * @param workspace_bytes Its size.
 * @param stream    CUDA stream; must be NULL on CPU backends.
 * @param err       Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE   `plan` is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER `args`, a required tensor's data (lse included) or the
 *                                     workspace is NULL; a tensor with an extent of 0 may have
 *                                     NULL data (see ::fp8attn_tensor).
 * @retval FP8ATTN_STATUS_BAD_STRUCT_SIZE `args->struct_size` (or a tensor's) is 0 or too small.
 * @retval FP8ATTN_STATUS_BAD_EXTENSION `args->next` is not NULL.
 * @retval FP8ATTN_STATUS_BAD_DTYPE     a tensor's dtype is unknown or not the one listed above.
 * @retval FP8ATTN_STATUS_BAD_SHAPE     a rank or extent mismatch (a gradient must have its
 *                                      tensor's shape); sizes above the limits.
 * @retval FP8ATTN_STATUS_BAD_STRIDE    a negative stride or overlapping output elements.
 * @retval FP8ATTN_STATUS_BAD_SEQLENS   cu_seqlens not starting at 0, decreasing, or past total.
 * @retval FP8ATTN_STATUS_BAD_DEVICE    a tensor not on the backend's device.
 * @retval FP8ATTN_STATUS_BAD_STREAM    a stream given to a CPU backend.
 * @retval FP8ATTN_STATUS_UNSUPPORTED_DTYPE the plan's input dtype is not BF16.
 * @retval FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND the context's backend has no backward.
 * @retval FP8ATTN_STATUS_WORKSPACE_TOO_SMALL `workspace_bytes` is below what the workspace query
 *                                      returns for this problem.
 * @retval FP8ATTN_STATUS_NUMERICS      a gradient is NaN or infinite although the checks passed
 *                                      (for example an `lse` that does not belong to the inputs).
 *                                      Unlike every other failure, dq, dk and dv have then been
 *                                      written and hold unspecified values. CPU backend only: the
 *                                      Hopper backends do not read their results back (no
 *                                      synchronization) and write non-finite values as they are.
 * On any other failure dq, dk and dv are not written.
 *
 * @par Thread safety
 * Thread-safe: concurrent calls on one plan are allowed (CPU calls on one context run one at a
 * time on its worker threads). The outputs must not overlap each other or the inputs.
 */
FP8ATTN_API int32_t fp8attn_attention_backward(fp8attn_plan plan,
                                               const fp8attn_attention_bwd_args* args,
                                               void* workspace, size_t workspace_bytes,
                                               struct CUstream_st* stream, fp8attn_error* err);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @name P-underflow prediction (docs/design.md §3)
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
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_NULL_POINTER A required pointer argument is NULL.
 * @retval FP8ATTN_STATUS_BAD_STRUCT_SIZE A struct's `struct_size` is 0 or smaller than its oldest
 *         layout.
 * @retval FP8ATTN_STATUS_BAD_EXTENSION A struct's `next` is not NULL.
 * @retval FP8ATTN_STATUS_BAD_SCALE         `p_scale` not finite or not > 0.
 * @retval FP8ATTN_STATUS_BAD_OPTION        unknown `kv_order`.
 * @retval FP8ATTN_STATUS_INVALID_ARGUMENT  another field out of range.
 * @retval FP8ATTN_STATUS_NUMERICS          a prediction that is not finite. Both are clamped to
 *                                          [0, 1] against the quadrature's rounding.
 *
 * @par Thread safety
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_predict_p_underflow(const fp8attn_sink_model* model,
                                                double* leading_order, double* expected,
                                                fp8attn_error* err);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @name Scale state and spectral norms
 * Geometry-aware logit scales from the spectral norms of the per-head QK interaction
 * matrices, and the FP8 scale state with delayed, current and geometry-aware recipes
 * (docs/design.md §3, "Geometry-aware logit scales" and "Delayed and current scaling").
 * @{ */
/* ------------------------------------------------------------------------------------------ */

/** Largest finite E4M3 value: the FP8 range a logit scale maps the logit bound onto. */
#define FP8ATTN_E4M3_MAX 448.0f

/**
 * Options of the power iteration behind fp8attn_qk_spectral_norms(). Zero-initialize, then set
 * `struct_size`; zeros are the defaults. NULL options means all defaults.
 */
typedef struct fp8attn_power_iteration_options {
  size_t struct_size;     /**< sizeof(fp8attn_power_iteration_options). */
  const void* next;       /**< Extension chain; must be NULL. */
  int32_t max_iterations; /**< Iteration cap per head (applications of (G_Q·G_K)^32, see
                               fp8attn_qk_spectral_norms()), ≥ 0; 0 means the default, 100. */
  float tolerance;        /**< Relative change of σ² between iterations at which a head stops;
                               finite and ≥ 0; 0 means the default, 1e-6. */
  uint64_t seed;          /**< Seed of the random start vectors of heads without a warm start. */
  float* warm_start;      /**< Optional in/out, caller-owned, [num_heads_q · head_dim] floats
                               (host memory on the CPU backend). In: a head whose head_dim
                               entries are all zero starts from a seeded random vector, any
                               other head starts from its entries. Out: each head's converged
                               vector, to be passed back on the next call (warm start). Zero it
                               before the first call. Written only on success. May be NULL. */
  int32_t* iterations_out; /**< Optional out, caller-owned, [num_heads_q]: iterations used per
                                head. Written only on success. May be NULL. */
  float* residual_out;     /**< Optional out, caller-owned, [num_heads_q]: relative residual
                                ‖S·y − λ·y‖ / (λ·‖y‖) of the final iterate of the symmetric
                                d_h × d_h problem S (see fp8attn_qk_spectral_norms()); an
                                eigenvalue of S lies within that relative distance of σ². Written
                                only on success. May be NULL. */
  float wq_descale;        /**< Multiplier of the stored W_Q elements (E4M3 weights with a
                                per-tensor scale); 0 means 1. Finite and ≥ 0. */
  float wk_descale;        /**< Multiplier of the stored W_K elements; 0 means 1. */
} fp8attn_power_iteration_options;

/**
 * Workspace bytes that fp8attn_qk_spectral_norms() needs for these sizes on the context's
 * backend.
 * @param ctx          The context.
 * @param num_heads_q  Query heads, ≥ 1 and a multiple of `num_heads_kv`.
 * @param num_heads_kv Key heads, ≥ 1.
 * @param head_dim     d_h, ≥ 1.
 * @param d_model      d, the input width of the projections, ≥ 1.
 * @param bytes        Out: the size; written only on success.
 * @param err          Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE   `ctx` is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER `bytes` is NULL.
 * @retval FP8ATTN_STATUS_BAD_HEADS    head counts not positive, not divisible, or num_heads_q
 *                                     above ::FP8ATTN_MAX_HEADS.
 * @retval FP8ATTN_STATUS_BAD_SHAPE    head_dim or d_model not positive, or above
 *                                     ::FP8ATTN_MAX_HEAD_DIM or ::FP8ATTN_MAX_D_MODEL.
 * @retval FP8ATTN_STATUS_OUT_OF_MEMORY the size does not fit in size_t.
 * On a GPU backend (CUDA, emulator) the size covers the Grams, the powered operator and
 * cuBLASLt's scratch of the device path (see fp8attn_qk_spectral_norms()).
 *
 * @par Thread safety
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_qk_spectral_norms_workspace_size(fp8attn_context ctx, int32_t num_heads_q,
                                                             int32_t num_heads_kv, int32_t head_dim,
                                                             int64_t d_model, size_t* bytes,
                                                             fp8attn_error* err);

/**
 * Spectral norms of the per-head QK interaction matrices: σ_h = ‖W_Q,hᵀ·W_K,g(h)‖₂ for every
 * query head h, where W_Q,h and W_K,g are the head's d_h × d row blocks and g(h) =
 * h / (num_heads_q / num_heads_kv) (GQA).
 *
 * The d × d product is never formed. The library computes the d_h × d_h Grams G = W·Wᵀ per
 * head, each key group's once, and runs a power iteration on C = G_Q,h·G_K,g, whose largest
 * eigenvalue is σ_h². One iteration applies C^32, formed in double by five squarings of C,
 * so it advances as far as 32 plain steps (trained weights have close top eigenvalues). The
 * estimate is the Rayleigh quotient of the symmetric S = G_K^½·G_Q·G_K^½ at the iterate,
 * computed with the Grams themselves; it converges from below. On the CPU backend the Grams
 * are OpenBLAS SYRK calls (OpenBLAS's own threads, all cores) and the per-head iterations run
 * on the context's worker threads.
 *
 * @param ctx          The context. CPU and reference backends run the CPU path.
 * @param wq           [num_heads_q·head_dim, d_model], F32, BF16 or E4M3 (with
 *                     `opts->wq_descale`), any non-negative strides. Borrowed for the call.
 * @param wk           [num_heads_kv·head_dim, d_model], same rules.
 * @param num_heads_q  Query heads.
 * @param num_heads_kv Key heads; divides `num_heads_q`.
 * @param head_dim     d_h.
 * @param opts         NULL for defaults. Borrowed for the call.
 * @param sigma_out    Out, caller-owned, [num_heads_q] floats: σ_h. Written only on success.
 * @param workspace    Scratch of at least the queried size (host memory on the CPU backend);
 *                     may be NULL when that size is 0.
 * @param workspace_bytes Its size.
 * @param stream       Must be NULL on CPU backends.
 * @param err          Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE A handle argument is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER A required pointer argument is NULL.
 * @retval FP8ATTN_STATUS_BAD_STRUCT_SIZE A struct's `struct_size` is 0 or smaller than its oldest
 *         layout.
 * @retval FP8ATTN_STATUS_BAD_EXTENSION A struct's `next` is not NULL.
 * @retval FP8ATTN_STATUS_BAD_HEADS    head counts not positive, not divisible, or above the limit.
 * @retval FP8ATTN_STATUS_BAD_SHAPE    a weight is not rank 2, its extents do not match, or
 *                                     head_dim or d_model is above its limit.
 * @retval FP8ATTN_STATUS_BAD_STRIDE   a negative stride, or a reach that does not fit in int64.
 *                                     Row strides above INT32_MAX are read through a copy, not
 *                                     narrowed into BLAS's int arguments.
 * @retval FP8ATTN_STATUS_NUMERICS     a weight or warm start that is NaN or infinite, or a Gram
 *                                     matrix or σ that overflows FP32; no output is written.
 * @retval FP8ATTN_STATUS_BAD_DTYPE    a weight dtype other than F32, BF16 or E4M3.
 * @retval FP8ATTN_STATUS_BAD_DEVICE   a weight not in the backend's memory.
 * @retval FP8ATTN_STATUS_BAD_STREAM   a stream given to a CPU backend.
 * @retval FP8ATTN_STATUS_BAD_OPTION   a negative iteration cap or tolerance, a bad descale.
 * @retval FP8ATTN_STATUS_WORKSPACE_TOO_SMALL `workspace_bytes` is below what the workspace query
 *         returns for this problem.
 * @retval FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND  a GPU backend and weights its FP8 GEMMs cannot
 *                     read: rows or base not 16-byte aligned, head_dim not a multiple of 16 up
 *                     to 256, d_model not a multiple of 16.
 * @retval FP8ATTN_STATUS_UNSUPPORTED_DTYPE a GPU backend and weights that are not E4M3.
 * @retval FP8ATTN_STATUS_DEVICE_ERROR a CUDA or cuBLASLt call failed; the message names it.
 *
 * On a GPU backend (::FP8ATTN_BACKEND_CUDA, and ::FP8ATTN_BACKEND_EMULATOR, which runs the same
 * host code) the call is an execute call on `stream`: the weights, `sigma_out`, the warm start
 * and the optional outputs are device memory, the Grams are cuBLASLt FP8 GEMMs (E4M3 in, FP32
 * accumulation; the descales enter as alpha), the powers FP32 GEMMs, and each head's power
 * iteration runs in FP32 on the device. Nothing is read back, so NaN weights are not refused
 * there, and σ agrees with the CPU path to about 1e-3 (FP32 against double iteration).
 *
 * @par Thread safety
 * Thread-safe: concurrent calls are allowed (CPU calls on one context share its threads).
 */
FP8ATTN_API int32_t fp8attn_qk_spectral_norms(fp8attn_context ctx, const fp8attn_tensor* wq,
                                              const fp8attn_tensor* wk, int32_t num_heads_q,
                                              int32_t num_heads_kv, int32_t head_dim,
                                              const fp8attn_power_iteration_options* opts,
                                              float* sigma_out, void* workspace,
                                              size_t workspace_bytes, struct CUstream_st* stream,
                                              fp8attn_error* err);

/**
 * Per-layer logit bound and FP8 logit scale: L = α·max_h σ_h·B_X²/√d_h and
 * scale = ::FP8ATTN_E4M3_MAX / L. For tokens with ‖x‖ ≤ B_X every logit
 * S_ij = x_iᵀ·W_Q,hᵀ·W_K,g·x_j/√d_h satisfies |S_ij| ≤ L when α = 1, with equality at the top
 * singular vector pair.
 * @param sigma            [num_heads] σ_h, finite and ≥ 0, not all zero. Borrowed.
 * @param num_heads        ≥ 1.
 * @param head_dim         d_h ≥ 1.
 * @param token_norm_bound B_X, finite and > 0.
 * @param alpha            α, finite, in (0, 1].
 * @param bound            Optional out: L. Written only on success.
 * @param scale            Optional out: 448 / L. Written only on success.
 * @param err              Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_NULL_POINTER  `sigma` is NULL.
 * @retval FP8ATTN_STATUS_BAD_SHAPE     num_heads or head_dim not positive.
 * @retval FP8ATTN_STATUS_BAD_SCALE     a σ, B_X or α out of range.
 * @retval FP8ATTN_STATUS_NUMERICS      finite inputs whose bound or scale, as a float, is infinite
 *                                      or 0.
 *
 * @par Thread safety
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_logit_bound(const float* sigma, int32_t num_heads, int32_t head_dim,
                                        float token_norm_bound, float alpha, float* bound,
                                        float* scale, fp8attn_error* err);

/** How rotary position embedding pairs the d_h coordinates of a head. */
typedef enum fp8attn_rope_layout {
  FP8ATTN_ROPE_HALF_SPLIT = 0,  /**< Pair p is (p, p + d_h/2), as in Llama's rotate_half. */
  FP8ATTN_ROPE_INTERLEAVED = 1  /**< Pair p is (2p, 2p + 1), as in the RoFormer paper. */
} fp8attn_rope_layout;

/**
 * Rotary embedding and the offsets over which fp8attn_qk_rope_norms() maximizes. Zero-initialize,
 * then set `struct_size`; zeros are the defaults.
 */
typedef struct fp8attn_rope_options {
  size_t struct_size;     /**< sizeof(fp8attn_rope_options). */
  const void* next;       /**< Extension chain; must be NULL. */
  float theta_base;       /**< Frequency base: pair p turns by Δ·base^(−2p/d_h); 0 means 10000. */
  int32_t layout;         /**< An ::fp8attn_rope_layout; default ::FP8ATTN_ROPE_HALF_SPLIT. */
  int64_t min_offset;     /**< First offset Δ = j − i of the exact maximum; default 0. */
  int64_t max_offset;     /**< Last offset, ≥ min_offset; default 0. */
  int32_t max_iterations; /**< Power-iteration cap per (head, offset); 0 means 100. */
  float tolerance;        /**< Relative stop tolerance on σ²; 0 means 1e-6. */
  uint64_t seed;          /**< Seed of the random start vectors. */
} fp8attn_rope_options;

/**
 * Logit norms under rotary embeddings. With RoPE, S_ij = x_iᵀ·W_Q,hᵀ·R_Δ·W_K,g·x_j/√d_h with
 * Δ = j − i, and ‖W_Q,hᵀ·R_Δ·W_K,g‖₂ depends on Δ and can exceed σ_h (docs/design.md §3).
 * - `safe_out[h]` = min(‖W_Q,h‖₂·‖W_K,g‖₂, Σ_p ‖W_Q,h,p‖₂·‖W_K,g,p‖₂), where W_·,p are the two
 *   rows of frequency pair p. It bounds the norm for every offset.
 * - `exact_out[h]` = max over Δ in [min_offset, max_offset] of ‖W_Q,hᵀ·R_Δ·W_K,g‖₂, by a power
 *   iteration per offset on the d_h × d_h problem R_Δᵀ·G_Q·R_Δ·G_K, warm-started from the
 *   previous offset; heads run in parallel. Being a power-iteration estimate it approaches the
 *   true maximum from below, to the tolerance.
 * Weights and shapes are as in fp8attn_qk_spectral_norms(); head_dim must be even. Host weights
 * only; runs on the CPU whatever the backend.
 * @param ctx          The context (its worker threads are used).
 * @param wq           [num_heads_q·head_dim, d_model], F32, BF16 or E4M3 (descale 1). Borrowed.
 * @param wk           [num_heads_kv·head_dim, d_model]. Borrowed.
 * @param num_heads_q  Query heads.
 * @param num_heads_kv Key heads; divides `num_heads_q`.
 * @param head_dim     d_h, even.
 * @param rope         NULL for defaults. Borrowed.
 * @param safe_out     Optional out, [num_heads_q]. Written only on success.
 * @param exact_out    Optional out, [num_heads_q]. Written only on success.
 * @param err          Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE A handle argument is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER A required pointer argument is NULL.
 * @retval FP8ATTN_STATUS_BAD_STRUCT_SIZE A struct's `struct_size` is 0 or smaller than its oldest
 *         layout.
 * @retval FP8ATTN_STATUS_BAD_EXTENSION A struct's `next` is not NULL.
 * @retval FP8ATTN_STATUS_BAD_HEADS Head counts that are zero or do not divide.
 * @retval FP8ATTN_STATUS_BAD_SHAPE A rank or an extent does not match.
 * @retval FP8ATTN_STATUS_BAD_STRIDE A negative stride.
 * @retval FP8ATTN_STATUS_BAD_DTYPE A tensor's dtype is not one the argument takes.
 * @retval FP8ATTN_STATUS_BAD_DEVICE A tensor is not on the backend's device.
 * @retval FP8ATTN_STATUS_BAD_OPTION   layout, offsets, iteration cap, tolerance or base; more than
 *                                     ::FP8ATTN_MAX_ROPE_OFFSETS offsets.
 * @retval FP8ATTN_STATUS_NUMERICS     a weight that is NaN or infinite, or a result that overflows.
 * The work is about (max_offset − min_offset + 1)·num_heads_q·head_dim²·max_iterations.
 *
 * @par Thread safety
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_qk_rope_norms(fp8attn_context ctx, const fp8attn_tensor* wq,
                                          const fp8attn_tensor* wk, int32_t num_heads_q,
                                          int32_t num_heads_kv, int32_t head_dim,
                                          const fp8attn_rope_options* rope, float* safe_out,
                                          float* exact_out, fp8attn_error* err);

/** Tensor kinds that carry an FP8 scale in a scale state. */
typedef enum fp8attn_tensor_kind {
  FP8ATTN_TENSOR_Q = 0,     /**< Queries. */
  FP8ATTN_TENSOR_K = 1,     /**< Keys. */
  FP8ATTN_TENSOR_V = 2,     /**< Values. */
  FP8ATTN_TENSOR_O = 3,     /**< Attention output. */
  FP8ATTN_TENSOR_P = 4,     /**< Softmax probabilities. */
  FP8ATTN_TENSOR_DO = 5,    /**< Gradient of the output. */
  FP8ATTN_TENSOR_DP = 6,    /**< Gradient of P. */
  FP8ATTN_TENSOR_LOGIT = 7  /**< Logits S = Q·Kᵀ/√d_h, natural units. */
} fp8attn_tensor_kind;

/** Number of tensor kinds: the length of ::fp8attn_scale_state_options.recipe. */
#define FP8ATTN_NUM_TENSOR_KINDS 8

/** How a tensor's scale is chosen. */
typedef enum fp8attn_scale_recipe {
  FP8ATTN_RECIPE_DEFAULT = 0,  /**< ::FP8ATTN_RECIPE_GEOMETRY for the logit, delayed otherwise. */
  FP8ATTN_RECIPE_DELAYED = 1,  /**< From the amax history: (fp8_max / amax) / 2^margin. */
  FP8ATTN_RECIPE_CURRENT = 2,  /**< From the amax last reported: (fp8_max / amax) / 2^margin. */
  FP8ATTN_RECIPE_GEOMETRY = 3  /**< Logit only: 448 / L from the spectral norms and auto-α. */
} fp8attn_scale_recipe;

/** How the delayed recipe reduces its amax history. */
typedef enum fp8attn_amax_algo {
  FP8ATTN_AMAX_MAX = 0,         /**< The maximum over the history (default). */
  FP8ATTN_AMAX_MOST_RECENT = 1  /**< The amax of the most recent completed step. */
} fp8attn_amax_algo;

/**
 * Scale-state options. Zero-initialize, then set `struct_size`; zeros are the defaults.
 * NULL options means all defaults.
 */
typedef struct fp8attn_scale_state_options {
  size_t struct_size;   /**< sizeof(fp8attn_scale_state_options). */
  const void* next;     /**< Extension chain; must be NULL. */
  int32_t num_layers;   /**< Layers, ≥ 1; 0 means 1. */
  int32_t recipe[FP8ATTN_NUM_TENSOR_KINDS]; /**< An ::fp8attn_scale_recipe per
                              ::fp8attn_tensor_kind. Geometry is allowed for the logit only. */
  int32_t amax_history_len; /**< H, 1..65536; 0 means 1024. */
  int32_t amax_algo;    /**< An ::fp8attn_amax_algo. */
  float margin;         /**< Delayed and current recipes divide the scale by 2^margin;
                             finite and ≥ 0. */
  int32_t burn_in_steps; /**< W of the auto-α burn-in, in steps with a known σ; 0 means 100;
                              negative turns auto-α off (α stays 1). */
  float token_norm_bound; /**< B_X, the bound on ‖x‖ of the tokens entering the projections;
                               finite and > 0; 0 means √d_model of the first weights set, which
                               is the RMS-normalized token norm. */
  float alpha_margin;   /**< auto-α sets α = min(1, ρ_max·(1 + alpha_margin)); ≥ 0; 0 means
                             0.25. */
  float alpha_decay;    /**< Per-step decay of the running max ρ_max during burn-in, in (0, 1];
                             0 means 1 (a plain running max). */
  int32_t grad_dtype;   /**< FP8 format of dO and dP: ::FP8ATTN_DTYPE_E5M2 (default, TE's
                             HYBRID format) or ::FP8ATTN_DTYPE_E4M3. Other kinds use E4M3. */
} fp8attn_scale_state_options;

/**
 * An opaque scale state. Reads (fp8attn_scale_state_get_scale(),
 * fp8attn_scale_state_serialize()) may run on many threads while another thread updates the
 * state (report, step, set weights, deserialize): updates take an exclusive lock, reads a shared
 * one, so a reader always sees a whole step. Destroy must not race with any other call.
 */
typedef struct fp8attn_scale_state_t* fp8attn_scale_state;

/**
 * Creates a scale state. Until a layer's first step (or first σ, for the geometry recipe)
 * every scale is 1.
 * @param ctx     The context; it must outlive the state.
 * @param options NULL for defaults. Borrowed for the call.
 * @param out     Out: the new state; written only on success.
 * @param err     Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE A handle argument is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER A required pointer argument is NULL.
 * @retval FP8ATTN_STATUS_BAD_STRUCT_SIZE A struct's `struct_size` is 0 or smaller than its oldest
 *         layout.
 * @retval FP8ATTN_STATUS_BAD_EXTENSION A struct's `next` is not NULL.
 * @retval FP8ATTN_STATUS_BAD_OPTION  a recipe, algorithm, length, count or dtype out of range:
 *                                   layers above ::FP8ATTN_MAX_LAYERS, a history above
 *                                   ::FP8ATTN_MAX_AMAX_HISTORY, or layers · history above
 *                                   ::FP8ATTN_MAX_SCALE_STATE_ENTRIES.
 * @retval FP8ATTN_STATUS_BAD_SCALE   margin, B_X, alpha_margin or alpha_decay out of range.
 * @retval FP8ATTN_STATUS_OUT_OF_MEMORY Host memory ran out; no output was written.
 *
 * @par Thread safety
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_scale_state_create(fp8attn_context ctx,
                                               const fp8attn_scale_state_options* options,
                                               fp8attn_scale_state* out, fp8attn_error* err);

/**
 * Destroys a scale state. NULL is allowed. No other call on it may be running.
 * @param state The state, or NULL.
 */
FP8ATTN_API void fp8attn_scale_state_destroy(fp8attn_scale_state state);

/**
 * Reports the amax of a tensor in the current step. Several reports in one step keep their
 * maximum. For the logit under the geometry recipe, the amax (max |S|) feeds auto-α during the
 * burn-in. An amax of 0 is recorded and leaves the next scale as it was.
 * @param state  The state.
 * @param layer  0..num_layers−1.
 * @param tensor An ::fp8attn_tensor_kind.
 * @param amax   Finite and ≥ 0.
 * @param err    Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE      `state` is NULL.
 * @retval FP8ATTN_STATUS_INVALID_ARGUMENT layer or tensor out of range.
 * @retval FP8ATTN_STATUS_BAD_SCALE       amax NaN, infinite or negative.
 *
 * @par Thread safety
 * Thread-safe (exclusive with other updates).
 */
FP8ATTN_API int32_t fp8attn_scale_state_report_amax(fp8attn_scale_state state, int32_t layer,
                                                    int32_t tensor, float amax,
                                                    fp8attn_error* err);

/**
 * Batched fp8attn_scale_state_report_amax(): `amax` is [num_layers · ::FP8ATTN_NUM_TENSOR_KINDS],
 * layer-major; a negative entry means "not reported". All entries are checked before any is
 * recorded.
 * @param state The state.
 * @param amax  Borrowed; num_layers·8 floats, each finite (negative = skip).
 * @param count Number of floats in `amax`; must be num_layers·8.
 * @param err   Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE A handle argument is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER A required pointer argument is NULL.
 * @retval FP8ATTN_STATUS_BAD_SHAPE  `count` is not num_layers·8.
 * @retval FP8ATTN_STATUS_BAD_SCALE  an entry is NaN or infinite.
 *
 * @par Thread safety
 * Thread-safe (exclusive with other updates).
 */
FP8ATTN_API int32_t fp8attn_scale_state_report_amax_batch(fp8attn_scale_state state,
                                                          const float* amax, size_t count,
                                                          fp8attn_error* err);

/**
 * Reports one layer's amaxes from device memory: `device_amax` holds ::FP8ATTN_NUM_TENSOR_KINDS
 * floats in ::fp8attn_tensor_kind order, as a kernel writes them; a negative entry means "not
 * reported" and leaves that kind's slot untouched. All entries are checked (finite) before any is
 * recorded, as in fp8attn_scale_state_report_amax_batch().
 * - ::FP8ATTN_BACKEND_CUDA (the state's context): stream-ordered, with no host synchronization.
 *   The call checks `layer` and enqueues on `stream` an async copy of the eight floats into
 *   page-locked staging owned by the context, then a host function (cudaLaunchHostFunc) that
 *   checks them and records them under the state's lock. `device_amax` must hold its values when
 *   the stream reaches the copy. The report lands when the stream reaches it: synchronize the
 *   stream before fp8attn_scale_state_step() should include it (TransformerEngine's rule); every
 *   read sees all of a report or none of it. A report with a NaN or infinite entry is dropped
 *   whole, with a warning in the context's log (the call has returned by then). The state and
 *   its context must outlive the host function (synchronize the stream before destroying them). Not capturable in a CUDA graph (a staging slot is taken per call).
 * - ::FP8ATTN_BACKEND_EMULATOR: the same path; device memory is host memory and emulated streams
 *   complete on return, so the report is recorded (or refused with its status) during the call;
 *   `stream` may be any emulated stream or NULL.
 * - ::FP8ATTN_BACKEND_CPU and ::FP8ATTN_BACKEND_REFERENCE: `device_amax` is a host pointer, read
 *   during the call; `stream` must be NULL (::FP8ATTN_STATUS_BAD_STREAM).
 * @param state       The state.
 * @param layer       0..num_layers−1.
 * @param device_amax Borrowed; 8 floats on the state's context's device.
 * @param stream      See above.
 * @param err         Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE       `state` is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER     `device_amax` is NULL.
 * @retval FP8ATTN_STATUS_INVALID_ARGUMENT `layer` out of range.
 * @retval FP8ATTN_STATUS_BAD_SCALE        an entry is NaN or infinite (not on CUDA: see above).
 * @retval FP8ATTN_STATUS_BAD_STREAM       a stream given on a CPU or reference context.
 * @retval FP8ATTN_STATUS_OUT_OF_MEMORY    a GPU context's 256 staging slots are all in flight.
 * @retval FP8ATTN_STATUS_DEVICE_ERROR     the copy or the host function could not be enqueued.
 *
 * @par Thread safety
 * Thread-safe (exclusive with other updates).
 */
FP8ATTN_API int32_t fp8attn_scale_state_report_amax_device(fp8attn_scale_state state,
                                                           int32_t layer,
                                                           const float* device_amax,
                                                           struct CUstream_st* stream,
                                                           fp8attn_error* err);

/**
 * Ends the current step: every delayed tensor's scale is recomputed from its history (which
 * includes this step's amax), the histories advance by one slot, current-recipe scales take
 * this step's amax, and the auto-α burn-in advances.
 * @param state The state.
 * @param err   Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE `state` is NULL.
 *
 * @par Thread safety
 * Thread-safe (exclusive with other updates).
 */
FP8ATTN_API int32_t fp8attn_scale_state_step(fp8attn_scale_state state, fp8attn_error* err);

/**
 * Reads a tensor's scale: multiply the tensor by `scale` before the FP8 cast, and the FP8
 * result by `scale_inv` (= 1/scale) to dequantize.
 * @param state     The state.
 * @param layer     0..num_layers−1.
 * @param tensor    An ::fp8attn_tensor_kind.
 * @param scale     Optional out; written only on success.
 * @param scale_inv Optional out; written only on success.
 * @param err       Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE       `state` is NULL.
 * @retval FP8ATTN_STATUS_INVALID_ARGUMENT layer or tensor out of range.
 *
 * @par Thread safety
 * Thread-safe (shared with other reads).
 */
FP8ATTN_API int32_t fp8attn_scale_state_get_scale(fp8attn_scale_state state, int32_t layer,
                                                  int32_t tensor, float* scale, float* scale_inv,
                                                  fp8attn_error* err);

/**
 * Runs fp8attn_qk_spectral_norms() on a layer's projection weights (CPU path, host tensors,
 * E4M3 read with descale 1) and installs max_h σ_h for the layer's geometry-aware logit scale.
 * The power iteration is warm-started from the layer's previous call. The spectral norms run
 * outside the state's lock; only their installation is exclusive.
 * @param state        The state.
 * @param layer        0..num_layers−1.
 * @param wq           As in fp8attn_qk_spectral_norms(). Borrowed for the call.
 * @param wk           As in fp8attn_qk_spectral_norms(). Borrowed for the call.
 * @param num_heads_q  Query heads.
 * @param num_heads_kv Key heads.
 * @param head_dim     d_h.
 * @param err          Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE       `state` is NULL.
 * @retval FP8ATTN_STATUS_INVALID_ARGUMENT layer out of range.
 * @retval Any status of fp8attn_qk_spectral_norms().
 *
 * @par Thread safety
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_scale_state_set_qk_weights(fp8attn_scale_state state, int32_t layer,
                                                       const fp8attn_tensor* wq,
                                                       const fp8attn_tensor* wk,
                                                       int32_t num_heads_q, int32_t num_heads_kv,
                                                       int32_t head_dim, fp8attn_error* err);

/**
 * Installs spectral norms computed elsewhere (on a GPU, or with descales) for a layer's
 * geometry-aware logit scale.
 * @param state     The state.
 * @param layer     0..num_layers−1.
 * @param sigma     [num_heads] σ_h, finite, ≥ 0, not all zero. Borrowed.
 * @param num_heads ≥ 1.
 * @param head_dim  d_h ≥ 1.
 * @param d_model   d ≥ 1; gives the default B_X = √d when the options left it 0.
 * @param err       Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE A handle argument is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER A required pointer argument is NULL.
 * @retval FP8ATTN_STATUS_INVALID_ARGUMENT layer out of range.
 * @retval FP8ATTN_STATUS_BAD_SHAPE        a count not positive.
 * @retval FP8ATTN_STATUS_BAD_SCALE        a σ out of range.
 * @retval FP8ATTN_STATUS_NUMERICS         the logit bound σ·B_X²/√d_h gives a scale or scale_inv
 *                                         that is not a normal float; the state is unchanged.
 * A scale state never holds a pair its own serializer could not write and read back: updates
 * that would make a scale or scale_inv infinite or subnormal keep the previous pair.
 *
 * @par Thread safety
 * Thread-safe (exclusive with other updates).
 */
FP8ATTN_API int32_t fp8attn_scale_state_set_qk_sigma(fp8attn_scale_state state, int32_t layer,
                                                     const float* sigma, int32_t num_heads,
                                                     int32_t head_dim, int64_t d_model,
                                                     fp8attn_error* err);

/**
 * Writes the state to a versioned, little-endian blob with a CRC32C: the options, the layer and
 * tensor counts, every scale, every amax history and the auto-α state. A state that
 * deserializes a blob serializes to the same bytes.
 * @param state    The state.
 * @param buf      Out: caller-owned, `capacity` bytes; NULL asks for the size only.
 * @param capacity Bytes available at `buf`.
 * @param written  Out: the blob size (also when `buf` is NULL). Written only on success.
 * @param err      Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE A handle argument is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER A required pointer argument is NULL (`written` NULL).
 * @retval FP8ATTN_STATUS_BUFFER_TOO_SMALL  `capacity` is less than the blob size.
 *
 * @par Thread safety
 * Thread-safe (shared with other reads).
 */
FP8ATTN_API int32_t fp8attn_scale_state_serialize(fp8attn_scale_state state, void* buf,
                                                  size_t capacity, size_t* written,
                                                  fp8attn_error* err);

/**
 * Replaces the whole state (options included) with a blob from
 * fp8attn_scale_state_serialize(). On any failure the state is unchanged.
 * @param state The state.
 * @param buf   The blob. Borrowed for the call.
 * @param len   Its length in bytes.
 * @param err   Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE A handle argument is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER A required pointer argument is NULL.
 * @retval FP8ATTN_STATUS_TRUNCATED_BLOB    shorter than its header says.
 * @retval FP8ATTN_STATUS_BAD_BLOB_VERSION  wrong magic, unknown version, or unknown counts.
 * @retval FP8ATTN_STATUS_CHECKSUM_MISMATCH the CRC32C does not match.
 * @retval FP8ATTN_STATUS_NUMERICS          trailing bytes, a field out of range, or fields that
 *                                          disagree (a scale and scale_inv that are not each
 *                                          other's inverse, auto-α steps that disagree with the
 *                                          burn-in and its done flag, α moved before the burn-in
 *                                          ended, σ without head_dim or B_X). The state is then
 *                                          unchanged.
 *
 * @par Thread safety
 * Thread-safe (exclusive with other updates).
 */
FP8ATTN_API int32_t fp8attn_scale_state_deserialize(fp8attn_scale_state state, const void* buf,
                                                    size_t len, fp8attn_error* err);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @name Quantization
 * Casting real-valued Q, K and V to E4M3 with per-tensor, per-head or per-block descales, and
 * optional incoherent processing (FlashAttention-3, arXiv 2407.08608): each head-dim vector of Q
 * and K is multiplied by H·D before its amax is taken, where H is the normalized Walsh–Hadamard
 * matrix of size head_dim and D a random ±1 diagonal drawn from a seed. Because H·D is orthogonal,
 * (Q·H·D)(K·H·D)ᵀ = Q·Kᵀ: attention is unchanged in exact arithmetic, while outliers are spread
 * over the whole vector, which lowers the amax and so the relative rounding error of the rest.
 * @{ */
/* ------------------------------------------------------------------------------------------ */

/** Granularity of the descales fp8attn_quantize() writes. */
typedef enum fp8attn_quant_granularity {
  FP8ATTN_QUANT_PER_TENSOR = 0, /**< One descale: F32 [1]. Pass it to the attention call as a
                                     [batch, heads_kv] view with strides 0. */
  FP8ATTN_QUANT_PER_HEAD = 1,   /**< One per (sequence, head group): F32 [batch, heads / head_group]. */
  FP8ATTN_QUANT_PER_BLOCK = 2   /**< One per block of `block_rows` rows of a (sequence, head group):
                                     F32 [batch, heads / head_group, ceil(max_seqlen / block_rows)].
                                     Blocks start at each sequence's row 0, as the attention tiles
                                     do: with head_group 1 they are the attention call's
                                     q_block_descale (block_rows = block_m) and k_block_descale,
                                     v_block_descale (block_rows = block_n). With `leading_rows`
                                     L > 0 the extent is 1 + ceil((max_seqlen − L) / block_rows)
                                     (1 when max_seqlen ≤ L), block 0 being rows [0, L). */
} fp8attn_quant_granularity;

/** Quantization options. Zero-initialize, then set `struct_size`; zeros are the defaults. */
typedef struct fp8attn_quantize_options {
  size_t struct_size;  /**< sizeof(fp8attn_quantize_options). */
  const void* next;    /**< Extension chain; must be NULL. */
  int32_t granularity; /**< An ::fp8attn_quant_granularity; default ::FP8ATTN_QUANT_PER_TENSOR. */
  int32_t block_rows;  /**< Rows per block for ::FP8ATTN_QUANT_PER_BLOCK, ≥ 1: the plan's block_m
                            for Q and block_n for K and V (fp8attn_plan_get_tile()). Ignored by
                            the other granularities. */
  int32_t head_group;  /**< Consecutive heads that share a descale (per-head and per-block);
                            must divide the head count; 0 means 1. For Q under GQA with
                            per-head descales, heads_q / heads_kv gives the [batch, heads_kv]
                            descales the attention call takes. */
  uint32_t rotate;     /**< 1: incoherent processing, multiply every head-dim vector by H·D
                            before the amax and the cast; head_dim must then be a power of two.
                            Use it for Q and K only, with the same `seed` for both; pass 0 for V,
                            which must not be rotated (the attention output would be rotated). */
  uint64_t seed;       /**< Seed of D's signs when `rotate` is 1. D depends on the seed and the
                            head-dim index only, so every head, and Q and K, share it. */
  int32_t margin;      /**< Power-of-two headroom, 0..64: scale = (448 / amax) / 2^margin. */
  /* Fields below were appended after the first layout. */
  int32_t leading_rows; /**< Per-block only, ≥ 0: the first `leading_rows` rows of each sequence
                             form block 0 of their own, and the other blocks hold `block_rows` rows
                             from there. Pass desc.sink_tokens when quantizing K and V for an
                             attention call with sink isolation: the descales then follow its KV
                             blocks, and the sink tokens get a scale of their own. 0 (the default):
                             blocks of `block_rows` from row 0. Ignored by the other
                             granularities. */
} fp8attn_quantize_options;

/**
 * Quantizes a BF16 or F32 tensor to E4M3: out = cast_e4m3(x′·scale) with x′ = x, or x·H·D when
 * rotating, and descale = 1 / scale, where scale = (448 / amax) / 2^margin from the amax of |x′|
 * over the descale's slice (scale 1 when that amax is 0). The cast rounds to nearest even and
 * saturates to ±448 (PTX `cvt.rn.satfinite`). Dequantize with out·descale (and H·D's transpose,
 * D·Hᵀ, when rotated).
 *
 * Layouts, as in fp8attn_attention_args:
 * - Padded: `input` and `output` are [batch, seqlen, heads, head_dim], any non-negative strides.
 * - Packed (varlen): rank-3 [total, heads, head_dim] with `cu_seqlens` (I32 [batch + 1], starting
 *   at 0, non-decreasing, last = total). Per-block descales of blocks past a sequence's end are
 *   written as 1.
 *
 * @param ctx        The context; must run on the CPU or reference backend (host memory).
 * @param input      BF16 or F32 tensor. Borrowed for the call; read only.
 * @param cu_seqlens Optional (NULL, or `data` NULL): present iff the layout is packed. Borrowed.
 * @param options    NULL for defaults. Borrowed for the call.
 * @param output     Out: E4M3 tensor of the input's shape, caller-owned, any non-overlapping
 *                   strides; must not alias the input. Written only on success.
 * @param descale    Out: F32 descales with the shape the granularity names (see
 *                   ::fp8attn_quant_granularity), caller-owned, non-overlapping. Written only
 *                   on success.
 * @param amax       Optional out: the amax of the whole (rotated) tensor, before the margin, for
 *                   fp8attn_scale_state_report_amax(). Written only on success.
 * @param err        Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE       `ctx` is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER     `input`, `output` or `descale` (or its data) is NULL.
 * @retval FP8ATTN_STATUS_BAD_STRUCT_SIZE A struct's `struct_size` is 0 or smaller than its oldest
 *         layout.
 * @retval FP8ATTN_STATUS_BAD_EXTENSION A struct's `next` is not NULL.
 * @retval FP8ATTN_STATUS_BAD_DTYPE        input not BF16 or F32, output not E4M3, descale not F32,
 *                                         cu_seqlens not I32.
 * @retval FP8ATTN_STATUS_BAD_SHAPE        a rank or extent mismatch, a head_dim of 0, or an extent
 *                                        above ::FP8ATTN_MAX_BATCH, ::FP8ATTN_MAX_SEQLEN or
 *                                        ::FP8ATTN_MAX_HEAD_DIM (heads above ::FP8ATTN_MAX_HEADS:
 *                                        ::FP8ATTN_STATUS_BAD_HEADS).
 * @retval FP8ATTN_STATUS_BAD_STRIDE       a negative stride, an output that overlaps itself, or a
 *                                        tensor whose largest element offset overflows int64.
 * @retval FP8ATTN_STATUS_BAD_SEQLENS      cu_seqlens not starting at 0, decreasing, or not ending
 *                                         at total.
 * @retval FP8ATTN_STATUS_BAD_HEADS        head_group negative or not dividing the head count.
 * @retval FP8ATTN_STATUS_BAD_OPTION       unknown granularity, block_rows < 1 for per-block,
 *                                         rotate not 0 or 1, margin out of 0..64,
 *                                         leading_rows < 0.
 * @retval FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM rotate with a head_dim that is not a power of two, or
 *                                        above ::FP8ATTN_MAX_ROTATION_DIM (256, on every backend).
 * @retval FP8ATTN_STATUS_BAD_DEVICE       a tensor not in host memory.
 * @retval FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND the context runs on the CUDA backend.
 * @retval FP8ATTN_STATUS_NUMERICS         the input holds a NaN or an infinity.
 * @retval FP8ATTN_STATUS_OUT_OF_MEMORY   its host scratch could not be allocated.
 *
 * @par Thread safety
 * Thread-safe: runs on the context's worker threads (one CPU call per context at a time).
 * Unlike the execute calls, it takes no workspace: it allocates one float per descale slice, one
 * head-dim row per worker thread and, when rotating, head_dim signs; on host memory only. The
 * execute-call form, with a stream and a workspace, on every backend: fp8attn_quantize_async().
 */
FP8ATTN_API int32_t fp8attn_quantize(fp8attn_context ctx, const fp8attn_tensor* input,
                                     const fp8attn_tensor* cu_seqlens,
                                     const fp8attn_quantize_options* options,
                                     const fp8attn_tensor* output, const fp8attn_tensor* descale,
                                     float* amax, fp8attn_error* err);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @name Host memory
 * Allocation for hosts whose own memory cannot be handed to C: Go without `runtime.Pinner`, whose
 * cgo rules forbid a Go pointer inside the tensors of ::fp8attn_attention_args. Any host memory
 * works with the library; these calls only make some convenient.
 * @{ */
/* ------------------------------------------------------------------------------------------ */

/**
 * Allocates zero-filled host memory.
 * @param bytes     Size in bytes; 0 gives a unique, valid pointer to no bytes.
 * @param alignment A power of two ≤ 4096, or 0 for 64 (a cache line).
 * @param out       Out: the memory, owned by the caller until fp8attn_host_free(); written only
 *                  on success.
 * @param err       Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_NULL_POINTER     `out` is NULL.
 * @retval FP8ATTN_STATUS_INVALID_ARGUMENT `alignment` not 0 nor a power of two ≤ 4096.
 * @retval FP8ATTN_STATUS_OUT_OF_MEMORY    The allocation failed, or `bytes` is above PTRDIFF_MAX.
 *
 * @par Thread safety
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_host_alloc(size_t bytes, size_t alignment, void** out, fp8attn_error* err);

/**
 * Frees memory from fp8attn_host_alloc(). NULL is allowed.
 * @param ptr The memory, or NULL.
 *
 * @par Thread safety
 * Thread-safe.
 */
FP8ATTN_API void fp8attn_host_free(void* ptr);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @name Device execution: quantizer on a stream, telemetry copy
 * The calls a GPU backend (::FP8ATTN_BACKEND_CUDA, or ::FP8ATTN_BACKEND_EMULATOR, which runs the
 * same host code over host memory) needs beyond the forward: like every execute call they take a
 * stream and a caller-owned workspace, allocate nothing, never synchronize and never read device
 * memory from the host, so they can be captured in a CUDA graph.
 * @{ */
/* ------------------------------------------------------------------------------------------ */

/**
 * Workspace bytes that fp8attn_quantize_async() needs for this input and these options: one
 * float per work unit (a block of rows of one sequence and head). CPU backends return the same
 * size and use no workspace.
 * @param ctx        The context.
 * @param input      The input tensor as fp8attn_quantize_async() will get it (its shape and
 *                   dtype are read; `data` is not).
 * @param cu_seqlens Optional (NULL, or `data` NULL): present iff the layout is packed; only its
 *                   shape is read.
 * @param max_seqlen Packed layout only: the longest sequence, ≥ 1 (ignored when padded).
 * @param options    NULL for defaults. Borrowed for the call.
 * @param bytes      Out: the size; written only on success.
 * @param err        Optional error detail.
 * @retval FP8ATTN_OK Success.
 * @retval FP8ATTN_STATUS_BAD_HANDLE   `ctx` is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER `input` or `bytes` is NULL.
 * @retval FP8ATTN_STATUS_BAD_SHAPE    a rank or extent out of range, or max_seqlen < 1 when packed.
 * @retval FP8ATTN_STATUS_BAD_OPTION   an option out of range (as in fp8attn_quantize()).
 *
 * @par Thread safety
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_quantize_workspace_size(fp8attn_context ctx, const fp8attn_tensor* input,
                                                    const fp8attn_tensor* cu_seqlens, int64_t max_seqlen,
                                                    const fp8attn_quantize_options* options,
                                                    size_t* bytes, fp8attn_error* err);

/**
 * fp8attn_quantize() on a stream with a caller-owned workspace: the same result, bit for bit, as
 * the CPU quantizer (two passes: unit amax, then descales and the cast). On a GPU backend every
 * tensor, `amax` and the workspace are device memory (host memory under the emulator), and the
 * call only enqueues work on `stream`.
 *
 * Differences from fp8attn_quantize(), because a device call cannot read its inputs from the host:
 * - Packed layout: `max_seqlen` is the longest sequence; the CUDA backend does not read
 *   cu_seqlens on the host, so rows past `max_seqlen` in a longer sequence are left unwritten.
 *   Host-memory backends check cu_seqlens as fp8attn_quantize() does, and max_seqlen against it.
 * - A NaN or infinite input is not refused on a GPU backend: its descales come out infinite or
 *   NaN. Check the reported amax.
 * - The kernels take head_dim 64, 128 and 256 (::FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND otherwise).
 *
 * @param ctx        The context.
 * @param input      BF16 or F32 tensor. Borrowed until the stream reaches the work.
 * @param cu_seqlens Optional: present iff the layout is packed.
 * @param max_seqlen Packed layout only: the longest sequence, ≥ 1.
 * @param options    NULL for defaults.
 * @param output     Out: E4M3 tensor of the input's shape.
 * @param descale    Out: F32 descales with the shape the granularity names.
 * @param amax       Optional out: one float, the amax of the whole (rotated) tensor; device
 *                   memory on a GPU backend.
 * @param workspace  At least fp8attn_quantize_workspace_size() bytes, in the backend's memory.
 * @param workspace_bytes Its size.
 * @param stream     CUDA stream; must be NULL on CPU backends.
 * @param err        Optional error detail.
 * @retval FP8ATTN_OK Success (on CUDA: the work was enqueued).
 * @retval FP8ATTN_STATUS_* Every status of fp8attn_quantize(), and:
 * @retval FP8ATTN_STATUS_BAD_DEVICE          a tensor not in the backend's memory.
 * @retval FP8ATTN_STATUS_BAD_STREAM          a stream given to a CPU backend.
 * @retval FP8ATTN_STATUS_WORKSPACE_TOO_SMALL `workspace_bytes` below the query's size.
 * @retval FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND a head_dim the kernels do not take.
 * @retval FP8ATTN_STATUS_DEVICE_ERROR        a CUDA launch failed; the message names the call.
 *
 * @par Thread safety
 * Thread-safe: concurrent calls on one context are allowed with distinct workspaces.
 */
FP8ATTN_API int32_t fp8attn_quantize_async(fp8attn_context ctx, const fp8attn_tensor* input,
                                           const fp8attn_tensor* cu_seqlens, int64_t max_seqlen,
                                           const fp8attn_quantize_options* options,
                                           const fp8attn_tensor* output, const fp8attn_tensor* descale,
                                           float* amax, void* workspace, size_t workspace_bytes,
                                           struct CUstream_st* stream, fp8attn_error* err);

/**
 * Copies the telemetry of the last forward call that used `workspace` into `telemetry`, ordered
 * on `stream`. On a GPU backend the forward keeps its counters in a device buffer at the start of
 * its workspace (the workspace query always includes it on GPU backends), and does not write
 * args.telemetry itself, which would need a synchronization; this call enqueues one
 * device-to-host copy of p_positive, p_underflow and max_abs_scaled_logit. The values are there
 * once the stream reaches the copy (synchronize on it or on an event). Under the emulator the
 * copy is done on return (and the forward also fills args.telemetry).
 * @param plan            The forward's plan, created with desc.telemetry = 1.
 * @param workspace       The forward call's workspace (device memory on CUDA).
 * @param workspace_bytes Its size.
 * @param telemetry       Out: host memory, `struct_size` set; pinned memory for a truly
 *                        asynchronous copy. Must stay valid until the stream reaches the copy.
 * @param stream          The forward's stream.
 * @param err             Optional error detail.
 * @retval FP8ATTN_OK Success (the copy was enqueued).
 * @retval FP8ATTN_STATUS_BAD_HANDLE   `plan` is NULL.
 * @retval FP8ATTN_STATUS_NULL_POINTER `workspace` or `telemetry` is NULL.
 * @retval FP8ATTN_STATUS_BAD_STRUCT_SIZE `telemetry->struct_size` is smaller than the struct.
 * @retval FP8ATTN_STATUS_INVALID_ARGUMENT the plan was created with desc.telemetry = 0.
 * @retval FP8ATTN_STATUS_WORKSPACE_TOO_SMALL `workspace_bytes` below the plan's forward workspace.
 * @retval FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND a CPU backend: its forward fills args.telemetry.
 * @retval FP8ATTN_STATUS_DEVICE_ERROR the copy could not be enqueued; the message names the call.
 *
 * @par Thread safety
 * Thread-safe.
 */
FP8ATTN_API int32_t fp8attn_attention_telemetry_copy_async(fp8attn_plan plan, const void* workspace,
                                                           size_t workspace_bytes,
                                                           fp8attn_telemetry* telemetry,
                                                           struct CUstream_st* stream, fp8attn_error* err);

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FP8ATTN_FP8ATTN_H_ */
