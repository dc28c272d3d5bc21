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

/// Split s's first KV block slot of a sequence with `blocks` slots cut into n splits, in index
/// type I. NOTE: 32 bits hold blocks · s: the kernels take fewer than 2^29 keys, so fewer than
/// 2^23 blocks of ≥ 64 keys, times s ≤ 256.
template <class I = int64_t>
FP8ATTN_HOST_DEVICE constexpr I decode_split_begin(typename NamedType<I>::type blocks, int n, int s) {
  return blocks * s / n;
}

/// Whether a block of the forward's schedule (its slot `index`) belongs to split s.
FP8ATTN_HOST_DEVICE constexpr bool decode_split_holds(int64_t blocks, int n, int s, int64_t index) {
  return index >= decode_split_begin(blocks, n, s) && index < decode_split_begin(blocks, n, s + 1);
}

/// The forward's schedule `s` of a sequence with `blocks` slots, restricted to split `split` of n:
/// the same blocks as decode_split_holds keeps, in the same order (a split is a slot range, and
/// the sink block is slot 0 while rest block r is slot r + 1, or r without a sink block).
/// NOTE: the kernels' producer and consumers walk the restricted schedule with the forward's
/// code; the engine keeps its filter (decode_split_holds), which visits the same blocks.
template <class I>
FP8ATTN_HOST_DEVICE constexpr BasicKvSchedule<I> decode_split_schedule(BasicKvSchedule<I> s,
                                                                     typename NamedType<I>::type blocks, int n,
                                                                     int split) {
  const I lo = decode_split_begin<I>(blocks, n, split);
  const I hi = decode_split_begin<I>(blocks, n, split + 1);
  const I shift = s.sink_end > 0 ? 1 : 0;  // slot of rest block r: r + shift
  if (s.has_sink_block) s.has_sink_block = lo == 0 && hi > 0;
  const I first = lo - shift > s.rest_first ? lo - shift : s.rest_first;
  const I end = hi - shift < s.rest_end ? hi - shift : s.rest_end;
  s.rest_first = first;
  s.rest_end = end > first ? end : first;
  return s;
}

/// Row tiles of a (sequence, KV group) with q_len tokens.
FP8ATTN_HOST_DEVICE constexpr int64_t decode_row_tiles(int64_t q_len, int group, int block_m) {
  return (decode_rows(q_len, group) + block_m - 1) / block_m;
}

/// The workers the heuristic of num_splits = 0 fills: an H100's or H200's 132 SMs, on every
/// backend and whatever its threads or SMs.
/// NOTE: a constant, not the machine's count: the split count decides the bits (each split's
/// blocks, then the combine), so with it the CPU engine at any thread count, the emulated kernel
/// at any SM count and the Hopper kernel give the same bits for num_splits = 0, as they do for a
/// fixed num_splits. A CPU of fewer cores gets more splits than it needs; each is a partial row
/// of O per query row and a share of the combine.
inline constexpr int kDecodeHeuristicWorkers = 132;

/// The heuristic of num_splits = 0, from the longest sequence's KV blocks and the number of
/// (sequence, KV head, row tile) items: enough splits for about two items per worker
/// (kDecodeHeuristicWorkers), at least two blocks per split, one split when the items already fill
/// the workers. Monotone in `max_blocks`, so the host's max_seqlen_k bounds the splits (and the
/// workspace) of any real lengths below it.
/// NOTE: two halves: `want` depends on host values only (the kernels get it from the plan), the
/// rest on the blocks, which the kernels count on the device in 32 bits.
FP8ATTN_HOST_DEVICE constexpr int decode_heuristic_want(int64_t items) {
  const int64_t want = items <= 0 ? 1 : (2 * static_cast<int64_t>(kDecodeHeuristicWorkers) + items - 1) / items;
  return want > kMaxDecodeSplits ? kMaxDecodeSplits : static_cast<int>(want);
}
template <class I = int64_t>
FP8ATTN_HOST_DEVICE constexpr int decode_heuristic_from_want(int want, typename NamedType<I>::type max_blocks) {
  const I most = (max_blocks + 1) / 2;
  I n = static_cast<I>(want) < most ? static_cast<I>(want) : most;
  if (n > kMaxDecodeSplits) n = kMaxDecodeSplits;
  return n < 1 ? 1 : static_cast<int>(n);
}
FP8ATTN_HOST_DEVICE constexpr int decode_heuristic_splits(int64_t max_blocks, int64_t items) {
  return decode_heuristic_from_want(decode_heuristic_want(items), max_blocks);
}

/// The splits of a decode call: `num_splits` when fixed, else the heuristic over the longest
/// sequence's KV blocks (max_k keys) and the (sequence, KV head, row tile) items of the host's
/// batch and max_q. The CPU engine (decode_engine.cpp) and the Hopper plan (decode_plan.cpp)
/// both call it; the kernels apply the heuristic on the device (decode_tile_scheduler.hpp).
/// NOTE: the items come from the host's batch and max_seqlen_q (known at workspace time), the
/// blocks from the KV length given: the longest real one at the call, max_seqlen_k when sizing.
/// The heuristic is monotone in the blocks, so the sizing bounds the call.
FP8ATTN_HOST_DEVICE constexpr int decode_num_splits(int num_splits, int heads_kv, int group, int block_m,
                                                    int block_n, int64_t sink_tokens, int64_t batch, int64_t max_q,
                                                    int64_t max_k) {
  if (num_splits > 0) return num_splits;
  const int64_t items = batch * heads_kv * decode_row_tiles(max_q, group, block_m);
  return decode_heuristic_splits(kv_descale_slots(max_k, sink_tokens, block_n), items);
}

}  // namespace fp8attn::sm90
