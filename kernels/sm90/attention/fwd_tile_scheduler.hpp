// The persistent tile scheduler of the attention forward: a CTA loops over work tiles
// (sequence, query head, query tile) with a stride of the grid size. The producer and the
// consumers of a CTA walk the same sequence, so they agree on every tile without talking.
#pragma once

#include <cstdint>

#include "kernels/arch/platform.hpp"
#include "kernels/sm90/attention/fwd_params.hpp"
#include "kernels/sm90/kv_schedule.hpp"
#include "kernels/sm90/mask.hpp"

namespace fp8attn::sm90 {

/// One work tile, resolved: where its sequence lies and which KV blocks it visits; I is the
/// index type of the tile arithmetic and of its KV schedule.
/// NOTE: 32-bit rows and offsets: TMA coordinates are 32-bit anyway, and every register counts
/// in the consumers (ptxas -warn-spills).
template <class I>
struct BasicFwdTile {
  int32_t batch = 0, head = 0, head_kv = 0;
  int32_t m_block = 0, row0 = 0, rows = 0;  ///< rows: valid query rows of the tile (≤ BlockM)
  int32_t q_offset = 0, k_offset = 0;       ///< first row of the sequence in the packed tensors
  MaskParams mask{};
  BasicKvSchedule<I> kv{};
};
using FwdTile = BasicFwdTile<int64_t>;

/// Keys of sequence b in a paged cache: seqused_k[b] read from device memory, clamped to
/// [0, seqlen_k] (the host's max_seqlen_k, which sized the launch); the producer flags a clamp.
FP8ATTN_HOST_DEVICE int32_t paged_seqlen_k(const AttentionFwdParams& p, int32_t b) {
  const int32_t used = p.paged.seqused_k[b * p.paged.seqused_stride];
  const int32_t bound = static_cast<int32_t>(p.seqlen_k);
  return used < 0 ? 0 : (used > bound ? bound : used);
}

/// Tile `index` of the launch, or rows = 0 when that tile lies past its sequence's end (varlen).
/// NOTE: the longest tiles go first: index 0.. walks query tiles from the last one down, so with a
/// causal mask (and with varlen) the CTAs pick the heaviest work before the light tail, as
/// FlashAttention-3's scheduler orders causal tiles.
/// NOTE: the producer resolves tiles in 32 bits (I = int32_t; the plan refuses more than
/// INT32_MAX tiles): a 64-bit division is a subroutine whose registers it does not have at 24
/// (fwd_config.hpp). The consumers keep 64 bits, where ptxas allocated them without spills.
template <class I = int64_t>
FP8ATTN_HOST_DEVICE BasicFwdTile<I> fwd_tile(const AttentionFwdParams& p, int64_t index, int block_m, int block_n) {
  BasicFwdTile<I> t;
  const I per_m_block = static_cast<I>(p.heads_q) * static_cast<I>(p.batch);
  t.m_block = static_cast<int32_t>(p.m_blocks - 1 - static_cast<I>(index) / per_m_block);
  const I rest = static_cast<I>(index) % per_m_block;
  t.head = static_cast<int32_t>(rest % static_cast<I>(p.heads_q));
  t.batch = static_cast<int32_t>(rest / static_cast<I>(p.heads_q));
  t.head_kv = t.head / (p.heads_q / p.heads_kv);
  int64_t seqlen_q = p.seqlen_q, seqlen_k = p.seqlen_k;
  if (p.cu_seqlens_q != nullptr) {
    t.q_offset = p.cu_seqlens_q[t.batch];
    seqlen_q = p.cu_seqlens_q[t.batch + 1] - t.q_offset;
  }
  if (p.cu_seqlens_k != nullptr) {
    t.k_offset = p.cu_seqlens_k[t.batch];
    seqlen_k = p.cu_seqlens_k[t.batch + 1] - t.k_offset;
  } else if (p.paged.seqused_k != nullptr) {
    seqlen_k = paged_seqlen_k(p, t.batch);
  }
  t.row0 = t.m_block * block_m;
  const int64_t left = seqlen_q - t.row0;
  t.rows = static_cast<int32_t>(left <= 0 ? 0 : (left < block_m ? left : block_m));
  t.mask = MaskParams{p.causal, p.window_left, p.window_right, seqlen_q, seqlen_k};
  if (t.rows > 0) t.kv = make_kv_schedule<I>(t.mask, t.row0, t.row0 + t.rows, block_n, p.sink_tokens, p.reverse_kv);
  return t;
}

}  // namespace fp8attn::sm90
