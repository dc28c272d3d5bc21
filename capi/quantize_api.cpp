// fp8attn_quantize: validate everything, then run the two-pass quantizer on the context's pool.
#include "capi/abi_guard.hpp"
#include "capi/versioned_struct.hpp"
#include "lib/context/context.hpp"
#include "lib/quantize/cpu_quantizer.hpp"
#include "lib/quantize/quantize_problem.hpp"

using fp8attn::capi::guarded;
using fp8attn::capi::read_struct;
using fp8attn::require;

extern "C" {

int32_t fp8attn_quantize(fp8attn_context ctx, const fp8attn_tensor* input, const fp8attn_tensor* cu_seqlens,
                         const fp8attn_quantize_options* options, const fp8attn_tensor* output,
                         const fp8attn_tensor* descale, float* amax, fp8attn_error* err) {
  return guarded(err, [&] {
    require(ctx != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "ctx is NULL");
    require(ctx->impl.backend().tensor_device() == FP8ATTN_DEVICE_HOST, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
            "fp8attn_quantize runs on host memory; this context's backend is CUDA");
    fp8attn_quantize_options o{};
    o.struct_size = sizeof o;
    if (options != nullptr)
      o = read_struct(options, "fp8attn_quantize_options", FP8ATTN_LAYOUT_THROUGH(fp8attn_quantize_options, margin), o);
    const fp8attn::sm90::quant::QuantizeParams params =
        fp8attn::quant::make_quantize_params(input, cu_seqlens, o, output, descale);
    const float tensor_amax = fp8attn::quant::quantize_on_cpu(params, ctx->impl.pool());
    if (amax != nullptr) *amax = tensor_amax;
  });
}

}  // extern "C"
