// The two small SIMT kernels around the backward's main kernel (FlashAttention-2/3's
// preprocessing and dQ conversion), one thread per (workspace row, query head):
// - bwd_preprocess_kernel: the LSE in log2 units and D = rowsum(dO∘O), in the order of the wgmma
//   that forms dP (sm90::row_delta, as the CPU engine's load_row_stats);
//   in atomic mode it also zeroes the row's dQ accumulator;
// - bwd_dq_reduce_kernel: dq = softmax_scale · Σ_n partial_n over the key blocks n the row's query
//   block visits, n ascending (deterministic: the engine's turn-ordered adds), or the atomic
//   accumulator; zeros for a sequence without keys, as the engine stores.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/arch/cvt.hpp"
#include "kernels/arch/platform.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/sm90/attention/bwd_params.hpp"
#include "kernels/sm90/kv_schedule.hpp"
#include "kernels/sm90/softmax_math.hpp"

namespace fp8attn::sm90 {

/// The (sequence, row in the sequence) of workspace row `row`.
/// NOTE: a linear search over cu_seqlens: the batch of a packed call is small next to its rows.
FP8ATTN_HOST_DEVICE void bwd_locate_row(const BwdArguments& p, int64_t row, int64_t& b, int64_t& r) {
  if (p.cu_seqlens_q == nullptr) {
    b = row / p.seqlen_q;
    r = row % p.seqlen_q;
    return;
  }
  b = 0;
  while (b + 1 < p.batch && p.cu_seqlens_q[b + 1] <= row) ++b;
  r = row - p.cu_seqlens_q[b];
}

FP8ATTN_ARCH_FN float bf16_bits_to_float(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
#if FP8ATTN_DEVICE_BUILD
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

template <int kHeadDim>
FP8ATTN_KERNEL void FP8ATTN_LAUNCH_BOUNDS(kBwdRowThreads, 1) bwd_preprocess_kernel(const BwdArguments p) {
  const int64_t item = static_cast<int64_t>(arch::block_idx().x) * kBwdRowThreads + arch::thread_idx().x;
  if (item >= p.rows * p.heads_q) return;
  const int64_t row = item / p.heads_q;
  const int32_t head = static_cast<int32_t>(item % p.heads_q);
  int64_t b = 0, r = 0;
  bwd_locate_row(p, row, b, r);
  const int64_t packed = p.cu_seqlens_q != nullptr ? row : r;  // the row in the tensors' seq dimension
  const float lse = p.lse[b * p.lse_batch_stride + packed * p.lse_seq_stride + head * p.lse_head_stride];
  p.lse_log2[row * p.heads_q + head] = lse * kLog2e;
  const uint16_t* o = p.out + b * p.out_batch_stride + packed * p.out_seq_stride + head * p.out_head_stride;
  const uint16_t* g = p.dout + b * p.dout_batch_stride + packed * p.dout_seq_stride + head * p.dout_head_stride;
  // NOTE: added as the BF16 wgmma that forms dP adds (row_delta under the tensor core's rule, what
  // the hardware and the emulator's default do), so that a row with one visible key gets dP − D = 0.
  p.delta[row * p.heads_q + head] =
      row_delta(kHeadDim, arch::kMmaKBf16, arch::tensor_core_accumulation(), [&](int e) { return bf16_bits_to_float(g[e]); },
                [&](int e) { return bf16_bits_to_float(o[e]); });
  if (p.atomic_dq) {
    float* acc = p.dq_partials + (row * p.heads_q + head) * kHeadDim;
    for (int e = 0; e < kHeadDim; ++e) acc[e] = 0.0f;
  }
}

template <int kHeadDim, int kBlockM, int kBlockN>
FP8ATTN_KERNEL void FP8ATTN_LAUNCH_BOUNDS(kBwdRowThreads, 1) bwd_dq_reduce_kernel(const BwdArguments p) {
  const int64_t item = static_cast<int64_t>(arch::block_idx().x) * kBwdRowThreads + arch::thread_idx().x;
  if (item >= p.rows * p.heads_q) return;
  const int64_t row = item / p.heads_q;
  const int32_t head = static_cast<int32_t>(item % p.heads_q);
  int64_t b = 0, r = 0;
  bwd_locate_row(p, row, b, r);
  const BwdSequence s = bwd_sequence(p, b);
  if (r >= s.seqlen_q) return;  // padding rows of a padded layout hold no query
  const int64_t packed = p.cu_seqlens_q != nullptr ? row : r;
  // The key blocks this row's query block visits: backward_visits' range, [rest_first, rest_end).
  const int64_t row0 = r / kBlockM * kBlockM;
  const int64_t row1 = row0 + kBlockM < s.seqlen_q ? row0 + kBlockM : s.seqlen_q;
  const KvSchedule sched = make_kv_schedule(bwd_mask(p, s), row0, row1, kBlockN, 0, false);
  const int64_t first = p.atomic_dq ? 0 : sched.rest_first;
  const int64_t end = p.atomic_dq ? 1 : sched.rest_end;
  const float* partial = p.dq_partials + (row * p.heads_q + head) * kHeadDim;
  const int64_t dq_at = b * p.dq_batch_stride + packed * p.dq_seq_stride + head * p.dq_head_stride;
  FP8ATTN_NO_UNROLL
  for (int e = 0; e < kHeadDim; ++e) {
    // NOTE: from +0, n ascending: the engine's first visited block stores its share and the later
    // ones add, and 0 + x = x for every share (no share is −0: each starts as 0 + a chunk sum).
    float acc = 0.0f;
    for (int64_t n = first; n < end; ++n) acc = acc + partial[n * p.partial_slot_stride + e];
    const float x = s.seqlen_k > 0 ? acc * p.softmax_scale : 0.0f;
    if (p.dq_type == BwdDqType::F32)
      static_cast<float*>(p.dq)[dq_at + e] = x;
    else
      static_cast<uint16_t*>(p.dq)[dq_at + e] = static_cast<uint16_t>(arch::cvt_bf16x2(x, 0.0f) & 0xffffu);
  }
}

}  // namespace fp8attn::sm90
