// The sm_90a combine kernel on a GPU (built with FP8ATTN_BUILD_CUDA), against the CPU merge and an
// FP64 merge on fresh random partials (O_p ~ N(0,1), lse_p ~ N(0, 16), some parts empty, one row
// empty everywhere), F32 and BF16, 1 to 256 parts. The kernel rounds every FP32 operation as the
// CPU does (arch::mul_rn / add_rn, no contraction) except exp2 (the GPU's exp2f, 2 ulp, against
// the host's ex2 model, 1 ulp) and logf, so it is held to the CPU's bound against FP64 with
// 16 more ulp of max|O|, and the count of bit-equal elements is printed. Skips without an sm_90
// device.
#include <cuda_runtime_api.h>

#include <cstdio>

#include "kernels/sm90/combine/combine_cuda.hpp"
#include "lib/combine/combine_problem.hpp"
#include "lib/combine/cpu_combine.hpp"
#include "lib/core/thread_pool.hpp"
#include "tests/combine/combine_test_support.hpp"
#include "tests/common/cuda_test_device.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::combine_testing {
namespace {

void expect_gpu_close_to_cpu(int64_t parts, int32_t o_dtype, int32_t out_dtype) {
  std::string why;
  if (!fp8attn::testing::hopper_present(&why)) GTEST_SKIP() << why;
  const uint64_t seed = workloads::fresh_seed();
  Layout layout;
  layout.o_dtype = o_dtype;
  layout.out_dtype = out_dtype;
  Problem pr(parts, 29, 3, 72, layout);
  pr.fill(seed, 4.0, 0.0, 0.2, {4});
  fp8attn_combine_args a = pr.args();
  sm90::combine::CombineParams p = combine::make_combine_params(a, FP8ATTN_DEVICE_HOST, true);
  ThreadPool pool(2);
  combine::combine_on_cpu(p, pool);
  const std::vector<uint8_t> cpu_out = pr.out.bytes, cpu_lse = pr.lse.bytes;

  uint8_t* d_po = fp8attn::testing::device_copy(pr.po.bytes);
  uint8_t* d_pl = fp8attn::testing::device_copy(pr.pl.bytes);
  uint8_t* d_out = fp8attn::testing::device_copy(std::vector<uint8_t>(pr.out.bytes.size(), 0xFF));
  uint8_t* d_lse = fp8attn::testing::device_copy(std::vector<uint8_t>(pr.lse.bytes.size(), 0xFF));
  sm90::combine::CombineParams dp = p;
  dp.partial_out = d_po, dp.partial_lse = reinterpret_cast<const float*>(d_pl);
  dp.out = d_out, dp.lse = reinterpret_cast<float*>(d_lse);
  ASSERT_EQ(sm90::combine::run_combine_cuda(dp, nullptr), "");
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(pr.out.bytes.data(), d_out, pr.out.bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(pr.lse.bytes.data(), d_lse, pr.lse.bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  for (void* d : {static_cast<void*>(d_po), static_cast<void*>(d_pl), static_cast<void*>(d_out), static_cast<void*>(d_lse)})
    cudaFree(d);

  const Fp64Merge ref = fp64_merge(pr);
  double max_o = 0.0;
  for (int64_t q = 0; q < parts; ++q)
    for (int64_t t = 0; t < pr.tokens; ++t)
      for (int64_t h = 0; h < pr.heads; ++h)
        if (pr.pl.get({q, t, h, 0}) != -INFINITY)
          for (int64_t e = 0; e < pr.dim; ++e) max_o = std::max(max_o, std::fabs(double(pr.po.get({q, t, h, e}))));
  size_t equal = 0, total = 0;
  double worst = 0.0;
  for (int64_t t = 0; t < pr.tokens; ++t)
    for (int64_t h = 0; h < pr.heads; ++h) {
      const double want_lse = ref.lse[t * pr.heads + h], got_lse = pr.lse.get({t, h, 0, 0});
      if (std::isinf(want_lse)) {
        EXPECT_TRUE(std::isinf(got_lse) && got_lse < 0);
      } else {
        EXPECT_LE(std::fabs(got_lse - want_lse), std::ldexp(std::fabs(want_lse) + 8.0, -20));
      }
      for (int64_t e = 0; e < pr.dim; ++e) {
        const double want = ref.out[(t * pr.heads + h) * pr.dim + e], got = pr.out.get({t, h, e, 0});
        double bound = (parts + 32) * std::ldexp(max_o, -23);
        if (out_dtype == FP8ATTN_DTYPE_BF16) bound += std::ldexp(std::fabs(want), -8);
        EXPECT_LE(std::fabs(got - want), bound) << t << "," << h << "," << e << " seed " << seed;
        worst = std::max(worst, std::fabs(got - want) / bound);
      }
    }
  const size_t elem = static_cast<size_t>(pr.out.elem());
  for (size_t i = 0; i < cpu_out.size(); i += elem, ++total) equal += std::memcmp(&cpu_out[i], &pr.out.bytes[i], elem) == 0;
  std::printf("%lld parts: GPU at %.3f of its FP64 bound; %zu of %zu output elements bit-equal to the CPU (seed %llu)\n",
              static_cast<long long>(parts), worst, equal, total, static_cast<unsigned long long>(seed));
}

TEST(CombineCuda, F32ThreeParts) { expect_gpu_close_to_cpu(3, FP8ATTN_DTYPE_F32, FP8ATTN_DTYPE_F32); }
TEST(CombineCuda, Bf16OnePart) { expect_gpu_close_to_cpu(1, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_BF16); }
TEST(CombineCuda, Bf16In256PartsF32Out) { expect_gpu_close_to_cpu(256, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_F32); }

}  // namespace
}  // namespace fp8attn::combine_testing
