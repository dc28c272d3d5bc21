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

/// A paged KV cache (fp8attn_paged_kv) after validation. The problem's `k` and `v` then hold the
/// caches with batch_stride = the page stride and seq_stride = the token stride inside a page;
/// key j of sequence b is token j % page_size of page block_table[b, j / page_size].
struct PagedKv {
  bool present = false;
  int64_t page_size = 0, num_pages = 0, max_pages_per_seq = 0;
  const int32_t* block_table = nullptr;
  int64_t table_batch_stride = 0, table_page_stride = 0;
  const int32_t* seqused_k = nullptr;  ///< [batch]; the backend's memory
  int64_t seqused_stride = 0;
  int32_t scale_granularity = FP8ATTN_KV_SCALE_NONE;
  /// PER_HEAD: [heads_kv] (head_stride only). PER_TOKEN_HEAD: [num_pages, page_size, heads_kv].
  struct ScaleCache {
    const float* data = nullptr;
    int64_t page_stride = 0, token_stride = 0, head_stride = 0;
    /// The largest descale of the tokens in use, when validation read them on the host (1
    /// otherwise); for the range check.
    float largest = 1.0f;
    float at(int64_t page, int64_t token, int64_t head) const {
      return data[page * page_stride + token * token_stride + head * head_stride];
    }
  } k_scale, v_scale;

  /// The page that holds key `key` of sequence b.
  int64_t page(int64_t b, int64_t key) const {
    return block_table[b * table_batch_stride + (key / page_size) * table_page_stride];
  }
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
  /// K and V from a paged cache (desc.page_size ≥ 1): seqlen_k of sequence b is seqused_k[b].
  PagedKv paged;

  /// Sequence b's rows. Paged: its keys are seqused_k[b] (host memory: the CPU backends), counted
  /// from 0 within the sequence (k_offset 0).
  SeqSpan span(int64_t b) const {
    if (paged.present) {
      const int64_t keys = paged.seqused_k[b * paged.seqused_stride];
      if (!varlen) return {0, padded_seqlen_q, 0, keys};
      return {cu_seqlens_q[b], cu_seqlens_q[b + 1] - cu_seqlens_q[b], 0, keys};
    }
    if (!varlen) return {0, padded_seqlen_q, 0, padded_seqlen_k};
    return {cu_seqlens_q[b], cu_seqlens_q[b + 1] - cu_seqlens_q[b], cu_seqlens_k[b],
            cu_seqlens_k[b + 1] - cu_seqlens_k[b]};
  }

  /// Element offset of element d of key `key` (span(b).k_offset + j), KV head h, in k or v:
  /// through the block table when paged (the pages in k and v: batch_stride is the page stride).
  int64_t kv_element_offset(const SeqTensor& t, int64_t b, int64_t key, int64_t h, int64_t d) const {
    if (!paged.present) return b * t.batch_stride + key * t.seq_stride + h * t.head_stride + d * t.dim_stride;
    return paged.page(b, key) * t.batch_stride + (key % paged.page_size) * t.seq_stride + h * t.head_stride +
           d * t.dim_stride;
  }
};

/// Element offset (in elements) of [b, offset + s, h, d] in t.
inline int64_t element_offset(const SeqTensor& t, int64_t b, int64_t row, int64_t h, int64_t d) {
  return b * t.batch_stride + row * t.seq_stride + h * t.head_stride + d * t.dim_stride;
}

/// Refuses, with BAD_SCALE naming the fields, a logit scale softmax_scale · q_descale · k_descale ·
/// log2(e) that is not a normal finite FP32 value, or that (with the per-block descales' largest
/// values and the input format's largest code) can carry a logit out of FP32's range; and a V
/// descale with which O can leave the output dtype's range. The descale values are read where the
/// host can read them: host tensors, and per-tensor descales given by value (a scale state's).
void require_scales_in_range(const AttentionConfig& config, const AttentionProblem& problem, int32_t device);

/// Validates args against the config for a backend whose tensors live on `device`, including the
/// extension chain on args.next (a paged KV cache: lib/attention/paged_kv_problem.cpp).
/// Throws Error with the status of the first problem found.
AttentionProblem make_attention_problem(const AttentionConfig& config, const fp8attn_attention_args& args,
                                        int32_t device);

}  // namespace fp8attn
