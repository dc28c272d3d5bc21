#include "lib/backend/cuda/cuda_runtime.hpp"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <mutex>
#include <set>
#include <string>
#include <tuple>

#include "kernels/sm90/attention/attention_bwd_cuda.hpp"
#include "kernels/sm90/attention/attention_fwd_cuda.hpp"
#include "kernels/sm90/combine/combine_cuda.hpp"
#include "kernels/sm90/decode/decode_launch.hpp"
#include "kernels/sm90/kv_append/kv_append_cuda.hpp"
#include "kernels/sm90/quantize/quantize_cuda.hpp"
#include "lib/backend/cuda/spectral_ops_cuda.hpp"
#include "lib/core/error.hpp"

namespace fp8attn::cuda {
namespace {

std::string version_text(int v) {
  return v == 0 ? std::string("none") : std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

/// Throws DEVICE_ERROR naming the call and CUDA's error string.
void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess)
    throw Error(FP8ATTN_STATUS_DEVICE_ERROR, std::string(call) + " failed: " + cudaGetErrorString(status));
}
void check(const std::string& why) {
  if (!why.empty()) throw Error(FP8ATTN_STATUS_DEVICE_ERROR, why);
}

class CudaRuntime final : public DeviceRuntime {
 public:
  CudaRuntime(int ordinal, int sm_count, cublasLtHandle_t lt) : ordinal_(ordinal), sm_count_(sm_count), lt_(lt) {}
  ~CudaRuntime() override { cublasLtDestroy(lt_); }

  int32_t backend_kind() const override { return FP8ATTN_BACKEND_CUDA; }
  int32_t tensor_device() const override { return FP8ATTN_DEVICE_CUDA; }
  int sm_count() const override { return sm_count_; }
  bool completes_on_return() const override { return false; }

  void* allocate(size_t bytes) override {
    select();
    void* p = nullptr;
    const cudaError_t status = cudaMalloc(&p, bytes == 0 ? 1 : bytes);
    if (status == cudaErrorMemoryAllocation)
      throw Error(FP8ATTN_STATUS_OUT_OF_MEMORY, "cudaMalloc of " + std::to_string(bytes) + " bytes: out of memory");
    check(status, "cudaMalloc");
    return p;
  }
  void release(void* device) override { cudaFree(device); }
  void synchronize(CUstream_st* stream) override { check(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); }
  void zero_async(void* device, size_t bytes, CUstream_st* stream) override {
    select();
    check(cudaMemsetAsync(device, 0, bytes, stream), "cudaMemsetAsync");
  }
  void copy_to_host_async(void* host, const void* device, size_t bytes, CUstream_st* stream) override {
    select();
    check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync (device to host)");
  }

  void* allocate_pinned(size_t bytes) override {
    select();
    void* p = nullptr;
    const cudaError_t status = cudaHostAlloc(&p, bytes == 0 ? 1 : bytes, cudaHostAllocPortable);
    if (status == cudaErrorMemoryAllocation)
      throw Error(FP8ATTN_STATUS_OUT_OF_MEMORY, "cudaHostAlloc of " + std::to_string(bytes) + " bytes: out of memory");
    check(status, "cudaHostAlloc");
    return p;
  }
  void release_pinned(void* host) override { cudaFreeHost(host); }
  void launch_host_func(void (*fn)(void*), void* arg, CUstream_st* stream) override {
    select();
    check(cudaLaunchHostFunc(stream, fn, arg), "cudaLaunchHostFunc");
  }

