// fp8attn_predict_p_underflow.
#include <cmath>

#include "capi/abi_guard.hpp"
#include "capi/versioned_struct.hpp"
#include "lib/numerics/underflow_prediction.hpp"

using fp8attn::capi::guarded;
using fp8attn::capi::read_struct;
using fp8attn::require;

extern "C" {

int32_t fp8attn_predict_p_underflow(const fp8attn_sink_model* model, double* leading_order, double* expected,
                                    fp8attn_error* err) {
  return guarded(err, [&] {
    fp8attn_sink_model defaults{};
    const fp8attn_sink_model m =
        read_struct(model, "fp8attn_sink_model", FP8ATTN_LAYOUT_THROUGH(fp8attn_sink_model, seqlen_k), defaults);
    require(std::isfinite(m.sink_strength), FP8ATTN_STATUS_INVALID_ARGUMENT, "model->sink_strength must be finite");
    require(m.k_sink >= 1, FP8ATTN_STATUS_INVALID_ARGUMENT, "model->k_sink must be ≥ 1, got " + std::to_string(m.k_sink));
    require(std::isfinite(m.p_scale) && m.p_scale > 0.0, FP8ATTN_STATUS_BAD_SCALE,
            "model->p_scale must be finite and > 0");
    require(m.kv_order == FP8ATTN_KV_ORDER_REVERSE || m.kv_order == FP8ATTN_KV_ORDER_FORWARD, FP8ATTN_STATUS_BAD_OPTION,
            "model->kv_order is unknown: " + std::to_string(m.kv_order));
    require(m.block_n >= 1, FP8ATTN_STATUS_INVALID_ARGUMENT, "model->block_n must be ≥ 1");
    require(m.seqlen_k > m.k_sink, FP8ATTN_STATUS_INVALID_ARGUMENT, "model->seqlen_k must exceed k_sink");
    const fp8attn::UnderflowPrediction p = fp8attn::predict_p_underflow(
        m.sink_strength, m.k_sink, m.p_scale, m.kv_order == FP8ATTN_KV_ORDER_REVERSE, m.block_n, m.seqlen_k);
    require(std::isfinite(p.leading_order) && std::isfinite(p.expected), FP8ATTN_STATUS_NUMERICS,
            "the underflow prediction is not finite for this model");
    if (leading_order) *leading_order = p.leading_order;
    if (expected) *expected = p.expected;
  });
}

}  // extern "C"
