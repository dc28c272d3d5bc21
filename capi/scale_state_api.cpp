// Scale-state entry points: create, report, step, read, weights, (de)serialize.
#include "capi/abi_guard.hpp"
#include "capi/versioned_struct.hpp"
#include "lib/context/context.hpp"
#include "lib/core/logging.hpp"
#include "lib/scale/device_amax_pickup.hpp"
#include "lib/scale/scale_state.hpp"

using fp8attn::capi::guarded;
using fp8attn::capi::read_struct;
using fp8attn::require;

namespace {

fp8attn::ScaleState& checked(fp8attn_scale_state state) {
  require(state != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "state is NULL");
  return state->impl;
}

}  // namespace

extern "C" {

int32_t fp8attn_scale_state_create(fp8attn_context ctx, const fp8attn_scale_state_options* options,
                                   fp8attn_scale_state* out, fp8attn_error* err) {
  return guarded(err, [&] {
    require(ctx != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "ctx is NULL");
    require(out != nullptr, FP8ATTN_STATUS_NULL_POINTER, "out (fp8attn_scale_state*) is NULL");
    fp8attn_scale_state_options o{};
    o.struct_size = sizeof o;
    if (options != nullptr)
      o = read_struct(options, "fp8attn_scale_state_options",
                      FP8ATTN_LAYOUT_THROUGH(fp8attn_scale_state_options, grad_dtype), o);
    const fp8attn::ScaleStateConfig config = fp8attn::resolve_scale_state_options(o);
    *out = new fp8attn_scale_state_t(ctx->impl, ctx->impl.pool(), config);
  });
}

void fp8attn_scale_state_destroy(fp8attn_scale_state state) { delete state; }

int32_t fp8attn_scale_state_report_amax(fp8attn_scale_state state, int32_t layer, int32_t tensor, float amax,
                                        fp8attn_error* err) {
  return guarded(err, [&] { checked(state).report_amax(layer, tensor, amax); });
}

int32_t fp8attn_scale_state_report_amax_batch(fp8attn_scale_state state, const float* amax, size_t count,
                                              fp8attn_error* err) {
  return guarded(err, [&] { checked(state).report_amax_batch(amax, count); });
}

int32_t fp8attn_scale_state_report_amax_device(fp8attn_scale_state state, int32_t layer, const float* device_amax,
                                               struct CUstream_st* stream, fp8attn_error* err) {
  return guarded(err, [&] {
    fp8attn::ScaleState& s = checked(state);
    require(device_amax != nullptr, FP8ATTN_STATUS_NULL_POINTER, "device_amax is NULL");
    // NOTE: device contexts (CUDA, emulator) copy the floats into page-locked staging on the
    // stream and fold them in a host function (lib/scale/device_amax_pickup.hpp): no host
    // synchronization. CPU and reference contexts take a host pointer, read now.
    if (fp8attn::DeviceAmaxPickup* pickup = state->context.amax_pickup()) {
      pickup->enqueue_report(s, layer, device_amax, stream);
      return;
    }
    const int32_t kind = state->context.backend().kind();
    require(stream == nullptr, FP8ATTN_STATUS_BAD_STREAM,
            "a stream was given on a " + fp8attn::backend_log_name(kind) + " context; pass NULL");
    s.report_amax_layer(layer, device_amax);
  });
}

int32_t fp8attn_scale_state_step(fp8attn_scale_state state, fp8attn_error* err) {
  return guarded(err, [&] { checked(state).step(); });
}

int32_t fp8attn_scale_state_get_scale(fp8attn_scale_state state, int32_t layer, int32_t tensor, float* scale,
                                      float* scale_inv, fp8attn_error* err) {
  return guarded(err, [&] { checked(state).get_scale(layer, tensor, scale, scale_inv); });
}

int32_t fp8attn_scale_state_set_qk_weights(fp8attn_scale_state state, int32_t layer, const fp8attn_tensor* wq,
                                           const fp8attn_tensor* wk, int32_t num_heads_q, int32_t num_heads_kv,
                                           int32_t head_dim, fp8attn_error* err) {
  return guarded(err, [&] { checked(state).set_qk_weights(layer, wq, wk, num_heads_q, num_heads_kv, head_dim); });
}

int32_t fp8attn_scale_state_set_qk_sigma(fp8attn_scale_state state, int32_t layer, const float* sigma,
                                         int32_t num_heads, int32_t head_dim, int64_t d_model, fp8attn_error* err) {
  return guarded(err, [&] { checked(state).set_sigma(layer, sigma, num_heads, head_dim, d_model); });
}

int32_t fp8attn_scale_state_serialize(fp8attn_scale_state state, void* buf, size_t capacity, size_t* written,
                                      fp8attn_error* err) {
  return guarded(err, [&] {
    fp8attn::ScaleState& s = checked(state);
    require(written != nullptr, FP8ATTN_STATUS_NULL_POINTER, "written (size_t*) is NULL");
    *written = s.serialize(buf, capacity);
  });
}

int32_t fp8attn_scale_state_deserialize(fp8attn_scale_state state, const void* buf, size_t len, fp8attn_error* err) {
  return guarded(err, [&] { checked(state).deserialize(buf, len); });
}

}  // extern "C"
