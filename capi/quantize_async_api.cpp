// fp8attn_quantize_async and its workspace query: the quantizer as an execute call (stream and
// caller workspace). GPU backends run the Hopper kernels through their device runtime; CPU
// backends run the CPU quantizer, which gives the same bits.
#include "capi/abi_guard.hpp"
#include "capi/versioned_struct.hpp"
#include "lib/backend/gpu/quantize_plan.hpp"
#include "lib/context/context.hpp"
#include "lib/core/checked_math.hpp"
#include "lib/core/nvtx.hpp"
#include "lib/quantize/cpu_quantizer.hpp"
#include "lib/quantize/quantize_problem.hpp"

using fp8attn::capi::guarded;
using fp8attn::capi::read_struct;

namespace {

fp8attn_quantize_options read_options(const fp8attn_quantize_options* options) {
  fp8attn_quantize_options o{};
  o.struct_size = sizeof o;
  if (options != nullptr)
    o = read_struct(options, "fp8attn_quantize_options", FP8ATTN_LAYOUT_THROUGH(fp8attn_quantize_options, margin), o);
  return o;
}

bool is_host_backend(const fp8attn::Backend& b) {
  return b.kind() == FP8ATTN_BACKEND_CPU || b.kind() == FP8ATTN_BACKEND_REFERENCE;
}

}  // namespace

extern "C" {

int32_t fp8attn_quantize_workspace_size(fp8attn_context ctx, const fp8attn_tensor* input,
                                        const fp8attn_tensor* cu_seqlens, int64_t max_seqlen,
                                        const fp8attn_quantize_options* options, size_t* bytes, fp8attn_error* err) {
  return guarded(err, [&] {
    FP8ATTN_REQUIRE(ctx != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "ctx is NULL");
    FP8ATTN_REQUIRE(bytes != nullptr, FP8ATTN_STATUS_NULL_POINTER, "bytes (size_t*) is NULL");
    const int64_t units = fp8attn::quant::quantize_unit_count(input, cu_seqlens, max_seqlen, read_options(options));
    fp8attn::checked_mul(units, int64_t{sizeof(float)}, "the quantizer workspace", FP8ATTN_STATUS_OUT_OF_MEMORY);
    *bytes = fp8attn::quant::quantize_workspace_bytes(units);
  });
}

int32_t fp8attn_quantize_async(fp8attn_context ctx, const fp8attn_tensor* input, const fp8attn_tensor* cu_seqlens,
                               int64_t max_seqlen, const fp8attn_quantize_options* options,
                               const fp8attn_tensor* output, const fp8attn_tensor* descale, float* amax,
                               void* workspace, size_t workspace_bytes, struct CUstream_st* stream,
                               fp8attn_error* err) {
  return guarded(err, [&] {
    FP8ATTN_REQUIRE(ctx != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "ctx is NULL");
    fp8attn::Backend& backend = ctx->impl.backend();
    FP8ATTN_REQUIRE(stream == nullptr || backend.tensor_device() == FP8ATTN_DEVICE_CUDA, FP8ATTN_STATUS_BAD_STREAM,
            "a CUDA stream was given to a CPU backend; pass NULL");
    const fp8attn_quantize_options o = read_options(options);
    fp8attn::sm90::quant::QuantizeParams params = fp8attn::quant::make_quantize_params(
        input, cu_seqlens, o, output, descale, {backend.tensor_device(), max_seqlen});
    const size_t needed = fp8attn::gpu::quantize_workspace_bytes(params);
    FP8ATTN_REQUIRE(workspace_bytes >= needed, FP8ATTN_STATUS_WORKSPACE_TOO_SMALL,
            "workspace has " + std::to_string(workspace_bytes) + " bytes; this problem needs " + std::to_string(needed));
    FP8ATTN_REQUIRE(workspace != nullptr, FP8ATTN_STATUS_NULL_POINTER, "workspace is NULL");
    const fp8attn::NvtxRange range("fp8attn_quantize b{} h{} d{} units{}", params.batch, params.heads,
                                   params.head_dim, params.units_per_head);
    if (is_host_backend(backend)) {
      const float tensor_amax = fp8attn::quant::quantize_on_cpu(params, ctx->impl.pool());
      if (amax != nullptr) *amax = tensor_amax;
      return;
    }
    params.tensor_amax = amax;
    backend.quantize(params, workspace, workspace_bytes, stream);
  });
}

}  // extern "C"
