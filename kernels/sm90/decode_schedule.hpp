// The decode path's work split (fp8attn_attention_desc.decode): which rows share a tile and
// which KV blocks each split visits. Read by the CPU engine (lib/attention/engine/decode_engine)
// and meant for a decode kernel, so that both cut the work alike and can be bit-equal.
//
// Rows: a KV group's query heads and a sequence's q_len ≤ 8 tokens share the tile's M dimension,
// row = token · group + head_in_group, so each K/V block is read once per group. A tile holds
// BlockM rows; a group with more than BlockM rows takes several tiles.
//
// Splits: a sequence with T KV blocks (its per-block descale grid, kv_schedule.hpp) is cut into
// n splits; split s holds the blocks whose slot lies in [⌊s·T/n⌋, ⌊(s+1)·T/n⌋). Within a split the
// blocks are visited in the forward's order (make_kv_schedule, restricted to the split), so with
// n = 1 the rows see the forward's blocks in the forward's order.
// NOTE: the boundaries depend on n and the sequence's own T only, never on the batch, so a fixed
// n gives batch-invariant bits. Splits past T (n > T) are empty: LSE −inf, O 0, which the
// combine rule (combine/combine_math.hpp) skips.
#pragma once

#include <cstdint>

#include "kernels/sm90/kv_schedule.hpp"

namespace fp8attn::sm90 {

inline constexpr int kMaxDecodeQLen = 8;  ///< FP8ATTN_MAX_DECODE_Q_LEN
inline constexpr int kMaxDecodeSplits = 256;  ///< FP8ATTN_MAX_COMBINE_PARTS

/// Packed rows of one (sequence, KV group): q_len tokens times the group's heads.
FP8ATTN_HOST_DEVICE constexpr int64_t decode_rows(int64_t q_len, int group) { return q_len * group; }

/// Packed row r: its token and its head within the group.
FP8ATTN_HOST_DEVICE constexpr int64_t decode_row_token(int64_t r, int group) { return r / group; }
FP8ATTN_HOST_DEVICE constexpr int decode_row_head(int64_t r, int group) { return static_cast<int>(r % group); }

/// Split s's first KV block slot of a sequence with `blocks` slots cut into n splits.
FP8ATTN_HOST_DEVICE constexpr int64_t decode_split_begin(int64_t blocks, int n, int s) {
  return blocks * s / n;
}

/// Whether a block of the forward's schedule (its slot `index`) belongs to split s.
FP8ATTN_HOST_DEVICE constexpr bool decode_split_holds(int64_t blocks, int n, int s, int64_t index) {
  return index >= decode_split_begin(blocks, n, s) && index < decode_split_begin(blocks, n, s + 1);
}

/// The heuristic of num_splits = 0, from the longest sequence's KV blocks and the number of
/// (sequence, KV head, row tile) items: enough splits for about two items per worker (CPU
/// threads, or SMs), at least two blocks per split, one split when the items already fill the
/// workers. Monotone in `max_blocks`, so the host's max_seqlen_k bounds the splits (and the
/// workspace) of any real lengths below it.
FP8ATTN_HOST_DEVICE constexpr int decode_heuristic_splits(int64_t max_blocks, int64_t items, int workers) {
  const int64_t want = items <= 0 ? 1 : (2 * static_cast<int64_t>(workers) + items - 1) / items;
  const int64_t most = (max_blocks + 1) / 2;
  int64_t n = want < most ? want : most;
  if (n > kMaxDecodeSplits) n = kMaxDecodeSplits;
  return n < 1 ? 1 : static_cast<int>(n);
}

}  // namespace fp8attn::sm90
