// Register fragment layouts of wgmma.mma_async (PTX ISA 9.0 §9.7.15.5.1.1.1 Fig. 148-149 and
// §9.7.15.5.1.1.3 Fig. 152-153; the PTX gives figures only, the closed forms below come from
// CuTe CLayout_64xN / ALayout_64x16 / ALayout_64x32 and MLIR's NVGPU store lowering, which
// agree). Shared by the emulator, kernels (epilogues, softmax on fragments) and the CPU engine.
//
// Notation: t in [0,128) is the thread in the warpgroup, w = t/32, lane l = t%32,
// g = l/4 ("groupID"), q = l%4 ("threadID_in_group").
#pragma once

#include "kernels/ptx/build_switch.hpp"

namespace fp8attn::arch {

/// Number of threads of a warpgroup (PTX ISA 9.0 §9.7.15.1: four contiguous warps).
inline constexpr int kWarpgroupThreads = 128;
/// Rows of every wgmma tile.
inline constexpr int kWgmmaM = 64;

/// Position of one element of a 64 x N (or 64 x K) tile.
struct FragmentCoord {
  int row;
  int col;
};

/// F32 accumulator D, m64nN: register i (0 <= i < N/2) of thread t.
FP8ATTN_HOST_DEVICE constexpr FragmentCoord wgmma_d_coord(int t, int i) {
  const int w = t / 32, l = t % 32, g = l / 4, q = l % 4;
  return {16 * w + g + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * q + (i & 1)};
}

/// Inverse of wgmma_d_coord: the thread and register holding D(row, col).
FP8ATTN_HOST_DEVICE constexpr int wgmma_d_thread(int row, int col) { return 32 * (row / 16) + 4 * (row % 8) + (col % 8) / 2; }
FP8ATTN_HOST_DEVICE constexpr int wgmma_d_register(int row, int col) { return 4 * (col / 8) + 2 * ((row % 16) / 8) + (col % 2); }

/// BF16 A from registers, m64nNk16: element v (0..7) of thread t sits in register v/2,
/// half v%2 (0 = bits 15:0). Returns (row m, col k).
FP8ATTN_HOST_DEVICE constexpr FragmentCoord wgmma_a_bf16_coord(int t, int v) {
  const int w = t / 32, l = t % 32, g = l / 4, q = l % 4;
  return {16 * w + g + 8 * ((v >> 1) & 1), 2 * q + (v & 1) + 8 * (v >> 2)};
}

/// FP8 A from registers, m64nNk32: element v (0..15) of thread t sits in register v/4,
/// byte v%4 (byte 0 = bits 7:0). Returns (row m, col k).
FP8ATTN_HOST_DEVICE constexpr FragmentCoord wgmma_a_fp8_coord(int t, int v) {
  const int w = t / 32, l = t % 32, g = l / 4, q = l % 4;
  return {16 * w + g + 8 * ((v >> 2) & 1), 4 * q + (v & 3) + 16 * (v >> 3)};
}

}  // namespace fp8attn::arch
