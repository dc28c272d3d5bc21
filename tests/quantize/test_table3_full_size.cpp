// FlashAttention-3's Table 3 at its full size: batch 1, 16 heads, 4096 tokens, head_dim 128;
// Q, K, V i.i.d. N(0,1) + N(0,100)·Bernoulli(0.001), a fresh draw each run. Metric: RMSE of the
// CPU engine's F32 output against the FP64 oracle on the unquantized inputs.
//
// Measured over input seeds 1..5 (rotation seed 2; `fa3_table3 --draws 5`, docs/numerics_table3.md):
// per-block + rotation 8.45e-3 .. 9.14e-3 (FlashAttention-3: 9.1e-3), and the improvement over
// per-tensor without rotation 2.22× .. 2.39×. The bounds below leave about 10% to the worst draw:
// RMSE ≤ 1.0e-2 with both on, and an improvement ≥ 2.0×. The project goal of 2.5× is not asserted:
// no draw reaches it (see the document for why).
//
// About a minute of CPU in a Release build (the FP64 oracle is most of it); labelled "study".
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/quantize/quantize_test_support.hpp"
#include "tools/fa3_table3/table3_study.hpp"

namespace fp8attn::quant::testing {
namespace {

TEST(Table3FullSize, BlockScalesAndRotationMeetFlashAttention3) {
  table3::Table3Options o;  // the defaults are FlashAttention-3's size
  o.input_seed = test_seed("Table 3 inputs (full size)");
  o.rotation_seed = o.input_seed ^ 0x9E3779B97F4A7C15ull;
  const table3::Table3Result r = table3::run_table3(o);
  std::printf("%s", table3::table3_markdown(r, o).c_str());
  ASSERT_EQ(r.rows.size(), 5u);
  const double both = r.rows[4].rmse;
  std::printf("per-block + rotation: RMSE %.3e (bound ≤ 1.0e-2; FlashAttention-3 9.1e-3)\n", both);
  EXPECT_LE(both, 1.0e-2);
  std::printf("per-tensor / (per-block + rotation) = %.2f× (bound ≥ 2.0×; goal 2.5× not asserted)\n",
              table3::improvement_ratio(r));
  EXPECT_GE(table3::improvement_ratio(r), 2.0);
}

}  // namespace
}  // namespace fp8attn::quant::testing
