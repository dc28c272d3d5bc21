// The vector decode of E4M3 K and V into the engine's panels (lib/attention/engine/
// decoded_block_e4m3.hpp, which decoded_block in query_tile.cpp runs): a K panel (16 keys'
// transposed rows) and a V row's 16-wide pieces hold exactly the decoding table's floats
// (num::e4m3_to_float), bit for bit, for every code that is not a NaN, at head_dim 64, 128 and
// 256; a panel or row holding a NaN code (either sign) is refused with nothing written, so that
// decoded_block decodes the block through the table (whose NaN keeps the code's sign).
//
// Compiled three times (tests/attention/CMakeLists.txt): with the baseline flags, for AVX2 and
// for AVX-512; a build the CPU cannot run skips. Inputs: fresh random codes (seed printed), every
// non-NaN code present in each K panel; outputs poisoned before every call.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/numerics/float8.hpp"
#include "lib/attention/attention_problem.hpp"
#include "lib/attention/engine/decoded_block_e4m3.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::engine {
namespace {

bool cpu_runs_this_build() {
#if defined(__AVX512F__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#elif defined(__AVX2__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#else
  return true;
#endif
}

bool is_nan_code(uint8_t c) { return (c & 0x7F) == 0x7F; }

/// A code drawn uniformly from the 254 that are not NaN.
uint8_t random_code(std::mt19937_64& rng) {
  for (;;) {
    const auto c = static_cast<uint8_t>(rng() & 0xFF);
    if (!is_nan_code(c)) return c;
  }
}

constexpr uint32_t kPoison = 0x7FBADBADu;  // a signalling-NaN pattern no decode produces

TEST(DecodedBlockE4m3, KeyPanelHoldsTheTablesFloatsForEveryCode) {
  if (!cpu_runs_this_build()) GTEST_SKIP() << "this CPU cannot run this build";
  const uint64_t seed = workloads::fresh_seed();
  std::mt19937_64 rng(seed);
  for (int d : {64, 128, 256}) {
    // 16 rows of d codes: random, then every non-NaN code written once at a random place.
    std::vector<uint8_t> codes(static_cast<size_t>(16 * d));
    for (uint8_t& c : codes) c = random_code(rng);
    std::vector<size_t> place(codes.size());
    for (size_t i = 0; i < place.size(); ++i) place[i] = i;
    std::shuffle(place.begin(), place.end(), rng);
    size_t next = 0;
    for (int c = 0; c < 256; ++c)
      if (!is_nan_code(static_cast<uint8_t>(c))) codes[place[next++]] = static_cast<uint8_t>(c);
    const uint8_t* rows[16];
    for (int j = 0; j < 16; ++j) rows[j] = codes.data() + j * d;
    std::vector<float> panel(codes.size(), std::bit_cast<float>(kPoison));
    ASSERT_TRUE(decode_e4m3_key_panel(rows, d, panel.data())) << "head_dim " << d << ", seed " << seed;
    for (int e = 0; e < d; ++e)
      for (int j = 0; j < 16; ++j) {
        const uint8_t c = rows[j][e];
        ASSERT_EQ(std::bit_cast<uint32_t>(panel[e * 16 + j]), std::bit_cast<uint32_t>(num::e4m3_to_float(c)))
            << "head_dim " << d << ", key " << j << ", element " << e << ", code 0x" << std::hex << int{c}
            << std::dec << ", seed " << seed;
      }
    // A NaN code of either sign anywhere: refused, nothing written.
    for (uint8_t nan : {uint8_t{0x7F}, uint8_t{0xFF}}) {
      std::vector<uint8_t> with_nan = codes;
      with_nan[place[0]] = nan;
      for (int j = 0; j < 16; ++j) rows[j] = with_nan.data() + j * d;
      std::vector<float> untouched(codes.size(), std::bit_cast<float>(kPoison));
      EXPECT_FALSE(decode_e4m3_key_panel(rows, d, untouched.data())) << "head_dim " << d << ", seed " << seed;
      for (float x : untouched) ASSERT_EQ(std::bit_cast<uint32_t>(x), kPoison) << "head_dim " << d;
    }
  }
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
}

TEST(DecodedBlockE4m3, ValueRowFillsItsSlotOfEveryPanelWithTheTablesFloats) {
  if (!cpu_runs_this_build()) GTEST_SKIP() << "this CPU cannot run this build";
  const uint64_t seed = workloads::fresh_seed();
  std::mt19937_64 rng(seed);
  for (int dv : {64, 128, 256}) {
    constexpr int64_t kPitch = 96 * 16;  // block_n 96 rows of 16 floats per panel
    const int slot = static_cast<int>(rng() % 96);
    std::vector<uint8_t> row(static_cast<size_t>(dv));
    for (uint8_t& c : row) c = random_code(rng);
    std::vector<float> panels(static_cast<size_t>(dv / 16 * kPitch), std::bit_cast<float>(kPoison));
    ASSERT_TRUE(decode_e4m3_value_row(row.data(), dv, panels.data() + slot * 16, kPitch / 16))
        << "head_dim_v " << dv << ", seed " << seed;
    for (size_t i = 0; i < panels.size(); ++i) {
      const int64_t panel = static_cast<int64_t>(i) / kPitch, at = static_cast<int64_t>(i) % kPitch;
      const bool mine = at / 16 == slot;
      const uint32_t want = mine ? std::bit_cast<uint32_t>(num::e4m3_to_float(row[panel * 16 + at % 16])) : kPoison;
      ASSERT_EQ(std::bit_cast<uint32_t>(panels[i]), want)
          << "head_dim_v " << dv << ", panel " << panel << ", float " << at << ", seed " << seed;
    }
    for (uint8_t nan : {uint8_t{0x7F}, uint8_t{0xFF}}) {
      std::vector<uint8_t> with_nan = row;
      with_nan[rng() % row.size()] = nan;
      std::vector<float> untouched(panels.size(), std::bit_cast<float>(kPoison));
      EXPECT_FALSE(decode_e4m3_value_row(with_nan.data(), dv, untouched.data() + slot * 16, kPitch / 16));
      for (float x : untouched) ASSERT_EQ(std::bit_cast<uint32_t>(x), kPoison) << "head_dim_v " << dv;
    }
  }
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
}

}  // namespace
}  // namespace fp8attn::engine
