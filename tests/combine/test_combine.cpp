// fp8attn_attention_combine on the CPU and reference backends against an FP64 merge written
// from the definition (combine_test_support.hpp), on fresh random partials: O_p ~ N(0,1) i.i.d.,
// lse_p ~ N(0, 3²) (and shifted by ±60 to test large LSEs), F32 and BF16 in and out, dense,
// padded and transposed layouts, 1 to 256 parts, empty parts and all-empty rows.
// Bounds, max over elements:
//  - CPU, F32 out: |out − merge| ≤ (P + 16)·2^-23·max|O|, the rounding of P sequential FP32
//    additions of terms ≤ max|O| plus a few ulp in each weight (exp2 model ≤ 1 ulp, 1/s);
//    BF16 out adds BF16's half ulp, 2^-8·|merge|.
//  - CPU lse: |lse − merge| ≤ 2^-21·(|merge| + 8) (log s ≤ log 256 < 8, rounded twice).
//  - reference backend (FP64, one rounding to the output dtype): F32 2^-23·|merge| + 1e-30,
//    BF16 2^-8·|merge|.
#include <cstdio>

#include "tests/combine/combine_test_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::combine_testing {
namespace {

struct Case {
  std::string name;
  int64_t parts, tokens, heads, dim;
  Layout layout;
  double lse_shift = 0.0, empty_fraction = 0.0;
  std::vector<int64_t> all_empty_rows;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }
Case make_case(std::string name, int64_t parts, int64_t tokens, int64_t heads, int64_t dim) {
  Case c;
  c.name = std::move(name);
  c.parts = parts, c.tokens = tokens, c.heads = heads, c.dim = dim;
  return c;
}

struct Errors {
  double out = 0.0, out_of_bound = 0.0, lse_of_bound = 0.0;
};

Errors compare(const Problem& pr, const Fp64Merge& ref, bool fp64_backend) {
  double max_o = 0.0;
  for (int64_t p = 0; p < pr.parts; ++p)
    for (int64_t t = 0; t < pr.tokens; ++t)
      for (int64_t h = 0; h < pr.heads; ++h)
        if (pr.pl.get({p, t, h, 0}) != -INFINITY)
          for (int64_t e = 0; e < pr.dim; ++e) max_o = std::max(max_o, std::fabs(double(pr.po.get({p, t, h, e}))));
  const bool bf16 = pr.out.dtype == FP8ATTN_DTYPE_BF16;
  Errors r;
  for (int64_t t = 0; t < pr.tokens; ++t)
    for (int64_t h = 0; h < pr.heads; ++h) {
      const double want_lse = ref.lse[t * pr.heads + h];
      if (pr.layout.with_lse) {
        const double got = pr.lse.get({t, h, 0, 0});
        if (std::isinf(want_lse)) {
          EXPECT_TRUE(std::isinf(got) && got < 0) << "row " << t << "," << h << " has every part empty: lse " << got;
        } else {
          const double bound = fp64_backend ? std::ldexp(std::fabs(want_lse), -23) + 1e-30
                                            : std::ldexp(std::fabs(want_lse) + 8.0, -21);
          r.lse_of_bound = std::max(r.lse_of_bound, std::fabs(got - want_lse) / bound);
        }
      }
      for (int64_t e = 0; e < pr.dim; ++e) {
        const double want = ref.out[(t * pr.heads + h) * pr.dim + e];
        const double got = pr.out.get({t, h, e, 0});
        if (std::isinf(want_lse)) {
          EXPECT_EQ(got, 0.0) << "an all-empty row's out must be 0";
          continue;
        }
        EXPECT_TRUE(std::isfinite(got)) << "unwritten or non-finite out at " << t << "," << h << "," << e;
        double bound = fp64_backend ? std::ldexp(std::fabs(want), -23) + 1e-30
                                    : (pr.parts + 16) * std::ldexp(max_o, -23);
        if (bf16) bound += std::ldexp(std::fabs(want), -8);  // BF16's half ulp
        r.out = std::max(r.out, std::fabs(got - want));
        r.out_of_bound = std::max(r.out_of_bound, std::fabs(got - want) / bound);
      }
    }
  return r;
}

class CombineVsFp64 : public ::testing::TestWithParam<Case> {};

TEST_P(CombineVsFp64, CpuAndReferenceWithinBounds) {
  const Case& c = GetParam();
  const uint64_t seed = workloads::fresh_seed();
  Problem pr(c.parts, c.tokens, c.heads, c.dim, c.layout);
  pr.fill(seed, 3.0, c.lse_shift, c.empty_fraction, c.all_empty_rows);
  const Fp64Merge ref = fp64_merge(pr);
  for (const int32_t backend : {FP8ATTN_BACKEND_CPU, FP8ATTN_BACKEND_REFERENCE}) {
    fp8attn_context ctx = make_context(backend);
    std::string message;
    ASSERT_EQ(run_combine(ctx, pr, &message), FP8ATTN_OK) << message;
    const Errors e = compare(pr, ref, backend == FP8ATTN_BACKEND_REFERENCE);
    std::printf("[%s] %s seed %llu: max|out-fp64| %.3e (%.3f of bound), lse at %.3f of bound\n", c.name.c_str(),
                backend == FP8ATTN_BACKEND_CPU ? "cpu" : "reference", static_cast<unsigned long long>(seed), e.out,
                e.out_of_bound, e.lse_of_bound);
    EXPECT_LE(e.out_of_bound, 1.0) << "seed " << seed;
    EXPECT_LE(e.lse_of_bound, 1.0) << "seed " << seed;
    fp8attn_context_destroy(ctx);
  }
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (int32_t in : {FP8ATTN_DTYPE_F32, FP8ATTN_DTYPE_BF16})
    for (int32_t out : {FP8ATTN_DTYPE_F32, FP8ATTN_DTYPE_BF16}) {
      Case c = make_case(std::string(in == FP8ATTN_DTYPE_F32 ? "f32" : "bf16") + "_to_" +
                             (out == FP8ATTN_DTYPE_F32 ? "f32" : "bf16"),
                         3, 37, 3, 64);
      c.layout.o_dtype = in;
      c.layout.out_dtype = out;
      v.push_back(c);
    }
  Case one = make_case("one_part", 1, 20, 2, 128);
  v.push_back(one);
  Case many = make_case("256_parts", 256, 6, 2, 40);
  many.layout.o_dtype = FP8ATTN_DTYPE_BF16;
  v.push_back(many);
  Case transposed = make_case("transposed_and_padded", 4, 33, 5, 48);
  // partial_out as [parts][heads][dim][tokens] in memory, partial_lse [heads][tokens][parts] (the
  // forward's [heads, tokens] LSE stacked), out [heads][tokens][dim], lse [heads][tokens].
  transposed.layout.po_order = {0, 2, 3, 1};
  transposed.layout.pl_order = {2, 1, 0};
  transposed.layout.out_order = {1, 0, 2};
  transposed.layout.lse_order = {1, 0};
  transposed.layout.pad = 3;
  v.push_back(transposed);
  Case empties = make_case("empty_parts_and_rows", 5, 24, 2, 32);
  empties.empty_fraction = 0.4;
  empties.all_empty_rows = {0, 7, 47};
  v.push_back(empties);
  Case large = make_case("lse_shift_plus_60", 3, 16, 2, 64);
  large.lse_shift = 60.0;
  v.push_back(large);
  Case small = make_case("lse_shift_minus_60_no_lse_out", 3, 16, 2, 64);
  small.lse_shift = -60.0;
  small.layout.with_lse = false;
  v.push_back(small);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Shapes, CombineVsFp64, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// A NaN or +inf partial LSE poisons its row (out and lse NaN); other rows are unaffected, and
// the CPU's result does not depend on the thread count.
TEST(CombineSpecialValues, NanAndInfLsePoisonTheirRowOnly) {
  const uint64_t seed = workloads::fresh_seed();
  Problem pr(3, 8, 2, 16, {});
  pr.fill(seed);
  pr.pl.set({1, 2, 1, 0}, NAN);
  pr.pl.set({0, 5, 0, 0}, INFINITY);
  fp8attn_context ctx = make_context(FP8ATTN_BACKEND_CPU);
  ASSERT_EQ(run_combine(ctx, pr), FP8ATTN_OK);
  for (int64_t t = 0; t < 8; ++t)
    for (int64_t h = 0; h < 2; ++h) {
      const bool poisoned = (t == 2 && h == 1) || (t == 5 && h == 0);
      EXPECT_EQ(std::isnan(pr.lse.get({t, h, 0, 0})), poisoned) << t << "," << h;
      for (int64_t e = 0; e < 16; ++e) EXPECT_EQ(std::isnan(pr.out.get({t, h, e, 0})), poisoned) << t << "," << h;
    }
  fp8attn_context_destroy(ctx);
}

TEST(CombineThreads, OneAndFourWorkersBitEqual) {
  const uint64_t seed = workloads::fresh_seed();
  Problem pr(7, 101, 3, 72, {});
  pr.fill(seed, 3.0, 0.0, 0.2, {5});
  std::vector<std::vector<uint8_t>> results;
  for (int threads : {1, 4}) {
    fp8attn_context ctx = make_context(FP8ATTN_BACKEND_CPU, threads);
    ASSERT_EQ(run_combine(ctx, pr), FP8ATTN_OK);
    results.push_back(pr.out.bytes);
    results.back().insert(results.back().end(), pr.lse.bytes.begin(), pr.lse.bytes.end());
    fp8attn_context_destroy(ctx);
  }
  EXPECT_EQ(results[0], results[1]) << "seed " << seed;
}

}  // namespace
}  // namespace fp8attn::combine_testing
