#include "lib/backend/gpu/gpu_backend.hpp"

#include <cstddef>
#include <cstring>
#include <string>

#include "lib/backend/gpu/attention_bwd_plan.hpp"
#include "lib/backend/gpu/attention_fwd_plan.hpp"
#include "lib/backend/gpu/combine_plan.hpp"
#include "lib/backend/gpu/quantize_plan.hpp"
#include "lib/backend/gpu/spectral_plan.hpp"

namespace fp8attn {
namespace {

// NOTE: the telemetry copy writes the device counters straight into the caller's
// fp8attn_telemetry (one async copy, no host-side conversion that would need a synchronization):
// the two u64 counters and the float's bits (a non-negative float merged as u32) have the same
// relative offsets in both structs.
constexpr size_t kTelemetryCopyBytes = offsetof(sm90::FwdTelemetryCounters, max_abs_scaled_logit_bits) + sizeof(float);
static_assert(offsetof(sm90::FwdTelemetryCounters, p_positive) == 0);
static_assert(offsetof(fp8attn_telemetry, p_underflow) - offsetof(fp8attn_telemetry, p_positive) ==
              offsetof(sm90::FwdTelemetryCounters, p_underflow));
static_assert(offsetof(fp8attn_telemetry, max_abs_scaled_logit) - offsetof(fp8attn_telemetry, p_positive) ==
              offsetof(sm90::FwdTelemetryCounters, max_abs_scaled_logit_bits));
static_assert(sizeof(uint32_t) == sizeof(float));

class GpuBackend final : public Backend {
 public:
  explicit GpuBackend(std::unique_ptr<DeviceRuntime> runtime) : runtime_(std::move(runtime)) {}
  int32_t kind() const override { return runtime_->backend_kind(); }
  int32_t tensor_device() const override { return runtime_->tensor_device(); }

  /// Plan creation: the configuration check, and the shared-memory attribute of every kernel the
  /// plan's calls may pick (the promotion depends on the call's V descales), set once here so
  /// that execute calls make no such call.
  /// NOTE: both telemetry variants: a call that asks for amax_o or names a scale state runs the
  /// telemetry kernel whatever the plan's desc.telemetry (capi/forward_api.cpp).
  void check_attention(const AttentionConfig& config) const override {
    gpu::check_attention_fwd_supported(config);
    if (config.decode) {  // promotion Off or every block, no telemetry (decode_plan.cpp refuses the rest)
      for (const auto promotion : {sm90::PvPromotion::Off, sm90::PvPromotion::EveryBlock}) {
        const sm90::FwdKernelKey key{config.head_dim, promotion, false, gpu::attention_fwd_input(config), true};
        if (sm90::fwd_kernel_shape(key).threads > 0) runtime_->prepare_attention_fwd(key);
      }
      return;
    }
    for (const auto promotion : {sm90::PvPromotion::Off, sm90::PvPromotion::EveryBlock, sm90::PvPromotion::EveryN})
      for (const bool telemetry : {false, true}) {
        const sm90::FwdKernelKey key{config.head_dim, promotion, telemetry, gpu::attention_fwd_input(config)};
        if (sm90::fwd_kernel_exists(key)) runtime_->prepare_attention_fwd(key);
      }
  }

  /// A paged KV cache: the producer loads its pages (kernels/sm90/attention/fwd_paged_kv.hpp);
  /// per-token scale caches run on the E4M3 every-block forward and decode kernels and on every
  /// BF16 forward and decode kernel (fwd_kv_token_scales.hpp).
  bool runs_paged_kv(const AttentionConfig&) const override { return true; }

  /// BF16 Q over an E4M3 cache: the BF16 forward or decode kernel, whose paged gather decodes the
  /// codes to BF16 (fwd_paged_kv.hpp). Not over contiguous K and V: TMA loads them and cannot
  /// convert.
  bool runs_mixed_kv_dtype(const AttentionConfig& config) const override {
    return config.paged() && config.input_dtype == FP8ATTN_DTYPE_BF16 && config.kv_dtype == FP8ATTN_DTYPE_E4M3;
  }

  bool measures_forward_amax() const override { return true; }
  int64_t forward_amax_offset() const override {
    static_assert(offsetof(sm90::FwdTelemetryCounters, max_abs_o_bits) ==
                  offsetof(sm90::FwdTelemetryCounters, max_abs_scaled_logit_bits) + sizeof(float));
    return static_cast<int64_t>(offsetof(sm90::FwdTelemetryCounters, max_abs_scaled_logit_bits));
  }
  bool completes_on_return() const override { return runtime_->completes_on_return(); }
  void* allocate_pinned(size_t bytes) override { return runtime_->allocate_pinned(bytes); }
  void release_pinned(void* host) override { runtime_->release_pinned(host); }
  void enqueue_host_pickup(void* staging, const void* device, size_t bytes, void (*fn)(void*), void* arg,
                           CUstream_st* stream) override {
    runtime_->copy_to_host_async(staging, device, bytes, stream);
    runtime_->launch_host_func(fn, arg, stream);
  }

  size_t attention_workspace_size(const AttentionConfig& config, int64_t batch, int64_t max_seqlen_q,
                                  int64_t max_seqlen_k) const override {
    gpu::check_attention_fwd_supported(config);
    return gpu::attention_fwd_workspace_bytes(config, batch, max_seqlen_q, max_seqlen_k);
  }

