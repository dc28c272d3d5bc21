// The warp-specialized TN GEMM kernel (kernels/sm90/gemm) run on the SIMT emulator: random FP8 and
// BF16 inputs, shapes with ragged M, N and K edges, several shuffled schedules. The result must be
// bit-equal to a plain CPU GEMM of the same inputs that adds in the kernels/arch/mma_order.hpp
// order: per 32 bytes of K a chunk Σ a·b (k ascending, from +0), then acc += chunk.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/sm90/gemm/gemm_emulated.hpp"
#include "lib/numerics/bfloat16.hpp"
#include "lib/numerics/float8.hpp"

namespace fp8attn::test {
namespace {

using sm90::GemmInput;

struct Operands {
  std::vector<uint8_t> a, b;  // raw elements, rows padded to a multiple of 16 bytes
  int64_t lda = 0, ldb = 0;
};

int64_t padded_ld(int k, int e) { return ((static_cast<int64_t>(k) * e + 15) / 16 * 16) / e + 16 / e; }

/// Random inputs; the row padding holds non-zero garbage that a correct kernel never reads.
Operands make_operands(GemmInput type, int m, int n, int k, std::mt19937_64& rng) {
  const int e = type == GemmInput::BF16 ? 2 : 1;
  Operands o;
  o.lda = padded_ld(k, e);
  o.ldb = padded_ld(k, e);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  auto fill = [&](std::vector<uint8_t>& v, int rows, int64_t ld) {
    v.resize(static_cast<size_t>(rows) * ld * e);
    for (int r = 0; r < rows; ++r)
      for (int64_t c = 0; c < ld; ++c) {
        const float x = c < k ? nd(rng) : 100.0f;  // garbage past K
        uint8_t* p = &v[(static_cast<size_t>(r) * ld + c) * e];
        if (e == 1) {
          *p = num::float_to_e4m3(x);
        } else {
          const uint16_t h = num::float_to_bf16(x);
          std::memcpy(p, &h, 2);
        }
      }
  };
  fill(o.a, m, o.lda);
  fill(o.b, n, o.ldb);
  return o;
}

float element(GemmInput type, const std::vector<uint8_t>& v, size_t index) {
  if (type == GemmInput::E4M3) return num::e4m3_to_float(v[index]);
  uint16_t h;
  std::memcpy(&h, &v[2 * index], 2);
  return num::bf16_to_float(h);
}

/// The plain CPU GEMM in the documented order.
std::vector<float> reference_gemm(GemmInput type, const Operands& o, int m, int n, int k) {
  const int chunk_k = type == GemmInput::BF16 ? 16 : 32;  // 32 bytes of K per wgmma
  std::vector<float> c(static_cast<size_t>(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int k0 = 0; k0 < k; k0 += chunk_k) {
        float chunk = 0.0f;
        for (int kk = k0; kk < std::min(k, k0 + chunk_k); ++kk)
          chunk += element(type, o.a, static_cast<size_t>(i) * o.lda + kk) * element(type, o.b, static_cast<size_t>(j) * o.ldb + kk);
        acc += chunk;
      }
      c[static_cast<size_t>(i) * n + j] = acc;
    }
  return c;
}

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
    int mismatches = 0, padding_touched = 0;
    double max_abs = 0.0;
    for (int i = 0; i < s.m; ++i) {
      for (int j = 0; j < s.n; ++j) {
        const float got = c[static_cast<size_t>(i) * ldc + j], want = expect[static_cast<size_t>(i) * s.n + j];
        mismatches += std::memcmp(&got, &want, 4) != 0;
        max_abs = std::max(max_abs, std::fabs(static_cast<double>(want)));
      }
      for (int j = s.n; j < ldc; ++j) padding_touched += !std::isnan(c[static_cast<size_t>(i) * ldc + j]);
    }
    EXPECT_EQ(mismatches, 0) << "M=" << s.m << " N=" << s.n << " K=" << s.k << " schedule seed " << schedule;
    EXPECT_EQ(padding_touched, 0);
    std::printf("%s GEMM %dx%dx%d (input seed %llu, schedule seed %llu): %d of %d outputs differ bitwise, max |C| %.3g\n",
                type == GemmInput::BF16 ? "bf16" : "e4m3", s.m, s.n, s.k, static_cast<unsigned long long>(seed),
                static_cast<unsigned long long>(schedule), mismatches, s.m * s.n, max_abs);
  }
}

TEST(GemmEmulated, Fp8AlignedShape) { expect_bit_equal(GemmInput::E4M3, {128, 128, 256}, 1, {11, 12}); }

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
