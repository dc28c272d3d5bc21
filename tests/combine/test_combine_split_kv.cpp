// The real use of fp8attn_attention_combine: split-KV attention. Keys and values are cut into 2 to
// 4 disjoint parts of uneven length; the CPU forward runs once per part (separate calls, each
// returning its LSE) and the parts are combined, then compared with the FP64 oracle over all the
// keys under the forward's own bound (tests/attention/test_engine_vs_oracle.cpp, bound 1):
//   max|combined − oracle| ≤ 2·max|ref_p − oracle| + 1e-3,
// ref_p being the low-precision reference over all keys. Inputs: Q, K, V ~ N(0,1) i.i.d.,
// quantized once over all keys (E4M3 with per-(sequence, KV head) descales, or BF16), so every
// part reads the same codes and descales. Non-causal: every query sees every part. The merged
// LSE must match the oracle's within the forward's LSE bound under FP32 accumulation
// (relative 1e-4). The forward over all keys is run too and printed for comparison.
#include <cstdio>

#include "tests/combine/combine_test_support.hpp"
#include "tools/common/forward_runner.hpp"
#include "tools/common/fresh_seed.hpp"
#include "tools/common/low_precision_reference.hpp"

namespace fp8attn::combine_testing {
namespace {

using workloads::AttentionShape;
using workloads::ForwardResult;
using workloads::QuantizedInputs;

struct SplitCase {
  std::string name;
  int32_t dtype;
  int head_dim;
  std::vector<int64_t> cuts;  ///< part boundaries in [0, seqlen_k]
  int32_t out_dtype = FP8ATTN_DTYPE_F32;
};
void PrintTo(const SplitCase& c, std::ostream* os) { *os << c.name; }

class CombineSplitKv : public ::testing::TestWithParam<SplitCase> {};

TEST_P(CombineSplitKv, PartsCombinedMatchTheOracleWithinTheForwardBound) {
  const SplitCase& c = GetParam();
  const uint64_t seed = workloads::fresh_seed();
  const AttentionShape shape{1, 160, c.cuts.back(), 2, 2, c.head_dim};
  const auto real = workloads::normal_inputs(shape, seed);
  const QuantizedInputs quantized = workloads::quantize(real, c.dtype, workloads::ScaleGranularity::PerHead);
  auto desc = workloads::make_desc(shape, c.dtype, FP8ATTN_DTYPE_F32);
  desc.accumulator_model = FP8ATTN_ACCUMULATOR_FP32;

  const int64_t parts = static_cast<int64_t>(c.cuts.size()) - 1;
  const int64_t tokens = shape.seqlen_q, heads = shape.heads_q, d = shape.head_dim;
  Layout layout;
  layout.out_dtype = c.out_dtype;
  // The forward's LSE is [heads, tokens]: the parts' LSEs are stacked as [parts][heads][tokens].
  layout.pl_order = {0, 2, 1};
  Problem pr(parts, tokens, heads, d, layout);
  const int64_t elem = c.dtype == FP8ATTN_DTYPE_BF16 ? 2 : 1;
  const int64_t key_bytes = shape.heads_kv * d * elem;  // one key row, all KV heads
  for (int64_t p = 0; p < parts; ++p) {
    AttentionShape part_shape = shape;
    part_shape.seqlen_k = c.cuts[p + 1] - c.cuts[p];
    QuantizedInputs part = quantized;
    part.k.assign(quantized.k.begin() + c.cuts[p] * key_bytes, quantized.k.begin() + c.cuts[p + 1] * key_bytes);
    part.v.assign(quantized.v.begin() + c.cuts[p] * key_bytes, quantized.v.begin() + c.cuts[p + 1] * key_bytes);
    const ForwardResult r = workloads::run_forward(desc, part_shape, part);
    ASSERT_EQ(r.status, FP8ATTN_OK);
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t h = 0; h < heads; ++h) {
        pr.pl.set({p, t, h, 0}, r.lse[h * tokens + t]);
        for (int64_t e = 0; e < d; ++e) pr.po.set({p, t, h, e}, r.out[(t * heads + h) * d + e]);
      }
  }
  fp8attn_context ctx = make_context(FP8ATTN_BACKEND_CPU);
  std::string message;
  ASSERT_EQ(run_combine(ctx, pr, &message), FP8ATTN_OK) << message;
  fp8attn_context_destroy(ctx);

  const ForwardResult whole = workloads::run_forward(desc, shape, quantized);
  auto oracle_desc = desc;
  const ForwardResult oracle = workloads::run_forward(oracle_desc, shape, quantized, {FP8ATTN_BACKEND_REFERENCE});
  const auto ref_p = workloads::low_precision_reference(desc, shape, workloads::dequantize(real, quantized));
  std::vector<float> combined(static_cast<size_t>(tokens * heads * d));
  double lse_err = 0.0;
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t e = 0; e < d; ++e) combined[(t * heads + h) * d + e] = pr.out.get({t, h, e, 0});
      const double want = oracle.lse[h * tokens + t];
      lse_err = std::max(lse_err, std::fabs(pr.lse.get({t, h, 0, 0}) - want) / std::max(1.0, std::fabs(want)));
    }
  for (float x : combined) ASSERT_TRUE(std::isfinite(x)) << "unwritten output, seed " << seed;
  const double err = workloads::max_abs_diff(combined, oracle.out);
  const double whole_err = workloads::max_abs_diff(whole.out, oracle.out);
  const double bound = 2.0 * workloads::max_abs_diff(ref_p, oracle.out) + 1e-3;
  std::printf("[%s] seed %llu, %lld parts: max|combined-oracle| %.3e, max|forward over all keys-oracle| %.3e, bound %.3e; "
              "LSE relative error %.3e (bound 1e-4)\n",
              c.name.c_str(), static_cast<unsigned long long>(seed), static_cast<long long>(parts), err, whole_err, bound,
              lse_err);
  EXPECT_LE(err, bound) << "seed " << seed;
  EXPECT_LE(lse_err, 1e-4) << "seed " << seed;
}

INSTANTIATE_TEST_SUITE_P(
    Splits, CombineSplitKv,
    ::testing::Values(SplitCase{"e4m3_hd128_2_parts", FP8ATTN_DTYPE_E4M3, 128, {0, 128, 300}},
                      SplitCase{"e4m3_hd64_3_parts_bf16_out", FP8ATTN_DTYPE_E4M3, 64, {0, 70, 200, 333}, FP8ATTN_DTYPE_BF16},
                      SplitCase{"bf16_hd128_4_parts", FP8ATTN_DTYPE_BF16, 128, {0, 1, 129, 250, 400}},
                      SplitCase{"e4m3_hd256_4_parts", FP8ATTN_DTYPE_E4M3, 256, {0, 64, 65, 200, 260}}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace fp8attn::combine_testing
