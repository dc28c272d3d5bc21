// fp8attn_qk_spectral_norms against σ from the formed d × d product (double, Jacobi), on
// F32, BF16 and E4M3 weights, GQA grouping, strided views, warm starts and error paths.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <thread>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"
#include "tests/spectral/spectral_test_support.hpp"

namespace fp8attn::test {
namespace {

constexpr uint64_t kSeed = 20261122;

struct Problem {
  int hq, hkv, dh, d;
  Matrix wq, wk;
  Problem(int hq_, int hkv_, int dh_, int d_, uint64_t seed)
      : hq(hq_), hkv(hkv_), dh(dh_), d(d_), wq(random_weights(int64_t{hq_} * dh_, d_, seed)),
        wk(random_weights(int64_t{hkv_} * dh_, d_, seed + 1)) {}
  double reference(int h) const { return reference_sigma(head_rows(wq, h, dh), head_rows(wk, h / (hq / hkv), dh), dh, d); }
};

/// Runs the entry point with a poisoned output and a queried workspace.
int32_t run(fp8attn_context ctx, const fp8attn_tensor& wq, const fp8attn_tensor& wk, const Problem& p,
            const fp8attn_power_iteration_options* opts, std::vector<float>& sigma, fp8attn_error* err = nullptr) {
  size_t bytes = 0;
  EXPECT_EQ(fp8attn_qk_spectral_norms_workspace_size(ctx, p.hq, p.hkv, p.dh, p.d, &bytes, nullptr), FP8ATTN_OK);
  std::vector<char> ws(bytes);
  sigma.assign(p.hq, std::numeric_limits<float>::quiet_NaN());  // poison
  return fp8attn_qk_spectral_norms(ctx, &wq, &wk, p.hq, p.hkv, p.dh, opts, sigma.data(), ws.data(), ws.size(), nullptr,
                                   err);
}

TEST(QkSpectralNorms, F32MatchesFormedProductUnderGqa) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(kSeed));
  CpuContext c;
  Problem p(8, 2, 16, 64, kSeed);
  fp8attn_tensor wq = tensor_view(p.wq), wk = tensor_view(p.wk);
  std::vector<int32_t> iterations(p.hq, -1);
  std::vector<float> residual(p.hq, -1.0f);
  fp8attn_power_iteration_options o{};
  o.struct_size = sizeof o;
  o.iterations_out = iterations.data();
  o.residual_out = residual.data();
  std::vector<float> sigma;
  ASSERT_EQ(run(c.ctx, wq, wk, p, &o, sigma), FP8ATTN_OK);
  double worst = 0.0;
  for (int h = 0; h < p.hq; ++h) {
    const double ref = p.reference(h);
    const double rel = std::fabs(sigma[h] - ref) / ref;
    worst = std::max(worst, rel);
    std::printf("head %d: sigma %.7g reference %.7g rel %.2e iterations %d residual %.2e\n", h, sigma[h], ref, rel,
                iterations[h], residual[h]);
    EXPECT_GT(iterations[h], 0);
    EXPECT_LE(iterations[h], 100);
    EXPECT_GE(residual[h], 0.0f);
  }
  std::printf("worst relative error %.3e (bound 1e-4)\n", worst);
  EXPECT_LE(worst, 1e-4);
}

TEST(QkSpectralNorms, Bf16AndE4m3WithDescaleAndStridedViews) {
  CpuContext c;
  Problem p(4, 4, 8, 48, kSeed + 10);
  // Quantize: BF16 as is; E4M3 with a per-tensor scale so the largest element maps near 448.
  auto amax = [](const Matrix& m) {
    float a = 0.0f;
    for (float x : m.data) a = std::max(a, std::fabs(x));
    return a;
  };
  const float sq = 448.0f / amax(p.wq), sk = 448.0f / amax(p.wk);
  // Column-major storage for BF16 (row stride 1, column stride rows): exercises the converter.
  std::vector<uint16_t> q16(p.wq.data.size()), k16(p.wk.data.size());
  for (int64_t r = 0; r < p.wq.rows; ++r)
    for (int64_t col = 0; col < p.d; ++col) q16[col * p.wq.rows + r] = num::float_to_bf16(p.wq.at(r, col));
  for (int64_t r = 0; r < p.wk.rows; ++r)
    for (int64_t col = 0; col < p.d; ++col) k16[col * p.wk.rows + r] = num::float_to_bf16(p.wk.at(r, col));
  std::vector<uint8_t> q8(p.wq.data.size()), k8(p.wk.data.size());
  for (size_t i = 0; i < q8.size(); ++i) q8[i] = num::float_to_e4m3(p.wq.data[i] * sq);
  for (size_t i = 0; i < k8.size(); ++i) k8[i] = num::float_to_e4m3(p.wk.data[i] * sk);

  std::vector<float> s16, s8;
  fp8attn_tensor wq16 = tensor_view(q16.data(), FP8ATTN_DTYPE_BF16, p.wq.rows, p.d, 1, p.wq.rows);
  fp8attn_tensor wk16 = tensor_view(k16.data(), FP8ATTN_DTYPE_BF16, p.wk.rows, p.d, 1, p.wk.rows);
  ASSERT_EQ(run(c.ctx, wq16, wk16, p, nullptr, s16), FP8ATTN_OK);
  fp8attn_power_iteration_options o{};
  o.struct_size = sizeof o;
  o.wq_descale = 1.0f / sq;
  o.wk_descale = 1.0f / sk;
  fp8attn_tensor wq8 = tensor_view(q8.data(), FP8ATTN_DTYPE_E4M3, p.wq.rows, p.d, p.d, 1);
  fp8attn_tensor wk8 = tensor_view(k8.data(), FP8ATTN_DTYPE_E4M3, p.wk.rows, p.d, p.d, 1);
  ASSERT_EQ(run(c.ctx, wq8, wk8, p, &o, s8), FP8ATTN_OK);
  double worst16 = 0.0, worst8 = 0.0;
  for (int h = 0; h < p.hq; ++h) {
    const double ref = p.reference(h);
    worst16 = std::max(worst16, std::fabs(s16[h] - ref) / ref);
    worst8 = std::max(worst8, std::fabs(s8[h] - ref) / ref);
  }
  std::printf("worst relative error vs F32 weights: BF16 %.3e (bound 1e-2), E4M3 %.3e (bound 3e-2)\n", worst16, worst8);
  EXPECT_LE(worst16, 1e-2);
  EXPECT_LE(worst8, 3e-2);
  EXPECT_GT(worst8, 0.0);  // E4M3 rounding must show: the descaled path really read FP8 values
}

