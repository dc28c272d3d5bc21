// The host model of the merge's natural logarithm (kernels/arch/log.hpp) against log in double,
// rounded to float: every float in [1, 512) (a merge's Σ w_p lies in [1, 256]), random floats
// over the whole positive range with the subnormals, and the special values of C's logf.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "kernels/arch/log.hpp"

namespace {

using fp8attn::arch::log_model;

/// Distance in ulp between two finite floats of the same sign (or zero).
int64_t ulp_distance(float a, float b) {
  const auto key = [](float v) {
    const int32_t i = std::bit_cast<int32_t>(v);
    return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};  // monotone over the floats
  };
  const int64_t d = key(a) - key(b);
  return d < 0 ? -d : d;
}

float reference(float x) { return static_cast<float>(std::log(static_cast<double>(x))); }

TEST(LogModel, EveryFloatInTheMergesRangeWithinOneUlpAndAlmostAllCorrectlyRounded) {
  const uint32_t lo = std::bit_cast<uint32_t>(1.0f), hi = std::bit_cast<uint32_t>(512.0f);
  int64_t worst = 0, rounded_off = 0;
  for (uint32_t b = lo; b < hi; ++b) {
    const float x = std::bit_cast<float>(b);
    const int64_t d = ulp_distance(log_model(x), reference(x));
    worst = d > worst ? d : worst;
    rounded_off += d != 0;
  }
  EXPECT_LE(worst, 1);
  // Correctly rounded but for exact logs within about 2^-44 of a midpoint: one such input here.
  EXPECT_LE(rounded_off, int64_t{4}) << "of " << (hi - lo) << " inputs";
  EXPECT_EQ(log_model(1.0f), 0.0f);
  EXPECT_FALSE(std::signbit(log_model(1.0f)));
}

TEST(LogModel, RandomFloatsOverTheWholeRangeWithinOneUlp) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<uint32_t> bits(1u, 0x7F7FFFFFu);  // every positive finite float
  for (int i = 0; i < 4'000'000; ++i) {
    const float x = std::bit_cast<float>(bits(rng));
    ASSERT_LE(ulp_distance(log_model(x), reference(x)), 1) << "x = " << x << " (bits " << std::bit_cast<uint32_t>(x) << ")";
  }
  // The subnormals' edges and the largest float.
  for (const float x : {std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(),
                        std::nextafter(std::numeric_limits<float>::min(), 0.0f), std::numeric_limits<float>::max()})
    EXPECT_LE(ulp_distance(log_model(x), reference(x)), 1) << x;
}

TEST(LogModel, SpecialValuesAsCsLogf) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(log_model(0.0f), -inf);
  EXPECT_EQ(log_model(-0.0f), -inf);
  EXPECT_EQ(log_model(inf), inf);
  EXPECT_TRUE(std::isnan(log_model(-inf)));
  EXPECT_TRUE(std::isnan(log_model(-1.0f)));
  EXPECT_TRUE(std::isnan(log_model(-std::numeric_limits<float>::denorm_min())));
  EXPECT_TRUE(std::isnan(log_model(std::numeric_limits<float>::quiet_NaN())));
  const float signaling = std::numeric_limits<float>::signaling_NaN();
  EXPECT_TRUE(std::isnan(log_model(signaling)));
  EXPECT_NE(std::bit_cast<uint32_t>(log_model(signaling)) & 0x00400000u, 0u);  // quieted
}

}  // namespace
