// What AVX512-BF16's dot product (vdpbf16ps) computes, on the CPU that runs the test: each FP32
// lane adds the odd pair's product, then the even pair's, each addition rounded to nearest even
// (Intel SDM, VDPBF16PS), so that two FMAs in that order reproduce it bit for bit wherever the
// products are exact, as they are for E4M3 values widened to BF16; and it treats a subnormal
// accumulator as zero (DAZ). These are the facts a product kernel built on the instruction
// would need its AVX2 and baseline builds to reproduce; without AVX512-BF16 the test skips.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "bf16_dot_inputs.hpp"

namespace {

using fp8attn::test::bf16_value;
using fp8attn::test::e4m3_value_as_bf16;
using fp8attn::test::random_accumulator;

__attribute__((target("avx512f,avx512bf16"))) void dot_bf16(const float* acc, const uint16_t* a, const uint16_t* b,
                                                            float* out) {
  __m512bh va, vb;
  std::memcpy(&va, a, 64);
  std::memcpy(&vb, b, 64);
  _mm512_storeu_ps(out, _mm512_dpbf16_ps(_mm512_loadu_ps(acc), va, vb));
}

bool has_avx512_bf16() { return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16"); }

TEST(Avx512Bf16, DotProductAddsTheOddProductThenTheEvenOneRoundedEachTime) {
  if (!has_avx512_bf16()) GTEST_SKIP() << "this CPU has no AVX512-BF16";
  std::mt19937 rng(std::random_device{}());
  int64_t lanes = 0, odd_first = 0, even_first = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    uint16_t a[32], b[32];
    float acc[16], out[16];
    for (int i = 0; i < 32; ++i) a[i] = e4m3_value_as_bf16(rng), b[i] = e4m3_value_as_bf16(rng);
    for (float& x : acc) x = random_accumulator(rng);
    std::fill(out, out + 16, std::nanf(""));
    dot_bf16(acc, a, b, out);
    for (int j = 0; j < 16; ++j) {
      const float e0 = bf16_value(a[2 * j]), f0 = bf16_value(b[2 * j]);
      const float e1 = bf16_value(a[2 * j + 1]), f1 = bf16_value(b[2 * j + 1]);
      const float odd_then_even = std::fma(e0, f0, std::fma(e1, f1, acc[j]));
      const float even_then_odd = std::fma(e1, f1, std::fma(e0, f0, acc[j]));
      ++lanes;
      odd_first += std::memcmp(&odd_then_even, &out[j], 4) == 0;
      even_first += std::memcmp(&even_then_odd, &out[j], 4) == 0;
    }
  }
  EXPECT_EQ(odd_first, lanes) << "lanes where vdpbf16ps is not fma(even, fma(odd, acc))";
  // The order is visible in these inputs, so the equality above is about the order.
  EXPECT_LT(even_first, lanes);
  std::printf("%lld lanes: odd product first %lld, even first %lld\n", static_cast<long long>(lanes),
              static_cast<long long>(odd_first), static_cast<long long>(even_first));
}

TEST(Avx512Bf16, DotProductTreatsASubnormalAccumulatorAsZero) {
  if (!has_avx512_bf16()) GTEST_SKIP() << "this CPU has no AVX512-BF16";
  float acc[16], out[16];
  uint16_t a[32] = {}, b[32] = {};
  for (int j = 0; j < 16; ++j) acc[j] = 1e-40f * static_cast<float>(j + 1);  // subnormal
  a[0] = 0x3f80;  // 1.0
  b[0] = 0x0080;  // 2^-126, BF16's least normal
  dot_bf16(acc, a, b, out);
  EXPECT_EQ(out[0], std::ldexp(1.0f, -126)) << "the subnormal accumulator kept (an FMA would give "
                                            << std::fma(1.0f, std::ldexp(1.0f, -126), acc[0]) << ")";
  for (int j = 1; j < 16; ++j) EXPECT_EQ(out[j], 0.0f) << "lane " << j << ": acc " << acc[j];
}

}  // namespace
