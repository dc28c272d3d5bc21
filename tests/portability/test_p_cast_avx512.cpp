// The AVX-512 cast of P̃ (lib/attention/engine/p_cast_avx512.hpp) against the scalar roundings
// and row loops it replaces in the engine's AVX-512 build (kernels/numerics' round_to_e4m3 and
// round_to_bf16, row_softmax.hpp's row_cast_p, pv_order.hpp's p_row_to_slots): the same bits
// and the same counts. Skips on a CPU without AVX-512.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"
#include "lib/attention/engine/p_cast_avx512.hpp"
#include "lib/attention/engine/pv_order.hpp"
#include "lib/attention/engine/row_softmax.hpp"

namespace {

namespace pc = fp8attn::engine::p_cast_avx512;

bool has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}

__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl"))) void round16(const uint32_t* in, uint32_t* e4m3,
                                                                         uint32_t* bf16) {
  __m512 x;
  std::memcpy(&x, in, sizeof x);
  const __m512 a = pc::round_to_e4m3_x16(x), b = pc::round_to_bf16_x16(x);
  std::memcpy(e4m3, &a, sizeof a);
  std::memcpy(bf16, &b, sizeof b);
}

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
float from_bits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// Every pattern of the high 16 bits (sign, exponent, the mantissa bits that decide E4M3's and
// BF16's rounding) with low halves at the rounding's edges and random ones: ties, just below and
// above, all NaN payload classes, ±0, ±inf, the subnormals.
TEST(PCastAvx512, RoundingsGiveTheScalarBits) {
  if (!has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512 F/DQ/BW/VL";
  std::mt19937 rng(std::random_device{}());
  std::vector<uint32_t> lows = {0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFE, 0xFFFF};
  for (int i = 0; i < 9; ++i) lows.push_back(rng() & 0xFFFF);
  int64_t checked = 0, e4m3_wrong = 0, bf16_wrong = 0;
  uint32_t in[16], e4m3[16], bf16[16];
  for (uint32_t high = 0; high < 0x10000; ++high) {
    for (int l = 0; l < 16; ++l) in[l] = (high << 16) | lows[l];
    std::fill(e4m3, e4m3 + 16, 0xDEADBEEFu);
    std::fill(bf16, bf16 + 16, 0xDEADBEEFu);
    round16(in, e4m3, bf16);
    for (int l = 0; l < 16; ++l) {
      const float x = from_bits(in[l]);
      e4m3_wrong += e4m3[l] != bits(fp8attn::num::round_to_e4m3(x));
      bf16_wrong += bf16[l] != bits(fp8attn::num::round_to_bf16(x));
      ++checked;
    }
  }
  EXPECT_EQ(e4m3_wrong, 0) << "of " << checked << " inputs";
  EXPECT_EQ(bf16_wrong, 0) << "of " << checked << " inputs";
}

/// A row of P̃ as the softmax leaves it: mostly in (0, 2^8], some tiny (flushed by the cast),
/// some exact zeros (masked keys), now and then a NaN.
std::vector<float> p_tilde_row(std::mt19937& rng, int n) {
  std::uniform_real_distribution<float> exponent(-20.0f, 8.0f);
  std::vector<float> row(n);
  for (float& x : row) {
    const uint32_t kind = rng() % 64;
    x = kind == 0 ? 0.0f : kind == 1 ? std::nanf("") : std::exp2(exponent(rng));
  }
  return row;
}

__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl"))) void cast_row(bool fp8, float* s, int n,
                                                                          uint64_t& positive, uint64_t& underflow) {
  if (fp8)
    pc::cast_p_row<true, true>(s, n, positive, underflow);
  else
    pc::cast_p_row<false, false>(s, n, positive, underflow);
}

TEST(PCastAvx512, RowsGiveTheTwoPassBitsAndCounts) {
  if (!has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512 F/DQ/BW/VL";
  std::mt19937 rng(std::random_device{}());
  for (const bool fp8 : {true, false})
    for (int n = 1; n <= 176; n += (n < 40 ? 1 : 17)) {
      const std::vector<float> row = p_tilde_row(rng, n);
      const int room = (n + 15) / 16 * 16 + 16;  // a row has room for whole periods
      std::vector<float> expect(room, -7.0f), got(room, -7.0f);  // poison past the row
      std::copy(row.begin(), row.end(), expect.begin());
      std::copy(row.begin(), row.end(), got.begin());
      uint64_t expect_pos = 3, expect_flushed = 5, got_pos = 3, got_flushed = 5;
      if (fp8) {
        fp8attn::engine::row_cast_p<true>(expect.data(), n, expect_pos, expect_flushed);
        fp8attn::engine::p_row_to_slots(expect.data(), n);
      } else {
        fp8attn::engine::row_cast_p<false>(expect.data(), n, expect_pos, expect_flushed);
      }
      cast_row(fp8, got.data(), n, got_pos, got_flushed);
      ASSERT_EQ(0, std::memcmp(expect.data(), got.data(), room * sizeof(float))) << "fp8 " << fp8 << ", n " << n;
      ASSERT_EQ(expect_pos, got_pos) << "fp8 " << fp8 << ", n " << n;
      ASSERT_EQ(expect_flushed, got_flushed) << "fp8 " << fp8 << ", n " << n;
      EXPECT_GT(got_pos, 3u);
    }
}

}  // namespace
