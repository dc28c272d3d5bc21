// The E4M3 P·V's key order (kernels/sm90/pv_key_order.hpp) in the engine: the kernel's K slot a
// holds key pv_key_of_slot(a), so that P's A fragment is the cast Q·Kᵀ accumulator in place. The
// engine's E4M3 tiles keep V's panels and P's rows in the same slot order, so that the FP32
// accumulation model, which adds an instruction's products one by one, adds them in the kernel's
// order (the tensor core's addition does not depend on it).
#pragma once

#include "kernels/sm90/pv_key_order.hpp"

namespace fp8attn::engine {

/// The depth of the E4M3 P·V over a block of `keys` keys: whole periods of the order, the slots
/// of keys at or past `keys` holding zeros (as the kernel's masked P and zero-filled V rows).
inline int pv_slot_depth(int keys) { return (keys + sm90::kPvKeyPeriod - 1) / sm90::kPvKeyPeriod * sm90::kPvKeyPeriod; }

/// P's row of a block in slot order, in place: column a becomes key pv_key_of_slot(a), +0 for a
/// key at or past `keys`, for a < pv_slot_depth(keys) (the row has room: block_n is whole periods).
inline void p_row_to_slots(float* row, int keys) {
  constexpr int kPeriod = sm90::kPvKeyPeriod;
  for (int k0 = 0; k0 < keys; k0 += kPeriod) {
    float period[kPeriod];
    for (int i = 0; i < kPeriod; ++i) period[i] = k0 + i < keys ? row[k0 + i] : 0.0f;
    for (int a = 0; a < kPeriod; ++a) row[k0 + a] = period[sm90::pv_key_of_slot(a)];
  }
}

}  // namespace fp8attn::engine
