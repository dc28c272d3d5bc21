// E4M3 rounding in the default suite: every midpoint between adjacent E4M3 values,
// both signs, must round to the neighbour with the even code (ties to even), through the encoder
// (float_to_e4m3) and through the engine's value-only rounding (round_to_e4m3); points just off
// each midpoint must round to the nearer neighbour. The neighbours are taken from the decoder's
// table of all 126 finite magnitudes, not from the rounding code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "kernels/numerics/float8.hpp"

namespace fp8attn::num {
namespace {

TEST(E4m3Midpoints, EveryMidpointRoundsToTheEvenCode) {
  int checked = 0;
  for (uint32_t code = 0; code < 0x7E; ++code) {  // 0x7E = 448, 0x7F is NaN
    const float lo = e4m3_to_float(static_cast<uint8_t>(code)), hi = e4m3_to_float(static_cast<uint8_t>(code + 1));
    ASSERT_LT(lo, hi) << "decoder table not increasing at code " << code;
    const float mid = 0.5f * (lo + hi);  // exact: both are short binary fractions
    ASSERT_EQ(mid - lo, hi - mid) << "midpoint not exact at code " << code;
    const uint32_t even = (code % 2 == 0) ? code : code + 1;
    for (float sign : {1.0f, -1.0f}) {
      const uint8_t want = static_cast<uint8_t>(even | (sign < 0 ? 0x80u : 0u));
      EXPECT_EQ(float_to_e4m3(sign * mid), want)
          << "midpoint " << sign * mid << " between codes " << code << "/" << code + 1;
      EXPECT_EQ(round_to_e4m3(sign * mid), sign * e4m3_to_float(static_cast<uint8_t>(even)))
          << "midpoint " << sign * mid;
      // Just below and above the midpoint: the nearer neighbour, whatever its parity.
      const float below = std::nextafter(mid, 0.0f), above = std::nextafter(mid, 1e9f);
      EXPECT_EQ(round_to_e4m3(sign * below), sign * lo) << "just below midpoint " << mid;
      EXPECT_EQ(round_to_e4m3(sign * above), sign * hi) << "just above midpoint " << mid;
      EXPECT_EQ(float_to_e4m3(sign * below), static_cast<uint8_t>(code | (sign < 0 ? 0x80u : 0u)));
      EXPECT_EQ(float_to_e4m3(sign * above), static_cast<uint8_t>((code + 1) | (sign < 0 ? 0x80u : 0u)));
    }
    ++checked;
  }
  EXPECT_EQ(checked, 126);
}

TEST(E4m3Midpoints, SpotValues) {
  // Values written out from the E4M3 grid (3 mantissa bits): 1 + k/8 in [1, 2), 8 + k in [8, 16).
  EXPECT_EQ(round_to_e4m3(1.0625f), 1.0f);   // halfway 1 / 1.125: to even (1)
  EXPECT_EQ(round_to_e4m3(1.1875f), 1.25f);  // halfway 1.125 / 1.25: to even (1.25)
  EXPECT_EQ(round_to_e4m3(8.5f), 8.0f);      // halfway 8 / 9
  EXPECT_EQ(round_to_e4m3(9.5f), 10.0f);     // halfway 9 / 10
  EXPECT_EQ(round_to_e4m3(17.0f), 16.0f);    // halfway 16 / 18
  EXPECT_EQ(round_to_e4m3(19.0f), 20.0f);    // halfway 18 / 20
  EXPECT_EQ(round_to_e4m3(-17.0f), -16.0f);
  EXPECT_EQ(round_to_e4m3(464.0f), 448.0f);                               // saturates
  EXPECT_EQ(round_to_e4m3(std::ldexp(3.0f, -10)), std::ldexp(1.0f, -8));  // 1.5 quanta of 2⁻⁹ → 2 quanta
  EXPECT_EQ(float_to_e4m3(1.0625f), 0x38);                                // 1.0
  EXPECT_EQ(float_to_e4m3(8.5f), 0x50);                                   // 8.0
  EXPECT_EQ(float_to_e4m3(17.0f), 0x58);                                  // 16.0
  EXPECT_EQ(float_to_e4m3(-17.0f), 0xD8);
}

}  // namespace
}  // namespace fp8attn::num
