// Host semantics of ldmatrix / stmatrix .m8n8 .b16 (PTX ISA 9.0 §9.7.14.5.15-16; layouts in
// PTX_FACTS.md §9), called by kernels/arch/ldmatrix.hpp on the emulator build. Warp-collective.
//
// Matrix j (0 <= j < count) has its 8 rows at the addresses given by lanes 8j..8j+7; a row is
// 16 bytes (8 x 16-bit), 16-byte aligned. Non-transposed, lane l's register j holds
// M_j[l/4][2(l%4)] in bits 15:0 and M_j[l/4][2(l%4)+1] in bits 31:16; .trans holds
// M_j[2(l%4)][l/4] and M_j[2(l%4)+1][l/4]. stmatrix is the exact inverse.
#pragma once

#include <cstdint>

namespace fp8attn::emu {

/// count: 1, 2 or 4 matrices. `row` is this lane's row address (unused for lanes >= 8*count, but
/// still required to be a valid aligned shared-memory address);
/// `regs` holds `count` registers.
void ldmatrix(int count, bool trans, const void* row, uint32_t* regs);
void stmatrix(int count, bool trans, void* row, const uint32_t* regs);

}  // namespace fp8attn::emu
