// ldmatrix / stmatrix .m8n8.b16 (PTX ISA 9.0 §9.7.14.5.15-16): which elements each lane's
// registers hold for .x1/.x2/.x4, with and without .trans, with rows at scattered addresses;
// stmatrix as the exact inverse.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "kernels/arch/barrier.hpp"
#include "kernels/arch/ldmatrix.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"

namespace fp8attn::test {
namespace {

// Row i of matrix j sits at a scattered, 16-byte aligned place: rows need not be contiguous.
constexpr uint32_t row_offset(int matrix, int row) { return 16u * (matrix * 8 + ((row * 5) % 8)) + 1024u * (row % 2); }
// The value stored at element (row r, col c) of matrix j.
constexpr uint16_t code(int j, int r, int c) { return static_cast<uint16_t>(0x1000 * (j + 1) + 16 * r + c); }

struct Args {
  int count;
  bool trans;
  uint32_t* loaded;  // [lane][count]
  uint16_t* stored;  // the shared-memory image after stmatrix of the loaded registers
};

template <int kCount, bool kTrans>
void kernel(Args a) {
  const unsigned lane = arch::lane_idx();
  uint16_t* smem = arch::dynamic_smem<uint16_t>();
  if (lane == 0)
    for (int j = 0; j < kCount; ++j)
      for (int r = 0; r < 8; ++r)
        for (int c = 0; c < 8; ++c) arch::smem_store(smem + (row_offset(j, r) / 2 + c), code(j, r, c));
  arch::syncthreads();
  const int j = static_cast<int>(lane) / 8, r = static_cast<int>(lane) % 8;
  unsigned char* row = arch::dynamic_smem() + (j < kCount ? row_offset(j, r) : 0);
  uint32_t regs[kCount];
  arch::ldmatrix<kCount, kTrans>(row, regs);
  for (int i = 0; i < kCount; ++i) a.loaded[lane * kCount + i] = regs[i];
  arch::syncthreads();
  // Store back into a second area at +4096 with the same row pattern.
  arch::stmatrix<kCount, kTrans>(row + 4096, regs);
  arch::syncthreads();
  if (lane == 0)
    for (int i = 0; i < 4096 / 2; ++i) a.stored[i] = arch::smem_load(smem + 2048 + i);
}

template <int kCount, bool kTrans>
void expect_layout() {
  std::vector<uint32_t> loaded(32 * kCount, 0xDEADBEEF);
  std::vector<uint16_t> stored(2048, 0xBEEF);
  emu::LaunchConfig config;
  config.block.x = 32;
  config.dynamic_smem_bytes = 8192;
  config.shuffle = true;
  config.seed = kCount * 2 + kTrans;
  emu::launch(config, &kernel<kCount, kTrans>, Args{kCount, kTrans, loaded.data(), stored.data()});
  int checked = 0;
  for (int l = 0; l < 32; ++l)
    for (int j = 0; j < kCount; ++j)
      for (int h = 0; h < 2; ++h) {
        // ISA: lane l, register j holds M_j[l/4][2(l%4)+h]; .trans holds M_j[2(l%4)+h][l/4].
        const int r = kTrans ? 2 * (l % 4) + h : l / 4, c = kTrans ? l / 4 : 2 * (l % 4) + h;
        const uint16_t got = static_cast<uint16_t>(loaded[l * kCount + j] >> (16 * h));
        ASSERT_EQ(got, code(j, r, c)) << "x" << kCount << (kTrans ? ".trans" : "") << " lane " << l << " reg " << j;
        ++checked;
      }
  for (int j = 0; j < kCount; ++j)
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c)
        ASSERT_EQ(stored[row_offset(j, r) / 2 + c], code(j, r, c)) << "stmatrix must invert ldmatrix";
  std::printf("ldmatrix.x%d%s: %d halves at their ISA positions; stmatrix restored %d rows\n", kCount,
              kTrans ? ".trans" : "", checked, 8 * kCount);
}

TEST(Ldmatrix, X1X2X4WithAndWithoutTrans) {
  expect_layout<1, false>();
  expect_layout<2, false>();
  expect_layout<4, false>();
  expect_layout<1, true>();
  expect_layout<2, true>();
  expect_layout<4, true>();
}

// Lanes whose address ldmatrix.x1 does not use must still give a valid row address: that sm_80+
// ignores them is only implied by the ISA.
TEST(Ldmatrix, RefusesAGarbageAddressFromAnUnusedLane) {
  emu::LaunchConfig config;
  config.block.x = 32;
  config.dynamic_smem_bytes = 1024;
  const auto kernel = +[](int) {
    const unsigned lane = arch::lane_idx();
    unsigned char* row = lane < 8 ? arch::dynamic_smem() + 16 * lane : arch::dynamic_smem() + 4096;  // past the end
    uint32_t r[1];
    arch::ldmatrix<1>(row, r);
  };
  try {
    emu::launch(config, kernel, 0);
    ADD_FAILURE() << "an unused lane's out-of-range address must be refused";
  } catch (const emu::KernelError& e) {
    std::printf("report: %s\n", e.what());
    EXPECT_NE(std::string(e.what()).find("unused"), std::string::npos);
  }
}

}  // namespace
}  // namespace fp8attn::test
