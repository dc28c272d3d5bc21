// Spectral norms of the QK interaction matrices, RoPE logit norms and the logit bound.
#include <cmath>
#include <string>

#include "capi/abi_guard.hpp"
#include "capi/versioned_struct.hpp"
#include "lib/context/context.hpp"
#include "lib/core/nvtx.hpp"
#include "lib/spectral/logit_bound.hpp"
#include "lib/spectral/qk_spectral_norms.hpp"
#include "lib/spectral/rope_norms.hpp"

using fp8attn::capi::guarded;
using fp8attn::capi::read_struct;
using fp8attn::require;

namespace {

fp8attn::QkShape checked_shape(int32_t heads_q, int32_t heads_kv, int32_t head_dim, int64_t d_model) {
  fp8attn::QkShape s{heads_q, heads_kv, head_dim, d_model};
  fp8attn::check_qk_shape(s);
  return s;
}

/// True for the backends whose spectral norms are the CPU path (host weights, OpenBLAS); the GPU
/// backends (CUDA, emulator) run the device path through their runtime.
bool runs_cpu_path(const fp8attn::Backend& b) {
  return b.kind() == FP8ATTN_BACKEND_CPU || b.kind() == FP8ATTN_BACKEND_REFERENCE;
}

float checked_descale(float descale, const char* what) {
  require(std::isfinite(descale) && descale >= 0.0f, FP8ATTN_STATUS_BAD_OPTION,
          std::string("opts->") + what + " must be finite and ≥ 0");
  return descale == 0.0f ? 1.0f : descale;
}

/// d_model from wq (which the shape checks then hold wk to).
int64_t d_model_of(const fp8attn_tensor* wq) {
  require(wq != nullptr, FP8ATTN_STATUS_NULL_POINTER, "wq is NULL");
  require(wq->rank == 2, FP8ATTN_STATUS_BAD_SHAPE, "wq.rank must be 2, got " + std::to_string(wq->rank));
  return wq->shape[1];
}

}  // namespace

