// The Hopper quantizer: two kernels over a grid of (work unit, head, sequence), one CTA each, four
// warps per CTA, one head-dim row per warp at a time with head_dim / 32 consecutive elements per
// lane. The Walsh–Hadamard butterflies run in registers for pair strides below the lane's chunk
// and across lanes with shfl.xor above it, in the stage order of quantize_math.hpp, so every
// value rounds as in the CPU quantizer (lib/quantize). The amax is a warp shuffle reduction,
// then one shared-memory slot per warp.
//   quantize_amax_kernel:  rotate the unit's rows, write the unit's amax;
//   quantize_cast_kernel:  reduce the amax of the unit's descale group, write the descale (the
//                          group's first unit), rotate again and cast with cvt.rn.satfinite.
// NOTE: rotating twice instead of keeping FP32 rows between the kernels trades log2(d) butterfly
// operations per element for 8 bytes of global traffic per element (an FP32 write and read). Both
// passes are memory-bound, so the butterflies should be cheap; this has not been measured on a
// GPU yet.
#pragma once

#include <cstdint>

#include "kernels/arch/barrier.hpp"
#include "kernels/arch/cvt.hpp"
#include "kernels/arch/platform.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/warp.hpp"
#include "kernels/sm90/quantize/quantize_math.hpp"
#include "kernels/sm90/quantize/quantize_params.hpp"

