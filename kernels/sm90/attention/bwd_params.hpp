// Device parameters of the BF16 attention backward's three kernels (preprocess, main, dQ
// reduce; attention_bwd_kernel.hpp, bwd_preprocess.hpp). The host plan
// (lib/backend/gpu/attention_bwd_plan.cpp) builds them from a validated problem in one place.
// Strides are in elements.
#pragma once

#include <cstdint>

#include "kernels/arch/platform.hpp"
#include "kernels/ptx/tma_tensor_map.hpp"
#include "kernels/sm90/mask.hpp"

namespace fp8attn::sm90 {

/// Threads per CTA of the preprocessing and dQ kernels (bwd_preprocess.hpp).
inline constexpr unsigned kBwdRowThreads = 128;

/// Element type of dq.
enum class BwdDqType : int32_t { BF16 = 0, F32 = 1 };

/// Everything but the tensor maps: plain data with one layout in both builds.
struct BwdArguments {
  // The forward's output and LSE, and the incoming gradient (BF16, the layout of out): read by
  // the preprocessing kernel only.
  const uint16_t* out = nullptr;
  int64_t out_batch_stride = 0, out_seq_stride = 0, out_head_stride = 0;
  const uint16_t* dout = nullptr;
  int64_t dout_batch_stride = 0, dout_seq_stride = 0, dout_head_stride = 0;
  const float* lse = nullptr;
  int64_t lse_batch_stride = 0, lse_seq_stride = 0, lse_head_stride = 0;
  // Outputs.
  void* dq = nullptr;
  BwdDqType dq_type = BwdDqType::BF16;
  int64_t dq_batch_stride = 0, dq_seq_stride = 0, dq_head_stride = 0;
  uint16_t* dk = nullptr;
  int64_t dk_batch_stride = 0, dk_seq_stride = 0, dk_head_stride = 0;
  uint16_t* dv = nullptr;
  int64_t dv_batch_stride = 0, dv_seq_stride = 0, dv_head_stride = 0;
  // Workspace: per (row, query head) the LSE in log2 units and D = rowsum(dO∘O); the dQ partials
  // (deterministic: one slot per key block; atomic: one slot, zeroed before the main kernel).
  float* lse_log2 = nullptr;  ///< [row][heads_q], rows as bwd_row() numbers them
  float* delta = nullptr;     ///< [row][heads_q]
  float* dq_partials = nullptr;  ///< [slot][row][heads_q][head_dim]
  int64_t partial_slot_stride = 0;  ///< rows · heads_q · head_dim
  bool atomic_dq = false;
  // Shape.
  const int32_t* cu_seqlens_q = nullptr;  ///< varlen iff non-null (then cu_seqlens_k too)
  const int32_t* cu_seqlens_k = nullptr;
  int64_t seqlen_q = 0, seqlen_k = 0;  ///< padded layouts
  int32_t batch = 0, heads_q = 0, heads_kv = 0, head_dim = 0;
  int32_t n_blocks = 0;  ///< key blocks of the longest sequence: the main grid is n_blocks · heads_kv · batch
  int64_t rows = 0;      ///< workspace rows: batch · seqlen_q (padded) or total_q (varlen)
  float softmax_scale = 1.0f;
  bool causal = false;
  int64_t window_left = -1, window_right = -1;
};

/// The main kernel's parameters: the arguments plus Q, K, V and dO as 4D tensor maps {dim, head,
/// seq, batch}; packed (varlen) inputs have batch = 1.
struct AttentionBwdParams : BwdArguments {
  arch::TensorMap tma_q, tma_k, tma_v, tma_do;
};

/// One sequence of the launch: where its rows start in the packed tensors and its lengths.
struct BwdSequence {
  int64_t q_offset = 0, k_offset = 0, seqlen_q = 0, seqlen_k = 0;
};

FP8ATTN_HOST_DEVICE BwdSequence bwd_sequence(const BwdArguments& p, int64_t b) {
  BwdSequence s;
  if (p.cu_seqlens_q != nullptr) {
    s.q_offset = p.cu_seqlens_q[b];
    s.seqlen_q = p.cu_seqlens_q[b + 1] - s.q_offset;
    s.k_offset = p.cu_seqlens_k[b];
    s.seqlen_k = p.cu_seqlens_k[b + 1] - s.k_offset;
  } else {
    s.seqlen_q = p.seqlen_q;
    s.seqlen_k = p.seqlen_k;
  }
  return s;
}

/// The workspace row of (sequence b, row r): packed rows as they are, padded rows b·seqlen_q + r
/// (the CPU engine's DqAccumulator::row).
FP8ATTN_HOST_DEVICE int64_t bwd_row(const BwdArguments& p, int64_t b, const BwdSequence& s, int64_t r) {
  return p.cu_seqlens_q != nullptr ? s.q_offset + r : b * p.seqlen_q + r;
}

FP8ATTN_HOST_DEVICE MaskParams bwd_mask(const BwdArguments& p, const BwdSequence& s) {
  return MaskParams{p.causal, p.window_left, p.window_right, s.seqlen_q, s.seqlen_k};
}

/// Named barriers of the main kernel (ids 1..15; 0 is __syncthreads), among the consumers.
enum class BwdBarrier : unsigned {
  kDsFree = 1,   ///< every consumer's dQ = dS·K of the last step is complete: dS may be rewritten
  kDsReady = 2,  ///< every consumer's part of dS is written and fenced: dQ = dS·K may read it
};

FP8ATTN_HOST_DEVICE constexpr unsigned barrier_id(BwdBarrier b) { return static_cast<unsigned>(b); }

}  // namespace fp8attn::sm90
