// Converter spot values from the OCP FP8 specification and IEEE rounding, independent of CUDA.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"

namespace {

// Spot values from the OCP FP8 specification, independent of CUDA.
TEST(Converters, SpecValues) {
  using namespace fp8attn::num;
  EXPECT_EQ(float_to_e4m3(448.0f), 0x7E);
  EXPECT_EQ(float_to_e4m3(1e9f), 0x7E);                        // saturates
  EXPECT_EQ(float_to_e4m3(-INFINITY), 0xFE);                   // saturates to −max
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -9)), 0x01);        // min subnormal
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -10)), 0x00);       // halfway to 0: ties to even
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.5f, -10)), 0x01);
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -6)), 0x08);        // min normal
  EXPECT_TRUE(std::isnan(e4m3_to_float(0x7F)));
  EXPECT_EQ(e4m3_to_float(0x7E), 448.0f);
  EXPECT_EQ(float_to_e5m2(57344.0f), 0x7B);
  EXPECT_EQ(float_to_e5m2(INFINITY), 0x7B);                    // satfinite
  EXPECT_TRUE(std::isinf(e5m2_to_float(0x7C)));
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);  // tie to even
}

}  // namespace