namespace fp8attn::sm90::quant {

inline constexpr unsigned kQuantizeWarps = 4;
inline constexpr unsigned kQuantizeThreads = kQuantizeWarps * 32;
/// One amax slot per warp, and one for the CTA's result.
inline constexpr unsigned kQuantizeSmemBytes = (kQuantizeWarps + 1) * sizeof(float);

/// Elements of one head-dim row held by each lane: head_dim / 32 consecutive ones, or one per
/// lane for a head_dim below 32, whose rows then occupy the first kLanes lanes (the other lanes
/// hold copies; the quantizer instantiates 64, 128 and 256, the KV append every power of two).
template <int kHeadDim>
struct LaneChunk {
  static_assert(kHeadDim >= 1 && (kHeadDim & (kHeadDim - 1)) == 0 && kHeadDim <= kMaxRotatedHeadDim,
                "the kernel holds a power-of-two head_dim, at most 8 elements per lane");
  static constexpr int kPerLane = kHeadDim >= 32 ? kHeadDim / 32 : 1;
  static constexpr int kLanes = kHeadDim >= 32 ? 32 : kHeadDim;
};

/// Rotates the warp's row x ← x·H·D in place, lane `lane` holding elements
/// (lane mod kLanes)·kPerLane + j, in the stage order of quantize_math.hpp. Every lane of the
/// warp must call it (the cross-lane stages shuffle; lane_mask < kLanes stays inside a copy).
template <int kHeadDim>
FP8ATTN_ARCH_FN void rotate_chunk(float (&x)[LaneChunk<kHeadDim>::kPerLane], unsigned lane, int log2_head_dim,
                                  uint64_t seed) {
  constexpr int kPerLane = LaneChunk<kHeadDim>::kPerLane;
  constexpr int kLanes = LaneChunk<kHeadDim>::kLanes;
  // Stages with pair stride below kPerLane: both elements in this lane.
  for (int stride = 1; stride < kPerLane; stride <<= 1)
    for (int j = 0; j < kPerLane; ++j) {
      if (j & stride) continue;
      const float lower = x[j], upper = x[j + stride];
      x[j] = butterfly(lower, upper, false);
      x[j + stride] = butterfly(upper, lower, true);
    }
  // Stages with pair stride kPerLane·lane_mask: the partner element is in lane ^ lane_mask.
  for (int lane_mask = 1; lane_mask < kLanes; lane_mask <<= 1) {
    const bool is_upper = (lane & static_cast<unsigned>(lane_mask)) != 0;
    for (int j = 0; j < kPerLane; ++j) {
      const float partner = arch::shfl_xor_sync(arch::kFullWarpMask, x[j], lane_mask);
      x[j] = butterfly(x[j], partner, is_upper);
    }
  }
  const float norm = hadamard_norm(log2_head_dim);
  const int first = static_cast<int>(lane % static_cast<unsigned>(kLanes)) * kPerLane;
  for (int j = 0; j < kPerLane; ++j) {
    const float y = x[j] * norm;
    x[j] = rotation_sign_negative(seed, first + j) ? -y : y;
  }
}

/// Loads this lane's chunk of row (b, row, h) and rotates the warp's row when p.rotate is set.
/// Every lane of the warp must call it (the cross-lane stages shuffle).
template <int kHeadDim>
FP8ATTN_ARCH_FN void load_transformed_chunk(const QuantizeParams& p, int64_t b, int64_t row, int64_t h, unsigned lane,
                                            float (&x)[LaneChunk<kHeadDim>::kPerLane]) {
  constexpr int kPerLane = LaneChunk<kHeadDim>::kPerLane;
  static_assert(kHeadDim >= 32, "the quantizer's rows fill the warp");
  for (int j = 0; j < kPerLane; ++j) {
    const int64_t at = input_offset(p, b, row, h, static_cast<int64_t>(lane) * kPerLane + j);
    x[j] = p.input_is_bf16 ? bf16_bits_to_float(static_cast<const uint16_t*>(p.input)[at])
                           : static_cast<const float*>(p.input)[at];
  }
  if (p.rotate) rotate_chunk<kHeadDim>(x, lane, p.log2_head_dim, p.seed);
}

/// The maximum of `value` over the CTA, returned to every thread. Uses the kQuantizeWarps + 1
/// shared slots; all threads must call it.
FP8ATTN_ARCH_FN float cta_max(float value, float* slots) {
  for (int lane_mask = 16; lane_mask >= 1; lane_mask >>= 1)
    value = max_of(value, arch::shfl_xor_sync(arch::kFullWarpMask, value, lane_mask));
  if (arch::lane_idx() == 0) arch::smem_store(&slots[arch::warp_idx()], value);
  arch::syncthreads();
  if (arch::thread_rank() == 0) {
    float m = 0.0f;
    for (unsigned w = 0; w < kQuantizeWarps; ++w) m = max_of(m, arch::smem_load(&slots[w]));
    arch::smem_store(&slots[kQuantizeWarps], m);
  }
  arch::syncthreads();
  const float result = arch::smem_load(&slots[kQuantizeWarps]);
  arch::syncthreads();  // the slots may be reused right after
  return result;
}

/// The maximum unit amax over a box of units, on every thread.
FP8ATTN_ARCH_FN float units_max(const QuantizeParams& p, const UnitBox& box, float* slots) {
  float m = 0.0f;
  for (int64_t i = arch::thread_rank(); i < box.count(); i += kQuantizeThreads)
    m = max_of(m, p.unit_amax[unit_in_box(p, box, i)]);
  return cta_max(m, slots);
}

/// The CTA's rows: [first, first + count) of the sequence's rows, in tensor row coordinates.
struct UnitRows {
  int64_t b, h, u, first, count;
};
FP8ATTN_ARCH_FN UnitRows this_unit(const QuantizeParams& p) {
  const arch::Index3 cta = arch::block_idx();
  UnitRows r{cta.z, cta.y, cta.x, 0, 0};
  const RowSpan span = sequence_rows(p, r.b);
  const int64_t begin = unit_first_row(p, r.u), next = unit_first_row(p, r.u + 1);
  const int64_t end = span.rows < next ? span.rows : next;
  r.first = span.offset + begin;
  r.count = end > begin ? end - begin : 0;
  return r;
}

template <int kHeadDim>
FP8ATTN_KERNEL void quantize_amax_kernel(const QuantizeParams p) {
  static_assert(kQuantizeSmemBytes <= 227 * 1024, "shared memory above the 227 KB of an sm_90 CTA");
  float* slots = arch::dynamic_smem<float>();
  const UnitRows unit = this_unit(p);
  const unsigned lane = arch::lane_idx();
  float x[LaneChunk<kHeadDim>::kPerLane];
  float amax = 0.0f;
  for (int64_t r = unit.first + arch::warp_idx(); r < unit.first + unit.count; r += kQuantizeWarps) {
    load_transformed_chunk<kHeadDim>(p, unit.b, r, unit.h, lane, x);
    for (float v : x) amax = max_of(amax, amax_term(v));
  }
  amax = cta_max(amax, slots);
  if (arch::thread_rank() == 0) p.unit_amax[unit_index(p, unit.b, unit.h, unit.u)] = amax;
}

template <int kHeadDim>
FP8ATTN_KERNEL void quantize_cast_kernel(const QuantizeParams p) {
  constexpr int kPerLane = LaneChunk<kHeadDim>::kPerLane;
  float* slots = arch::dynamic_smem<float>();
  const UnitRows unit = this_unit(p);
  const float scale = scale_from_amax(units_max(p, scale_group(p, unit.b, unit.h, unit.u), slots), p.margin);
  if (arch::thread_rank() == 0 && writes_descale(p, unit.b, unit.h, unit.u))
    p.descale[descale_offset(p, unit.b, unit.h, unit.u)] = descale_from_scale(scale);
  if (p.tensor_amax != nullptr && unit.b == 0 && unit.h == 0 && unit.u == 0) {
    const float all = units_max(p, UnitBox{0, p.batch, 0, p.heads, 0, p.units_per_head}, slots);
    if (arch::thread_rank() == 0) *p.tensor_amax = all;
  }
  const unsigned lane = arch::lane_idx();
  float x[kPerLane];
  for (int64_t r = unit.first + arch::warp_idx(); r < unit.first + unit.count; r += kQuantizeWarps) {
    load_transformed_chunk<kHeadDim>(p, unit.b, r, unit.h, lane, x);
    for (int j = 0; j < kPerLane; j += 2) {
      const int64_t e = static_cast<int64_t>(lane) * kPerLane + j;
      // NOTE: cvt.rn.satfinite.e4m3x2 converts two values per instruction; kPerLane is even
      // for every head_dim the kernel takes except 32 (one element per lane).
      const float hi = j + 1 < kPerLane ? x[j + 1] * scale : 0.0f;
      const uint16_t pair = arch::cvt_e4m3x2(x[j] * scale, hi);
      p.output[output_offset(p, unit.b, r, unit.h, e)] = static_cast<uint8_t>(pair & 0xFF);
      if (j + 1 < kPerLane) p.output[output_offset(p, unit.b, r, unit.h, e + 1)] = static_cast<uint8_t>(pair >> 8);
    }
  }
}

}  // namespace fp8attn::sm90::quant
