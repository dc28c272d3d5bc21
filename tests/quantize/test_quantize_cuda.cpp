// The sm_90a build of the quantizer kernels on a GPU (built with FP8ATTN_BUILD_CUDA), against the
// CPU quantizer: every operation of the kernels is IEEE-rounded FP32 (add, subtract, multiply,
// divide), an exact shuffle or maximum, or cvt.rn.satfinite, so bytes, descales and the amax must
// be bit-equal. Skips without an sm_90 device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "kernels/sm90/quantize/quantize_cuda.hpp"
#include "lib/core/thread_pool.hpp"
#include "lib/quantize/cpu_quantizer.hpp"
#include "lib/quantize/quantize_problem.hpp"
#include "tests/quantize/quantize_test_support.hpp"
#include "tests/common/cuda_test_device.hpp"

namespace fp8attn::quant::testing {
namespace {

template <class T>
std::vector<T> host_copy(const T* device, size_t n) {
  std::vector<T> host(n);
  EXPECT_EQ(cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

void expect_gpu_equals_cpu(int32_t granularity, int block_rows, bool rotate, int64_t heads, int64_t dim, uint64_t seed) {
  const int64_t batch = 2, seqlen = 300;
  const std::vector<float> input = outlier_values(static_cast<size_t>(batch * seqlen * heads * dim), seed, false);
  std::vector<uint8_t> cpu_out(input.size(), 0x7F);
  const int64_t blocks = granularity == FP8ATTN_QUANT_PER_BLOCK ? (seqlen + block_rows - 1) / block_rows : 1;
  std::vector<float> cpu_descale(static_cast<size_t>(granularity == FP8ATTN_QUANT_PER_TENSOR ? 1 : batch * heads * blocks),
                                 std::nanf(""));
  const std::vector<int64_t> shape{batch, seqlen, heads, dim}, stride{seqlen * heads * dim, heads * dim, dim, 1};
  const fp8attn_tensor in_t = make_tensor(const_cast<float*>(input.data()), FP8ATTN_DTYPE_F32, shape, stride);
  const fp8attn_tensor out_t = make_tensor(cpu_out.data(), FP8ATTN_DTYPE_E4M3, shape, stride);
  fp8attn_tensor d_t;
  if (granularity == FP8ATTN_QUANT_PER_TENSOR) d_t = make_tensor(cpu_descale.data(), FP8ATTN_DTYPE_F32, {1}, {1});
  if (granularity == FP8ATTN_QUANT_PER_HEAD)
    d_t = make_tensor(cpu_descale.data(), FP8ATTN_DTYPE_F32, {batch, heads}, {heads, 1});
  if (granularity == FP8ATTN_QUANT_PER_BLOCK)
    d_t = make_tensor(cpu_descale.data(), FP8ATTN_DTYPE_F32, {batch, heads, blocks}, {heads * blocks, blocks, 1});
  const fp8attn_quantize_options opts = options(granularity, block_rows, rotate, seed);
  sm90::quant::QuantizeParams p = make_quantize_params(&in_t, nullptr, opts, &out_t, &d_t);
  ThreadPool pool(2);
  const float cpu_amax = quantize_on_cpu(p, pool);

  sm90::quant::QuantizeParams dp = p;
  float* d_input = fp8attn::testing::device_copy(input);
  uint8_t* d_out = fp8attn::testing::device_copy(std::vector<uint8_t>(cpu_out.size(), 0x7F));
  float* d_descale = fp8attn::testing::device_copy(std::vector<float>(cpu_descale.size(), std::nanf("")));
  float* d_units = fp8attn::testing::device_copy(std::vector<float>(static_cast<size_t>(unit_count(p)), std::nanf("")));
  float* d_amax = fp8attn::testing::device_copy(std::vector<float>(1, std::nanf("")));
  dp.input = d_input, dp.output = d_out, dp.descale = d_descale, dp.unit_amax = d_units, dp.tensor_amax = d_amax;
  ASSERT_EQ(sm90::quant::run_quantize_cuda(dp, nullptr), "");
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto out = host_copy(d_out, cpu_out.size());
  const auto descale = host_copy(d_descale, cpu_descale.size());
  const float amax = host_copy(d_amax, 1)[0];
  int64_t byte_diffs = 0, descale_diffs = 0;
  for (size_t i = 0; i < out.size(); ++i) byte_diffs += out[i] != cpu_out[i];
  for (size_t i = 0; i < descale.size(); ++i) descale_diffs += std::memcmp(&descale[i], &cpu_descale[i], 4) != 0;
  std::printf("granularity %d, block %d, %s, hd%lld: %lld of %zu bytes, %lld of %zu descales differ; amax %.6g (CPU %.6g)\n",
              granularity, block_rows, rotate ? "rotated" : "not rotated", static_cast<long long>(dim),
              static_cast<long long>(byte_diffs), out.size(), static_cast<long long>(descale_diffs), descale.size(), amax,
              cpu_amax);
  EXPECT_EQ(byte_diffs, 0);
  EXPECT_EQ(descale_diffs, 0);
  EXPECT_EQ(std::memcmp(&amax, &cpu_amax, 4), 0);
  for (void* ptr : {static_cast<void*>(d_input), static_cast<void*>(d_out), static_cast<void*>(d_descale),
                    static_cast<void*>(d_units), static_cast<void*>(d_amax)})
    cudaFree(ptr);
}

TEST(QuantizeCuda, BitEqualToCpuQuantizer) {
  std::string why;
  if (!fp8attn::testing::hopper_present(&why)) GTEST_SKIP() << "needs an sm_90 GPU: " << why;
  const uint64_t seed = test_seed("GPU quantizer");
  expect_gpu_equals_cpu(FP8ATTN_QUANT_PER_BLOCK, 128, true, 4, 128, seed);
  expect_gpu_equals_cpu(FP8ATTN_QUANT_PER_BLOCK, 224, true, 2, 256, seed ^ 1);
  expect_gpu_equals_cpu(FP8ATTN_QUANT_PER_HEAD, 0, true, 3, 64, seed ^ 2);
  expect_gpu_equals_cpu(FP8ATTN_QUANT_PER_TENSOR, 0, false, 4, 128, seed ^ 3);
}

}  // namespace
}  // namespace fp8attn::quant::testing
