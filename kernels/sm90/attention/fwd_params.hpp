// Device parameters of the attention forward kernel (attention_fwd_kernel.hpp), one layout for
// every instance: E4M3 inputs (QGMMA) and BF16 inputs (HGMMA), BF16, F32 or E4M3 output. The host
// plan (lib/backend/gpu/attention_fwd_plan.cpp) builds them from a validated problem in one
// place; the kernel reads nothing else. Strides are in elements.
#pragma once

#include <cstdint>

#include "kernels/arch/platform.hpp"
#include "kernels/ptx/tma_tensor_map.hpp"

namespace fp8attn::sm90 {

/// A [batch, heads] or [batch, heads, blocks] F32 descale in device memory; absent (null) =
/// `value`, a per-tensor descale passed by value (a scale state's, which lives on the host).
struct DescaleView {
  const float* data = nullptr;
  int64_t batch_stride = 0, head_stride = 0, block_stride = 0;
  float value = 1.0f;
  FP8ATTN_HOST_DEVICE float at(int64_t b, int64_t h, int64_t block = 0) const {
    return data ? data[b * batch_stride + h * head_stride + block * block_stride] : value;
  }
};

/// The kernel's telemetry counters, carved from the caller's workspace and zeroed on the stream
/// before the launch. One atomic per counter and CTA merges them.
/// NOTE: the two amaxes are adjacent, logit first, so one 8-byte copy picks both up for the
/// scale state (lib/scale/device_amax_pickup.hpp).
struct FwdTelemetryCounters {
  uint64_t p_positive;
  uint64_t p_underflow;
  uint32_t max_abs_scaled_logit_bits;  ///< a non-negative float, merged as u32 (arch/atomic.hpp)
  uint32_t max_abs_o_bits;             ///< max |O| before the output scale (amax_o), merged alike
};

/// Output element type of the epilogue. E4M3 stores round_e4m3_satfinite(O · out_scale).
enum class FwdOutput : int32_t { BF16 = 0, F32 = 1, E4M3 = 2 };

/// Everything but the tensor maps: plain data with one layout in both builds, so the host plan
/// (compiled once, as host C++) fills it for the emulator and the CUDA runtime alike.
struct FwdArguments {
  void* out = nullptr;
  FwdOutput out_type = FwdOutput::BF16;
  float out_scale = 1.0f;  ///< E4M3 output only (cuDNN's scale_o)
  int64_t out_batch_stride = 0, out_seq_stride = 0, out_head_stride = 0, out_dim_stride = 1;
  float* lse = nullptr;  ///< optional
  int64_t lse_batch_stride = 0, lse_seq_stride = 0, lse_head_stride = 0;
  const int32_t* cu_seqlens_q = nullptr;  ///< varlen iff non-null (then cu_seqlens_k too)
  const int32_t* cu_seqlens_k = nullptr;
  int64_t seqlen_q = 0, seqlen_k = 0;  ///< padded layouts
  int32_t batch = 0, heads_q = 0, heads_kv = 0;
  int32_t m_blocks = 0;   ///< query tiles of the longest sequence
  int32_t num_tiles = 0;  ///< m_blocks · heads_q · batch (the plan refuses more than INT32_MAX)
  DescaleView q_descale, k_descale, v_descale;                   // [batch, heads_kv]
  DescaleView q_block_descale, k_block_descale, v_block_descale;  // per block; see fwd_args
  float softmax_scale = 1.0f;
  float p_scale_log2 = 8.0f;
  bool causal = false;
  int64_t window_left = -1, window_right = -1;
  int64_t sink_tokens = 0;
  bool reverse_kv = true;
  /// V given with its keys contiguous: tma_v loads Vᵀ directly, in 32-key slabs (32B swizzle),
  /// and the producer transposes nothing.
  bool v_transposed = false;
  int32_t promote_interval = 0;  ///< kernels instantiated with promotion: add the PV tile every N blocks
  bool stabilized = false;
  float stabilized_beta = 2.0f, stabilized_tie_tol = 1e-3f, stabilized_shift_cap_log2 = 16.0f;
  FwdTelemetryCounters* telemetry = nullptr;  ///< kernels instantiated with telemetry (they also take max |O|)
};

/// The kernel's parameters: the arguments plus Q, K, V as 4D tensor maps {dim, head, seq,
/// batch}, which each device runtime encodes its own way (ptx/tma_tensor_map.hpp). Packed
/// (varlen) inputs have batch = 1 and take each sequence's first row from cu_seqlens.
struct AttentionFwdParams : FwdArguments {
  arch::TensorMap tma_q, tma_k, tma_v;
};

/// Named barriers of the kernel (ids 1..15; 0 is __syncthreads). NOTE: the pingpong schedule
/// gives consumer warpgroup c the tensor cores while the others run their softmax: c waits on
/// its turn barrier before issuing Q·Kᵀ and then hands the turn to the next consumer, as
/// FlashAttention-3's warp scheduler barriers do.
enum class FwdBarrier : unsigned {
  kConsumerTurn0 = 1,    ///< ids 1..kConsumers: consumer c's turn on the tensor cores
  kTelemetryMerge = 8,   ///< the consumers' slots of the telemetry merge are written
  kProducerVt = 9,       ///< the producer warpgroup's parts of a stage's Vᵀ are written
};

FP8ATTN_HOST_DEVICE constexpr unsigned barrier_id(FwdBarrier b, unsigned offset = 0) {
  return static_cast<unsigned>(b) + offset;
}

}  // namespace fp8attn::sm90
