#include "lib/backend/gpu/gpu_backend.hpp"

#include <cstring>

#include "lib/backend/gpu/attention_fwd_plan.hpp"

namespace fp8attn {
namespace {

class GpuBackend final : public Backend {
 public:
  explicit GpuBackend(std::unique_ptr<DeviceRuntime> runtime) : runtime_(std::move(runtime)) {}
  int32_t kind() const override { return runtime_->backend_kind(); }
  int32_t tensor_device() const override { return runtime_->tensor_device(); }

  void check_attention(const AttentionConfig& config) const override { gpu::check_attention_fwd_supported(config); }

  size_t attention_workspace_size(const AttentionConfig& config, int64_t, int64_t, int64_t) const override {
    gpu::check_attention_fwd_supported(config);
    return gpu::attention_fwd_workspace_bytes(config);
  }

  /// NOTE: no allocation and no synchronization: the counters live in the caller's workspace and
  /// are zeroed on the stream, so the call can be captured in a CUDA graph. The host telemetry
  /// struct is filled here only where copies complete on return (the emulator).
  void attention_forward(const AttentionConfig& config, const AttentionProblem& problem, void* workspace, size_t,
                         CUstream_st* stream) override {
    const sm90::FwdLaunch launch = gpu::plan_attention_fwd(config, problem, workspace, runtime_->sm_count());
    if (launch.args.telemetry != nullptr) runtime_->zero_async(workspace, sizeof(sm90::FwdTelemetryCounters), stream);
    runtime_->launch_attention_fwd(launch, stream);
    if (launch.args.telemetry != nullptr && problem.telemetry != nullptr && runtime_->completes_on_return()) {
      sm90::FwdTelemetryCounters counters{};
      runtime_->copy_to_host_async(&counters, workspace, sizeof counters, stream);
      problem.telemetry->p_positive = counters.p_positive;
      problem.telemetry->p_underflow = counters.p_underflow;
      std::memcpy(&problem.telemetry->max_abs_scaled_logit, &counters.max_abs_scaled_logit_bits, sizeof(float));
    }
  }

 private:
  std::unique_ptr<DeviceRuntime> runtime_;
};

}  // namespace

std::unique_ptr<Backend> make_gpu_backend(std::unique_ptr<DeviceRuntime> runtime) {
  return std::make_unique<GpuBackend>(std::move(runtime));
}

}  // namespace fp8attn
