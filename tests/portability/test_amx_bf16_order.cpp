// What AMX-BF16's tile dot product (tdpbf16ps) computes on the CPU that runs the test, and why the
// FP32 mode's product kernels do not use it: with one pair of BF16 products per output (K = 2),
// each output is RN(acc + RN(a0·b0 + a1·b1)), the pair's sum rounded once and then added, which
// no pair of FMAs reproduces (vdpbf16ps rounds after each product); with more pairs, no chain of
// rounded additions in either order reproduces it either. The AVX2 and baseline builds would then
// need an unknown summation rule to give the same bits, so the instruction stays out of the library.
// Skips on CPUs without AMX-BF16 and where Linux does not grant the tile state.
#include <cpuid.h>
#include <gtest/gtest.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>

#include "bf16_dot_inputs.hpp"

namespace {

using fp8attn::test::bf16_value;
using fp8attn::test::e4m3_value_as_bf16;
using fp8attn::test::random_accumulator;

/// The tile configuration's memory form (palette 1), as the Intel SDM lays it out.
struct TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

bool same_bits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

/// Linux hands a process the AMX tile state only on request (ARCH_REQ_XCOMP_PERM, XTILEDATA).
bool amx_bf16_usable() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;  // CPUID leaf 7: EDX bit 22 AMX-BF16, bit 24 AMX-TILE
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0 || (edx >> 22 & 1) == 0 || (edx >> 24 & 1) == 0)
    return false;
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

/// One 16 × 16 tile: out = acc + A(16 × pairs·2) · B(pairs × 16 pairs), by tdpbf16ps.
/// A's row m holds K = 2·pairs BF16 values; B's row k holds pair k of every column n at 2n, 2n + 1.
__attribute__((target("amx-tile,amx-bf16"))) void tile_dot(int pairs, const uint16_t (*a)[32],
                                                             const uint16_t (*b)[32], const float (*acc)[16],
                                                             float (*out)[16]) {
  TileConfig config;
  config.colsb[0] = 64, config.rows[0] = 16;  // tmm0: the FP32 accumulator
  config.colsb[1] = static_cast<uint16_t>(4 * pairs), config.rows[1] = 16;  // tmm1: A
  config.colsb[2] = 64, config.rows[2] = static_cast<uint8_t>(pairs);       // tmm2: B
  _tile_loadconfig(&config);
  _tile_loadd(0, acc, 64);
  _tile_loadd(1, a, 64);
  _tile_loadd(2, b, 64);
  _tile_dpbf16ps(0, 1, 2);
  _tile_stored(0, out, 64);
  _tile_release();
}

/// Counts, over random tiles of `pairs` pairs, the outputs equal to each rule's.
struct Counts {
  int64_t outputs = 0, pair_rounded_once = 0, fma_chain_odd_first = 0, rounded_pairs_in_order = 0,
          rounded_pairs_reversed = 0;
};

Counts run_tiles(int pairs, int tiles) {
  std::mt19937 rng(std::random_device{}());
  Counts c;
  for (int tile = 0; tile < tiles; ++tile) {
    alignas(64) uint16_t a[16][32] = {}, b[16][32] = {};
    alignas(64) float acc[16][16], out[16][16];
    for (auto& row : a)
      for (int k = 0; k < 2 * pairs; ++k) row[k] = e4m3_value_as_bf16(rng);
    for (int k = 0; k < pairs; ++k)
      for (uint16_t& x : b[k]) x = e4m3_value_as_bf16(rng);
    for (auto& row : acc)
      for (float& x : row) x = random_accumulator(rng);
    for (auto& row : out)
      for (float& x : row) x = std::nanf("");
    tile_dot(pairs, a, b, acc, out);
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 16; ++n) {
        float pair_sum[16], chain = acc[m][n];
        for (int k = 0; k < pairs; ++k) {
          const float a0 = bf16_value(a[m][2 * k]), a1 = bf16_value(a[m][2 * k + 1]);
          const float b0 = bf16_value(b[k][2 * n]), b1 = bf16_value(b[k][2 * n + 1]);
          // Both products are exact in FP32, their sum in double: one rounding.
          pair_sum[k] = static_cast<float>(static_cast<double>(a0 * b0) + static_cast<double>(a1 * b1));
          chain = std::fma(a0, b0, std::fma(a1, b1, chain));  // vdpbf16ps's rule, pair by pair
        }
        float in_order = acc[m][n], reversed = acc[m][n];
        for (int k = 0; k < pairs; ++k) in_order += pair_sum[k];
        for (int k = pairs - 1; k >= 0; --k) reversed += pair_sum[k];
        ++c.outputs;
        c.pair_rounded_once += pairs == 1 && same_bits(acc[m][n] + pair_sum[0], out[m][n]);
        c.fma_chain_odd_first += same_bits(chain, out[m][n]);
        c.rounded_pairs_in_order += same_bits(in_order, out[m][n]);
        c.rounded_pairs_reversed += same_bits(reversed, out[m][n]);
      }
  }
  return c;
}

TEST(AmxBf16, OnePairIsRoundedOnceThenAddedToTheAccumulator) {
  if (!amx_bf16_usable()) GTEST_SKIP() << "no AMX-BF16 on this CPU, or Linux did not grant the tile state";
  const Counts c = run_tiles(1, 2000);
  EXPECT_EQ(c.pair_rounded_once, c.outputs) << "outputs that are not RN(acc + RN(a0·b0 + a1·b1))";
  // The inputs show the difference: vdpbf16ps's two rounded FMAs give other bits in some outputs.
  EXPECT_LT(c.fma_chain_odd_first, c.outputs);
  std::printf("%lld outputs: pair rounded once %lld, two FMAs %lld\n", static_cast<long long>(c.outputs),
              static_cast<long long>(c.pair_rounded_once), static_cast<long long>(c.fma_chain_odd_first));
}

TEST(AmxBf16, SixteenPairsFollowNoChainOfRoundedAdditions) {
  if (!amx_bf16_usable()) GTEST_SKIP() << "no AMX-BF16 on this CPU, or Linux did not grant the tile state";
  const Counts c = run_tiles(16, 500);
  EXPECT_LT(c.fma_chain_odd_first, c.outputs);
  EXPECT_LT(c.rounded_pairs_in_order, c.outputs);
  EXPECT_LT(c.rounded_pairs_reversed, c.outputs);
  std::printf("%lld outputs: FMA chain %lld, rounded pairs in order %lld, reversed %lld\n",
              static_cast<long long>(c.outputs), static_cast<long long>(c.fma_chain_odd_first),
              static_cast<long long>(c.rounded_pairs_in_order), static_cast<long long>(c.rounded_pairs_reversed));
}

}  // namespace
