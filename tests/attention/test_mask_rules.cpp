// The shared mask and softmax rules against rules written out independently: the
// engine, the FP64 oracle and the low-precision reference all call sm90::visible_keys, so an
// off-by-one there passes every engine-vs-oracle test. Here each (row, key) pair is classified
// by brute force from the FlashAttention ≥ 2.1 definition (bottom-right aligned diagonal
// d = i + Sk − Sq; causal: j ≤ d; window: d − left ≤ j ≤ d + right; −1 = unbounded), over every
// small shape, and the stabilized softmax's r_m ≤ 0 branch is checked on values written out.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "kernels/sm90/mask.hpp"
#include "kernels/sm90/softmax_math.hpp"

namespace fp8attn::testing {
namespace {

bool visible_by_definition(int64_t i, int64_t j, int64_t sq, int64_t sk, bool causal, int64_t left, int64_t right) {
  if (j < 0 || j >= sk) return false;
  const int64_t d = i + sk - sq;
  if (causal && j > d) return false;
  if (left >= 0 && j < d - left) return false;
  if (right >= 0 && j > d + right) return false;
  return true;
}

TEST(MaskRules, VisibleKeysMatchTheDefinitionOnEverySmallShape) {
  int64_t rows_checked = 0, empty_rows = 0;
  for (int64_t sq = 1; sq <= 9; ++sq)
    for (int64_t sk = 1; sk <= 9; ++sk)
      for (bool causal : {false, true})
        for (int64_t left : {-1, 0, 1, 2, 5})
          for (int64_t right : {-1, 0, 1, 3}) {
            const sm90::MaskParams m{causal, left, right, sq, sk};
            for (int64_t i = 0; i < sq; ++i) {
              int64_t first = -1, last = -1;
              for (int64_t j = 0; j < sk; ++j)
                if (visible_by_definition(i, j, sq, sk, causal, left, right)) {
                  if (first < 0) first = j;
                  last = j;
                }
              const sm90::KeyRange r = sm90::visible_keys(m, i);
              ++rows_checked;
              if (first < 0) {
                ++empty_rows;
                EXPECT_TRUE(r.empty()) << "sq " << sq << " sk " << sk << " causal " << causal << " window (" << left
                                       << ", " << right << ") row " << i << ": no key is visible";
                continue;
              }
              EXPECT_EQ(r.first, first) << "sq " << sq << " sk " << sk << " causal " << causal << " window (" << left
                                        << ", " << right << ") row " << i;
              EXPECT_EQ(r.last, last) << "sq " << sq << " sk " << sk << " causal " << causal << " window (" << left
                                      << ", " << right << ") row " << i;
            }
          }
  EXPECT_GT(empty_rows, 0);  // the sweep covers rows with no visible key (Sq > Sk, causal)
  EXPECT_GT(rows_checked, empty_rows);
}

TEST(MaskRules, BlockFullyVisibleMatchesTheDefinition) {
  for (int64_t sq = 1; sq <= 8; ++sq)
    for (int64_t sk = 1; sk <= 8; ++sk)
      for (bool causal : {false, true})
        for (int64_t left : {-1, 1, 3})
          for (int64_t right : {-1, 0, 2})
            for (int64_t r0 = 0; r0 < sq; r0 += 2)
              for (int64_t k0 = 0; k0 < sk; k0 += 3) {
                const int64_t r1 = std::min<int64_t>(r0 + 2, sq), k1 = std::min<int64_t>(k0 + 3, sk);
                bool all = true;
                for (int64_t i = r0; i < r1; ++i)
                  for (int64_t j = k0; j < k1; ++j)
                    all = all && visible_by_definition(i, j, sq, sk, causal, left, right);
                const sm90::MaskParams m{causal, left, right, sq, sk};
                EXPECT_EQ(sm90::block_fully_visible(m, r0, r1, k0, k1), all)
                    << "sq " << sq << " sk " << sk << " causal " << causal << " window (" << left << ", " << right
                    << ") rows [" << r0 << ", " << r1 << ") keys [" << k0 << ", " << k1 << ")";
              }
}

// DESIGN §3, stabilized safe softmax: with a tie (ties ≥ 2) at block max r_m, the max used for
// exp is β·r_m when r_m > 0 and 0 when r_m ≤ 0, capped at r_m + cap/scale_log2, and never below r_m.
TEST(StabilizedBlockMax, NonPositiveTiedMaxShiftsToZero) {
  const float beta = 2.0f, cap = 16.0f, scale_log2 = 1.4426950f;
  EXPECT_EQ(sm90::stabilized_block_max(-2.0f, 3, beta, cap, scale_log2), 0.0f);  // r_m < 0: m′ = 0, not β·r_m = −4
  EXPECT_EQ(sm90::stabilized_block_max(-0.5f, 2, beta, cap, scale_log2), 0.0f);
  EXPECT_EQ(sm90::stabilized_block_max(0.0f, 4, beta, cap, scale_log2), 0.0f);    // r_m = 0: m′ = 0
  EXPECT_EQ(sm90::stabilized_block_max(3.0f, 2, beta, cap, scale_log2), 6.0f);    // r_m > 0: β·r_m
  EXPECT_EQ(sm90::stabilized_block_max(-2.0f, 1, beta, cap, scale_log2), -2.0f);  // no tie: unchanged
  // Far below 0 the cap binds: m′ = r_m + cap/scale_log2 (< 0), so exp2((r_m − m′)·scale_log2) = 2^−16.
  const float deep = -100.0f;
  EXPECT_FLOAT_EQ(sm90::stabilized_block_max(deep, 3, beta, cap, scale_log2), deep + cap / scale_log2);
  // The shifted max makes every tied P̃ strictly below 1 (the point of the variant).
  const float m = sm90::stabilized_block_max(-2.0f, 3, beta, cap, scale_log2);
  EXPECT_LT(sm90::p_tilde(-2.0f, scale_log2, m * scale_log2), 1.0f);
}

}  // namespace
}  // namespace fp8attn::testing
