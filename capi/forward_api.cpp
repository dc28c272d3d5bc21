// fp8attn_attention_forward: validate everything, then hand the problem to the backend.
#include <chrono>

#include "capi/abi_guard.hpp"
#include "capi/versioned_struct.hpp"
#include "lib/attention/attention_problem.hpp"
#include "lib/attention/plan.hpp"
#include "lib/core/logging.hpp"
#include "lib/core/nvtx.hpp"

using fp8attn::capi::guarded;
using fp8attn::capi::read_struct;
using fp8attn::require;

extern "C" {

int32_t fp8attn_attention_forward(fp8attn_plan plan, const fp8attn_attention_args* args, void* workspace,
                                  size_t workspace_bytes, struct CUstream_st* stream, fp8attn_error* err) {
  return guarded(err, [&] {
    FP8ATTN_REQUIRE(plan != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "plan is NULL");
    fp8attn_attention_args defaults{};
    const fp8attn_attention_args a =
        read_struct(args, "fp8attn_attention_args", FP8ATTN_LAYOUT_THROUGH(fp8attn_attention_args, telemetry), defaults);
    fp8attn::Backend& backend = plan->context->backend();
    FP8ATTN_REQUIRE(stream == nullptr || backend.tensor_device() == FP8ATTN_DEVICE_CUDA, FP8ATTN_STATUS_BAD_STREAM,
            "a CUDA stream was given to a CPU backend; pass NULL");
    const fp8attn::AttentionProblem problem = fp8attn::make_attention_problem(plan->config, a, backend.tensor_device());
    const size_t needed =
        backend.attention_workspace_size(plan->config, problem.batch, problem.max_seqlen_q, problem.max_seqlen_k);
    FP8ATTN_REQUIRE(workspace_bytes >= needed, FP8ATTN_STATUS_WORKSPACE_TOO_SMALL,
            "workspace has " + std::to_string(workspace_bytes) + " bytes; this problem needs " + std::to_string(needed));
    FP8ATTN_REQUIRE(needed == 0 || workspace != nullptr, FP8ATTN_STATUS_NULL_POINTER, "workspace is NULL");
    spdlog::logger& log = plan->context->log();
    log.debug("forward: backend {}, batch {} ({}), seqlen_q {} seqlen_k {} (max), heads_q={} heads_kv={} "
              "head_dim={}, tile {}x{}, workspace {} bytes given, {} needed",
              fp8attn::backend_log_name(backend.kind()), problem.batch, problem.varlen ? "varlen" : "padded",
              problem.max_seqlen_q, problem.max_seqlen_k, plan->config.num_heads_q, plan->config.num_heads_kv,
              plan->config.head_dim, plan->config.tile.block_m, plan->config.tile.block_n, workspace_bytes, needed);
    // NOTE: the clock is read only when TRACE is on, so the default path costs nothing.
    const bool timed = log.should_log(spdlog::level::trace);
    const auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    const fp8attn::NvtxRange range("fp8attn_attention_forward b{} sq{} sk{} hq{} hkv{} d{}{}", problem.batch,
                                   problem.max_seqlen_q, problem.max_seqlen_k, plan->config.num_heads_q,
                                   plan->config.num_heads_kv, plan->config.head_dim,
                                   plan->config.causal ? " causal" : "");
    backend.attention_forward(plan->config, problem, workspace, workspace_bytes, stream);
    if (timed)
      log.trace("forward: {:.3f} ms in backend {}",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(),
                fp8attn::backend_log_name(backend.kind()));
  });
}

}  // extern "C"
