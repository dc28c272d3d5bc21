// The Hopper quantizer kernels (kernels/sm90/quantize) on the SIMT emulator against the CPU
// quantizer (lib/quantize): random outlier inputs, every granularity, rotation on and off,
// padded-strided and packed layouts, head_dim 64, 128 and 256, under the round-robin and several
// shuffled schedules. Output bytes, descales and the tensor amax must be bit-equal.
#include <cstring>
#include <string>

#include "kernels/sm90/quantize/quantize_emulated.hpp"
#include "lib/core/thread_pool.hpp"
#include "lib/quantize/cpu_quantizer.hpp"
#include "lib/quantize/quantize_problem.hpp"
#include "tests/emu/emu_test_support.hpp"
#include "tests/quantize/quantize_test_support.hpp"

namespace fp8attn::quant::testing {
namespace {

struct KernelCase {
  std::string name;
  bool packed;
  int64_t batch, seqlen, heads, dim;  // padded: batch × seqlen; packed: seqlens below
  std::vector<int32_t> seqlens;
  fp8attn_quantize_options opts;
  bool bf16;
};

void expect_kernel_equals_cpu(const KernelCase& c, uint64_t seed) {
  std::vector<int32_t> cu{0};
  for (int32_t n : c.seqlens) cu.push_back(cu.back() + n);
  const int64_t rows = c.packed ? cu.back() : c.batch * c.seqlen;
  const int64_t batch = c.packed ? static_cast<int64_t>(c.seqlens.size()) : c.batch;
  int64_t max_rows = c.seqlen;
  if (c.packed) {
    max_rows = 0;
    for (int32_t n : c.seqlens) max_rows = std::max<int64_t>(max_rows, n);
  }
  // Input rows padded by 4 elements (strided); output contiguous.
  const int64_t in_row = c.dim + 4;
  const std::vector<float> values = outlier_values(static_cast<size_t>(rows * c.heads * c.dim), seed, c.bf16);
  std::vector<float> in_f32(static_cast<size_t>(rows * c.heads * in_row), 1e30f);
  std::vector<uint16_t> in_bf16(in_f32.size(), num::float_to_bf16(1e30f));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t e = 0; e < c.dim; ++e) {
        const float v = values[(r * c.heads + h) * c.dim + e];
        in_f32[(r * c.heads + h) * in_row + e] = v;
        in_bf16[(r * c.heads + h) * in_row + e] = num::float_to_bf16(v);
      }
  void* in_data = c.bf16 ? static_cast<void*>(in_bf16.data()) : static_cast<void*>(in_f32.data());
  const int32_t dtype = c.bf16 ? FP8ATTN_DTYPE_BF16 : FP8ATTN_DTYPE_F32;
  std::vector<int64_t> shape, in_stride, out_stride;
  if (c.packed) {
    shape = {rows, c.heads, c.dim};
    in_stride = {c.heads * in_row, in_row, 1};
    out_stride = {c.heads * c.dim, c.dim, 1};
  } else {
    shape = {c.batch, c.seqlen, c.heads, c.dim};
    in_stride = {c.seqlen * c.heads * in_row, c.heads * in_row, in_row, 1};
    out_stride = {c.seqlen * c.heads * c.dim, c.heads * c.dim, c.dim, 1};
  }
  const int64_t groups = c.heads / (c.opts.head_group == 0 ? 1 : c.opts.head_group);
  const int64_t blocks = c.opts.granularity == FP8ATTN_QUANT_PER_BLOCK ? per_block_count(max_rows, c.opts) : 1;
  std::vector<int64_t> d_shape, d_stride;
  if (c.opts.granularity == FP8ATTN_QUANT_PER_TENSOR) d_shape = {1}, d_stride = {1};
  if (c.opts.granularity == FP8ATTN_QUANT_PER_HEAD) d_shape = {batch, groups}, d_stride = {groups, 1};
  if (c.opts.granularity == FP8ATTN_QUANT_PER_BLOCK)
    d_shape = {batch, groups, blocks}, d_stride = {groups * blocks, blocks, 1};
  size_t d_elems = 1;
  for (int64_t n : d_shape) d_elems *= static_cast<size_t>(n);

  // The CPU quantizer's result.
  std::vector<uint8_t> cpu_out(static_cast<size_t>(rows * c.heads * c.dim), 0x7F);
  std::vector<float> cpu_descale(d_elems, std::nanf(""));
  const fp8attn_tensor in_t = make_tensor(in_data, dtype, shape, in_stride);
  const fp8attn_tensor cu_t = make_tensor(cu.data(), FP8ATTN_DTYPE_I32, {static_cast<int64_t>(cu.size())}, {1});
  fp8attn_tensor out_t = make_tensor(cpu_out.data(), FP8ATTN_DTYPE_E4M3, shape, out_stride);
  fp8attn_tensor d_t = make_tensor(cpu_descale.data(), FP8ATTN_DTYPE_F32, d_shape, d_stride);
  sm90::quant::QuantizeParams p = make_quantize_params(&in_t, c.packed ? &cu_t : nullptr, c.opts, &out_t, &d_t);
  ThreadPool pool(2);
  const float cpu_amax = quantize_on_cpu(p, pool);

