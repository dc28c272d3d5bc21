// Stage and phase bookkeeping of the mbarrier pipeline (CUTLASS PipelineState, DeepGEMM's
// advance helper): the phase bit flips each time the stage index wraps. A fresh mbarrier is in
// phase 0, so a wait on parity 1 passes at once (PTX ISA 9.0 §9.7.13.15.16): the producer starts
// at phase 1 on the "empty" barriers, the consumers at phase 0 on the "full" ones.
#pragma once

#include <cstdint>

#include "kernels/arch/platform.hpp"

namespace fp8attn::sm90 {

template <uint32_t kStages>
struct PipelineState {
  uint32_t stage = 0;
  uint32_t phase = 0;
  FP8ATTN_HOST_DEVICE void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

}  // namespace fp8attn::sm90
