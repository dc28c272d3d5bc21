// Causal and sliding-window masks, FlashAttention ≥ 2.1 convention (aligned bottom-right), and
// the range of KV blocks a query tile must visit. Shared by the kernel, the CPU engine and the
// oracle, so all three agree on which keys a row sees.
#pragma once

#include <cstdint>

#include "kernels/sm90/tile_config.hpp"

namespace fp8attn::sm90 {

struct MaskParams {
  bool causal;
  int64_t window_left;   ///< −1 = unbounded
  int64_t window_right;  ///< −1 = unbounded
  int64_t seqlen_q;
  int64_t seqlen_k;
};

/// Visible keys of one query row: [first, last], empty when first > last; I is the index type.
template <class I>
struct BasicKeyRange {
  I first;
  I last;
  FP8ATTN_HOST_DEVICE constexpr bool empty() const { return first > last; }
};
using KeyRange = BasicKeyRange<int64_t>;

/// T itself, in a context that does not deduce it (the index type is always named).
template <class T>
struct NamedType {
  using type = T;
};

/// Query i sees key j iff  diag − left ≤ j ≤ diag + right, with diag = i + Sk − Sq; causal
/// means right = 0 (or less, when a window asks for less).
/// NOTE: I = int32_t where keys are TMA's 32-bit coordinates (the forward producer's schedule,
/// kv_schedule.hpp): the same values in fewer registers.
template <class I = int64_t>
FP8ATTN_HOST_DEVICE constexpr BasicKeyRange<I> visible_keys(const MaskParams& m, typename NamedType<I>::type row) {
  const I seqlen_k = static_cast<I>(m.seqlen_k);
  const I diag = row + seqlen_k - static_cast<I>(m.seqlen_q);
  I right = static_cast<I>(m.window_right);
  if (m.causal && (right < 0 || right > 0)) right = 0;
  I first = m.window_left < 0 ? 0 : diag - static_cast<I>(m.window_left);
  I last = right < 0 ? seqlen_k - 1 : diag + right;
  if (first < 0) first = 0;
  if (last > seqlen_k - 1) last = seqlen_k - 1;
  return {first, last};
}

/// The keys that every row of [row_begin, row_end) sees; empty when some row sees none.
/// NOTE: row ranges move right with the row: the tightest left bound is the bottom row's first
/// key, the tightest right bound is the top row's last key. The kernel computes this once per
/// tile and tests its blocks against it (block_fully_visible is that test).
FP8ATTN_HOST_DEVICE constexpr KeyRange keys_seen_by_all(const MaskParams& m, int64_t row_begin, int64_t row_end) {
  const KeyRange top = visible_keys(m, row_begin);
  const KeyRange bottom = visible_keys(m, row_end - 1);
  if (top.empty() || bottom.empty()) return {0, -1};
  return {bottom.first, top.last};
}

/// True when keys [key_begin, key_end) all lie in `all` (keys_seen_by_all of a tile's rows), so
/// that no row of the tile hides one of them: the block needs no element mask. The engine asks
/// through block_fully_visible; the kernel keeps `all` in 32-bit registers per tile and asks per
/// block (kernels/sm90/attention/fwd_mainloop.hpp).
template <class I>
FP8ATTN_HOST_DEVICE constexpr bool keys_inside(I all_first, I all_last, I key_begin, I key_end) {
  return all_first <= all_last && all_first <= key_begin && all_last >= key_end - 1;
}

/// True when every key of block [key_begin, key_end) is visible to every row in the tile, so
/// the block needs no element mask.
FP8ATTN_HOST_DEVICE constexpr bool block_fully_visible(const MaskParams& m, int64_t row_begin, int64_t row_end,
                                                       int64_t key_begin, int64_t key_end) {
  const KeyRange all = keys_seen_by_all(m, row_begin, row_end);
  return keys_inside<int64_t>(all.first, all.last, key_begin, key_end);
}

/// Rows of [0, seqlen_q) that see key `key`: [first, last], empty when first > last.
/// NOTE: found from visible_keys by bisection, not re-derived: both ends of a row's visible range
/// are nondecreasing in the row, so the rows whose first key is ≤ key form a prefix and the rows
/// whose last key is ≥ key a suffix. The backward kernel masks its Sᵀ fragments (keys are its
/// rows) with this, once per key, in 32-bit compares per element.
FP8ATTN_HOST_DEVICE constexpr KeyRange visible_rows(const MaskParams& m, int64_t key) {
  // first: the smallest row whose last visible key is ≥ key (seqlen_q when none).
  int64_t lo = 0, hi = m.seqlen_q;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    const KeyRange r = visible_keys(m, mid);
    if (r.last >= key) hi = mid;
    else lo = mid + 1;
  }
  const int64_t first = lo;
  // end: the smallest row whose first visible key is > key (seqlen_q when none).
  lo = 0, hi = m.seqlen_q;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    const KeyRange r = visible_keys(m, mid);
    if (r.first > key) hi = mid;
    else lo = mid + 1;
  }
  return {first, lo - 1};
}

}  // namespace fp8attn::sm90