  for (const emu::testing::Schedule& schedule : emu::testing::schedules()) {
    std::vector<uint8_t> out(cpu_out.size(), 0x7F);
    std::vector<float> descale(d_elems, std::nanf(""));
    std::vector<float> unit_amax(static_cast<size_t>(unit_count(p)), std::nanf(""));
    float amax = std::nanf("");
    sm90::quant::QuantizeParams kp = p;
    kp.output = out.data();
    kp.descale = descale.data();
    kp.unit_amax = unit_amax.data();
    kp.tensor_amax = &amax;
    emu::LaunchConfig config;
    config.seed = schedule.seed;
    config.shuffle = schedule.shuffle;
    sm90::quant::run_quantize_emulated(kp, config);
    int64_t byte_diffs = 0, descale_diffs = 0;
    for (size_t i = 0; i < out.size(); ++i) byte_diffs += out[i] != cpu_out[i];
    for (size_t i = 0; i < descale.size(); ++i) descale_diffs += std::memcmp(&descale[i], &cpu_descale[i], 4) != 0;
    std::printf("%s, %s: %lld of %zu bytes and %lld of %zu descales differ; amax %.6g (CPU %.6g)\n", c.name.c_str(),
                emu::testing::schedule_name(schedule).c_str(), static_cast<long long>(byte_diffs), out.size(),
                static_cast<long long>(descale_diffs), descale.size(), amax, cpu_amax);
    EXPECT_EQ(byte_diffs, 0) << c.name << ", " << emu::testing::schedule_name(schedule);
    EXPECT_EQ(descale_diffs, 0) << c.name << ", " << emu::testing::schedule_name(schedule);
    EXPECT_EQ(std::memcmp(&amax, &cpu_amax, 4), 0) << c.name;
  }
}

TEST(QuantizeEmulated, PerBlockRotatedBitEqualToCpu) {
  const uint64_t seed = test_seed("kernel per-block");
  expect_kernel_equals_cpu({"per-block 48 rows, rotated, hd128, F32", false, 2, 100, 2, 128, {},
                            options(FP8ATTN_QUANT_PER_BLOCK, 48, true, seed), false},
                           seed);
}

TEST(QuantizeEmulated, PerHeadAndPerTensorBitEqualToCpu) {
  const uint64_t seed = test_seed("kernel per-head, per-tensor");
  expect_kernel_equals_cpu({"per-head groups of 2, rotated, hd64, BF16", false, 1, 70, 4, 64, {},
                            options(FP8ATTN_QUANT_PER_HEAD, 0, true, seed, 0, 2), true},
                           seed);
  expect_kernel_equals_cpu({"per-tensor, margin 1, not rotated, hd256, F32", false, 1, 40, 2, 256, {},
                            options(FP8ATTN_QUANT_PER_TENSOR, 0, false, 0, 1), false},
                           seed);
}

TEST(QuantizeEmulated, LeadingRowsBitEqualToCpu) {
  const uint64_t seed = test_seed("kernel leading rows");
  expect_kernel_equals_cpu({"per-block 48 rows after 4 leading, rotated, hd128, F32", false, 2, 100, 2, 128, {},
                            options(FP8ATTN_QUANT_PER_BLOCK, 48, true, seed, 0, 0, 4), false},
                           seed);
  expect_kernel_equals_cpu({"varlen per-block 32 after 8 leading, hd64, BF16", true, 0, 0, 2, 64, {5, 0, 8, 70},
                            options(FP8ATTN_QUANT_PER_BLOCK, 32, false, 0, 0, 0, 8), true},
                           seed);
}

TEST(QuantizeEmulated, PackedVarlenBitEqualToCpu) {
  const uint64_t seed = test_seed("kernel varlen");
  expect_kernel_equals_cpu({"varlen per-block 32, rotated, hd256, BF16", true, 0, 0, 1, 256, {33, 0, 7, 64},
                            options(FP8ATTN_QUANT_PER_BLOCK, 32, true, seed ^ 3), true},
                           seed);
}

TEST(QuantizeEmulated, RefusesHeadDimsWithoutAnInstantiation) {
  sm90::quant::QuantizeParams p;
  p.head_dim = 96, p.batch = 1, p.heads = 1, p.units_per_head = 1;
  float slot = 0.0f;
  p.unit_amax = &slot;
  EXPECT_THROW(sm90::quant::run_quantize_emulated(p, emu::LaunchConfig{}), std::invalid_argument);
}

}  // namespace
}  // namespace fp8attn::quant::testing