  void prepare_attention_fwd(const sm90::FwdKernelKey& key) override {
    std::lock_guard<std::mutex> lock(prepared_mutex_);
    // NOTE: the input type is part of the key: an E4M3 and a BF16 kernel of one head dim are
    // different functions, each with its own shared-memory attribute.
    const auto id = std::make_tuple(key.head_dim, static_cast<int>(key.promotion), key.telemetry,
                                    static_cast<int>(key.input) + (key.decode ? 2 : 0));
    if (prepared_.count(id) != 0) return;
    select();
    check(key.decode ? sm90::prepare_attention_decode_cuda(key) : sm90::prepare_attention_fwd_cuda(key));
    prepared_.insert(id);
  }
  void launch_attention_fwd(const sm90::FwdLaunch& launch, CUstream_st* stream) override {
    prepare_attention_fwd(launch.key);  // NOTE: a no-op after plan creation did it
    check(launch.key.decode ? sm90::launch_attention_decode_cuda(launch, stream)
                            : sm90::launch_attention_fwd_cuda(launch, stream));
  }
  void prepare_attention_bwd(const sm90::BwdKernelKey& key) override {
    std::lock_guard<std::mutex> lock(prepared_mutex_);
    if (prepared_bwd_.count(key.head_dim) != 0) return;
    select();
    check(sm90::prepare_attention_bwd_cuda(key));
    prepared_bwd_.insert(key.head_dim);
  }
  void launch_attention_bwd(const sm90::BwdLaunch& launch, CUstream_st* stream) override {
    prepare_attention_bwd(launch.key);  // NOTE: a no-op after plan creation did it
    check(sm90::launch_attention_bwd_cuda(launch, stream));
  }
  void launch_quantize(const sm90::quant::QuantizeParams& p, CUstream_st* stream) override {
    select();
    check(sm90::quant::run_quantize_cuda(p, stream));
  }
  void launch_combine(const sm90::combine::CombineParams& p, CUstream_st* stream) override {
    select();
    check(sm90::combine::run_combine_cuda(p, stream));
  }
  void launch_kv_append(const sm90::kv::KvAppendParams& p, CUstream_st* stream) override {
    select();
    check(sm90::kv::run_kv_append_cuda(p, stream));
  }
  size_t gemm_scratch_bytes() const override { return kCublasLtScratchBytes; }
  void gemm(const gpu::BatchedGemmDesc& desc, CUstream_st* stream) override {
    select();
    check(run_gemm_cublaslt(lt_, desc, stream));
  }
  void rescale_blocks(const gpu::RescaleDesc& desc, CUstream_st* stream) override {
    check(launch_rescale_cuda(desc, stream));
  }
  void power_iteration(const gpu::PowerIterationDesc& desc, CUstream_st* stream) override {
    check(launch_power_iteration_cuda(desc, stream));
  }

 private:
  /// The context's device for this thread's runtime calls (a host thread may serve several).
  void select() const { check(cudaSetDevice(ordinal_), "cudaSetDevice"); }

  int ordinal_;
  int sm_count_;
  cublasLtHandle_t lt_;
  std::mutex prepared_mutex_;
  std::set<std::tuple<int, int, bool, int>> prepared_;
  std::set<int> prepared_bwd_;  ///< head dims whose backward kernels have their shared-memory limit
};

}  // namespace

std::unique_ptr<DeviceRuntime> make_cuda_runtime(int ordinal) {
  int driver = 0, runtime = 0, count = 0;
  cudaDriverGetVersion(&driver);  // NOTE: 0 when no driver is installed; never fails otherwise
  cudaRuntimeGetVersion(&runtime);
  const std::string versions = "driver " + version_text(driver) + ", runtime " + version_text(runtime);
  const cudaError_t listed = cudaGetDeviceCount(&count);
  if (listed != cudaSuccess || count == 0) {
    cudaGetLastError();  // NOTE: clear the sticky-free error so later calls start clean
    throw Error(FP8ATTN_STATUS_NO_CUDA_DEVICE,
                "no CUDA device: device " + std::to_string(ordinal) + " not found, compute capability unknown (" +
                    versions + "); cudaGetDeviceCount: " +
                    (listed != cudaSuccess ? cudaGetErrorString(listed) : "0 devices"));
  }
  if (ordinal < 0 || ordinal >= count)
    throw Error(FP8ATTN_STATUS_NO_CUDA_DEVICE, "no CUDA device at ordinal " + std::to_string(ordinal) + ": " +
                                                   std::to_string(count) + " device(s), compute capability unknown (" +
                                                   versions + ")");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties");
  const std::string device = "device " + std::to_string(ordinal) + " (" + prop.name + ", compute capability " +
                             std::to_string(prop.major) + "." + std::to_string(prop.minor) + "; " + versions + ")";
  if (prop.major != 9 || prop.minor != 0)
    throw Error(FP8ATTN_STATUS_UNSUPPORTED_DEVICE,
                device + " is not a Hopper GPU: libfp8attn_cuda's kernels are built for sm_90a only");
  check(cudaSetDevice(ordinal), "cudaSetDevice");
  cublasLtHandle_t lt = nullptr;
  const cublasStatus_t lt_status = cublasLtCreate(&lt);
  if (lt_status != CUBLAS_STATUS_SUCCESS)
    throw Error(FP8ATTN_STATUS_DEVICE_ERROR,
                std::string("cublasLtCreate failed on ") + device + ": " + cublasLtGetStatusString(lt_status));
  return std::make_unique<CudaRuntime>(ordinal, prop.multiProcessorCount, lt);
}

}  // namespace fp8attn::cuda
