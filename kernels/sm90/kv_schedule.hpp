// Which KV blocks a query tile visits, and in what order. Shared by the kernel and the CPU
// engine so both visit the same key ranges in the same order.
//
// Without sink isolation the blocks are [n·BlockN, (n+1)·BlockN) aligned at key 0. With
// `sink_tokens` = s > 0 the first s keys form a block of their own and the other blocks are
// [s + n·BlockN, s + (n+1)·BlockN). Reverse order (the default) visits the last block first and
// the sink block last.
//
// Per-block K/V descales follow the same blocks, so that each visited block has one descale:
// slot n is block n without isolation; with it, slot 0 is the sink block and slot n + 1 the
// block starting at key s + n·BlockN (fp8attn_quantize's `leading_rows` = s makes that grid).
#pragma once

#include <cstdint>

#include "kernels/sm90/mask.hpp"

namespace fp8attn::sm90 {

struct KeyBlock {
  int64_t key_begin;
  int64_t key_end;
  int64_t index;  ///< the block's per-block descale slot (kv_descale_slot of its first key)
};

/// The per-block descale slot of `key`: its block's index in the KV grid above.
FP8ATTN_HOST_DEVICE constexpr int64_t kv_descale_slot(int64_t key, int64_t sink_tokens, int block_n) {
  if (sink_tokens <= 0) return key / block_n;
  return key < sink_tokens ? 0 : 1 + (key - sink_tokens) / block_n;
}

/// Slots of per-block K/V descales for sequences of up to `max_seqlen_k` keys, in index type I.
/// NOTE: the decode kernels' producer counts them in 32 bits (decode_tile_scheduler.hpp): a 64-bit
/// division is a subroutine that spilled its 24 registers.
template <class I = int64_t>
FP8ATTN_HOST_DEVICE constexpr I kv_descale_slots(typename NamedType<I>::type max_seqlen_k,
                                                 typename NamedType<I>::type sink_tokens, int block_n) {
  if (sink_tokens <= 0) return (max_seqlen_k + block_n - 1) / block_n;
  return 1 + (max_seqlen_k > sink_tokens ? (max_seqlen_k - sink_tokens + block_n - 1) / block_n : 0);
}

/// NOTE: the index type is a parameter so the kernel's consumers can walk the blocks in 32 bits
/// (registers; keys fit TMA's 32-bit coordinates anyway) with the same code as the engine.
template <class I>
struct BasicKvSchedule {
  I sink_end = 0;    ///< keys [0, sink_end) form the sink block when has_sink_block
  bool has_sink_block = false;
  I rest_first = 0;  ///< rest blocks [rest_first, rest_end), numbered from key sink_end
  I rest_end = 0;
  I seqlen_k = 0;
  int block_n = 0;
  bool reverse = true;

  FP8ATTN_HOST_DEVICE constexpr I count() const {
    return (rest_end > rest_first ? rest_end - rest_first : 0) + (has_sink_block ? 1 : 0);
  }

  /// The step-th block visited.
  FP8ATTN_HOST_DEVICE constexpr KeyBlock at(I step) const {
    const I rest = rest_end > rest_first ? rest_end - rest_first : 0;
    // Reverse: rest blocks last-to-first, then the sink block. Forward: sink block, then rest.
    I rest_step = 0;  // initialized: the device build (C++17) wants it in a constexpr function
    if (reverse) {
      if (step == rest) return {0, sink_end, 0};
      rest_step = rest_end - 1 - step;
    } else {
      if (has_sink_block && step == 0) return {0, sink_end, 0};
      rest_step = rest_first + step - (has_sink_block ? 1 : 0);
    }
    const I begin = sink_end + rest_step * block_n;
    const I end = begin + block_n < seqlen_k ? begin + block_n : seqlen_k;
    return {begin, end, sink_end == 0 ? rest_step : rest_step + 1};
  }

  /// The same schedule in another index type.
  template <class J>
  FP8ATTN_HOST_DEVICE constexpr BasicKvSchedule<J> as() const {
    return {static_cast<J>(sink_end), has_sink_block, static_cast<J>(rest_first), static_cast<J>(rest_end),
            static_cast<J>(seqlen_k), block_n, reverse};
  }
};

using KvSchedule = BasicKvSchedule<int64_t>;

/// The blocks holding a visible key of any row in [row_begin, row_end), in index type I.
/// NOTE: the kernels build it in 32 bits (keys are TMA's 32-bit coordinates there): a 64-bit
/// division by block_n spilled the forward's producer at its 24 registers. The values are the
/// same in either type.
template <class I = int64_t>
FP8ATTN_HOST_DEVICE constexpr BasicKvSchedule<I> make_kv_schedule(const MaskParams& m, int64_t row_begin,
                                                                  int64_t row_end, int block_n, int64_t sink_tokens,
                                                                  bool reverse) {
  BasicKvSchedule<I> s;
  s.seqlen_k = static_cast<I>(m.seqlen_k);
  s.block_n = block_n;
  s.reverse = reverse;
  s.sink_end = static_cast<I>(sink_tokens < m.seqlen_k ? sink_tokens : m.seqlen_k);
  // Keys seen by row i are monotone in i at both ends, so the first and last rows bound them.
  const BasicKeyRange<I> top = visible_keys<I>(m, static_cast<I>(row_begin));
  const BasicKeyRange<I> bottom = visible_keys<I>(m, static_cast<I>(row_end - 1));
  const I first_key = top.first, last_key = bottom.last;
  if (first_key > last_key) return s;
  s.has_sink_block = s.sink_end > 0 && first_key < s.sink_end;
  if (last_key >= s.sink_end) {
    const I lo = first_key > s.sink_end ? first_key : s.sink_end;
    s.rest_first = (lo - s.sink_end) / block_n;
    s.rest_end = (last_key - s.sink_end) / block_n + 1;
  }
  return s;
}

/// Whether the backward's key block `key_block` (keys [key_block·block_n, ..), no sink block)
/// holds a key that some row of [row_begin, row_end) sees: the forward's schedule of those rows
/// (sink isolation off, which only changes the forward's rounding) contains it. The CPU engine's
/// backward and the sm_90a backward kernel decide with this one function which (query block,
/// key block) pairs they visit.
FP8ATTN_HOST_DEVICE constexpr bool backward_visits(const MaskParams& m, int64_t row_begin, int64_t row_end,
                                                   int block_n, int64_t key_block) {
  const KvSchedule s = make_kv_schedule(m, row_begin, row_end, block_n, 0, false);
  return key_block >= s.rest_first && key_block < s.rest_end;
}

}  // namespace fp8attn::sm90
