#include "lib/backend/emulated_runtime.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/emu/runtime.hpp"
#include "kernels/sm90/combine/combine_emulated.hpp"
#include "kernels/sm90/decode/decode_launch.hpp"
#include "kernels/sm90/kv_append/kv_append_emulated.hpp"
#include "kernels/sm90/quantize/quantize_emulated.hpp"
#include "lib/backend/emulated_device_ops.hpp"
#include "lib/core/error.hpp"

namespace fp8attn {
namespace {

class EmulatedRuntime final : public DeviceRuntime {
 public:
  EmulatedRuntime(const EmulatorSchedule& schedule, std::shared_ptr<DeviceRuntimeCounters> counters)
      : schedule_(schedule), counters_(std::move(counters)) {}

  int32_t backend_kind() const override { return FP8ATTN_BACKEND_EMULATOR; }
  int32_t tensor_device() const override { return FP8ATTN_DEVICE_HOST; }
  int sm_count() const override { return schedule_.sm_count; }
  bool completes_on_return() const override { return true; }

  void* allocate(size_t bytes) override {
    ++counters_->allocations;
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    require(p != nullptr, FP8ATTN_STATUS_OUT_OF_MEMORY, "emulated device allocation of " + std::to_string(bytes) + " bytes failed");
    return p;
  }
  void release(void* device) override { std::free(device); }
  void synchronize(CUstream_st*) override { ++counters_->synchronizations; }

  void zero_async(void* device, size_t bytes, CUstream_st*) override {
    ++counters_->copies;
    std::memset(device, 0, bytes);
  }

  void copy_to_host_async(void* host, const void* device, size_t bytes, CUstream_st*) override {
    ++counters_->copies;
    std::memcpy(host, device, bytes);
  }

  // NOTE: not counted as a device allocation: host staging, made once at context creation.
  void* allocate_pinned(size_t bytes) override {
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    require(p != nullptr, FP8ATTN_STATUS_OUT_OF_MEMORY, "host staging of " + std::to_string(bytes) + " bytes failed");
    return p;
  }
  void release_pinned(void* host) override { std::free(host); }
  void launch_host_func(void (*fn)(void*), void* arg, CUstream_st*) override { fn(arg); }  // the stream is done

  void prepare_attention_fwd(const sm90::FwdKernelKey&) override {}  // emulated shared memory has no limit to raise

  void launch_attention_fwd(const sm90::FwdLaunch& launch, CUstream_st*) override {
    ++counters_->launches;
    fail_if_injected("the attention forward launch");
    emu::LaunchConfig config;
    config.seed = schedule_.seed;
    config.shuffle = schedule_.shuffle;
    config.proxy_fence_check = true;  // as launch_config() below
    // The plan's accumulator model, per launch, so that concurrent calls may differ.
    config.mma_model = launch.mma_model;
    try {
      // NOTE: a decode launch is the forward kernel with a decode config (kernels/sm90/decode).
      if (launch.key.decode) sm90::launch_attention_decode_emulated(launch, config);
      else sm90::launch_attention_fwd_emulated(launch, config);
    } catch (const emu::KernelError& e) {
      throw Error(FP8ATTN_STATUS_DEVICE_ERROR, std::string("emulated attention kernel failed: ") + e.what());
    } catch (const std::invalid_argument& e) {
      throw Error(FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND, std::string("attention launch refused: ") + e.what());
    }
  }

  void prepare_attention_bwd(const sm90::BwdKernelKey&) override {}

  void launch_attention_bwd(const sm90::BwdLaunch& launch, CUstream_st*) override {
    ++counters_->launches;
    fail_if_injected("the attention backward launch");
    try {
      sm90::launch_attention_bwd_emulated(launch, launch_config());
    } catch (const emu::KernelError& e) {
      throw Error(FP8ATTN_STATUS_DEVICE_ERROR, std::string("emulated attention backward kernel failed: ") + e.what());
    } catch (const std::invalid_argument& e) {
      throw Error(FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND, std::string("attention backward launch refused: ") + e.what());
    }
  }

  void launch_quantize(const sm90::quant::QuantizeParams& p, CUstream_st*) override {
    ++counters_->launches;
    fail_if_injected("the quantizer launch");
    try {
      sm90::quant::run_quantize_emulated(p, launch_config());
    } catch (const emu::KernelError& e) {
      throw Error(FP8ATTN_STATUS_DEVICE_ERROR, std::string("emulated quantizer kernel failed: ") + e.what());
    } catch (const std::invalid_argument& e) {
      throw Error(FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND, std::string("quantizer launch refused: ") + e.what());
    }
  }

