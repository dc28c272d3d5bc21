// The device-runtime seam under the Hopper backend's host code. The plan code (kernel choice,
// tensor maps, launch geometry, workspace carving) is written once in lib/backend/gpu and calls
// only this interface. Two implementations: the CUDA runtime (cudart and driver entry points, in
// libfp8attn_cuda) and the emulator (host memory as device memory, emu::launch), which is what
// FP8ATTN_BACKEND_EMULATOR runs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/sm90/attention/bwd_launch.hpp"
#include "kernels/sm90/attention/fwd_launch.hpp"
#include "kernels/sm90/combine/combine_params.hpp"
#include "kernels/sm90/kv_append/kv_append_params.hpp"
#include "kernels/sm90/quantize/quantize_params.hpp"
#include "lib/backend/gpu/device_ops.hpp"

struct CUstream_st;

namespace fp8attn {

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  /// FP8ATTN_BACKEND_CUDA or FP8ATTN_BACKEND_EMULATOR.
  virtual int32_t backend_kind() const = 0;
  /// FP8ATTN_DEVICE_CUDA or FP8ATTN_DEVICE_HOST: where tensors and workspaces live.
  virtual int32_t tensor_device() const = 0;
  /// Streaming multiprocessors: the persistent grid's CTA count. Queried once, at creation.
  virtual int sm_count() const = 0;
  /// Device memory for resources that outlive a call (plans, contexts); never called by an
  /// execute call, which takes the caller's workspace. Throws Error(OUT_OF_MEMORY).
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* device) = 0;
  /// Waits for `stream`; never called by an execute call (it would break graph capture).
  virtual void synchronize(CUstream_st* stream) = 0;
  /// Fills `bytes` of device memory with zeros, ordered on `stream`.
  virtual void zero_async(void* device, size_t bytes, CUstream_st* stream) = 0;
  /// Copies `bytes` from device memory to host memory, ordered on `stream`.
  virtual void copy_to_host_async(void* host, const void* device, size_t bytes, CUstream_st* stream) = 0;
  /// True when async calls have completed on return (the emulator), so host results may be read
  /// at once; false on a real stream.
  virtual bool completes_on_return() const = 0;
  /// Page-locked host memory that copy_to_host_async() may target without the copy turning
  /// synchronous (cudaHostAlloc): for resources that outlive a call (a context's amax staging),
  /// never called by an execute call. Throws Error(OUT_OF_MEMORY).
  virtual void* allocate_pinned(size_t bytes) = 0;
  virtual void release_pinned(void* host) = 0;
  /// Enqueues fn(arg) on a host thread once the work before it on `stream` is done
  /// (cudaLaunchHostFunc); fn must not call CUDA and must not throw. The emulator calls it at once.
  virtual void launch_host_func(void (*fn)(void*), void* arg, CUstream_st* stream) = 0;
  /// Plan-time setup of one attention kernel (its shared-memory attribute); idempotent.
  virtual void prepare_attention_fwd(const sm90::FwdKernelKey& key) = 0;
  /// Enqueues the attention forward on `stream`. Throws Error on a launch failure.
  virtual void launch_attention_fwd(const sm90::FwdLaunch& launch, CUstream_st* stream) = 0;
  /// Plan-time setup of the attention backward's kernels for `key`; idempotent.
  virtual void prepare_attention_bwd(const sm90::BwdKernelKey& key) = 0;
  /// Enqueues the backward's three kernels (preprocess, main, dQ) on `stream`, in that order.
  /// Throws Error on a launch failure.
  virtual void launch_attention_bwd(const sm90::BwdLaunch& launch, CUstream_st* stream) = 0;
  /// Enqueues both quantizer passes on `stream`; p.unit_amax is carved from the workspace.
  virtual void launch_quantize(const sm90::quant::QuantizeParams& p, CUstream_st* stream) = 0;
  /// Enqueues the combine kernel on `stream`.
  virtual void launch_combine(const sm90::combine::CombineParams& p, CUstream_st* stream) = 0;
  /// Enqueues the KV append kernel on `stream` (nothing for zero tokens).
  virtual void launch_kv_append(const sm90::kv::KvAppendParams& p, CUstream_st* stream) = 0;
  /// Scratch bytes one gemm() call needs (cuBLASLt's workspace on CUDA; 0 on the emulator).
  virtual size_t gemm_scratch_bytes() const = 0;
  /// Enqueues a strided-batched GEMM (cuBLASLt on CUDA, the project's GEMM on the emulator).
  virtual void gemm(const gpu::BatchedGemmDesc& desc, CUstream_st* stream) = 0;
  virtual void rescale_blocks(const gpu::RescaleDesc& desc, CUstream_st* stream) = 0;
  virtual void power_iteration(const gpu::PowerIterationDesc& desc, CUstream_st* stream) = 0;
};

}  // namespace fp8attn
