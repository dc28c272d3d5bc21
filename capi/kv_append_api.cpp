// fp8attn_kv_append_async: new tokens' K and V written into a paged cache (vLLM's
// reshape_and_cache_flash). Everything is validated before anything is written; GPU backends run
// the Hopper kernel through their device runtime, CPU backends the CPU implementation, which
// gives the same bits.
#include "capi/abi_guard.hpp"
#include "capi/versioned_struct.hpp"
#include "lib/context/context.hpp"
#include "lib/core/nvtx.hpp"
#include "lib/serving/kv_append_cpu.hpp"
#include "lib/serving/kv_append_problem.hpp"

using fp8attn::capi::guarded;
using fp8attn::capi::read_struct;

extern "C" {

int32_t fp8attn_kv_append_async(fp8attn_context ctx, const fp8attn_kv_append_args* args, struct CUstream_st* stream,
                                fp8attn_error* err) {
  return guarded(err, [&] {
    FP8ATTN_REQUIRE(ctx != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "ctx is NULL");
    fp8attn::Backend& backend = ctx->impl.backend();
    FP8ATTN_REQUIRE(stream == nullptr || backend.tensor_device() == FP8ATTN_DEVICE_CUDA, FP8ATTN_STATUS_BAD_STREAM,
                    "a CUDA stream was given to a CPU backend; pass NULL");
    // NOTE: every field is in the first layout; later fields appended to the struct keep their
    // zero defaults for an older caller.
    const fp8attn_kv_append_args a =
        read_struct(args, "fp8attn_kv_append_args", FP8ATTN_LAYOUT_THROUGH(fp8attn_kv_append_args, v_descale),
                    fp8attn_kv_append_args{});
    const fp8attn::sm90::kv::KvAppendParams p = fp8attn::serving::make_kv_append_params(a, backend.tensor_device());
    const fp8attn::NvtxRange range("fp8attn_kv_append t{} h{} d{} dv{}", p.tokens, p.heads, p.k.dim, p.v.dim);
    if (backend.kind() == FP8ATTN_BACKEND_CPU || backend.kind() == FP8ATTN_BACKEND_REFERENCE) {
      fp8attn::serving::kv_append_on_cpu(p, ctx->impl.pool());
      return;
    }
    backend.kv_append(p, stream);
  });
}

}  // extern "C"
