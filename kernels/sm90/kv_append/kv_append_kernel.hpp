// The Hopper KV append (vLLM's reshape_and_cache_flash with FP8 quantization): one CTA per token,
// four warps, one row (KV head of K or of V) per warp at a time. A warp reads its token's slot,
// skips the row when the slot is negative or past the cache, loads the row, rotates K's rows in
// registers with the quantizer's butterflies (quant::rotate_chunk), takes the row's amax with a
// warp shuffle reduction when the granularity is per (token, head), and stores each element cast
// to E4M3 (cvt.rn.satfinite) or BF16. Rows are independent: no shared memory, no CTA barrier.
#pragma once

#include <cstdint>

#include "kernels/arch/cvt.hpp"
#include "kernels/arch/platform.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/warp.hpp"
#include "kernels/sm90/kv_append/kv_append_params.hpp"
#include "kernels/sm90/quantize/quantize_kernel.hpp"

namespace fp8attn::sm90::kv {

inline constexpr unsigned kAppendWarps = 4;
inline constexpr unsigned kAppendThreads = kAppendWarps * 32;

/// The largest value of `v` over the warp, on every lane.
FP8ATTN_ARCH_FN float warp_max(float v) {
  for (int lane_mask = 16; lane_mask >= 1; lane_mask >>= 1)
    v = quant::max_of(v, arch::shfl_xor_sync(arch::kFullWarpMask, v, lane_mask));
  return v;
}

/// Stores one element of a row into the cache, cast as the cache's dtype.
FP8ATTN_ARCH_FN void store_element(const KvAppendParams& p, const KvSide& s, int64_t at, float y) {
  if (p.cache_type == CacheType::BF16)
    static_cast<uint16_t*>(s.cache)[at] = static_cast<uint16_t>(arch::cvt_bf16x2(y, 0.0f) & 0xFFFF);
  else
    static_cast<uint8_t*>(s.cache)[at] = static_cast<uint8_t>(arch::cvt_e4m3x2(y, 0.0f) & 0xFF);
}

/// The row's scale: the layer's descale (PerHead), 1 (None), or 448 / amax with the descale
/// written at the slot (PerTokenHead; every lane passes the warp's amax).
FP8ATTN_ARCH_FN RowScale row_scale(const KvAppendParams& p, const KvSide& s, int64_t slot, int64_t h, float amax,
                                   unsigned lane) {
  if (p.scale == Scale::PerTokenHead) {
    const float scale = token_scale(amax);
    if (lane == 0) s.descale[token_descale_offset(s, p.page_size, slot, h)] = quant::descale_from_scale(scale);
    return {true, scale};
  }
  if (p.scale == Scale::PerHead) return {false, s.descale[h * s.descale_stride[2]]};
  return {false, 1.0f};
}

/// A row without rotation, any dim: lane ℓ takes elements ℓ, ℓ + 32, …
FP8ATTN_ARCH_FN void append_plain_row(const KvAppendParams& p, const KvSide& s, int64_t t, int64_t slot, int64_t h,
                                      unsigned lane) {
  if (p.input_type == InputType::E4M3) {  // copied as it is
    for (int64_t e = lane; e < s.dim; e += 32)
      static_cast<uint8_t*>(s.cache)[cache_offset(s, p.page_size, slot, h, e)] =
          static_cast<const uint8_t*>(s.input)[input_offset(s, t, h, e)];
    return;
  }
  float amax = 0.0f;
  if (p.scale == Scale::PerTokenHead)
    for (int64_t e = lane; e < s.dim; e += 32) amax = quant::max_of(amax, quant::amax_term(load_element(p, s, t, h, e)));
  // NOTE: the row is read twice (amax, then cast) instead of held in registers: dims are not
  // bounded here, and the second read hits L1/L2 for a row of at most a few hundred bytes.
  const RowScale r = p.cache_type == CacheType::BF16 ? RowScale{true, 1.0f} : row_scale(p, s, slot, h, warp_max(amax), lane);
  for (int64_t e = lane; e < s.dim; e += 32)
    store_element(p, s, cache_offset(s, p.page_size, slot, h, e), apply_row_scale(r, load_element(p, s, t, h, e)));
}

/// K's row with rotation: head_dim = kHeadDim, held in registers across the warp.
template <int kHeadDim>
FP8ATTN_ARCH_FN void append_rotated_row(const KvAppendParams& p, const KvSide& s, int64_t t, int64_t slot, int64_t h,
                                        unsigned lane) {
  using Chunk = quant::LaneChunk<kHeadDim>;
  const int64_t first = static_cast<int64_t>(lane % Chunk::kLanes) * Chunk::kPerLane;
  float x[Chunk::kPerLane];
  for (int j = 0; j < Chunk::kPerLane; ++j) x[j] = load_element(p, s, t, h, first + j);
  quant::rotate_chunk<kHeadDim>(x, lane, p.log2_head_dim, p.seed);
  float amax = 0.0f;
  for (float v : x) amax = quant::max_of(amax, quant::amax_term(v));
  const RowScale r = p.cache_type == CacheType::BF16 ? RowScale{true, 1.0f} : row_scale(p, s, slot, h, warp_max(amax), lane);
  if (lane >= static_cast<unsigned>(Chunk::kLanes)) return;  // a copy of the row
  for (int j = 0; j < Chunk::kPerLane; ++j)
    store_element(p, s, cache_offset(s, p.page_size, slot, h, first + j), apply_row_scale(r, x[j]));
}

template <int kHeadDim>
FP8ATTN_KERNEL void kv_append_kernel(const KvAppendParams p) {
  const int64_t t = arch::block_idx().x;
  const int64_t slot = token_slot(p, t);
  if (slot < 0) return;  // padding, or a slot past the cache: nothing is written
  const unsigned lane = arch::lane_idx();
  for (int64_t row = arch::warp_idx(); row < 2 * p.heads; row += kAppendWarps) {
    const bool is_k = row < p.heads;
    const int64_t h = is_k ? row : row - p.heads;
    if constexpr (kHeadDim > 0) {
      if (is_k) {
        append_rotated_row<kHeadDim>(p, p.k, t, slot, h, lane);
        continue;
      }
    }
    append_plain_row(p, is_k ? p.k : p.v, t, slot, h, lane);
  }
}

}  // namespace fp8attn::sm90::kv
