// E4M3 output and amax_o: the E4M3 output is round_e4m3(O · out_scale) of the F32
// output bit for bit, and amax_o is max |O| of the F32 output, exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/training/training_test_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::training_test {
namespace {

struct Case {
  bool causal;
  float scale_factor;  ///< out_scale = scale_factor · 448 / max|O|: > 1 saturates, ≪ 1 reaches subnormals
};

class Fp8Output : public ::testing::TestWithParam<Case> {};

TEST_P(Fp8Output, E4m3OutputIsTheScaledF32OutputRoundedAndAmaxIsMaxAbsO) {
  const Case c = GetParam();
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu causal %d scale factor %g\n", static_cast<unsigned long long>(seed), c.causal, c.scale_factor);
  std::mt19937_64 rng(seed);
  const Shape s;
  fp8attn_context ctx = make_context();
  Inputs in = random_inputs(s, rng, 1.5f);
  // Per-tensor descales, as a real quantized input carries.
  const float qd = 0.37f, kd = 0.81f, vd = 1.9f;

  std::vector<float> ref(static_cast<size_t>(s.q_elems()), std::numeric_limits<float>::quiet_NaN());
  {
    PlanFixture f32(ctx, make_desc(s, FP8ATTN_DTYPE_F32, false, c.causal), s);
    fp8attn_attention_args a = make_args(s, in, ref.data(), FP8ATTN_DTYPE_F32);
    a.q_descale = broadcast_descale(&qd, s);
    a.k_descale = broadcast_descale(&kd, s);
    a.v_descale = broadcast_descale(&vd, s);
    ASSERT_EQ(f32.run(a), FP8ATTN_OK);
  }
  const float amax_ref = max_abs(ref);
  ASSERT_GT(amax_ref, 0.0f);
  const float out_scale = c.scale_factor * 448.0f / amax_ref;

  PlanFixture e4m3(ctx, make_desc(s, FP8ATTN_DTYPE_E4M3, false, c.causal), s);
  std::vector<uint8_t> out(static_cast<size_t>(s.q_elems()), 0x7F);  // poisoned: E4M3 NaN
  fp8attn_attention_args a = make_args(s, in, out.data(), FP8ATTN_DTYPE_E4M3);
  a.q_descale = broadcast_descale(&qd, s);
  a.k_descale = broadcast_descale(&kd, s);
  a.v_descale = broadcast_descale(&vd, s);
  a.out_scale = &out_scale;
  float amax_o = -1.0f;
  a.amax_o = &amax_o;
  fp8attn_error err = make_error();
  ASSERT_EQ(e4m3.run(a, &err), FP8ATTN_OK) << err.message;

  int64_t mismatches = 0, saturated = 0, zeros = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const uint8_t expected = num::float_to_e4m3(ref[i] * out_scale);
    if (out[i] != expected && mismatches++ < 5)
      ADD_FAILURE() << "element " << i << ": O = " << ref[i] << ", expected E4M3 0x" << std::hex << int{expected}
                    << ", got 0x" << int{out[i]} << std::dec;
    saturated += (expected & 0x7F) == 0x7E;
    zeros += (expected & 0x7F) == 0;
  }
  std::printf("out_scale %g: %lld mismatches, %lld saturated, %lld zeros of %zu; amax_o %g, max|O| of F32 %g\n",
              out_scale, static_cast<long long>(mismatches), static_cast<long long>(saturated),
              static_cast<long long>(zeros), out.size(), amax_o, amax_ref);
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(amax_o, amax_ref);
  fp8attn_context_destroy(ctx);
}

INSTANTIATE_TEST_SUITE_P(Scales, Fp8Output,
                         ::testing::Values(Case{false, 1.0f}, Case{true, 1.0f}, Case{false, 4.0f},
                                           Case{false, 1.0f / 512}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           const char* scale = info.param.scale_factor > 1.0f   ? "Saturating"
                                               : info.param.scale_factor < 1.0f ? "Subnormal"
                                                                                : "FullRange";
                           return std::string(info.param.causal ? "Causal" : "Full") + scale;
                         });

TEST(AmaxO, Bf16OutputReportsMaxAbsOBeforeTheCast) {
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const Shape s;
  fp8attn_context ctx = make_context();
  Inputs in = random_inputs(s, rng, 0.7f);
  std::vector<float> ref(static_cast<size_t>(s.q_elems()), std::numeric_limits<float>::quiet_NaN());
  PlanFixture f32(ctx, make_desc(s, FP8ATTN_DTYPE_F32), s);
  ASSERT_EQ(f32.run(make_args(s, in, ref.data(), FP8ATTN_DTYPE_F32)), FP8ATTN_OK);
  PlanFixture bf16(ctx, make_desc(s, FP8ATTN_DTYPE_BF16), s);
  std::vector<uint16_t> out(static_cast<size_t>(s.q_elems()), 0xFFFF);
  fp8attn_attention_args a = make_args(s, in, out.data(), FP8ATTN_DTYPE_BF16);
  float amax_o = -1.0f;
  a.amax_o = &amax_o;
  ASSERT_EQ(bf16.run(a), FP8ATTN_OK);
  std::printf("amax_o %.9g, max|O| of the F32 call %.9g\n", amax_o, max_abs(ref));
  EXPECT_EQ(amax_o, max_abs(ref));
  fp8attn_context_destroy(ctx);
}

}  // namespace
}  // namespace fp8attn::training_test
