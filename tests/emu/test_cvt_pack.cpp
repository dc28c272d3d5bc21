// cvt packs (PTX ISA 9.0 §9.7.9.21) on the emulator: bit-exact to the project's converters
// (lib/numerics, themselves exact to cuda_fp8.h / cuda_bf16.h), with the ISA's operand order
// (the first PTX source goes to the upper part, so `lo` lands in the low bits here), and
// ex2.approx's host model (exp2f with subnormals flushed, as .ftz does).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/arch/cvt.hpp"
#include "kernels/arch/ex2.hpp"
#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"

namespace fp8attn::test {
namespace {

std::vector<float> inputs(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v = {0.0f, -0.0f, 448.0f, 449.0f, 464.0f, -1e9f, std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                          0x1.0p-10f, 0x1.0p-9f, 0x1.8p-10f, 57344.0f, 61440.0f, 1e-40f};
  std::normal_distribution<float> nd(0.0f, 64.0f);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 20000; ++i) v.push_back(nd(rng));
  for (int i = 0; i < 20000; ++i) v.push_back(std::bit_cast<float>(bits(rng)));  // every exponent
  return v;
}

TEST(CvtPack, E4m3x2AndE5m2x2MatchTheConverters) {
  const uint64_t seed = 31;
  const auto v = inputs(seed);
  size_t checked = 0;
  for (size_t i = 0; i + 1 < v.size(); ++i) {
    const float lo = v[i], hi = v[i + 1];
    const uint16_t e4 = arch::cvt_e4m3x2(lo, hi), e5 = arch::cvt_e5m2x2(lo, hi);
    ASSERT_EQ(e4 & 0xFF, num::float_to_e4m3(lo)) << lo;
    ASSERT_EQ(e4 >> 8, num::float_to_e4m3(hi)) << hi;
    ASSERT_EQ(e5 & 0xFF, num::float_to_e5m2(lo)) << lo;
    ASSERT_EQ(e5 >> 8, num::float_to_e5m2(hi)) << hi;
    ++checked;
  }
  // satfinite: 449 and +inf go to 448 (0x7E), -inf to -448 (0xFE); NaN stays NaN (0x7F).
  EXPECT_EQ(arch::cvt_e4m3x2(449.0f, -INFINITY), 0xFE7E);
  EXPECT_EQ(arch::cvt_e4m3x2(NAN, 1.0f) & 0x7F, 0x7F);
  std::printf("%zu e4m3x2 / e5m2x2 packs bit-exact (seed %llu)\n", checked, static_cast<unsigned long long>(seed));
}

TEST(CvtPack, E4m3x4PutsTheFirstValueInTheLowestByte) {
  EXPECT_EQ(arch::cvt_e4m3x4(1.0f, 2.0f, -1.0f, 448.0f),
            uint32_t{num::float_to_e4m3(1.0f)} | uint32_t{num::float_to_e4m3(2.0f)} << 8 |
                uint32_t{num::float_to_e4m3(-1.0f)} << 16 | uint32_t{num::float_to_e4m3(448.0f)} << 24);
  std::printf("cvt_e4m3x4(1, 2, -1, 448) = 0x%08x\n", arch::cvt_e4m3x4(1.0f, 2.0f, -1.0f, 448.0f));
}

TEST(CvtPack, Bf16x2MatchesTheConverter) {
  const uint64_t seed = 32;
  const auto v = inputs(seed);
  for (size_t i = 0; i + 1 < v.size(); ++i) {
    const uint32_t p = arch::cvt_bf16x2(v[i], v[i + 1]);
    ASSERT_EQ(p & 0xFFFF, num::float_to_bf16(v[i])) << v[i];
    ASSERT_EQ(p >> 16, num::float_to_bf16(v[i + 1])) << v[i + 1];
  }
  EXPECT_EQ(arch::cvt_bf16x2(1.0f, -2.0f), 0xC0003F80u);  // 1.0 = 0x3F80 low, -2.0 = 0xC000 high
  std::printf("%zu bf16x2 packs bit-exact (seed %llu)\n", v.size() - 1, static_cast<unsigned long long>(seed));
}

TEST(Ex2Approx, HostModelIsWithinOneUlpOfExp2WithFlushToZero) {
  // x uniform in [−140, 130): the normal range, the flushed range below −126 and the overflow
  // range from 128. The exhaustive sweep is tests/emu/test_ex2_model.cpp.
  std::mt19937_64 rng(33);
  std::uniform_real_distribution<float> x(-140.0f, 130.0f);
  for (int i = 0; i < 100000; ++i) {
    const float in = x(rng), out = arch::ex2_approx(in);
    const float ref = static_cast<float>(std::exp2(static_cast<double>(in)));
    if (in < -126.0f) {
      ASSERT_EQ(out, 0.0f) << in;
    } else if (in >= 128.0f) {
      ASSERT_EQ(out, INFINITY) << in;
    } else {
      uint32_t a, b;
      std::memcpy(&a, &out, 4);
      std::memcpy(&b, &ref, 4);
      ASSERT_LE(a > b ? a - b : b - a, 1u) << in << ": " << out << " vs " << ref;
    }
  }
  EXPECT_EQ(arch::ex2_approx(-127.5f), 0.0f);  // 2^-127.5 is subnormal: flushed
  EXPECT_EQ(arch::ex2_approx(-INFINITY), 0.0f);
  EXPECT_EQ(arch::ex2_approx(1e-40f), 1.0f);   // subnormal input acts as 0: 2^0
  EXPECT_EQ(arch::ex2_approx(3.0f), 8.0f);
  EXPECT_EQ(arch::ex2_approx(-126.0f), 0x1p-126f);
  EXPECT_EQ(arch::ex2_approx(127.0f), 0x1p127f);
  EXPECT_EQ(arch::ex2_approx(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(arch::ex2_approx(NAN)));
  std::printf("ex2(-127.5) = %g, ex2(1e-40) = %g\n", arch::ex2_approx(-127.5f), arch::ex2_approx(1e-40f));
}

}  // namespace
}  // namespace fp8attn::test
