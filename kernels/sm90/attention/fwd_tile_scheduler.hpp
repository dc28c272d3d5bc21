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

/// The L2 budget of one section of the tile order: FlashAttention-3 groups its heads so that
/// their K and V fit in 32 MiB of the H100's 50 MB L2.
inline constexpr int64_t kTileSectionL2Bytes = int64_t{32} << 20;

/// (batch, head) pairs per section of the tile order (AttentionFwdParams::tile_group): as many
/// query heads as share the K and V of the KV heads that fit in kTileSectionL2Bytes (at least one
/// KV head's), at most all of them. A causal grid keeps one section: its tiles differ in length,
/// and the longest go first across the whole grid.
FP8ATTN_HOST_DEVICE int32_t fwd_tile_group(int32_t batch, int32_t heads_q, int32_t heads_kv, int64_t seqlen_k,
                                           int64_t kv_row_bytes, bool causal) {
  const int64_t pairs = static_cast<int64_t>(batch) * heads_q;
  if (causal || pairs <= 1) return static_cast<int32_t>(pairs);
  const int64_t kv_head_bytes = (seqlen_k > 0 ? seqlen_k : 1) * kv_row_bytes;
  const int64_t kv_heads = kTileSectionL2Bytes / kv_head_bytes > 0 ? kTileSectionL2Bytes / kv_head_bytes : 1;
  const int64_t group = kv_heads * (heads_q / heads_kv);
  return static_cast<int32_t>(group < pairs ? group : pairs);
}

/// Tile `index` of the launch, or rows = 0 when that tile lies past its sequence's end (varlen).
/// The order: sections of p.tile_group (batch, head) pairs, one after the other; within a
/// section the query tiles from the last one down, and the section's heads fastest.
/// NOTE: a section's heads fastest, so that the CTAs resident together read the K and V of a
/// few heads, which stay in L2 (FlashAttention-3's scheduler groups heads the same way); with one
/// section (tile_group 0, or every pair: a causal grid) this is the longest-first order over the
/// whole grid: index 0.. walks query tiles from the last one down, so with a causal mask (and
/// with varlen) the CTAs pick the heaviest work before the light tail.
/// NOTE: the producer resolves tiles in 32 bits (I = int32_t; the plan refuses more than
/// INT32_MAX tiles): a 64-bit division is a subroutine whose registers it does not have at 24
/// (fwd_config.hpp). The consumers keep 64 bits, where ptxas allocated them without spills.
template <class I = int64_t>
FP8ATTN_HOST_DEVICE BasicFwdTile<I> fwd_tile(const AttentionFwdParams& p, int64_t index, int block_m, int block_n) {
  BasicFwdTile<I> t;
  const I pairs = static_cast<I>(p.heads_q) * static_cast<I>(p.batch);
  const I group = p.tile_group > 0 && static_cast<I>(p.tile_group) < pairs ? static_cast<I>(p.tile_group) : pairs;
  const I section_tiles = group * static_cast<I>(p.m_blocks);
  const I first_pair = static_cast<I>(index) / section_tiles * group;
  const I within = static_cast<I>(index) % section_tiles;
  const I size = pairs - first_pair < group ? pairs - first_pair : group;  // the last section may be short
  t.m_block = static_cast<int32_t>(p.m_blocks - 1 - within / size);
  const I pair = first_pair + within % size;
  t.head = static_cast<int32_t>(pair % static_cast<I>(p.heads_q));
  t.batch = static_cast<int32_t>(pair / static_cast<I>(p.heads_q));
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
