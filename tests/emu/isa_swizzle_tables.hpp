// The shared-memory swizzle as the PTX ISA tabulates it (PTX ISA 9.0 §5.5.7 "Swizzling Modes"):
// for each mode, the 16-byte chunk stored at position j of 128-byte line i, with the pattern
// repeating every 2 / 4 / 8 lines (256 / 512 / 1024 bytes) of the absolute .shared address.
// The TMA and wgmma layout tests take their expected placements from these tables, not from
// the emulator's swizzle function, so a wrong XOR there cannot also be in the
// expectation.
#pragma once

#include <cstdint>

#include "kernels/ptx/wgmma_descriptor.hpp"

namespace fp8attn::test {

/// Physical .shared address of logical `address` under swizzle mode `s`, by table lookup.
inline uint32_t isa_swizzle_address(uint32_t address, arch::Swizzle s) {
  static const uint8_t k32[2][8] = {{0, 1, 2, 3, 4, 5, 6, 7}, {1, 0, 3, 2, 5, 4, 7, 6}};
  static const uint8_t k64[4][8] = {
      {0, 1, 2, 3, 4, 5, 6, 7}, {1, 0, 3, 2, 5, 4, 7, 6}, {2, 3, 0, 1, 6, 7, 4, 5}, {3, 2, 1, 0, 7, 6, 5, 4}};
  static const uint8_t k128[8][8] = {{0, 1, 2, 3, 4, 5, 6, 7}, {1, 0, 3, 2, 5, 4, 7, 6}, {2, 3, 0, 1, 6, 7, 4, 5},
                                     {3, 2, 1, 0, 7, 6, 5, 4}, {4, 5, 6, 7, 0, 1, 2, 3}, {5, 4, 7, 6, 1, 0, 3, 2},
                                     {6, 7, 4, 5, 2, 3, 0, 1}, {7, 6, 5, 4, 3, 2, 1, 0}};
  const uint32_t line = address >> 7, chunk = (address >> 4) & 7u, in_chunk = address & 15u;
  const uint8_t* row = nullptr;
  switch (s) {
    case arch::Swizzle::B32:
      row = k32[line % 2];
      break;
    case arch::Swizzle::B64:
      row = k64[line % 4];
      break;
    case arch::Swizzle::B128:
      row = k128[line % 8];
      break;
    case arch::Swizzle::None:
      return address;
  }
  // The table gives the logical chunk at each position: the position holding `chunk`.
  uint32_t position = 0;
  while (row[position] != chunk) ++position;
  return (line << 7) | (position << 4) | in_chunk;
}

}  // namespace fp8attn::test