extern "C" {

int32_t fp8attn_qk_spectral_norms_workspace_size(fp8attn_context ctx, int32_t num_heads_q, int32_t num_heads_kv,
                                                 int32_t head_dim, int64_t d_model, size_t* bytes, fp8attn_error* err) {
  return guarded(err, [&] {
    require(ctx != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "ctx is NULL");
    require(bytes != nullptr, FP8ATTN_STATUS_NULL_POINTER, "bytes (size_t*) is NULL");
    const fp8attn::QkShape shape = checked_shape(num_heads_q, num_heads_kv, head_dim, d_model);
    const fp8attn::Backend& backend = ctx->impl.backend();
    *bytes = runs_cpu_path(backend) ? fp8attn::cpu_qk_spectral_workspace_size(shape)
                                    : backend.spectral_workspace_size(shape);
  });
}

int32_t fp8attn_qk_spectral_norms(fp8attn_context ctx, const fp8attn_tensor* wq, const fp8attn_tensor* wk,
                                  int32_t num_heads_q, int32_t num_heads_kv, int32_t head_dim,
                                  const fp8attn_power_iteration_options* opts, float* sigma_out, void* workspace,
                                  size_t workspace_bytes, struct CUstream_st* stream, fp8attn_error* err) {
  return guarded(err, [&] {
    require(ctx != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "ctx is NULL");
    require(sigma_out != nullptr, FP8ATTN_STATUS_NULL_POINTER, "sigma_out is NULL");
    fp8attn_power_iteration_options o{};
    o.struct_size = sizeof o;
    if (opts != nullptr)
      o = read_struct(opts, "fp8attn_power_iteration_options",
                      FP8ATTN_LAYOUT_THROUGH(fp8attn_power_iteration_options, wk_descale), o);
    require(o.max_iterations >= 0, FP8ATTN_STATUS_BAD_OPTION,
            "opts->max_iterations must be ≥ 0, got " + std::to_string(o.max_iterations));
    require(std::isfinite(o.tolerance) && o.tolerance >= 0.0f, FP8ATTN_STATUS_BAD_OPTION,
            "opts->tolerance must be finite and ≥ 0");
    const float dq = checked_descale(o.wq_descale, "wq_descale");
    const float dk = checked_descale(o.wk_descale, "wk_descale");
    const fp8attn::QkShape shape = checked_shape(num_heads_q, num_heads_kv, head_dim, d_model_of(wq));
    fp8attn::Backend& backend = ctx->impl.backend();
    require(stream == nullptr || backend.tensor_device() == FP8ATTN_DEVICE_CUDA, FP8ATTN_STATUS_BAD_STREAM,
            "stream must be NULL on a CPU backend");
    const int32_t device = backend.tensor_device();
    const auto q = fp8attn::make_weight_matrix(wq, "wq", int64_t{num_heads_q} * head_dim, shape.d_model, device, dq);
    const auto k = fp8attn::make_weight_matrix(wk, "wk", int64_t{num_heads_kv} * head_dim, shape.d_model, device, dk);
    fp8attn::PowerIterationSettings settings;
    settings.max_iterations = o.max_iterations == 0 ? 100 : o.max_iterations;
    settings.tolerance = o.tolerance == 0.0f ? 1e-6 : o.tolerance;
    settings.seed = o.seed;
    settings.warm_start = o.warm_start;
    settings.iterations_out = o.iterations_out;
    settings.residual_out = o.residual_out;
    const fp8attn::NvtxRange range("fp8attn_qk_spectral_norms hq{} hkv{} d{} dm{}", num_heads_q, num_heads_kv,
                                   head_dim, shape.d_model);
    if (runs_cpu_path(backend)) {
      fp8attn::cpu_qk_spectral_norms(q, k, shape, settings, sigma_out, workspace, workspace_bytes, ctx->impl.pool());
      return;
    }
    // The device path: the weights, σ and the optional outputs are device memory (host memory
    // under the emulator); nothing is read back, so NaN weights are not refused here.
    const size_t needed = backend.spectral_workspace_size(shape);
    FP8ATTN_REQUIRE(workspace_bytes >= needed, FP8ATTN_STATUS_WORKSPACE_TOO_SMALL,
                    "workspace has " + std::to_string(workspace_bytes) + " bytes, needs " + std::to_string(needed));
    FP8ATTN_REQUIRE(workspace != nullptr, FP8ATTN_STATUS_NULL_POINTER, "workspace is NULL");
    backend.qk_spectral_norms(q, k, shape, settings, sigma_out, workspace, workspace_bytes, stream);
  });
}

int32_t fp8attn_logit_bound(const float* sigma, int32_t num_heads, int32_t head_dim, float token_norm_bound,
                            float alpha, float* bound, float* scale, fp8attn_error* err) {
  return guarded(err, [&] {
    require(sigma != nullptr, FP8ATTN_STATUS_NULL_POINTER, "sigma is NULL");
    require(num_heads >= 1 && head_dim >= 1, FP8ATTN_STATUS_BAD_SHAPE, "num_heads and head_dim must be ≥ 1");
    require(std::isfinite(token_norm_bound) && token_norm_bound > 0.0f, FP8ATTN_STATUS_BAD_SCALE,
            "token_norm_bound must be finite and > 0");
    require(std::isfinite(alpha) && alpha > 0.0f && alpha <= 1.0f, FP8ATTN_STATUS_BAD_SCALE, "alpha must be in (0, 1]");
    double sigma_max = 0.0;
    for (int32_t h = 0; h < num_heads; ++h) {
      require(std::isfinite(sigma[h]) && sigma[h] >= 0.0f, FP8ATTN_STATUS_BAD_SCALE,
              "sigma[" + std::to_string(h) + "] must be finite and ≥ 0");
      sigma_max = std::max(sigma_max, static_cast<double>(sigma[h]));
    }
    require(sigma_max > 0.0, FP8ATTN_STATUS_BAD_SCALE, "every sigma is 0: no logit bound");
    const double l = fp8attn::logit_bound(sigma_max, head_dim, token_norm_bound, alpha);
    // NOTE: the results are checked as the floats returned, not as doubles: a double bound of
    // 1e42 is finite but its float is +inf, which the caller would get with OK.
    const float lf = static_cast<float>(l);
    const float sf = static_cast<float>(fp8attn::logit_scale_from_bound(l));
    require(std::isfinite(lf) && lf > 0.0f && std::isfinite(sf) && sf > 0.0f, FP8ATTN_STATUS_NUMERICS,
            "the logit bound " + std::to_string(l) + " or its scale 448 / bound is not a positive finite float");
    if (bound) *bound = lf;
    if (scale) *scale = sf;
  });
}

int32_t fp8attn_qk_rope_norms(fp8attn_context ctx, const fp8attn_tensor* wq, const fp8attn_tensor* wk,
                              int32_t num_heads_q, int32_t num_heads_kv, int32_t head_dim,
                              const fp8attn_rope_options* rope, float* safe_out, float* exact_out, fp8attn_error* err) {
  return guarded(err, [&] {
    require(ctx != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "ctx is NULL");
    fp8attn_rope_options o{};
    o.struct_size = sizeof o;
    if (rope != nullptr) o = read_struct(rope, "fp8attn_rope_options", FP8ATTN_LAYOUT_THROUGH(fp8attn_rope_options, seed), o);
    require(std::isfinite(o.theta_base) && o.theta_base >= 0.0f && o.theta_base != 1.0f, FP8ATTN_STATUS_BAD_OPTION,
            "rope->theta_base must be finite, ≥ 0 and not 1");
    require(o.layout == FP8ATTN_ROPE_HALF_SPLIT || o.layout == FP8ATTN_ROPE_INTERLEAVED, FP8ATTN_STATUS_BAD_OPTION,
            "rope->layout is unknown: " + std::to_string(o.layout));
    require(o.max_offset >= o.min_offset, FP8ATTN_STATUS_BAD_OPTION, "rope->max_offset must be ≥ min_offset");
    // NOTE: max − min is formed with an overflow check ([INT64_MIN, INT64_MAX] once wrapped to a
    // small range), and the count of offsets is bounded: each costs a power iteration per head.
    int64_t span = 0;
    require(!__builtin_sub_overflow(o.max_offset, o.min_offset, &span) && span < FP8ATTN_MAX_ROPE_OFFSETS,
            FP8ATTN_STATUS_BAD_OPTION,
            "rope offsets [" + std::to_string(o.min_offset) + ", " + std::to_string(o.max_offset) +
                "] exceed the limit of FP8ATTN_MAX_ROPE_OFFSETS = " + std::to_string(FP8ATTN_MAX_ROPE_OFFSETS) +
                " offsets");
    require(o.max_iterations >= 0, FP8ATTN_STATUS_BAD_OPTION, "rope->max_iterations must be ≥ 0");
    require(std::isfinite(o.tolerance) && o.tolerance >= 0.0f, FP8ATTN_STATUS_BAD_OPTION,
            "rope->tolerance must be finite and ≥ 0");
    const fp8attn::QkShape shape = checked_shape(num_heads_q, num_heads_kv, head_dim, d_model_of(wq));
    require(head_dim % 2 == 0, FP8ATTN_STATUS_BAD_SHAPE, "head_dim must be even for rotary embeddings");
    const auto q = fp8attn::make_weight_matrix(wq, "wq", int64_t{num_heads_q} * head_dim, shape.d_model,
                                               FP8ATTN_DEVICE_HOST, 1.0f);
    const auto k = fp8attn::make_weight_matrix(wk, "wk", int64_t{num_heads_kv} * head_dim, shape.d_model,
                                               FP8ATTN_DEVICE_HOST, 1.0f);
    fp8attn::RopeSpec spec;
    spec.theta_base = o.theta_base == 0.0f ? 10000.0 : o.theta_base;
    spec.interleaved = o.layout == FP8ATTN_ROPE_INTERLEAVED;
    spec.min_offset = o.min_offset;
    spec.max_offset = o.max_offset;
    spec.max_iterations = o.max_iterations == 0 ? 100 : o.max_iterations;
    spec.tolerance = o.tolerance == 0.0f ? 1e-6 : o.tolerance;
    spec.seed = o.seed;
    const fp8attn::RopeNorms norms = fp8attn::cpu_qk_rope_norms(q, k, shape, spec, ctx->impl.pool());
    for (int32_t h = 0; h < num_heads_q; ++h) {
      if (safe_out) safe_out[h] = norms.safe[h];
      if (exact_out) exact_out[h] = norms.exact[h];
    }
  });
}

}  // extern "C"
