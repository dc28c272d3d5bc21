// The forward's scale checks and the scale state's current recipe, each from a second angle:
// the out_scale and descale-with-state refusals on the emulator backend (the CPU backend's are
// tests/training/test_forward_state_refusals.cpp; the reference backend has no E4M3 output),
// each beside a valid call that writes the output, and the current recipe's scale read after each report, before any
// step.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tools/common/fresh_seed.hpp"
#include "tests/training/training_test_support.hpp"

namespace fp8attn::training_test {
namespace {

struct CallResult {
  int32_t status;
  std::string message;
  bool written;  // some byte of the output changed
};

/// An E4M3-output forward; `descale` 0..2 sets q_descale, k_descale or v_descale (−1: none).
CallResult run_e4m3(fp8attn_context ctx, const Shape& s, Inputs& in, const float* out_scale, fp8attn_scale_state state,
                    int descale = -1) {
  PlanFixture plan(ctx, make_desc(s, FP8ATTN_DTYPE_E4M3), s);
  std::vector<uint8_t> out(static_cast<size_t>(s.q_elems()), 0xA5);
  fp8attn_attention_args a = make_args(s, in, out.data(), FP8ATTN_DTYPE_E4M3);
  const float one = 1.0f;
  if (descale >= 0)
    (descale == 0 ? a.q_descale : descale == 1 ? a.k_descale : a.v_descale) = broadcast_descale(&one, s);
  a.out_scale = out_scale;
  a.scale_state = state;
  fp8attn_error err = make_error();
  const int32_t st = plan.run(a, &err);
  bool written = false;
  for (uint8_t b : out) written = written || b != 0xA5;
  return {st, err.message, written};
}

class ForwardChecksOnOtherBackends : public ::testing::TestWithParam<int32_t> {};

TEST_P(ForwardChecksOnOtherBackends, OutScaleInfiniteOrNanIsRefusedAndAFiniteOneRuns) {
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const Shape s{1, 20, 37, 2, 1, 64};
  Inputs in = random_inputs(s, rng);
  fp8attn_context ctx = make_context(GetParam());
  ASSERT_NE(ctx, nullptr);
  const float good = std::ldexp(1.0f + static_cast<float>(rng() % 1000) / 1000.0f, static_cast<int>(rng() % 5) - 2);
  const CallResult ok = run_e4m3(ctx, s, in, &good, nullptr);
  EXPECT_EQ(ok.status, FP8ATTN_OK) << ok.message;
  EXPECT_TRUE(ok.written) << "a valid call left the output as it was";
  for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                    -std::numeric_limits<float>::infinity(), -good, 0.0f}) {
    const CallResult r = run_e4m3(ctx, s, in, &bad, nullptr);
    EXPECT_EQ(r.status, FP8ATTN_STATUS_BAD_SCALE) << "out_scale " << bad << ": " << r.message;
    EXPECT_NE(r.message.find("out_scale"), std::string::npos) << r.message;
    EXPECT_FALSE(r.written) << "out_scale " << bad << ": output written by a refused call";
  }
  fp8attn_context_destroy(ctx);
}

TEST_P(ForwardChecksOnOtherBackends, DescalesWithAStateAreRefusedAndTheStateAloneRuns) {
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const Shape s{1, 20, 37, 2, 1, 64};
  Inputs in = random_inputs(s, rng);
  fp8attn_context ctx = make_context(GetParam());
  ASSERT_NE(ctx, nullptr);
  fp8attn_scale_state state = nullptr;
  ASSERT_EQ(fp8attn_scale_state_create(ctx, nullptr, &state, nullptr), FP8ATTN_OK);
  const CallResult ok = run_e4m3(ctx, s, in, nullptr, state);
  EXPECT_EQ(ok.status, FP8ATTN_OK) << ok.message;
  EXPECT_TRUE(ok.written);
  const char* names[3] = {"q_descale", "k_descale", "v_descale"};
  for (int which = 0; which < 3; ++which) {
    const CallResult refused = run_e4m3(ctx, s, in, nullptr, state, which);
    EXPECT_EQ(refused.status, FP8ATTN_STATUS_BAD_OPTION) << names[which] << ": " << refused.message;
    EXPECT_NE(refused.message.find("descale"), std::string::npos) << refused.message;
    EXPECT_FALSE(refused.written) << names[which] << ": output written by a refused call";
  }
  fp8attn_scale_state_destroy(state);
  fp8attn_context_destroy(ctx);
}

INSTANTIATE_TEST_SUITE_P(Backends, ForwardChecksOnOtherBackends, ::testing::Values(FP8ATTN_BACKEND_EMULATOR),
                         [](const auto&) { return std::string("Emulator"); });

// Current scaling: the scale follows each report at once (the tensor is cast with its own amax),
// before any step, with the margin; a delayed tensor of the same state keeps scale 1 until its
// step. After a step the next report replaces the amax, also larger or smaller.
TEST(ScaleStateCurrentRecipe, ScaleFollowsEachReportBeforeAnyStep) {
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.01f, 100.0f);
  fp8attn_context ctx = make_context();
  fp8attn_scale_state_options o{};
  o.struct_size = sizeof o;
  o.num_layers = 2;
  for (int t = 0; t < FP8ATTN_NUM_TENSOR_KINDS; ++t) o.recipe[t] = FP8ATTN_RECIPE_DELAYED;
  o.recipe[FP8ATTN_TENSOR_K] = FP8ATTN_RECIPE_CURRENT;
  o.margin = static_cast<float>(rng() % 3);
  fp8attn_scale_state state = nullptr;
  ASSERT_EQ(fp8attn_scale_state_create(ctx, &o, &state, nullptr), FP8ATTN_OK);
  auto scale_of = [&](int32_t kind) {
    float scale = -1.0f, scale_inv = -1.0f;
    EXPECT_EQ(fp8attn_scale_state_get_scale(state, 1, kind, &scale, &scale_inv, nullptr), FP8ATTN_OK);
    return scale;
  };
  const float a1 = u(rng), a2 = u(rng);
  ASSERT_EQ(fp8attn_scale_state_report_amax(state, 1, FP8ATTN_TENSOR_K, a1, nullptr), FP8ATTN_OK);
  ASSERT_EQ(fp8attn_scale_state_report_amax(state, 1, FP8ATTN_TENSOR_Q, a1, nullptr), FP8ATTN_OK);
  const double want1 = 448.0 / a1 / std::exp2(o.margin);
  EXPECT_NEAR(scale_of(FP8ATTN_TENSOR_K), want1, want1 * 1e-6) << "amax " << a1 << ", margin " << o.margin;
  EXPECT_EQ(scale_of(FP8ATTN_TENSOR_Q), 1.0f) << "a delayed tensor's scale moved before its step";
  ASSERT_EQ(fp8attn_scale_state_step(state, nullptr), FP8ATTN_OK);
  ASSERT_EQ(fp8attn_scale_state_report_amax(state, 1, FP8ATTN_TENSOR_K, a2, nullptr), FP8ATTN_OK);
  const double want2 = 448.0 / a2 / std::exp2(o.margin);
  EXPECT_NEAR(scale_of(FP8ATTN_TENSOR_K), want2, want2 * 1e-6) << "amax " << a2 << " after " << a1;
  fp8attn_scale_state_destroy(state);
  fp8attn_context_destroy(ctx);
}

}  // namespace
}  // namespace fp8attn::training_test
