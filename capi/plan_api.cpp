// Attention description and plan entry points.
#include <algorithm>

#include "capi/abi_guard.hpp"
#include "capi/versioned_struct.hpp"
#include "lib/context/plan.hpp"
#include "lib/core/logging.hpp"
#include "lib/core/nvtx.hpp"
#include "lib/core/tensor.hpp"

using fp8attn::capi::guarded;
using fp8attn::capi::read_struct;
using fp8attn::require;

namespace {

fp8attn_attention_desc default_desc() {
  fp8attn_attention_desc d{};
  d.struct_size = sizeof d;
  fp8attn::default_attention_desc(&d);
  return d;
}

}  // namespace

extern "C" {

int32_t fp8attn_attention_desc_init(fp8attn_attention_desc* desc) {
  return guarded(nullptr, [&] {
    require(desc != nullptr, FP8ATTN_STATUS_NULL_POINTER, "desc is NULL");
    const size_t size = desc->struct_size == 0 ? sizeof(fp8attn_attention_desc)
                                               : std::min(desc->struct_size, sizeof(fp8attn_attention_desc));
    const fp8attn_attention_desc d = default_desc();
    std::memcpy(static_cast<void*>(desc), &d, size);
    desc->struct_size = size;
  });
}

int32_t fp8attn_plan_create(fp8attn_context ctx, const fp8attn_attention_desc* desc, fp8attn_plan* out,
                            fp8attn_error* err) {
  return guarded(err, [&] {
    require(ctx != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "ctx is NULL");
    require(out != nullptr, FP8ATTN_STATUS_NULL_POINTER, "out (fp8attn_plan*) is NULL");
    const fp8attn_attention_desc d =
        read_struct(desc, "fp8attn_attention_desc", FP8ATTN_LAYOUT_THROUGH(fp8attn_attention_desc, telemetry), default_desc());
    const fp8attn::AttentionConfig config = fp8attn::make_attention_config(d);
    const fp8attn::NvtxRange range("fp8attn_plan_create hq{} hkv{} d{}{}", config.num_heads_q, config.num_heads_kv,
                                   config.head_dim, config.causal ? " causal" : "");
    const fp8attn::Backend& backend = ctx->impl.backend();
    // NOTE: the serving layouts first, so that a backend without them says so rather than failing
    // on another of its limits.
    require(!config.paged() || backend.runs_paged_kv(config), FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
            "desc.page_size = " + std::to_string(config.page_size) + " (a paged KV cache): the " +
                std::string(fp8attn::backend_log_name(backend.kind())) +
                " backend has no paged forward; the CPU and reference backends run it");
    require(!config.mixed_kv_dtype() || backend.runs_mixed_kv_dtype(config), FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
            "desc.kv_dtype = " + fp8attn::dtype_name(config.kv_dtype) + " under desc.input_dtype = " +
                fp8attn::dtype_name(config.input_dtype) + ": the " +
                std::string(fp8attn::backend_log_name(backend.kind())) +
                " backend does not run it for this plan (the Hopper backends run BF16 Q over an E4M3 paged cache "
                "(desc.page_size >= 1) only); the CPU and reference backends run BF16 Q over E4M3 K and V");
    backend.check_attention(config);
    ctx->impl.log().debug(
        "plan created: backend {}, {} -> {}, heads_q={} heads_kv={} head_dim={} causal={} window=({}, {}), tile "
        "{}x{}, kv_order={} p_scale_log2={} pv_promote_interval={} softmax_variant={} sink_tokens={} page_size={} kv_dtype={}",
        fp8attn::backend_log_name(ctx->impl.backend().kind()), d.input_dtype == FP8ATTN_DTYPE_E4M3 ? "E4M3" : "BF16",
        fp8attn::dtype_name(config.output_dtype), config.num_heads_q, config.num_heads_kv,
        config.head_dim, config.causal, config.window_left, config.window_right, config.tile.block_m,
        config.tile.block_n, config.kv_order, config.p_scale_log2, config.pv_promote_interval, config.softmax_variant,
        config.sink_tokens, config.page_size, fp8attn::dtype_name(config.kv_dtype));
    *out = new fp8attn_plan_t{&ctx->impl, config};
  });
}

void fp8attn_plan_destroy(fp8attn_plan plan) { delete plan; }

int32_t fp8attn_plan_workspace_size(fp8attn_plan plan, int64_t batch, int64_t max_seqlen_q, int64_t max_seqlen_k,
                                    size_t* bytes, fp8attn_error* err) {
  return guarded(err, [&] {
    require(plan != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "plan is NULL");
    require(bytes != nullptr, FP8ATTN_STATUS_NULL_POINTER, "bytes (size_t*) is NULL");
    require(batch > 0 && max_seqlen_q >= 0 && max_seqlen_k >= 0, FP8ATTN_STATUS_BAD_SHAPE,
            "batch must be positive and max_seqlen_q, max_seqlen_k ≥ 0, got " + std::to_string(batch) + ", " +
                std::to_string(max_seqlen_q) + ", " + std::to_string(max_seqlen_k));
    require(batch <= FP8ATTN_MAX_BATCH && max_seqlen_q <= FP8ATTN_MAX_SEQLEN && max_seqlen_k <= FP8ATTN_MAX_SEQLEN,
            FP8ATTN_STATUS_BAD_SHAPE,
            "batch, max_seqlen_q and max_seqlen_k are limited to FP8ATTN_MAX_BATCH = 2^24 and FP8ATTN_MAX_SEQLEN = "
            "2^30, got " + std::to_string(batch) + ", " + std::to_string(max_seqlen_q) + ", " +
                std::to_string(max_seqlen_k));
    // NOTE: an empty sequence needs no more than a sequence of one row.
    *bytes = plan->context->backend().attention_workspace_size(plan->config, batch, std::max<int64_t>(max_seqlen_q, 1),
                                                               std::max<int64_t>(max_seqlen_k, 1));
  });
}

}  // extern "C"

extern "C" int32_t fp8attn_plan_get_tile(fp8attn_plan plan, int32_t* block_m, int32_t* block_n, fp8attn_error* err) {
  return guarded(err, [&] {
    require(plan != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "plan is NULL");
    require(block_m != nullptr && block_n != nullptr, FP8ATTN_STATUS_NULL_POINTER, "block_m or block_n is NULL");
    *block_m = plan->config.tile.block_m;
    *block_n = plan->config.tile.block_n;
  });
}
