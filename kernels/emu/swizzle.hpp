// Shared-memory swizzle patterns of TMA and wgmma (PTX ISA 9.0 §5.5.7 "Swizzling Modes"; CuTe
// Swizzle<B,4,3>). The XOR acts on the absolute .shared address, not on an offset inside a
// tile: bits [4, 4+B) ^= bits [7, 7+B), i.e. the 16-byte chunk index inside a 128-byte line is
// XORed with the line index modulo 2 / 4 / 8 for the 32B / 64B / 128B modes.
#pragma once

#include <cstdint>

#include "kernels/ptx/wgmma_descriptor.hpp"

namespace fp8attn::emu {

/// Physical .shared address of the logical address under a swizzle mode: the one definition,
/// kernels/ptx/wgmma_descriptor.hpp, which the kernels' paged gathers use too.
using arch::swizzle_address;

}  // namespace fp8attn::emu
