// What a backend does for the core: size workspaces and run operations on validated inputs.
// The CPU engine, the FP64 reference and the CUDA library each implement it; the context owns
// exactly one.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/attention/attention_backward_problem.hpp"
#include "lib/attention/attention_config.hpp"
#include "lib/attention/attention_problem.hpp"
#include "kernels/sm90/combine/combine_params.hpp"
#include "kernels/sm90/kv_append/kv_append_params.hpp"
#include "kernels/sm90/quantize/quantize_params.hpp"
#include "lib/core/error.hpp"
#include "lib/spectral/qk_spectral_norms.hpp"

struct CUstream_st;

namespace fp8attn {

class Backend {
 public:
  virtual ~Backend() = default;
  /// FP8ATTN_BACKEND_CPU, _CUDA, _REFERENCE or _EMULATOR.
  virtual int32_t kind() const = 0;
  /// FP8ATTN_DEVICE_HOST or FP8ATTN_DEVICE_CUDA: where this backend's tensors live.
  virtual int32_t tensor_device() const = 0;
  /// Throws Error (UNSUPPORTED_ON_BACKEND, ...) when this backend cannot run the configuration;
  /// plan creation calls it, so an unsupported plan fails early.
  virtual void check_attention(const AttentionConfig&) const {}
  /// A paged KV cache (desc.page_size ≥ 1, K and V gathered through a block table): true where
  /// this backend's forward runs it. Plan creation refuses a paged plan elsewhere with
  /// UNSUPPORTED_ON_BACKEND, before check_attention. A backend that gathers pages overrides it.
  virtual bool runs_paged_kv(const AttentionConfig&) const { return false; }
  /// K and V in a dtype other than Q's (desc.kv_dtype: BF16 Q over E4M3 K and V); as above.
  virtual bool runs_mixed_kv_dtype(const AttentionConfig&) const { return false; }
  virtual size_t attention_workspace_size(const AttentionConfig& config, int64_t batch, int64_t max_seqlen_q,
                                          int64_t max_seqlen_k) const = 0;
  /// Runs the forward. The workspace has at least attention_workspace_size() bytes for the
  /// problem's sizes (checked by the caller).
  virtual void attention_forward(const AttentionConfig& config, const AttentionProblem& problem, void* workspace,
                                 size_t workspace_bytes, CUstream_st* stream) = 0;
  /// True when the forward measures max |O| and the logit amax and honours problem.out_scale
  /// (the FP8 training outputs): the CPU engine fills problem.amax; the device backends leave the
  /// two figures in the workspace (forward_amax_offset()).
  virtual bool measures_forward_amax() const { return false; }
  /// Device backends: the byte offset in a forward call's workspace of two F32, {max |scaled
  /// logit|, max |O|}, complete once `stream` reaches the end of the call, when the call's config
  /// has telemetry on. −1 for the host backends, which fill problem.amax instead.
  virtual int64_t forward_amax_offset() const { return -1; }

  // The stream-ordered pickup of device amaxes (lib/scale/device_amax_pickup.hpp), on device
  // backends: page-locked staging made once, then per report an async copy and a host function.

  /// True when device work has completed on return (the emulator, and the host backends).
  virtual bool completes_on_return() const { return true; }
  virtual void* allocate_pinned(size_t) { refuse("the device amax pickup"); }
  virtual void release_pinned(void*) {}
  /// Enqueues on `stream` the copy of `bytes` from device memory into pinned `staging`, then
  /// fn(arg) on a host thread after it (cudaLaunchHostFunc); the emulator runs both at once.
  virtual void enqueue_host_pickup(void*, const void*, size_t, void (*)(void*), void*, CUstream_st*) {
    refuse("the device amax pickup");
  }

  // Device operations: the GPU backends (CUDA, emulator) run them through their device runtime;
  // the CPU and reference backends keep their host paths in capi/ and refuse these.

  /// Quantizes on `stream` with the caller's workspace (quant::quantize_workspace_bytes()).
  virtual void quantize(const sm90::quant::QuantizeParams&, void*, size_t, CUstream_st*) { refuse("the quantizer"); }
  /// Appends new K and V rows into a paged cache on `stream` (one kernel; no workspace).
  virtual void kv_append(const sm90::kv::KvAppendParams&, CUstream_st*) { refuse("the KV append"); }
  virtual size_t spectral_workspace_size(const QkShape&) const { refuse("the spectral norms"); }
  /// σ_h of every query head on `stream`; the workspace holds spectral_workspace_size().
  virtual void qk_spectral_norms(const WeightMatrix&, const WeightMatrix&, const QkShape&, const PowerIterationSettings&,
                                 float*, void*, size_t, CUstream_st*) {
    refuse("the spectral norms");
  }
  /// Enqueues the copy of a forward call's telemetry counters, which live in its workspace, into
  /// `out` (host memory) on `stream`.
  virtual void copy_attention_telemetry(const AttentionConfig&, const void*, size_t, fp8attn_telemetry*, CUstream_st*) {
    refuse("the telemetry copy");
  }
  /// Merges partial attention results on `stream` (fp8attn_attention_combine; no workspace).
  virtual void combine(const sm90::combine::CombineParams&, void*, size_t, CUstream_st*) {
    refuse("the attention combine");
  }

  // The attention backward (BF16 inputs): the CPU engine and the Hopper backends (GPU backend) have
  // one; the reference backend refuses it.

  /// Workspace bytes of attention_backward() for problems up to these sizes.
  virtual size_t attention_backward_workspace_size(const AttentionConfig&, int64_t, int64_t, int64_t) const {
    refuse_backward();
  }
  /// Runs the backward on a validated problem; the workspace has at least
  /// attention_backward_workspace_size() bytes for its sizes (checked by the caller).
  virtual void attention_backward(const AttentionConfig&, const AttentionBackwardProblem&, void*, size_t,
                                  CUstream_st*) {
    refuse_backward();
  }

 private:
  [[noreturn]] static void refuse(const char* what) {
    throw Error(FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND, std::string(what) + " has no device path on this backend");
  }
  [[noreturn]] static void refuse_backward() {
    throw Error(FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
                "the attention backward runs on the CPU backend (FP8ATTN_BACKEND_CPU) and the Hopper backends "
                "(FP8ATTN_BACKEND_CUDA, FP8ATTN_BACKEND_EMULATOR); this context's backend has no backward kernel");
  }
};

}  // namespace fp8attn
