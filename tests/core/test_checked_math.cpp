// The checked size arithmetic every size, offset and workspace computation goes through
// (lib/core/checked_math.hpp), at its own boundaries. NOTE: through the C ABI the documented
// extent limits refuse first, so no ABI test reaches an overflow of checked_add itself; these
// tests hold its contract directly.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>

#include "lib/core/checked_math.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

/// The status checked_* threw, or FP8ATTN_OK when it returned.
template <class F>
int32_t status_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.status();
  }
  return FP8ATTN_OK;
}

TEST(CheckedMath, AddAtTheEdgesOfInt64) {
  EXPECT_EQ(checked_add(kMax - 1, 1, "x"), kMax);
  EXPECT_EQ(checked_add(kMin + 1, -1, "x"), kMin);
  EXPECT_EQ(status_of([] { checked_add(kMax, 1, "x"); }), FP8ATTN_STATUS_BAD_SHAPE);
  EXPECT_EQ(status_of([] { checked_add(kMin, -1, "x"); }), FP8ATTN_STATUS_BAD_SHAPE);
  EXPECT_EQ(status_of([] { checked_add(kMax, kMax, "x", FP8ATTN_STATUS_BAD_STRIDE); }), FP8ATTN_STATUS_BAD_STRIDE);
  try {
    checked_add(kMax, 2, "the reach");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the reach"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(kMax)), std::string::npos) << e.what();
  }
}

TEST(CheckedMath, MulAtTheEdgesOfInt64) {
  EXPECT_EQ(checked_mul(int64_t{1} << 31, int64_t{1} << 31, "x"), int64_t{1} << 62);
  EXPECT_EQ(checked_mul(kMax, int64_t{1}, "x"), kMax);
  EXPECT_EQ(status_of([] { checked_mul(int64_t{1} << 32, int64_t{1} << 31, "x"); }), FP8ATTN_STATUS_BAD_SHAPE);
  EXPECT_EQ(status_of([] { checked_mul(kMin, int64_t{-1}, "x"); }), FP8ATTN_STATUS_BAD_SHAPE);
}

TEST(CheckedMath, SizesInBytesOverflowAsOutOfMemory) {
  constexpr size_t kSize = std::numeric_limits<size_t>::max();
  EXPECT_EQ(checked_add(kSize - 1, size_t{1}, "bytes"), kSize);
  EXPECT_EQ(status_of([] { checked_add(kSize, size_t{1}, "bytes"); }), FP8ATTN_STATUS_OUT_OF_MEMORY);
  EXPECT_EQ(status_of([] { checked_mul(kSize / 2 + 1, size_t{2}, "bytes"); }), FP8ATTN_STATUS_OUT_OF_MEMORY);
}

// Random operands near the edges, against 128-bit arithmetic.
TEST(CheckedMath, RandomOperandsAgreeWithWideArithmetic) {
  const uint64_t seed = workloads::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 20000; ++i) {
    const int shift_a = static_cast<int>(rng() % 64), shift_b = static_cast<int>(rng() % 64);
    const int64_t a = static_cast<int64_t>(rng() >> shift_a) * ((rng() & 1) ? 1 : -1);
    const int64_t b = static_cast<int64_t>(rng() >> shift_b) * ((rng() & 1) ? 1 : -1);
    const __int128 sum = static_cast<__int128>(a) + b, product = static_cast<__int128>(a) * b;
    const bool sum_fits = sum >= kMin && sum <= kMax, product_fits = product >= kMin && product <= kMax;
    ASSERT_EQ(status_of([&] { checked_add(a, b, "x"); }), sum_fits ? FP8ATTN_OK : FP8ATTN_STATUS_BAD_SHAPE)
        << a << " + " << b;
    ASSERT_EQ(status_of([&] { checked_mul(a, b, "x"); }), product_fits ? FP8ATTN_OK : FP8ATTN_STATUS_BAD_SHAPE)
        << a << " * " << b;
    if (sum_fits) {
      ASSERT_EQ(checked_add(a, b, "x"), static_cast<int64_t>(sum));
    }
    if (product_fits) {
      ASSERT_EQ(checked_mul(a, b, "x"), static_cast<int64_t>(product));
    }
  }
}

TEST(CheckedMath, LimitsAcceptTheirOwnValue) {
  EXPECT_EQ(status_of([] { require_at_most(4096, 4096, "heads", FP8ATTN_STATUS_BAD_SHAPE); }), FP8ATTN_OK);
  EXPECT_EQ(status_of([] { require_at_most(4097, 4096, "heads", FP8ATTN_STATUS_BAD_SHAPE); }),
            FP8ATTN_STATUS_BAD_SHAPE);
}

}  // namespace
}  // namespace fp8attn
