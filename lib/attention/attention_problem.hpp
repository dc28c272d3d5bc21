// One forward call's tensors after validation: the "device parameters" built from the
// caller's fp8attn_attention_args in one place (make_attention_problem), where every shape,
// stride, sequence length and descale is checked. Backends read only this.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "lib/attention/attention_config.hpp"

namespace fp8attn {

/// A [batch, seq, head, dim] view. Padded layouts use batch_stride; packed (varlen) layouts
/// have batch_stride 0 and take the sequence's first row from cu_seqlens.
struct SeqTensor {
  void* data = nullptr;
  int32_t dtype = 0;
  int64_t batch_stride = 0, seq_stride = 0, head_stride = 0, dim_stride = 0;  // elements
};

/// A [batch, heads_kv] F32 descale; absent means `value` (1 by default).
struct Descale {
  const float* data = nullptr;
  int64_t batch_stride = 0, head_stride = 0;
  /// Without data: one per-tensor descale by value (a scale state's: host memory the GPU path
  /// cannot point its kernel at).
  float value = 1.0f;
  float at(int64_t b, int64_t h) const { return data ? data[b * batch_stride + h * head_stride] : value; }
};

/// A [batch, heads, blocks] F32 per-block descale; absent means 1.
struct BlockDescale {
  const float* data = nullptr;
  int64_t batch_stride = 0, head_stride = 0, block_stride = 0;
  /// The largest value, when validation read them on the host (1 otherwise); for the range check.
  float largest = 1.0f;
  bool present() const { return data != nullptr; }
  float at(int64_t b, int64_t h, int64_t block) const {
    return data ? data[b * batch_stride + h * head_stride + block * block_stride] : 1.0f;
  }
};

/// Where sequence b's rows start and how many there are.
struct SeqSpan {
  int64_t q_offset, seqlen_q, k_offset, seqlen_k;
};

/// Figures a forward call measures for FP8 training (amax_o, the logit amax), host memory,
/// written by the engine.
struct ForwardAmax {
  float o = 0.0f;      ///< max |O| before the output scale and the cast
  float logit = 0.0f;  ///< max |S·softmax_scale·q_descale·k_descale| (telemetry's figure)
};

struct AttentionProblem {
  int64_t batch = 0;
  bool varlen = false;
  int64_t max_seqlen_q = 0, max_seqlen_k = 0;
  SeqTensor q, k, v, out;
  SeqTensor lse;  ///< dims used: batch, seq, head (dim_stride unused); data NULL when absent
  Descale q_descale, k_descale, v_descale;
  BlockDescale q_block_descale, k_block_descale, v_block_descale;
  const int32_t* cu_seqlens_q = nullptr;  ///< varlen only
  const int32_t* cu_seqlens_k = nullptr;
  int64_t padded_seqlen_q = 0, padded_seqlen_k = 0;  ///< padded only
  int64_t total_q = 0, total_k = 0;                  ///< varlen only: rows of the packed tensors
  fp8attn_telemetry* telemetry = nullptr;  ///< when the plan asks for telemetry and one is given
  /// E4M3 output only: out = round_e4m3(O · out_scale). Finite and > 0 (checked by the caller).
  float out_scale = 1.0f;
  /// When set (CPU engine only), the engine measures max |O| and max |scaled logit| into it; the
  /// config must then have telemetry on for the logit figure (capi/forward_api.cpp does that).
  ForwardAmax* amax = nullptr;

  SeqSpan span(int64_t b) const {
    if (!varlen) return {0, padded_seqlen_q, 0, padded_seqlen_k};
    return {cu_seqlens_q[b], cu_seqlens_q[b + 1] - cu_seqlens_q[b], cu_seqlens_k[b],
            cu_seqlens_k[b + 1] - cu_seqlens_k[b]};
  }
};

/// Element offset (in elements) of [b, offset + s, h, d] in t.
inline int64_t element_offset(const SeqTensor& t, int64_t b, int64_t row, int64_t h, int64_t d) {
  return b * t.batch_stride + row * t.seq_stride + h * t.head_stride + d * t.dim_stride;
}

/// Requires that no two elements of output tensor t share an address (BAD_STRIDE otherwise).
void require_no_overlap(const fp8attn_tensor& t, std::string_view what);

/// Refuses, with BAD_SCALE naming the fields, a logit scale softmax_scale · q_descale · k_descale ·
/// log2(e) that is not a normal finite FP32 value, or that (with the per-block descales' largest
/// values and the input format's largest code) can carry a logit out of FP32's range; and a V
/// descale with which O can leave the output dtype's range. The descale values are read where the
/// host can read them: host tensors, and per-tensor descales given by value (a scale state's).
void require_scales_in_range(const AttentionConfig& config, const AttentionProblem& problem, int32_t device);

/// Validates args against the config for a backend whose tensors live on `device`.
/// Throws Error with the status of the first problem found.
AttentionProblem make_attention_problem(const AttentionConfig& config, const fp8attn_attention_args& args,
                                        int32_t device);

}  // namespace fp8attn
