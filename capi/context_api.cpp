// Context entry points.
#include "capi/abi_guard.hpp"
#include "capi/versioned_struct.hpp"
#include "lib/context/context.hpp"
#include "lib/core/logging.hpp"

using fp8attn::capi::guarded;
using fp8attn::capi::read_struct;

extern "C" {

int32_t fp8attn_context_create(const fp8attn_context_options* options, fp8attn_context* out, fp8attn_error* err) {
  return guarded(err, [&] {
    fp8attn::require(out != nullptr, FP8ATTN_STATUS_NULL_POINTER, "out (fp8attn_context*) is NULL");
    fp8attn_context_options o{};
    o.struct_size = sizeof o;
    if (options != nullptr)
      o = read_struct(options, "fp8attn_context_options", FP8ATTN_LAYOUT_THROUGH(fp8attn_context_options, log_user_data), o);
    fp8attn::require(o.backend >= FP8ATTN_BACKEND_AUTO && o.backend <= FP8ATTN_BACKEND_EMULATOR,
                     FP8ATTN_STATUS_BAD_OPTION, "options->backend is unknown: " + std::to_string(o.backend));
    fp8attn::require(o.log_level >= FP8ATTN_LOG_DEFAULT && o.log_level <= FP8ATTN_LOG_OFF, FP8ATTN_STATUS_BAD_OPTION,
                     "options->log_level is unknown: " + std::to_string(o.log_level));
    fp8attn::require(o.num_threads >= 0, FP8ATTN_STATUS_BAD_OPTION,
                     "options->num_threads must be ≥ 0 (0 = all cores), got " + std::to_string(o.num_threads));
    fp8attn::require(o.device_ordinal >= 0, FP8ATTN_STATUS_BAD_OPTION,
                     "options->device_ordinal must be ≥ 0, got " + std::to_string(o.device_ordinal));
    *out = new fp8attn_context_t(o);
  });
}

void fp8attn_context_destroy(fp8attn_context ctx) {
  // NOTE: destroying a context from one of its own workers (a callback running inside a call on
  // it) would have the pool join the calling thread; the context is left alive instead (a leak,
  // documented in the header) rather than deadlocking or terminating the process.
  if (ctx != nullptr && ctx->impl.pool().on_worker_thread()) return;
  delete ctx;
}

int32_t fp8attn_context_get_backend(fp8attn_context ctx, int32_t* backend, fp8attn_error* err) {
  return guarded(err, [&] {
    fp8attn::require(ctx != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "ctx is NULL");
    fp8attn::require(backend != nullptr, FP8ATTN_STATUS_NULL_POINTER, "backend (int32_t*) is NULL");
    *backend = ctx->impl.backend().kind();
  });
}

int32_t fp8attn_context_set_log_level(fp8attn_context ctx, int32_t level, fp8attn_error* err) {
  return guarded(err, [&] {
    fp8attn::require(ctx != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "ctx is NULL");
    fp8attn::require(level >= FP8ATTN_LOG_DEFAULT && level <= FP8ATTN_LOG_OFF, FP8ATTN_STATUS_BAD_OPTION,
                     "level is not an fp8attn_log_level: " + std::to_string(level));
    ctx->impl.log().set_level(level);
  });
}

}  // extern "C"