TEST(QkSpectralNorms, WarmStartConvergesFasterToTheSameSigma) {
  CpuContext c;
  Problem p(4, 1, 16, 64, kSeed + 20);
  fp8attn_tensor wq = tensor_view(p.wq), wk = tensor_view(p.wk);
  std::vector<float> warm(p.hq * p.dh, 0.0f);
  std::vector<int32_t> cold_it(p.hq), warm_it(p.hq);
  fp8attn_power_iteration_options o{};
  o.struct_size = sizeof o;
  o.warm_start = warm.data();
  o.iterations_out = cold_it.data();
  std::vector<float> cold, hot;
  ASSERT_EQ(run(c.ctx, wq, wk, p, &o, cold), FP8ATTN_OK);
  // A weight spike: σ scales by 16 and the singular vectors stay.
  for (float& x : p.wq.data) x *= 4.0f;
  for (float& x : p.wk.data) x *= 4.0f;
  o.iterations_out = warm_it.data();
  ASSERT_EQ(run(c.ctx, wq, wk, p, &o, hot), FP8ATTN_OK);
  int cold_total = 0, warm_total = 0;
  for (int h = 0; h < p.hq; ++h) {
    cold_total += cold_it[h];
    warm_total += warm_it[h];
    EXPECT_NEAR(hot[h] / cold[h], 16.0, 16.0 * 1e-4) << "head " << h;
    // The converged vector is still the top one: a single step confirms it.
    EXPECT_EQ(warm_it[h], 1) << "head " << h;
  }
  std::printf("iterations: cold %d, warm %d\n", cold_total, warm_total);
  EXPECT_LT(warm_total, cold_total);
}

TEST(QkSpectralNorms, ConcurrentCallsMatchSerialResults) {
  // Two host threads, each with its own context, call the entry point at once (OpenBLAS and the
  // pools are shared process-wide); each must get exactly its serial result.
  Problem p1(8, 2, 16, 96, kSeed + 40), p2(6, 3, 8, 64, kSeed + 41);
  CpuContext c1, c2;
  fp8attn_tensor q1 = tensor_view(p1.wq), k1 = tensor_view(p1.wk), q2 = tensor_view(p2.wq), k2 = tensor_view(p2.wk);
  std::vector<float> serial1, serial2;
  ASSERT_EQ(run(c1.ctx, q1, k1, p1, nullptr, serial1), FP8ATTN_OK);
  ASSERT_EQ(run(c2.ctx, q2, k2, p2, nullptr, serial2), FP8ATTN_OK);
  int mismatches = 0;
  for (int round = 0; round < 20; ++round) {
    std::vector<float> s1, s2;
    int32_t st1 = -1, st2 = -1;
    std::thread t1([&] { st1 = run(c1.ctx, q1, k1, p1, nullptr, s1); });
    std::thread t2([&] { st2 = run(c2.ctx, q2, k2, p2, nullptr, s2); });
    t1.join();
    t2.join();
    ASSERT_EQ(st1, FP8ATTN_OK);
    ASSERT_EQ(st2, FP8ATTN_OK);
    mismatches += (s1 != serial1) + (s2 != serial2);
  }
  std::printf("20 concurrent rounds, %d results differing from the serial ones\n", mismatches);
  EXPECT_EQ(mismatches, 0);
}

