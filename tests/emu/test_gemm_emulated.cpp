// The warp-specialized TN GEMM kernel (kernels/sm90/gemm) run on the SIMT emulator: random FP8 and
// BF16 inputs, shapes with ragged M, N and K edges, several shuffled schedules. The result must be
// bit-equal to a plain CPU GEMM of the same inputs that adds in the kernels/ptx/mma_order.hpp
// order: per 32 bytes of K a chunk Σ a·b (k ascending, from +0), then acc += chunk.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/sm90/gemm/gemm_emulated.hpp"
#include "tests/emu/gemm_test_support.hpp"

namespace fp8attn::test {
namespace {

struct Shape {
  int m, n, k;
};

void expect_bit_equal(GemmInput type, Shape s, uint64_t seed, const std::vector<uint64_t>& schedule_seeds) {
  std::mt19937_64 rng(seed);
  const Operands o = make_operands(type, s.m, s.n, s.k, rng);
  const auto expect = reference_gemm(type, o, s.m, s.n, s.k);
  const int64_t ldc = s.n + 3;  // the 3 padding columns must stay poisoned
  for (uint64_t schedule : schedule_seeds) {
    std::vector<float> c(static_cast<size_t>(s.m) * ldc, std::nanf(""));
    sm90::GemmProblem p;
    p.type = type;
    p.a = o.a.data();
    p.lda = o.lda;
    p.b = o.b.data();
    p.ldb = o.ldb;
    p.c = c.data();
    p.ldc = ldc;
    p.m = s.m;
    p.n = s.n;
    p.k = s.k;
    emu::LaunchConfig config;
    config.seed = schedule;
    config.shuffle = true;
    sm90::run_gemm_emulated(p, config);
    int mismatches = 0, padding_touched = 0, outside_bound = 0;
    double max_abs = 0.0, worst_of_bound = 0.0;
    for (int i = 0; i < s.m; ++i) {
      for (int j = 0; j < s.n; ++j) {
        const float got = c[static_cast<size_t>(i) * ldc + j], want = expect[static_cast<size_t>(i) * s.n + j];
        mismatches += std::memcmp(&got, &want, 4) != 0;
        max_abs = std::max(max_abs, std::fabs(static_cast<double>(want)));
        // The GPU test's bound, one side of it: the modelled accumulator against the exact sum.
        const double bound =
            tensor_core_error_bound(chunk_magnitudes(type, o, i, j, s.k), gemm_instruction_k(type), gemm_widths(type));
        const double err = std::fabs(static_cast<double>(got) - exact_dot(type, o, i, j, s.k));
        outside_bound += !(err <= bound);
        if (bound > 0.0) worst_of_bound = std::max(worst_of_bound, err / bound);
      }
      for (int j = s.n; j < ldc; ++j) padding_touched += !std::isnan(c[static_cast<size_t>(i) * ldc + j]);
    }
    EXPECT_EQ(mismatches, 0) << "M=" << s.m << " N=" << s.n << " K=" << s.k << " schedule seed " << schedule;
    EXPECT_EQ(padding_touched, 0);
    EXPECT_EQ(outside_bound, 0) << "tensor_core_error_bound is too tight for the model it describes";
    std::printf("%s GEMM %dx%dx%d (input seed %llu, schedule seed %llu): %d of %d outputs differ bitwise, max |C| %.3g; "
                "worst |C - exact| is %.3f of tensor_core_error_bound\n",
                type == GemmInput::BF16 ? "bf16" : "e4m3", s.m, s.n, s.k, static_cast<unsigned long long>(seed),
                static_cast<unsigned long long>(schedule), mismatches, s.m * s.n, max_abs, worst_of_bound);
  }
}

TEST(GemmEmulated, Fp8AlignedShape) { expect_bit_equal(GemmInput::E4M3, {128, 128, 256}, 1, {11, 12}); }

// Eight k-tiles: each of the two stages is refilled four times and every barrier's phase flips
// repeatedly.
TEST(GemmEmulated, Fp8LongK) { expect_bit_equal(GemmInput::E4M3, {64, 130, 1000}, 6, {61, 62}); }

TEST(GemmEmulated, Fp8RaggedEdges) {
  expect_bit_equal(GemmInput::E4M3, {200, 150, 300}, 2, {21, 22, 23});
  expect_bit_equal(GemmInput::E4M3, {65, 7, 40}, 3, {31, 32});
}

TEST(GemmEmulated, Bf16AlignedAndRagged) {
  expect_bit_equal(GemmInput::BF16, {128, 256, 128}, 4, {41, 42});
  expect_bit_equal(GemmInput::BF16, {130, 100, 90}, 5, {51, 52, 53});
}

TEST(GemmEmulated, RefusesRowsThatBreakTheTmaStrideRule) {
  std::vector<uint8_t> a(64 * 40), b(64 * 40);
  std::vector<float> c(64 * 64);
  sm90::GemmProblem p;
  p.a = a.data();
  p.lda = 40;  // 40 bytes: not a multiple of 16
  p.b = b.data();
  p.ldb = 48;
  p.c = c.data();
  p.ldc = 64;
  p.m = p.n = 64;
  p.k = 40;
  sm90::GemmPlan plan;
  const std::string why = sm90::plan_gemm(p, &plan);
  std::printf("refused: %s\n", why.c_str());
  EXPECT_NE(why.find("multiple of 16"), std::string::npos);
}

}  // namespace
}  // namespace fp8attn::test
