// The emulator's shared-memory wavefront counter (kernels/emu/bank_conflicts.hpp) on patterns
// whose wavefronts are computed by hand: 32 banks of 4 bytes, one 128-byte line per bank per
// wavefront, phases of 32 / 16 / 8 lanes for 4- / 8- / 16-byte accesses, one phase per ldmatrix
// matrix. Then through emu::launch: lanes grouped into instructions by call site and dynamic
// instance, per warp, with results unchanged by counting.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <vector>

#include "kernels/arch/barrier.hpp"
#include "kernels/arch/ldmatrix.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/emu/bank_conflicts.hpp"
#include "kernels/emu/runtime.hpp"

namespace fp8attn::test {
namespace {

using emu::SmemPath;
using emu::SmemWavefronts;

/// Lane l at base + l·stride.
SmemWavefronts strided(uint32_t stride, uint32_t bytes, uint32_t base = 0, uint32_t mask = 0xffffffffu) {
  uint32_t offsets[32];
  for (uint32_t l = 0; l < 32; ++l) offsets[l] = base + l * stride;
  return emu::warp_access_wavefronts(offsets, mask, bytes);
}

void expect(const SmemWavefronts& w, uint64_t wavefronts, uint64_t minimum, const char* what) {
  EXPECT_EQ(w.instructions, 1u) << what;
  EXPECT_EQ(w.wavefronts, wavefronts) << what;
  EXPECT_EQ(w.minimum, minimum) << what;
  std::printf("%-52s %2llu wavefronts, minimum %llu\n", what, static_cast<unsigned long long>(w.wavefronts),
              static_cast<unsigned long long>(w.minimum));
}

TEST(EmuBankConflicts, ThirtyTwoBitPatterns) {
  expect(strided(4, 4), 1, 1, "32-bit, consecutive words (one line)");
  expect(strided(4, 4, 1024 + 64), 1, 1, "32-bit, consecutive words across two lines");
  expect(strided(8, 4), 2, 1, "32-bit, stride 2 words: 2-way");
  expect(strided(64, 4), 16, 1, "32-bit, stride 16 words: 16-way");
  expect(strided(128, 4), 32, 1, "32-bit, stride 128 B: 32-way");
  expect(strided(0, 4, 12), 1, 1, "32-bit, every lane the same word (broadcast)");
  expect(strided(4, 1), 1, 1, "8-bit at 4-byte stride");
  expect(strided(128, 4, 0, 0x0000000fu), 4, 1, "32-bit, 4 lanes active, stride 128 B");
  // Lanes in pairs on the same word, pairs 128 B apart: 16 distinct lines in bank 0.
  uint32_t pairs[32];
  for (uint32_t l = 0; l < 32; ++l) pairs[l] = (l / 2) * 128;
  expect(emu::warp_access_wavefronts(pairs, 0xffffffffu, 4), 16, 1, "32-bit, lane pairs share a word, 128 B apart");
  // Bytes of one word from four lanes are one word.
  for (uint32_t l = 0; l < 32; ++l) pairs[l] = l;
  expect(emu::warp_access_wavefronts(pairs, 0xffffffffu, 1), 1, 1, "8-bit, 32 consecutive bytes");
}

TEST(EmuBankConflicts, VectorAccessesRunInPhases) {
  expect(strided(8, 8), 2, 2, "64-bit, consecutive: 2 half-warp phases");
  expect(strided(16, 16), 4, 4, "128-bit, consecutive: 4 quarter-warp phases");
  expect(strided(32, 16), 8, 4, "128-bit, stride 32 B: 2-way in each phase");
  expect(strided(128, 16), 32, 4, "128-bit, stride 128 B: 8-way in each phase");
  expect(strided(0, 16, 256), 4, 4, "128-bit, every lane the same 16 B (broadcast per phase)");
  expect(strided(16, 16, 0, 0x000000ffu), 1, 1, "128-bit, lanes 0-7 only: one phase");
}

TEST(EmuBankConflicts, MatrixRows) {
  uint32_t rows[32];
  for (uint32_t l = 0; l < 32; ++l) rows[l] = 16 * l;  // 4 matrices, each 128 contiguous bytes
  SmemWavefronts w = emu::matrix_access_wavefronts(rows, 4);
  expect(w, 4, 4, "ldmatrix.x4, rows contiguous");
  w = emu::matrix_access_wavefronts(rows, 1);
  expect(w, 1, 1, "ldmatrix.x1, rows contiguous");
  for (uint32_t l = 0; l < 32; ++l) rows[l] = 128 * l;  // every row in bank group 0
  expect(emu::matrix_access_wavefronts(rows, 4), 32, 4, "ldmatrix.x4, rows 128 B apart: 8-way");
  expect(emu::matrix_access_wavefronts(rows, 2), 16, 2, "ldmatrix.x2, rows 128 B apart: 8-way");
  // The 128-byte swizzle: row r of a 128-byte-wide tile at r·128 + ((c ^ r) % 8)·16 for chunk c.
  for (uint32_t l = 0; l < 32; ++l) rows[l] = (l % 8) * 128 + (((l / 8) ^ (l % 8)) % 8) * 16;
  expect(emu::matrix_access_wavefronts(rows, 4), 4, 4, "ldmatrix.x4, 128-byte swizzled rows");
}

struct Args {
  uint32_t stride_words;  // the conflicting load's stride
  uint32_t* sums;         // [thread]
};

constexpr int kThreads = 64;
constexpr int kIterations = 3;

/// Per iteration: a conflict-free store of every lane, a load at lane·stride words, and a load by
/// lanes 0-15 only (a diverged instruction); then one ldmatrix.x4 over 128-byte-strided rows.
void kernel(Args a) {
  uint32_t* smem = arch::dynamic_smem<uint32_t>();
  const uint32_t lane = arch::lane_idx(), warp = arch::thread_idx().x / 32;
  uint32_t sum = 0;
  for (int i = 0; i < kIterations; ++i) {
    arch::smem_store(smem + warp * 2048 + 32 * i + lane, lane * 7u + i);
    arch::syncthreads();
    sum += arch::smem_load(smem + warp * 2048 + lane * a.stride_words);
    if (lane < 16) sum += arch::smem_load(smem + warp * 2048 + 32 * i + lane);
    arch::syncthreads();
  }
  uint32_t regs[4];
  arch::ldmatrix<4, false>(arch::dynamic_smem() + warp * 8192 + 128 * lane, regs);
  a.sums[arch::thread_idx().x] = sum + regs[0] + regs[3];
}

std::vector<uint32_t> run(uint32_t stride_words, emu::SmemTraffic* traffic, uint64_t seed) {
  std::vector<uint32_t> sums(kThreads, 0xDEADBEEFu);
  emu::LaunchConfig c;
  c.block.x = kThreads;
  c.dynamic_smem_bytes = 16384;
  c.shuffle = true;
  c.seed = seed;
  c.smem_traffic = traffic;
  emu::launch(c, &kernel, Args{stride_words, sums.data()});
  return sums;
}

TEST(EmuBankConflicts, LaunchGroupsLanesByCallSiteAndInstance) {
  const uint64_t seed = std::random_device{}();
  std::printf("schedule seed %llu\n", static_cast<unsigned long long>(seed));
  for (uint32_t stride : {1u, 2u, 32u}) {
    emu::SmemTraffic traffic;
    const std::vector<uint32_t> counted = run(stride, &traffic, seed);
    EXPECT_EQ(counted, run(stride, nullptr, seed)) << "counting changed a result";
    ASSERT_EQ(traffic.per_warp.size(), 2u);
    EXPECT_EQ(traffic.ctas, 1u);
    const uint64_t conflict = stride == 1 ? 1 : stride == 2 ? 2 : 32;
    for (unsigned w = 0; w < 2; ++w) {
      const SmemWavefronts g = traffic.warps(w, w + 1, SmemPath::Generic);
      // 3 iterations x (store 1 + strided load + half-warp load 1).
      EXPECT_EQ(g.instructions, 3u * kIterations) << "warp " << w;
      EXPECT_EQ(g.wavefronts, kIterations * (2 + conflict)) << "stride " << stride << " warp " << w;
      EXPECT_EQ(g.minimum, 3u * kIterations);
      const SmemWavefronts m = traffic.warps(w, w + 1, SmemPath::Matrix);
      EXPECT_EQ(m.instructions, 1u);
      EXPECT_EQ(m.wavefronts, 32u);
      EXPECT_EQ(m.minimum, 4u);
    }
    EXPECT_EQ(traffic.per_site.size(), 3u) << "one entry per smem_load / smem_store call site";
    std::printf("stride %2u words: %llu generic wavefronts in %llu instructions per warp (minimum %llu)\n", stride,
                static_cast<unsigned long long>(traffic.warps(0, 1, SmemPath::Generic).wavefronts),
                static_cast<unsigned long long>(traffic.warps(0, 1, SmemPath::Generic).instructions),
                static_cast<unsigned long long>(traffic.warps(0, 1, SmemPath::Generic).minimum));
  }
}

}  // namespace
}  // namespace fp8attn::test