TEST(QkSpectralNorms, RejectsBadInputsAndWritesNothing) {
  CpuContext c;
  Problem p(4, 2, 8, 32, kSeed + 30);
  fp8attn_tensor wq = tensor_view(p.wq), wk = tensor_view(p.wk);
  size_t bytes = 0;
  ASSERT_EQ(fp8attn_qk_spectral_norms_workspace_size(c.ctx, p.hq, p.hkv, p.dh, p.d, &bytes, nullptr), FP8ATTN_OK);
  std::vector<char> ws(bytes);
  std::vector<float> sigma(p.hq, -7.0f);
  fp8attn_error err{};
  err.struct_size = sizeof err;
  EXPECT_EQ(fp8attn_qk_spectral_norms(c.ctx, &wq, &wk, p.hq, 3, p.dh, nullptr, sigma.data(), ws.data(), ws.size(), nullptr,
                                      &err),
            FP8ATTN_STATUS_BAD_HEADS);
  EXPECT_EQ(fp8attn_qk_spectral_norms(c.ctx, &wq, &wk, p.hq, p.hkv, p.dh, nullptr, sigma.data(), ws.data(), ws.size() - 1,
                                      nullptr, &err),
            FP8ATTN_STATUS_WORKSPACE_TOO_SMALL);
  EXPECT_EQ(fp8attn_qk_spectral_norms(c.ctx, &wq, &wk, p.hq, p.hkv, p.dh + 1, nullptr, sigma.data(), ws.data(),
                                      ws.size(), nullptr, &err),
            FP8ATTN_STATUS_BAD_SHAPE);
  fp8attn_tensor bad = wk;
  bad.dtype = FP8ATTN_DTYPE_E5M2;
  EXPECT_EQ(fp8attn_qk_spectral_norms(c.ctx, &wq, &bad, p.hq, p.hkv, p.dh, nullptr, sigma.data(), ws.data(), ws.size(),
                                      nullptr, &err),
            FP8ATTN_STATUS_BAD_DTYPE);
  fp8attn_power_iteration_options o{};
  o.struct_size = sizeof o;
  o.tolerance = -1.0f;
  EXPECT_EQ(fp8attn_qk_spectral_norms(c.ctx, &wq, &wk, p.hq, p.hkv, p.dh, &o, sigma.data(), ws.data(), ws.size(), nullptr,
                                      &err),
            FP8ATTN_STATUS_BAD_OPTION);
  o.tolerance = 0.0f;
  o.next = &o;
  EXPECT_EQ(fp8attn_qk_spectral_norms(c.ctx, &wq, &wk, p.hq, p.hkv, p.dh, &o, sigma.data(), ws.data(), ws.size(), nullptr,
                                      &err),
            FP8ATTN_STATUS_BAD_EXTENSION);
  int dummy = 0;
  EXPECT_EQ(fp8attn_qk_spectral_norms(c.ctx, &wq, &wk, p.hq, p.hkv, p.dh, nullptr, sigma.data(), ws.data(), ws.size(),
                                      reinterpret_cast<CUstream_st*>(&dummy), &err),
            FP8ATTN_STATUS_BAD_STREAM);
  std::printf("last error: %s\n", err.message);
  for (float s : sigma) EXPECT_EQ(s, -7.0f);
}

// The iteration cap binds: the tolerance always stopped first in the other tests.
// With max_iterations = 1 every head reports exactly one iteration; with a tolerance of 1e-38
// and the default cap, some head needs more than one, so the cap of 1 is what stopped it.
TEST(QkSpectralNorms, IterationCapOfOneStopsEveryHeadAfterOneIteration) {
  const uint64_t seed = std::random_device{}() * 0x9E3779B97F4A7C15ull;
  CpuContext c;
  Problem p(6, 3, 12, 40, seed);
  fp8attn_tensor wq = tensor_view(p.wq), wk = tensor_view(p.wk);
  fp8attn_power_iteration_options o{};
  o.struct_size = sizeof o;
  o.tolerance = 1e-38f;
  std::vector<int32_t> uncapped(p.hq, -1), capped(p.hq, -1);
  std::vector<float> sigma;
  o.iterations_out = uncapped.data();
  ASSERT_EQ(run(c.ctx, wq, wk, p, &o, sigma), FP8ATTN_OK);
  o.max_iterations = 1;
  o.iterations_out = capped.data();
  ASSERT_EQ(run(c.ctx, wq, wk, p, &o, sigma), FP8ATTN_OK);
  int32_t most = 0;
  for (int h = 0; h < p.hq; ++h) {
    EXPECT_EQ(capped[h], 1) << "head " << h << ", seed " << seed;
    EXPECT_TRUE(std::isfinite(sigma[h]) && sigma[h] > 0.0f) << "head " << h;
    most = std::max(most, uncapped[h]);
  }
  std::printf("seed %llu: most iterations without the cap %d\n", static_cast<unsigned long long>(seed), most);
  EXPECT_GT(most, 1) << "the tolerance alone stops after one iteration: the cap is not tested; seed " << seed;
}

}  // namespace
}  // namespace fp8attn::test
