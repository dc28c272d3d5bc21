// fp8attn_attention_telemetry_copy_async: the forward's device telemetry counters, copied out of
// its workspace on a stream (GPU backends keep them in the workspace; see the header).
#include "capi/abi_guard.hpp"
#include "lib/context/plan.hpp"

using fp8attn::capi::guarded;

extern "C" {

int32_t fp8attn_attention_telemetry_copy_async(fp8attn_plan plan, const void* workspace, size_t workspace_bytes,
                                               fp8attn_telemetry* telemetry, struct CUstream_st* stream,
                                               fp8attn_error* err) {
  return guarded(err, [&] {
    FP8ATTN_REQUIRE(plan != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "plan is NULL");
    FP8ATTN_REQUIRE(workspace != nullptr, FP8ATTN_STATUS_NULL_POINTER, "workspace is NULL");
    FP8ATTN_REQUIRE(telemetry != nullptr, FP8ATTN_STATUS_NULL_POINTER, "telemetry is NULL");
    FP8ATTN_REQUIRE(telemetry->struct_size >= sizeof(fp8attn_telemetry), FP8ATTN_STATUS_BAD_STRUCT_SIZE,
            "telemetry->struct_size is " + std::to_string(telemetry->struct_size) + "; the copy writes all " +
                std::to_string(sizeof(fp8attn_telemetry)) + " bytes of fp8attn_telemetry");
    fp8attn::Backend& backend = plan->context->backend();
    FP8ATTN_REQUIRE(backend.kind() != FP8ATTN_BACKEND_CPU && backend.kind() != FP8ATTN_BACKEND_REFERENCE,
            FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
            "the CPU backends fill args.telemetry in the forward call itself; there is nothing to copy");
    FP8ATTN_REQUIRE(stream == nullptr || backend.tensor_device() == FP8ATTN_DEVICE_CUDA, FP8ATTN_STATUS_BAD_STREAM,
            "a CUDA stream was given to a host-memory backend; pass NULL");
    backend.copy_attention_telemetry(plan->config, workspace, workspace_bytes, telemetry, stream);
  });
}

}  // extern "C"
