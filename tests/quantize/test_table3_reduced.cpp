// FlashAttention-3's Table 3 on a reduced size: 4 heads, 1024 tokens, head_dim 128, batch 1;
// Q, K, V i.i.d. N(0,1) + N(0,100)·Bernoulli(0.001). RMSE of the CPU engine's output against
// an FP64 oracle on the unquantized inputs, through fp8attn_quantize and the attention C ABI.
//
// Measured at this size over input seeds 1..6 (rotation seeds 101..106): FP8 per-tensor RMSE
// 1.28e-2 .. 1.59e-2; per-block + rotation 7.2e-3 .. 9.7e-3; their ratio 1.63× .. 1.79×. At the
// full size (16 heads, 4096 tokens) it is 2.22× .. 2.39× over five draws (docs/numerics_table3.md;
// test_table3_full_size.cpp checks that size). The ratio grows with seqlen because the error it removes comes from queries and keys whose outliers share a
// dimension, and a longer sequence holds more such keys per query. The project goal of ≥ 2.5× is
// not reached at either size; this test asserts the improvement the measurements support, 1.4×
// (about 14% under the smallest ratio seen, 1.63×), for rotation alone and for rotation with per-block
// scales, and that BF16 inputs beat every FP8 row.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/quantize/quantize_test_support.hpp"
#include "tools/fa3_table3/table3_study.hpp"

namespace fp8attn::quant::testing {
namespace {

TEST(Table3Reduced, RotationLowersTheOutlierRmse) {
  table3::Table3Options o;
  o.heads = 4;
  o.seqlen = 1024;
  o.head_dim = 128;
  o.input_seed = test_seed("Table 3 inputs");
  o.rotation_seed = o.input_seed ^ 0x9E3779B97F4A7C15ull;
  o.threads = 2;
  const table3::Table3Result r = table3::run_table3(o);
  std::printf("%s", table3::table3_markdown(r, o).c_str());
  ASSERT_EQ(r.rows.size(), 5u);
  const double bf16 = r.rows[0].rmse, per_tensor = r.rows[1].rmse, rotated = r.rows[3].rmse;
  std::printf("per-tensor / rotated (per-tensor scales) = %.2f× (bound ≥ 1.4×)\n", per_tensor / rotated);
  EXPECT_GE(per_tensor / rotated, 1.4);
  std::printf("per-tensor / (per-block + rotation) = %.2f× (bound ≥ 1.4×; goal 2.5× not asserted)\n",
              table3::improvement_ratio(r));
  EXPECT_GE(table3::improvement_ratio(r), 1.4);
  for (size_t i = 1; i < r.rows.size(); ++i) EXPECT_LT(bf16, r.rows[i].rmse) << r.rows[i].method;
  EXPECT_EQ(r.block_m, 128);  // the FP8 tiles for head_dim 128
  EXPECT_EQ(r.block_n, 224);
}

}  // namespace
}  // namespace fp8attn::quant::testing
