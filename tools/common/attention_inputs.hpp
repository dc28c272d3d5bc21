// Attention inputs for tests, tools and studies (not part of libfp8attn): real-valued Q, K, V
// drawn from the distributions the numerics claims are stated for, and their quantization to
// E4M3 or BF16 with per-(sequence, KV head) descales.
#pragma once

#include <cstdint>
#include <vector>

namespace fp8attn::workloads {

/// Padded layout [batch, seqlen, heads, dim], contiguous. Varlen runs pack the same rows.
struct AttentionShape {
  int64_t batch = 1;
  int64_t seqlen_q = 128;
  int64_t seqlen_k = 128;
  int heads_q = 1;
  int heads_kv = 1;
  int head_dim = 128;
};

struct AttentionInputs {
  AttentionShape shape;
  std::vector<float> q, k, v;  // real values
};

/// Q, K, V ~ N(0, stddev²), i.i.d.
AttentionInputs normal_inputs(const AttentionShape& shape, uint64_t seed, float stddev = 1.0f);

/// FlashAttention-3's outlier distribution: N(0,1) + N(0,100)·Bernoulli(0.001), i.i.d.
AttentionInputs outlier_inputs(const AttentionShape& shape, uint64_t seed);

/// The sink model (DESIGN §3): for every query, the first k_sink keys have logit Δ + z and the
/// others z, z ~ N(0,1), in natural-log units after `softmax_scale`. K rows are random directions of norm √(d−1) in all
/// but dimension 0, which holds an E4M3 value k₀ ∈ [4, 16] for sinks and 0 otherwise; each
/// query is a random unit direction scaled by 1/softmax_scale in dimensions 1.., and the E4M3
/// value nearest Δ/(k₀ · softmax_scale) in dimension 0, with k₀ chosen to realize Δ closest. V ~ N(0,1). Q's dimension 0 is rounded to E4M3 here so that
/// E4M3 inputs with unit descales realize the requested Δ up to the reported `realized_delta`.
struct SinkInputs {
  AttentionInputs inputs;
  double realized_delta;  ///< Δ after Q and K are rounded to E4M3
};
SinkInputs sink_inputs(const AttentionShape& shape, uint64_t seed, int k_sink, double delta, float softmax_scale);

/// Quantized inputs and their descales (F32 [batch, heads_kv]).
struct QuantizedInputs {
  int32_t dtype;  // FP8ATTN_DTYPE_E4M3 or FP8ATTN_DTYPE_BF16
  std::vector<uint8_t> q, k, v;  // raw element bytes
  std::vector<float> q_descale, k_descale, v_descale;
  /// PerBlock only: F32 [batch, heads_q, ceil(seqlen_q / block_m)] and [batch, heads_kv,
  /// kv_blocks]; the per-head descales above are then 1.
  std::vector<float> q_block_descale, k_block_descale, v_block_descale;
  int64_t q_blocks = 0, kv_blocks = 0;
  int block_m = 0, block_n = 0;
  int64_t kv_leading = 0;  ///< PerBlock: the sink block's keys under sink isolation (0: none)
};

/// Granularity of the descales.
enum class ScaleGranularity { Unit, PerTensor, PerHead, PerBlock };

/// Casts to E4M3 with scale = 448 / amax per (sequence, KV head) (`PerHead`; Q's slice is the
/// query heads of that KV head), per tensor, or with unit scales; or to BF16 (unit scales).
/// PerBlock: one scale per block of block_m query rows of one query head, and per block of
/// block_n keys of one KV head (padded layout; blocks aligned at row 0). With `sink_tokens` > 0
/// the K/V blocks are those of sink isolation: keys [0, sink_tokens), then blocks of block_n.
QuantizedInputs quantize(const AttentionInputs& in, int32_t dtype, ScaleGranularity granularity, int block_m = 0,
                         int block_n = 0, int64_t sink_tokens = 0);

/// Dequantized values of quantized inputs, as doubles, in the same layout.
struct DequantizedInputs {
  std::vector<double> q, k, v;
};
DequantizedInputs dequantize(const AttentionInputs& shape_source, const QuantizedInputs& quantized);

}  // namespace fp8attn::workloads
