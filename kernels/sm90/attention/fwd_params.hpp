// Device parameters of the attention forward kernel (attention_fwd_kernel.hpp), one layout for
// every instance: E4M3 inputs (QGMMA) and BF16 inputs (HGMMA), BF16, F32 or E4M3 output. The host
// plan (lib/backend/gpu/attention_fwd_plan.cpp) builds them from a validated problem in one
// place; the kernel reads nothing else. Strides are in elements.
#pragma once

#include <cstdint>

#include "kernels/arch/platform.hpp"
#include "kernels/ptx/tma_tensor_map.hpp"
#include "kernels/sm90/decode/decode_params.hpp"

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

/// Faults of device-side inputs that the host cannot check before a launch, carved from the
/// caller's workspace (after the telemetry counters) and zeroed on the stream before a paged
/// launch: each word is set to 1 (an atomic max) by any CTA that met its fault.
struct FwdPagedFaults {
  uint32_t page_out_of_range;     ///< a block-table entry outside [0, num_pages): page 0 was read
  uint32_t seqused_out_of_range;  ///< a seqused_k outside [0, max_seqlen_k]: it was clamped
};

/// A paged KV cache (vLLM's and FlashAttention-3's layout): tma_k / tma_v map the caches as
/// {dim, head, token, page}; key j of sequence b is token j % page_size of page
/// block_table[b · table_batch_stride + (j / page_size) · table_page_stride], and sequence b has
/// seqused_k[b · seqused_stride] keys, clamped to [0, FwdArguments::seqlen_k] (the host's bound).
/// NOTE: 32-bit table strides and pages (the plan checks them): the producer runs in 24 registers.
struct FwdPagedKv {
  const int32_t* block_table = nullptr;  ///< paged iff non-null
  int32_t table_batch_stride = 0, table_page_stride = 0;
  const int32_t* seqused_k = nullptr;
  int32_t seqused_stride = 0;
  int32_t page_size = 0, num_pages = 0;
  /// Rows per TMA box: gcd(page_size, BlockN, sink_tokens), a multiple of 8; a block is BlockN /
  /// box_rows boxes, each inside one page. 0: the rows are gathered by the producer warpgroup's
  /// warps 1-3 with plain loads (fwd_paged_kv.hpp), which also read the caches' byte strides.
  int32_t box_rows = 0;
  const uint8_t* k_cache = nullptr;
  const uint8_t* v_cache = nullptr;
  int32_t k_page_bytes = 0, k_token_bytes = 0, k_head_bytes = 0;  ///< < 2^31 (the plan checks)
  int32_t v_page_bytes = 0, v_token_bytes = 0, v_head_bytes = 0;
  /// BF16 kernels: the caches hold E4M3 codes, which the gather path (box_rows = 0: TMA cannot
  /// convert) decodes exactly to BF16 in shared memory (fwd_paged_kv.hpp, e4m3x4_to_bf16x4).
  bool e4m3_cache = false;
  FwdPagedFaults* faults = nullptr;
  /// PER_TOKEN_HEAD descales (F32 [num_pages, page_size, heads_kv], strides in elements, < 2^31:
  /// the plan checks), applied in the kernel (fwd_kv_token_scales.hpp); null without them.
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  int32_t k_scale_page_stride = 0, k_scale_token_stride = 0, k_scale_head_stride = 0;
  int32_t v_scale_page_stride = 0, v_scale_token_stride = 0, v_scale_head_stride = 0;
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
  /// O goes out through shared memory and TMA stores of tma_o (kernels with FwdConfig::kTmaOut):
  /// the plan sets it for a BF16 output of fixed-length sequences that TMA can write (dim stride 1,
  /// 16-byte strides and base). Rows past the sequence are clipped by the map's bounds.
  bool tma_out = false;
  float* lse = nullptr;  ///< optional
  int64_t lse_batch_stride = 0, lse_seq_stride = 0, lse_head_stride = 0;
  const int32_t* cu_seqlens_q = nullptr;  ///< varlen iff non-null (then cu_seqlens_k too, unless paged)
  const int32_t* cu_seqlens_k = nullptr;
  int64_t seqlen_q = 0, seqlen_k = 0;  ///< padded layouts; paged: seqlen_k is max_seqlen_k, seqused_k's bound
  int32_t batch = 0, heads_q = 0, heads_kv = 0;
  int32_t m_blocks = 0;   ///< query tiles of the longest sequence
  int32_t num_tiles = 0;  ///< m_blocks · heads_q · batch (the plan refuses more than INT32_MAX)
  int32_t tile_group = 0; ///< (batch, head) pairs per section of the tile order (fwd_tile_group); 0: all
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
  FwdPagedKv paged;  ///< K and V from a paged cache (then cu_seqlens_k is null; seqlen_k bounds seqused_k)
  FwdDecode decode;  ///< GQA-packed decode tiles (the decode kernels, kernels/sm90/decode)
};

/// The kernel's parameters: the arguments plus Q, K, V (and O) as 4D tensor maps {dim, head, seq,
/// batch}, which each device runtime encodes its own way (ptx/tma_tensor_map.hpp). Packed
/// (varlen) inputs have batch = 1 and take each sequence's first row from cu_seqlens.
struct AttentionFwdParams : FwdArguments {
  arch::TensorMap tma_q, tma_k, tma_v;
  arch::TensorMap tma_o;  ///< the output {dim, head, seq, batch}, box 64 × 1 × 64 × 1 (with tma_out)
};

/// Named barriers of the kernel (ids 1..15; 0 is __syncthreads). NOTE: the pingpong schedule
/// gives consumer warpgroup c the tensor cores while the others run their softmax: c waits on
/// its turn barrier before issuing Q·Kᵀ and then hands the turn to the next consumer, as
/// FlashAttention-3's warp scheduler barriers do.
enum class FwdBarrier : unsigned {
  kConsumerTurn0 = 1,    ///< ids 1..kConsumers: consumer c's turn on the tensor cores
  kOStage0 = 4,          ///< ids 4..3 + kConsumers: consumer c's threads around its O stage (tma_out)
  kTelemetryMerge = 8,   ///< the consumers' slots of the telemetry merge are written
  kProducerVt = 9,       ///< the producer warpgroup's parts of a stage's Vᵀ (or gathered K, V) are written
  /// ids 10..9 + kConsumers: consumer c's threads have read the stage's per-token descales
  /// (fwd_kv_token_scales.hpp), before its leader frees the stage
  kTokenScalesRead0 = 10,
};

FP8ATTN_HOST_DEVICE constexpr unsigned barrier_id(FwdBarrier b, unsigned offset = 0) {
  return static_cast<unsigned>(b) + offset;
}

}  // namespace fp8attn::sm90
