// The order of keys along K of the E4M3 forward's P·V: slot a of an instruction's K dimension
// holds key pv_key_of_slot(a) of the block, so that P's A fragment (m64nNk32, from registers) is
// the Q·Kᵀ accumulator's own registers, cast in place, with no shuffle.
//
// Why this order (kernels/ptx/wgmma_fragment.hpp): thread q of a quad holds accumulator columns
// 8j + 2q + e (j = 0..3, e = 0..1) of a 32-key chunk, and FP8 A slots 4q + v and 16 + 4q + v
// (v = 0..3). Slot 16·(j/2) + 4q + 2·(j%2) + e therefore takes column 8j + 2q + e: each A register
// is two cast column pairs of the thread (the softmax's words, fwd_softmax.hpp), and the order
// never leaves a 16-key half. V's rows must follow: the producer writes key k of V to Vᵀ column
// pv_slot_of_key(k) (fwd_v_transpose.hpp), and the CPU engine stores its V panels and P rows so
// (lib/attention/engine/pv_order.hpp).
// NOTE: under the tensor core's addition (kernels/ptx/mma_order.hpp) the order of the products
// inside one instruction does not change its result; under the FP32 accumulation model, which
// adds them one by one in slot order, the engine adds them in this order too, so the emulated
// kernel and the engine stay bit-equal in both.
// BF16 P needs none of this: its A fragment already is the accumulator's layout.
#pragma once

#include "kernels/sm90/tile_config.hpp"

namespace fp8attn::sm90 {

/// Keys per period of the order: a permutation of each 16 keys.
inline constexpr int kPvKeyPeriod = 16;

/// The key (of the block) in slot a of the E4M3 P·V's K dimension.
FP8ATTN_HOST_DEVICE constexpr int pv_key_of_slot(int a) {
  const int u = (a >> 2) & 3, v = a & 3;
  return (a & ~15) + 8 * (v >> 1) + 2 * u + (v & 1);
}

/// The inverse: the slot of key k.
FP8ATTN_HOST_DEVICE constexpr int pv_slot_of_key(int k) {
  const int r = k & 15;
  return (k & ~15) + 4 * ((r >> 1) & 3) + 2 * (r >> 3) + (r & 1);
}

}  // namespace fp8attn::sm90