  void launch_combine(const sm90::combine::CombineParams& p, CUstream_st*) override {
    ++counters_->launches;
    fail_if_injected("the combine launch");
    try {
      sm90::combine::run_combine_emulated(p, launch_config());
    } catch (const emu::KernelError& e) {
      throw Error(FP8ATTN_STATUS_DEVICE_ERROR, std::string("emulated combine kernel failed: ") + e.what());
    } catch (const std::invalid_argument& e) {
      throw Error(FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND, std::string("combine launch refused: ") + e.what());
    }
  }

  void launch_kv_append(const sm90::kv::KvAppendParams& p, CUstream_st*) override {
    ++counters_->launches;
    fail_if_injected("the KV append launch");
    try {
      sm90::kv::run_kv_append_emulated(p, launch_config());
    } catch (const emu::KernelError& e) {
      throw Error(FP8ATTN_STATUS_DEVICE_ERROR, std::string("emulated KV append kernel failed: ") + e.what());
    } catch (const std::invalid_argument& e) {
      throw Error(FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND, std::string("KV append launch refused: ") + e.what());
    }
  }

  size_t gemm_scratch_bytes() const override { return 0; }
  void gemm(const gpu::BatchedGemmDesc& desc, CUstream_st*) override {
    ++counters_->launches;
    fail_if_injected("the batched GEMM (cuBLASLt's matmul on CUDA)");
    emulated::gemm(desc, launch_config());
  }
  void rescale_blocks(const gpu::RescaleDesc& desc, CUstream_st*) override {
    ++counters_->launches;
    fail_if_injected("the block rescale launch");
    emulated::rescale_blocks(desc);
  }
  void power_iteration(const gpu::PowerIterationDesc& desc, CUstream_st*) override {
    ++counters_->launches;
    fail_if_injected("the power-iteration launch");
    emulated::power_iteration(desc);
  }

 private:
  /// The injected failure of FP8ATTN_EMULATOR_FAIL=launch, raised before the kernel touches
  /// memory, with the message shape of the CUDA runtime's errors (the call, then why).
  void fail_if_injected(const char* call) const {
    if (schedule_.fail_launches)
      throw Error(FP8ATTN_STATUS_DEVICE_ERROR, std::string(call) + " failed: injected device error (FP8ATTN_EMULATOR_FAIL=launch)");
  }

  emu::LaunchConfig launch_config() const {
    emu::LaunchConfig config;
    config.seed = schedule_.seed;
    config.shuffle = schedule_.shuffle;
    // NOTE: every launch also checks that an async-proxy read (a wgmma operand, a TMA store's
    // source) of shared memory written through the generic proxy follows a fence.proxy.async by
    // the writer: a missing fence is a race on hardware that no value comparison here can see.
    config.proxy_fence_check = true;
    return config;
  }

  EmulatorSchedule schedule_;
  std::shared_ptr<DeviceRuntimeCounters> counters_;
};

}  // namespace

EmulatorSchedule emulator_schedule_from_environment() {
  EmulatorSchedule s;
  if (const char* v = std::getenv("FP8ATTN_EMULATOR_SCHEDULE"); v != nullptr && *v != '\0') {
    const std::string text(v);
    if (text.rfind("shuffle:", 0) == 0) {
      char* end = nullptr;
      s.seed = std::strtoull(text.c_str() + 8, &end, 10);
      require(end != text.c_str() + 8 && *end == '\0', FP8ATTN_STATUS_BAD_OPTION,
              "FP8ATTN_EMULATOR_SCHEDULE: expected shuffle:SEED, got '" + text + "'");
      s.shuffle = true;
    } else {
      require(text == "round-robin", FP8ATTN_STATUS_BAD_OPTION,
              "FP8ATTN_EMULATOR_SCHEDULE: expected round-robin or shuffle:SEED, got '" + text + "'");
    }
  }
  if (const char* v = std::getenv("FP8ATTN_EMULATOR_SMS"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    require(*end == '\0' && n >= 1 && n <= 1024, FP8ATTN_STATUS_BAD_OPTION,
            std::string("FP8ATTN_EMULATOR_SMS: expected 1..1024, got '") + v + "'");
    s.sm_count = static_cast<int>(n);
  }
  if (const char* v = std::getenv("FP8ATTN_EMULATOR_FAIL"); v != nullptr && *v != '\0') {
    require(std::string(v) == "launch", FP8ATTN_STATUS_BAD_OPTION,
            std::string("FP8ATTN_EMULATOR_FAIL: expected launch, got '") + v + "'");
    s.fail_launches = true;
  }
  return s;
}

std::unique_ptr<DeviceRuntime> make_emulated_runtime(const EmulatorSchedule& schedule,
                                                     std::shared_ptr<DeviceRuntimeCounters> counters) {
  return std::make_unique<EmulatedRuntime>(schedule, std::move(counters));
}

}  // namespace fp8attn
