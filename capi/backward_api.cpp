// fp8attn_plan_backward_workspace_size and fp8attn_attention_backward: validate everything,
// then hand the problem to the backend. The CPU engine and the GPU backends (CUDA, emulator:
// the Hopper BF16 backward kernel) run it; the reference backend refuses it
// (FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND).
#include <algorithm>
#include <chrono>

#include "capi/abi_guard.hpp"
#include "capi/versioned_struct.hpp"
#include "lib/attention/attention_backward_problem.hpp"
#include "lib/context/plan.hpp"
#include "lib/core/logging.hpp"
#include "lib/core/nvtx.hpp"
#include "lib/core/tensor.hpp"

using fp8attn::capi::guarded;
using fp8attn::capi::read_struct;

namespace {

/// The backward takes BF16 inputs only; an FP8 plan is refused before anything else.
void require_bf16_plan(const fp8attn::AttentionConfig& config) {
  FP8ATTN_REQUIRE(config.input_dtype == FP8ATTN_DTYPE_BF16, FP8ATTN_STATUS_UNSUPPORTED_DTYPE,
                  "the attention backward takes BF16 inputs; this plan's input_dtype is " +
                      fp8attn::dtype_name(config.input_dtype) +
                      " (create the plan with input_dtype = FP8ATTN_DTYPE_BF16)");
  FP8ATTN_REQUIRE(config.output_dtype != FP8ATTN_DTYPE_E4M3, FP8ATTN_STATUS_UNSUPPORTED_DTYPE,
                  "the attention backward takes O and dO in BF16 or F32; this plan's output_dtype is E4M3");
}

}  // namespace

extern "C" {

int32_t fp8attn_plan_backward_workspace_size(fp8attn_plan plan, int64_t batch, int64_t max_seqlen_q,
                                             int64_t max_seqlen_k, size_t* bytes, fp8attn_error* err) {
  return guarded(err, [&] {
    FP8ATTN_REQUIRE(plan != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "plan is NULL");
    FP8ATTN_REQUIRE(bytes != nullptr, FP8ATTN_STATUS_NULL_POINTER, "bytes (size_t*) is NULL");
    FP8ATTN_REQUIRE(batch > 0 && max_seqlen_q >= 0 && max_seqlen_k >= 0, FP8ATTN_STATUS_BAD_SHAPE,
                    "batch must be positive and max_seqlen_q, max_seqlen_k ≥ 0, got " + std::to_string(batch) + ", " +
                        std::to_string(max_seqlen_q) + ", " + std::to_string(max_seqlen_k));
    FP8ATTN_REQUIRE(
        batch <= FP8ATTN_MAX_BATCH && max_seqlen_q <= FP8ATTN_MAX_SEQLEN && max_seqlen_k <= FP8ATTN_MAX_SEQLEN,
        FP8ATTN_STATUS_BAD_SHAPE,
        "batch, max_seqlen_q and max_seqlen_k are limited to FP8ATTN_MAX_BATCH = 2^24 and FP8ATTN_MAX_SEQLEN = 2^30, "
        "got " + std::to_string(batch) + ", " + std::to_string(max_seqlen_q) + ", " + std::to_string(max_seqlen_k));
    require_bf16_plan(plan->config);
    // NOTE: an empty sequence needs no more than a sequence of one row.
    *bytes = plan->context->backend().attention_backward_workspace_size(
        plan->config, batch, std::max<int64_t>(max_seqlen_q, 1), std::max<int64_t>(max_seqlen_k, 1));
  });
}

int32_t fp8attn_attention_backward(fp8attn_plan plan, const fp8attn_attention_bwd_args* args, void* workspace,
                                   size_t workspace_bytes, struct CUstream_st* stream, fp8attn_error* err) {
  return guarded(err, [&] {
    FP8ATTN_REQUIRE(plan != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "plan is NULL");
    fp8attn_attention_bwd_args defaults{};
    const fp8attn_attention_bwd_args a = read_struct(args, "fp8attn_attention_bwd_args",
                                                     FP8ATTN_LAYOUT_THROUGH(fp8attn_attention_bwd_args, deterministic),
                                                     defaults);
    require_bf16_plan(plan->config);
    fp8attn::Backend& backend = plan->context->backend();
    FP8ATTN_REQUIRE(stream == nullptr || backend.tensor_device() == FP8ATTN_DEVICE_CUDA, FP8ATTN_STATUS_BAD_STREAM,
                    "a CUDA stream was given to a CPU backend; pass NULL");
    const fp8attn::AttentionBackwardProblem problem =
        fp8attn::make_attention_backward_problem(plan->config, a, backend.tensor_device());
    // NOTE: a backend without a backward refuses here (UNSUPPORTED_ON_BACKEND), before the
    // workspace checks, so that its message is the one the caller sees.
    const size_t needed = backend.attention_backward_workspace_size(plan->config, problem.batch(),
                                                                    problem.fwd.max_seqlen_q, problem.fwd.max_seqlen_k);
    FP8ATTN_REQUIRE(workspace_bytes >= needed, FP8ATTN_STATUS_WORKSPACE_TOO_SMALL,
                    "workspace has " + std::to_string(workspace_bytes) + " bytes; this backward needs " +
                        std::to_string(needed));
    FP8ATTN_REQUIRE(needed == 0 || workspace != nullptr, FP8ATTN_STATUS_NULL_POINTER, "workspace is NULL");
    const fp8attn::Log& log = plan->context->log();
    log.debug("backward: backend {}, batch {} ({}), seqlen_q {} seqlen_k {} (max), heads_q={} heads_kv={} "
              "head_dim={}, tile {}x{}, deterministic={}, workspace {} bytes given, {} needed",
              fp8attn::backend_log_name(backend.kind()), problem.batch(), problem.fwd.varlen ? "varlen" : "padded",
              problem.fwd.max_seqlen_q, problem.fwd.max_seqlen_k, plan->config.num_heads_q,
              plan->config.num_heads_kv, plan->config.head_dim, plan->config.tile.block_m, plan->config.tile.block_n,
              problem.deterministic, workspace_bytes, needed);
    // NOTE: the clock is read only when TRACE is on, so the default path costs nothing.
    const bool timed = log.enabled(fp8attn::LogLevel::trace);
    const auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    const fp8attn::NvtxRange range("fp8attn_attention_backward b{} sq{} sk{} hq{} hkv{} d{}{}", problem.batch(),
                                   problem.fwd.max_seqlen_q, problem.fwd.max_seqlen_k, plan->config.num_heads_q,
                                   plan->config.num_heads_kv, plan->config.head_dim,
                                   plan->config.causal ? " causal" : "");
    backend.attention_backward(plan->config, problem, workspace, workspace_bytes, stream);
    if (timed)
      log.trace("backward: {:.3f} ms in backend {}",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(),
                fp8attn::backend_log_name(backend.kind()));
  });
}

}  // extern "C"
