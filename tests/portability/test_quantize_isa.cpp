// Every vector-ISA build of the CPU quantizer's row loops (lib/quantize/isa) computes the same
// bits: the E4M3 output, the descales and the amax of the AVX2 and AVX-512 builds equal the
// baseline build's, for each build this CPU runs (the CPU quantizer, as fp8attn_quantize runs it). Inputs: N(0,1)·2^k with a fresh seed, with a
// few large channels; F32 and BF16 inputs; rotation on and off; per-tensor, per-head and
// per-block descales; head dims 64, 128 and 256; a strided output. Under
// `qemu-x86_64 -cpu Haswell` (tests/portability/CMakeLists.txt) this runs the AVX2 build.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "lib/cpu_isa/cpu_isa.hpp"
#include "kernels/numerics/bfloat16.hpp"
#include "lib/core/thread_pool.hpp"
#include "lib/quantize/cpu_quantizer.hpp"
#include "lib/quantize/quantize_problem.hpp"
#include "lib/quantize/quantize_rows.hpp"
#include "tools/common/fresh_seed.hpp"
#include "tools/common/host_tensor.hpp"

namespace fp8attn::testing {
namespace {

struct Case {
  int64_t seqlen, heads, dim;
  bool bf16, rotate;
  int32_t granularity;
  int64_t out_stride_factor;  ///< 1: dense output; 2: every other byte of a wider buffer
};

struct Result {
  std::vector<uint8_t> out;
  std::vector<float> descale;
  float amax = 0.0f;
};

Result quantize_with(CpuIsa isa, const Case& c, const std::vector<float>& f32, const std::vector<uint16_t>& bf16,
                     uint64_t rotation_seed) {
  // NOTE: the quantizer of the statically linked core, not fp8attn_quantize: the shared
  // library holds its own copy of the dispatcher, which set_active_cpu_isa here does not steer.
  EXPECT_TRUE(set_active_cpu_isa(isa)) << cpu_isa_name(isa);
  const std::vector<int64_t> shape{1, c.seqlen, c.heads, c.dim};
  const int64_t f = c.out_stride_factor;
  const int64_t block_rows = 64, blocks = (c.seqlen + block_rows - 1) / block_rows;
  Result r;
  r.out.assign(static_cast<size_t>(c.seqlen * c.heads * c.dim * f), 0xA5);  // poisoned
  r.descale.assign(static_cast<size_t>(c.granularity == FP8ATTN_QUANT_PER_TENSOR ? 1
                                       : c.granularity == FP8ATTN_QUANT_PER_HEAD ? c.heads
                                                                                   : c.heads * blocks),
                   -7.0f);
  void* in = c.bf16 ? static_cast<void*>(const_cast<uint16_t*>(bf16.data())) : const_cast<float*>(f32.data());
  const fp8attn_tensor in_t = workloads::dense_host_tensor(in, c.bf16 ? FP8ATTN_DTYPE_BF16 : FP8ATTN_DTYPE_F32, shape);
  fp8attn_tensor out_t = workloads::dense_host_tensor(r.out.data(), FP8ATTN_DTYPE_E4M3, shape);
  for (int i = 0; i < 4; ++i) out_t.stride[i] *= f;  // every f-th byte of a wider buffer
  std::vector<int64_t> ds_shape{1};
  if (c.granularity == FP8ATTN_QUANT_PER_HEAD) ds_shape = {1, c.heads};
  if (c.granularity == FP8ATTN_QUANT_PER_BLOCK) ds_shape = {1, c.heads, blocks};
  const fp8attn_tensor ds_t = workloads::dense_host_tensor(r.descale.data(), FP8ATTN_DTYPE_F32, ds_shape);
  fp8attn_quantize_options o{};
  o.struct_size = sizeof o;
  o.granularity = c.granularity;
  o.block_rows = static_cast<int32_t>(block_rows);
  o.rotate = c.rotate ? 1u : 0u;
  o.seed = rotation_seed;
  const sm90::quant::QuantizeParams p = quant::make_quantize_params(&in_t, nullptr, o, &out_t, &ds_t);
  ThreadPool pool(2);
  r.amax = quant::quantize_on_cpu(p, pool);
  return r;
}

TEST(QuantizeIsa, EveryBuildComputesTheSameBits) {
  const CpuIsa best = best_cpu_isa();
  if (best == CpuIsa::kBaseline) GTEST_SKIP() << "one quantizer build only (FP8ATTN_NATIVE or not x86-64)";
  const uint64_t seed = workloads::fresh_seed();
  std::mt19937_64 rng(seed);
  const Case cases[] = {
      {131, 3, 128, false, true, FP8ATTN_QUANT_PER_BLOCK, 1}, {77, 2, 64, true, true, FP8ATTN_QUANT_PER_HEAD, 2},
      {150, 2, 256, false, false, FP8ATTN_QUANT_PER_TENSOR, 1}, {65, 4, 128, true, false, FP8ATTN_QUANT_PER_BLOCK, 1},
  };
  for (const Case& c : cases) {
    std::normal_distribution<float> normal;
    std::vector<float> f32(static_cast<size_t>(c.seqlen * c.heads * c.dim));
    for (size_t i = 0; i < f32.size(); ++i) f32[i] = normal(rng) * (i % static_cast<size_t>(c.dim) == 3 ? 40.0f : 1.5f);
    std::vector<uint16_t> bf16(f32.size());
    for (size_t i = 0; i < f32.size(); ++i) bf16[i] = num::float_to_bf16(f32[i]);
    const uint64_t rotation_seed = rng();
    const Result base = quantize_with(CpuIsa::kBaseline, c, f32, bf16, rotation_seed);
    EXPECT_STREQ("baseline", quant::quantize_row_ops().isa);
    for (CpuIsa isa : {CpuIsa::kAvx2, CpuIsa::kAvx512}) {
      if (static_cast<int>(isa) > static_cast<int>(best)) continue;
      const Result r = quantize_with(isa, c, f32, bf16, rotation_seed);
      EXPECT_STREQ(cpu_isa_name(isa), quant::quantize_row_ops().isa);
      char where_buf[160];
      std::snprintf(where_buf, sizeof where_buf, "d%lld %s%s, %s vs baseline, seed %llu",
                    static_cast<long long>(c.dim), c.bf16 ? "bf16" : "f32", c.rotate ? " rotated" : "",
                    cpu_isa_name(isa), static_cast<unsigned long long>(seed));
      const std::string where = where_buf;
      EXPECT_EQ(base.out, r.out) << where;
      EXPECT_EQ(0, std::memcmp(base.descale.data(), r.descale.data(), base.descale.size() * sizeof(float))) << where;
      EXPECT_EQ(base.amax, r.amax) << where;
      std::printf("%s: bit-equal (amax %g)\n", where.c_str(), static_cast<double>(r.amax));
    }
  }
  set_active_cpu_isa(best);
}

}  // namespace
}  // namespace fp8attn::testing
