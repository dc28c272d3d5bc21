// Warp operations: shfl.sync (indexed and butterfly) and byte permutes.
// Semantics: PTX ISA 9.0 §9.7.9.6 shfl.sync and §9.7.9.7 prmt; libdevice __nv_byte_perm
// (PTX_FACTS.md §8). The host versions run the ISA's pseudocode over the warp's lanes.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/arch/platform.hpp"
#if !FP8ATTN_DEVICE_BUILD
#include <span>
#include <string>
#endif

namespace fp8attn::arch {

inline constexpr uint32_t kFullWarpMask = 0xffffffffu;

#if !FP8ATTN_DEVICE_BUILD
namespace detail {

enum class ShflMode { Idx, Bfly };

// One lane's operands of shfl.sync.{idx,bfly}.b32 d, a, b, c, membermask.
struct ShflLane {
  uint32_t a, b, c, d;
};

// PTX ISA 9.0 §9.7.9.6 "Semantics":
//   maxLane = (lane & segmask) | (cval & ~segmask); minLane = lane & segmask;
//   bfly: j = lane ^ bval;  idx: j = minLane | (bval & ~segmask);  pval = j <= maxLane;
//   if (!pval) j = lane;  d = SourceA[j]
// The value of a source lane outside membermask is unpredictable, so reading one is an error.
inline uint32_t shfl_b32(ShflMode mode, uint32_t member_mask, uint32_t a, uint32_t b, uint32_t c) {
  ShflLane mine{a, b, c, 0};
  emu::warp_collective(member_mask, &mine, [mode, member_mask](std::span<void* const> lanes) {
    for (uint32_t lane = 0; lane < 32; ++lane) {
      if (lanes[lane] == nullptr) continue;
      auto& op = *static_cast<ShflLane*>(lanes[lane]);
      const uint32_t bval = op.b & 0x1f, cval = op.c & 0x1f, segmask = (op.c >> 8) & 0x1f;
      const uint32_t max_lane = (lane & segmask) | (cval & ~segmask);
      const uint32_t min_lane = lane & segmask;
      uint32_t j = mode == ShflMode::Bfly ? (lane ^ bval) : (min_lane | (bval & ~segmask));
      if (!(j <= max_lane)) j = lane;
      if (lanes[j] == nullptr) {
        emu::fail_in_kernel("shfl.sync lane " + std::to_string(lane) + " reads lane " +
                            std::to_string(j) + ", which is not in the member mask " +
                            std::to_string(member_mask) +
                            " (its value is unpredictable: PTX ISA 9.0 §9.7.9.6)");
      }
      op.d = static_cast<const ShflLane*>(lanes[j])->a;
    }
  });
  return mine.d;
}

// CUDA's __shfl_sync / __shfl_xor_sync pass c = ((32 - width) << 8) | 0x1f (sm_30_intrinsics.hpp
// of the CUDA toolkit): segmask selects the width-lane segment, clamp at its last lane.
inline uint32_t shfl_c_operand(int width) {
  if (width < 1 || width > 32 || (width & (width - 1)) != 0) {
    emu::fail_in_kernel("shuffle width " + std::to_string(width) +
                        " is not a power of 2 in [1, 32] (CUDA C Programming Guide, warp shuffle)");
  }
  return (static_cast<uint32_t>(32 - width) << 8) | 0x1f;
}

template <class T>
T shfl(ShflMode mode, uint32_t member_mask, T var, int b, int width) {
  static_assert(std::is_trivially_copyable_v<T> && (sizeof(T) == 4 || sizeof(T) == 8),
                "shuffles move 32-bit values (64-bit ones as two halves)");
  const uint32_t c = shfl_c_operand(width);
  uint32_t words[sizeof(T) / 4];
  std::memcpy(words, &var, sizeof(T));
  for (uint32_t& w : words) w = shfl_b32(mode, member_mask, w, static_cast<uint32_t>(b), c);
  T out;
  std::memcpy(&out, words, sizeof(T));
  return out;
}

}  // namespace detail
#endif

// __shfl_sync: the value of `var` held by lane src_lane of the caller's width-lane segment.
// Every lane in member_mask must call it, the caller included.
template <class T>
FP8ATTN_ARCH_FN T shfl_sync(uint32_t member_mask, T var, int src_lane, int width = 32) {
#if FP8ATTN_DEVICE_BUILD
  return __shfl_sync(member_mask, var, src_lane, width);
#else
  return detail::shfl(detail::ShflMode::Idx, member_mask, var, src_lane, width);
#endif
}

// __shfl_xor_sync: the value of `var` held by lane (lane ^ lane_mask); a lane whose partner lies
// in a later width-lane segment keeps its own value.
template <class T>
FP8ATTN_ARCH_FN T shfl_xor_sync(uint32_t member_mask, T var, int lane_mask, int width = 32) {
#if FP8ATTN_DEVICE_BUILD
  return __shfl_xor_sync(member_mask, var, lane_mask, width);
#else
  return detail::shfl(detail::ShflMode::Bfly, member_mask, var, lane_mask, width);
#endif
}

// __byte_perm(x, y, s) (libdevice __nv_byte_perm): bytes 0..3 of x then 0..3 of y form input
// bytes 0..7; result byte n = input[(s >> 4n) & 7]; the upper 16 bits of s are ignored.
// NOTE: with bit 3 of a selector nibble set, libdevice's text masks it while raw prmt would
// replicate the sign (PTX_FACTS.md §8, UNCONFIRMED), so the host version rejects such selectors.
FP8ATTN_ARCH_FN uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#if FP8ATTN_DEVICE_BUILD
  return __byte_perm(x, y, s);
#else
  if ((s & 0x8888u) != 0) {
    emu::fail_in_kernel("byte_perm selector " + std::to_string(s) +
                        " has bit 3 of a nibble set; its meaning is not pinned down (PTX_FACTS §8)");
  }
  const uint64_t input = (uint64_t{y} << 32) | x;
  uint32_t result = 0;
  for (unsigned n = 0; n < 4; ++n) {
    const unsigned sel = (s >> (4 * n)) & 7;
    result |= static_cast<uint32_t>((input >> (8 * sel)) & 0xff) << (8 * n);
  }
  return result;
#endif
}

// prmt.b32 d, a, b, c in the default mode (PTX ISA 9.0 §9.7.9.7): source bytes {b, a} = b7..b0
// with a in the low four; result byte n takes source byte c[4n+2:4n], or, when c[4n+3] is set,
// that byte's sign bit replicated over all 8 bits.
FP8ATTN_ARCH_FN uint32_t prmt(uint32_t a, uint32_t b, uint32_t c) {
#if FP8ATTN_DEVICE_BUILD
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
#else
  const uint64_t source = (uint64_t{b} << 32) | a;
  uint32_t result = 0;
  for (unsigned n = 0; n < 4; ++n) {
    const unsigned sel = (c >> (4 * n)) & 0xf;
    uint32_t byte = static_cast<uint32_t>((source >> (8 * (sel & 7))) & 0xff);
    if (sel & 8) byte = (byte & 0x80) ? 0xff : 0x00;
    result |= byte << (8 * n);
  }
  return result;
#endif
}

}  // namespace fp8attn::arch