  /// NOTE: no allocation and no synchronization: the counters live in the caller's workspace and
  /// are zeroed on the stream, so the call can be captured in a CUDA graph. The host telemetry
  /// struct is filled here only where copies complete on return (the emulator); on CUDA,
  /// fp8attn_attention_telemetry_copy_async() copies it on the stream.
  void attention_forward(const AttentionConfig& config, const AttentionProblem& problem, void* workspace, size_t,
                         CUstream_st* stream) override {
    const sm90::FwdLaunch launch = gpu::plan_attention_fwd(config, problem, workspace, runtime_->sm_count());
    if (launch.args.telemetry != nullptr) runtime_->zero_async(workspace, sizeof(sm90::FwdTelemetryCounters), stream);
    // NOTE: a paged launch flags block-table entries and seqused_k it had to clamp in the
    // workspace (FwdPagedFaults), zeroed here on the stream like the counters.
    if (launch.args.paged.faults != nullptr)
      runtime_->zero_async(launch.args.paged.faults, sizeof(sm90::FwdPagedFaults), stream);
    runtime_->launch_attention_fwd(launch, stream);
    // NOTE: the decode path's splits merged on the same stream: no host round trip between them.
    if (launch.merge) runtime_->launch_combine(launch.merge_params, stream);
    if (launch.args.telemetry != nullptr && problem.telemetry != nullptr && runtime_->completes_on_return()) {
      sm90::FwdTelemetryCounters counters{};
      runtime_->copy_to_host_async(&counters, workspace, sizeof counters, stream);
      problem.telemetry->p_positive = counters.p_positive;
      problem.telemetry->p_underflow = counters.p_underflow;
      std::memcpy(&problem.telemetry->max_abs_scaled_logit, &counters.max_abs_scaled_logit_bits, sizeof(float));
    }
  }

  void copy_attention_telemetry(const AttentionConfig& config, const void* workspace, size_t workspace_bytes,
                                fp8attn_telemetry* out, CUstream_st* stream) override {
    FP8ATTN_REQUIRE(config.telemetry, FP8ATTN_STATUS_INVALID_ARGUMENT,
            "the plan was created with desc.telemetry = 0: its forward calls keep no counters");
    FP8ATTN_REQUIRE(workspace_bytes >= gpu::attention_fwd_workspace_bytes(config), FP8ATTN_STATUS_WORKSPACE_TOO_SMALL,
            "the workspace has " + std::to_string(workspace_bytes) + " bytes; the plan's forward workspace is " +
                std::to_string(gpu::attention_fwd_workspace_bytes(config)));
    runtime_->copy_to_host_async(&out->p_positive, workspace, kTelemetryCopyBytes, stream);
  }

  /// The BF16 backward (attention_bwd_plan.hpp). The plan's kernels get their shared-memory limit
  /// here, at the first workspace query or call, once per head dim (prepare is idempotent).
  size_t attention_backward_workspace_size(const AttentionConfig& config, int64_t batch, int64_t max_seqlen_q,
                                           int64_t max_seqlen_k) const override {
    const size_t bytes = gpu::attention_bwd_workspace_bytes(config, batch, max_seqlen_q, max_seqlen_k);
    runtime_->prepare_attention_bwd({config.head_dim});
    return bytes;
  }

  /// NOTE: no allocation and no synchronization: every buffer lives in the caller's workspace
  /// (the atomic mode's dQ accumulator is zeroed by the preprocessing kernel), so the call can be
  /// captured in a CUDA graph.
  void attention_backward(const AttentionConfig& config, const AttentionBackwardProblem& problem, void* workspace,
                          size_t, CUstream_st* stream) override {
    runtime_->launch_attention_bwd(gpu::plan_attention_bwd(config, problem, workspace), stream);
  }

  void quantize(const sm90::quant::QuantizeParams& p, void* workspace, size_t, CUstream_st* stream) override {
    runtime_->launch_quantize(gpu::plan_quantize(p, workspace), stream);
  }

  void combine(const sm90::combine::CombineParams& p, void*, size_t, CUstream_st* stream) override {
    gpu::check_combine_supported(p);
    runtime_->launch_combine(p, stream);
  }
  /// NOTE: no workspace, no allocation, no synchronization: slots the host could not read are
  /// checked by the kernel, which skips those past the cache.
  void kv_append(const sm90::kv::KvAppendParams& p, CUstream_st* stream) override {
    if (p.tokens > 0) runtime_->launch_kv_append(p, stream);
  }

  size_t spectral_workspace_size(const QkShape& shape) const override {
    return gpu::spectral_workspace_bytes(shape, runtime_->gemm_scratch_bytes());
  }

  void qk_spectral_norms(const WeightMatrix& wq, const WeightMatrix& wk, const QkShape& shape,
                         const PowerIterationSettings& settings, float* sigma_out, void* workspace, size_t,
                         CUstream_st* stream) override {
    gpu::run_spectral(*runtime_, wq, wk, shape, settings, sigma_out, workspace, stream);
  }

 private:
  std::unique_ptr<DeviceRuntime> runtime_;
};

}  // namespace

std::unique_ptr<Backend> make_gpu_backend(std::unique_ptr<DeviceRuntime> runtime) {
  return std::make_unique<GpuBackend>(std::move(runtime));
}

}  // namespace fp8attn
