// fp8attn_attention_combine and its workspace query: merging partial attention results. GPU
// backends run the combine kernel through their device runtime; the CPU backend runs the same
// arithmetic on its workers (bit-equal), the reference backend an FP64 merge.
#include <string>

#include "capi/abi_guard.hpp"
#include "capi/versioned_struct.hpp"
#include "lib/combine/combine_problem.hpp"
#include "lib/combine/cpu_combine.hpp"
#include "lib/context/context.hpp"
#include "lib/core/nvtx.hpp"

using fp8attn::capi::guarded;
using fp8attn::capi::read_struct;

namespace {

fp8attn_combine_args read_args(const fp8attn_combine_args* args) {
  fp8attn_combine_args defaults{};
  // NOTE: the oldest layout is the first one: every field through `lse` (lse itself optional).
  return read_struct(args, "fp8attn_combine_args", FP8ATTN_LAYOUT_THROUGH(fp8attn_combine_args, lse), defaults);
}

}  // namespace

extern "C" {

int32_t fp8attn_attention_combine_workspace_size(fp8attn_context ctx, const fp8attn_combine_args* args, size_t* bytes,
                                                 fp8attn_error* err) {
  return guarded(err, [&] {
    FP8ATTN_REQUIRE(ctx != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "ctx is NULL");
    FP8ATTN_REQUIRE(bytes != nullptr, FP8ATTN_STATUS_NULL_POINTER, "bytes (size_t*) is NULL");
    const fp8attn_combine_args a = read_args(args);
    const auto params = fp8attn::combine::make_combine_params(a, ctx->impl.backend().tensor_device(), false);
    *bytes = fp8attn::combine::combine_workspace_bytes(params);
  });
}

int32_t fp8attn_attention_combine(fp8attn_context ctx, const fp8attn_combine_args* args, void* workspace,
                                  size_t workspace_bytes, struct CUstream_st* stream, fp8attn_error* err) {
  return guarded(err, [&] {
    FP8ATTN_REQUIRE(ctx != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "ctx is NULL");
    fp8attn::Backend& backend = ctx->impl.backend();
    FP8ATTN_REQUIRE(stream == nullptr || backend.tensor_device() == FP8ATTN_DEVICE_CUDA, FP8ATTN_STATUS_BAD_STREAM,
                    "a CUDA stream was given to a CPU backend; pass NULL");
    const fp8attn_combine_args a = read_args(args);
    const auto params = fp8attn::combine::make_combine_params(a, backend.tensor_device(), true);
    const size_t needed = fp8attn::combine::combine_workspace_bytes(params);
    FP8ATTN_REQUIRE(workspace_bytes >= needed, FP8ATTN_STATUS_WORKSPACE_TOO_SMALL,
                    "workspace has " + std::to_string(workspace_bytes) + " bytes; this problem needs " +
                        std::to_string(needed));
    FP8ATTN_REQUIRE(needed == 0 || workspace != nullptr, FP8ATTN_STATUS_NULL_POINTER, "workspace is NULL");
    const fp8attn::NvtxRange range("fp8attn_attention_combine p{} t{} h{} d{}", params.num_parts, params.tokens,
                                   params.heads, params.head_dim);
    switch (backend.kind()) {
      case FP8ATTN_BACKEND_CPU: fp8attn::combine::combine_on_cpu(params, ctx->impl.pool()); return;
      case FP8ATTN_BACKEND_REFERENCE: fp8attn::combine::combine_reference(params, ctx->impl.pool()); return;
      default: backend.combine(params, workspace, workspace_bytes, stream); return;
    }
  });
}

}  // extern "C"
