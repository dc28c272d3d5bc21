// Every vector-ISA build of the CPU engine computes the same bits (lib/attention/engine/isa):
// out, LSE and telemetry of the AVX2 and AVX-512 builds equal the baseline build's, bit for
// bit, for each build this CPU runs. Inputs: outlier inputs (N(0,1) with large-magnitude
// channels), fresh seed; E4M3 with per-head and per-block descales, and BF16; causal and not;
// GQA; two-level accumulation, the stabilized softmax, the reduced-precision accumulator
// model, FP32 accumulation; F32 outputs and a BF16 one; odd sequence lengths so that every tile has a ragged tail. Small shapes (a few KV
// blocks each): the qemu run emulates every vector instruction.
//
// Under `qemu-x86_64 -cpu Haswell` (tests/portability/CMakeLists.txt), FP8ATTN_EXPECT_ISA=avx2
// also checks that the dispatcher picked AVX2 there.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "lib/cpu_isa/cpu_isa.hpp"
#include "tests/common/engine_cases.hpp"
#include "tools/common/forward_runner.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::testing {
using namespace fp8attn::workloads;
namespace {

const EngineCase kCases[] = {
    {"e4m3 per-head, GQA 2:1, d128", FP8ATTN_DTYPE_E4M3, {2, 131, 303, 4, 2, 128}, [](fp8attn_attention_desc&) {},
     ScaleGranularity::PerHead},
    {"e4m3 causal, two-level accumulation, stabilized, d64", FP8ATTN_DTYPE_E4M3, {1, 203, 203, 2, 1, 64},
     [](fp8attn_attention_desc& d) {
       d.causal = 1;
       d.pv_promote_interval = 2;
       d.softmax_variant = FP8ATTN_SOFTMAX_STABILIZED;
     },
     ScaleGranularity::PerHead},
    {"e4m3 per-block descales, reduced accumulator, forward order, d128", FP8ATTN_DTYPE_E4M3, {1, 131, 301, 2, 1, 128},
     [](fp8attn_attention_desc& d) {
       d.accumulator_model = 1;
       d.kv_order = FP8ATTN_KV_ORDER_FORWARD;
     },
     ScaleGranularity::PerBlock},
    {"bf16 causal, d256", FP8ATTN_DTYPE_BF16, {1, 70, 190, 1, 1, 256}, [](fp8attn_attention_desc& d) { d.causal = 1; },
     ScaleGranularity::Unit},
    {"e4m3 FP32 accumulation, GQA 2:1, d128", FP8ATTN_DTYPE_E4M3, {1, 131, 303, 4, 2, 128},
     [](fp8attn_attention_desc& d) { d.accumulator_model = FP8ATTN_ACCUMULATOR_FP32; }, ScaleGranularity::PerHead},
    {"e4m3 FP32 accumulation, BF16 output, d128", FP8ATTN_DTYPE_E4M3, {1, 133, 257, 2, 1, 128},
     [](fp8attn_attention_desc& d) {
       d.accumulator_model = FP8ATTN_ACCUMULATOR_FP32;
       d.output_dtype = FP8ATTN_DTYPE_BF16;
     },
     ScaleGranularity::PerHead},
    {"bf16 FP32 accumulation, causal, d64", FP8ATTN_DTYPE_BF16, {1, 150, 150, 2, 2, 64},
     [](fp8attn_attention_desc& d) {
       d.causal = 1;
       d.accumulator_model = FP8ATTN_ACCUMULATOR_FP32;
     },
     ScaleGranularity::Unit},
};

ForwardResult run_with(CpuIsa isa, const fp8attn_attention_desc& desc, const AttentionShape& shape,
                       const QuantizedInputs& q) {
  EXPECT_TRUE(set_active_cpu_isa(isa)) << cpu_isa_name(isa);
  return run_engine_with_hooks(desc, shape, q, {}, 2);
}

TEST(EngineIsa, DispatchedBuildIsTheExpectedOne) {
  const char* expected = std::getenv("FP8ATTN_EXPECT_ISA");
  if (!expected) GTEST_SKIP() << "FP8ATTN_EXPECT_ISA not set (only the qemu runs set it)";
  EXPECT_STREQ(expected, cpu_isa_name(best_cpu_isa()));
  EXPECT_STREQ(expected, cpu_isa_name(active_cpu_isa()));
}

TEST(EngineIsa, EveryBuildComputesTheSameBits) {
  const CpuIsa best = best_cpu_isa();
  if (best == CpuIsa::kBaseline) GTEST_SKIP() << "one engine build only (FP8ATTN_NATIVE or not x86-64)";
  const uint64_t seed = fresh_seed();
  for (const EngineCase& c : kCases) {
    const EngineCaseInputs in = engine_case_inputs(c, seed);
    const ForwardResult base = run_with(CpuIsa::kBaseline, in.desc, c.shape, in.q);
    ASSERT_FALSE(base.out.empty());
    for (CpuIsa isa : {CpuIsa::kAvx2, CpuIsa::kAvx512, CpuIsa::kAvx512Bf16}) {
      if (static_cast<int>(isa) > static_cast<int>(best)) continue;
      // At avx512bf16, the FP32 mode's products both on vdpbf16ps and on FMAs, whichever this
      // CPU's measured choice is (bf16_dot_products_active).
      for (Bf16DotChoice dot : {Bf16DotChoice::kOn, Bf16DotChoice::kOff}) {
        if (isa != CpuIsa::kAvx512Bf16 && dot == Bf16DotChoice::kOff) continue;
        set_bf16_dot_products(dot);
        const ForwardResult r = run_with(isa, in.desc, c.shape, in.q);
        const std::string where = std::string(c.name) + ", " + cpu_isa_name(isa) +
                                  (dot == Bf16DotChoice::kOn ? "" : " (FMAs)") + " vs baseline, seed " +
                                  std::to_string(seed);
        expect_same_bits(base, r, where);
        std::printf("%s: bit-equal to baseline (p_positive %llu)\n", where.c_str(),
                    static_cast<unsigned long long>(r.telemetry.p_positive));
      }
    }
  }
  set_bf16_dot_products(Bf16DotChoice::kMeasure);
  set_active_cpu_isa(best);
}

TEST(EngineIsa, Bf16DotProductsFollowTheLevelAndTheChoice) {
  const CpuIsa best = best_cpu_isa();
  const bool has_level = best == CpuIsa::kAvx512Bf16;
  // The measurement is made once: the same answer every time, and never on a CPU without the level.
  const bool measured = bf16_dot_products_measured_fast();
  EXPECT_EQ(measured, bf16_dot_products_measured_fast());
  if (!has_level) {
    EXPECT_FALSE(measured);
  }
  set_bf16_dot_products(Bf16DotChoice::kOn);
  EXPECT_EQ(bf16_dot_products_active(), has_level && active_cpu_isa() == CpuIsa::kAvx512Bf16);
  if (has_level) {
    ASSERT_TRUE(set_active_cpu_isa(CpuIsa::kAvx512));
    EXPECT_FALSE(bf16_dot_products_active()) << "the avx512 level has no vdpbf16ps";
    ASSERT_TRUE(set_active_cpu_isa(CpuIsa::kAvx512Bf16));
    EXPECT_TRUE(bf16_dot_products_active());
    set_bf16_dot_products(Bf16DotChoice::kOff);
    EXPECT_FALSE(bf16_dot_products_active());
    EXPECT_TRUE(avx512_bf16_for_products(true)) << "the tensor-core mode's sums follow the level alone";
    EXPECT_FALSE(avx512_bf16_for_products(false));
    set_bf16_dot_products(Bf16DotChoice::kMeasure);
    EXPECT_EQ(bf16_dot_products_active(), measured);
  }
  set_bf16_dot_products(Bf16DotChoice::kMeasure);
  set_active_cpu_isa(best);
  std::printf("best level %s; vdpbf16ps measured %s than FMAs here\n", cpu_isa_name(best),
              measured ? "at least as fast" : "slower");
}

}  // namespace
}  // namespace fp8attn::testing
