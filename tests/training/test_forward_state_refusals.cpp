// Bad input to the forward's training options (out_scale, amax_o, the scale state) and to
// fp8attn_scale_state_report_amax_device: a specific status and message for each, the output and
// the state untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/training/training_test_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::training_test {
namespace {

class ForwardStateRefusals : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = workloads::fresh_seed();
    std::printf("seed %llu\n", static_cast<unsigned long long>(seed_));
    rng_.seed(seed_);
    ctx_ = make_context();
    fp8attn_scale_state_options o{};
    o.struct_size = sizeof o;
    o.num_layers = 2;
    for (int t = 0; t < FP8ATTN_NUM_TENSOR_KINDS; ++t) o.recipe[t] = FP8ATTN_RECIPE_DELAYED;
    o.recipe[FP8ATTN_TENSOR_LOGIT] = FP8ATTN_RECIPE_GEOMETRY;
    ASSERT_EQ(fp8attn_scale_state_create(ctx_, &o, &state_, nullptr), FP8ATTN_OK);
    // A non-trivial state: one step with amaxes for Q, K, V and O.
    for (int kind = 0; kind < 4; ++kind)
      ASSERT_EQ(fp8attn_scale_state_report_amax(state_, 1, kind, 3.0f + kind, nullptr), FP8ATTN_OK);
    ASSERT_EQ(fp8attn_scale_state_step(state_, nullptr), FP8ATTN_OK);
    in_ = random_inputs(shape_, rng_);
  }
  void TearDown() override {
    fp8attn_scale_state_destroy(state_);
    fp8attn_context_destroy(ctx_);
  }

  /// Runs `a` (whose output is out_), expects `status` and a message containing `needle`, and
  /// checks that the output, amax_o and the state did not change.
  void expect_refused(PlanFixture& plan, fp8attn_attention_args a, int32_t status, const std::string& needle) {
    const std::vector<uint8_t> blob = serialize(state_);
    const std::vector<uint8_t> poisoned = out_;
    float amax_o = -7.0f;
    if (a.amax_o == nullptr) a.amax_o = &amax_o;
    const float amax_before = *a.amax_o;
    fp8attn_error err = make_error();
    const int32_t got = plan.run(a, &err);
    std::printf("%s: %s\n", fp8attn_status_name(got), err.message);
    EXPECT_EQ(got, status) << err.message;
    EXPECT_NE(std::string(err.message).find(needle), std::string::npos) << err.message;
    EXPECT_EQ(out_, poisoned) << "the output was written by a refused call";
    EXPECT_EQ(*a.amax_o, amax_before);
    EXPECT_EQ(serialize(state_), blob) << "the state changed in a refused call";
  }

  fp8attn_attention_args args(int32_t dtype) {
    out_.assign(static_cast<size_t>(shape_.q_elems()) * (dtype == FP8ATTN_DTYPE_E4M3 ? 1 : dtype == FP8ATTN_DTYPE_BF16 ? 2 : 4), 0xA5);
    return make_args(shape_, in_, out_.data(), dtype);
  }

  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  Shape shape_{1, 33, 65, 2, 2, 64};
  fp8attn_context ctx_ = nullptr;
  fp8attn_scale_state state_ = nullptr;
  Inputs in_;
  std::vector<uint8_t> out_;
};

TEST_F(ForwardStateRefusals, E4m3OutputWithoutAScale) {
  PlanFixture plan(ctx_, make_desc(shape_, FP8ATTN_DTYPE_E4M3), shape_);
  expect_refused(plan, args(FP8ATTN_DTYPE_E4M3), FP8ATTN_STATUS_NULL_POINTER, "needs an output scale");
}

TEST_F(ForwardStateRefusals, OutScaleNotFiniteOrNotPositive) {
  PlanFixture plan(ctx_, make_desc(shape_, FP8ATTN_DTYPE_E4M3), shape_);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity(), -2.0f, 0.0f, -0.0f}) {
    fp8attn_attention_args a = args(FP8ATTN_DTYPE_E4M3);
    a.out_scale = &bad;
    expect_refused(plan, a, FP8ATTN_STATUS_BAD_SCALE, "out_scale must be finite and > 0");
  }
}

TEST_F(ForwardStateRefusals, OutScaleWithAnotherOutputDtype) {
  const float scale = 2.0f;
  for (int32_t dtype : {FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_F32}) {
    PlanFixture plan(ctx_, make_desc(shape_, dtype), shape_);
    fp8attn_attention_args a = args(dtype);
    a.out_scale = &scale;
    expect_refused(plan, a, FP8ATTN_STATUS_BAD_OPTION, "applies to E4M3 output only");
  }
}

TEST_F(ForwardStateRefusals, OutScaleTogetherWithAState) {
  const float scale = 2.0f;
  PlanFixture plan(ctx_, make_desc(shape_, FP8ATTN_DTYPE_E4M3), shape_);
  fp8attn_attention_args a = args(FP8ATTN_DTYPE_E4M3);
  a.out_scale = &scale;
  a.scale_state = state_;
  expect_refused(plan, a, FP8ATTN_STATUS_BAD_OPTION, "both set");
}

TEST_F(ForwardStateRefusals, DescaleTensorsTogetherWithAState) {
  const float one = 1.0f;
  PlanFixture plan(ctx_, make_desc(shape_, FP8ATTN_DTYPE_F32), shape_);
  for (int which = 0; which < 3; ++which) {
    fp8attn_attention_args a = args(FP8ATTN_DTYPE_F32);
    a.scale_state = state_;
    a.scale_state_layer = 1;
    fp8attn_tensor d = broadcast_descale(&one, shape_);
    (which == 0 ? a.q_descale : which == 1 ? a.k_descale : a.v_descale) = d;
    expect_refused(plan, a, FP8ATTN_STATUS_BAD_OPTION, "descale");
  }
}

TEST_F(ForwardStateRefusals, LayerOutOfRangeOrWithoutAState) {
  PlanFixture plan(ctx_, make_desc(shape_, FP8ATTN_DTYPE_F32), shape_);
  for (int32_t layer : {2, -1, 1 << 30}) {
    fp8attn_attention_args a = args(FP8ATTN_DTYPE_F32);
    a.scale_state = state_;
    a.scale_state_layer = layer;
    expect_refused(plan, a, FP8ATTN_STATUS_INVALID_ARGUMENT, "out of range");
  }
  fp8attn_attention_args a = args(FP8ATTN_DTYPE_F32);
  a.scale_state_layer = 1;
  expect_refused(plan, a, FP8ATTN_STATUS_INVALID_ARGUMENT, "args.scale_state is NULL");
}

TEST_F(ForwardStateRefusals, E5m2OutputIsRefusedAtPlanTime) {
  fp8attn_attention_desc d = make_desc(shape_, FP8ATTN_DTYPE_E5M2);
  fp8attn_plan plan = nullptr;
  fp8attn_error err = make_error();
  EXPECT_EQ(fp8attn_plan_create(ctx_, &d, &plan, &err), FP8ATTN_STATUS_BAD_DTYPE);
  EXPECT_NE(std::string(err.message).find("E5M2 output is not supported"), std::string::npos) << err.message;
  EXPECT_EQ(plan, nullptr);
}

// The FP64 reference backend has no E4M3 output and measures no amax; the emulator (the Hopper
// kernel) and the CPU engine do (tests/kernels/test_fp8_fwd_emu_outputs.cpp).
TEST_F(ForwardStateRefusals, TheReferenceBackendRefusesE4m3OutputAndAmax) {
  for (int32_t backend : {FP8ATTN_BACKEND_REFERENCE}) {
    fp8attn_context other = make_context(backend);
    fp8attn_attention_desc d = make_desc(shape_, FP8ATTN_DTYPE_E4M3);
    fp8attn_plan plan = nullptr;
    fp8attn_error err = make_error();
    EXPECT_EQ(fp8attn_plan_create(other, &d, &plan, &err), FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND) << backend;
    EXPECT_NE(std::string(err.message).find("E4M3 output"), std::string::npos) << err.message;
    {
      PlanFixture bf16(other, make_desc(shape_, FP8ATTN_DTYPE_BF16), shape_);
      fp8attn_attention_args a = args(FP8ATTN_DTYPE_BF16);
      expect_refused(bf16, a, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND, "amax_o");
      a.amax_o = nullptr;
      a.scale_state = state_;
      expect_refused(bf16, a, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND, "scale_state");
    }
    fp8attn_context_destroy(other);
  }
}

TEST_F(ForwardStateRefusals, ALogitScaleTheForwardCannotApplyIsRefusedAfterItsFirstReport) {
  // With the current recipe for the logit, the forward's logit report sets its scale at once.
  fp8attn_scale_state_options o{};
  o.struct_size = sizeof o;
  o.recipe[FP8ATTN_TENSOR_LOGIT] = FP8ATTN_RECIPE_CURRENT;
  fp8attn_scale_state current = nullptr;
  ASSERT_EQ(fp8attn_scale_state_create(ctx_, &o, &current, nullptr), FP8ATTN_OK);
  std::vector<float> ref(static_cast<size_t>(shape_.q_elems()));
  PlanFixture tele(ctx_, make_desc(shape_, FP8ATTN_DTYPE_F32, true), shape_);
  fp8attn_attention_args ra = make_args(shape_, in_, ref.data(), FP8ATTN_DTYPE_F32);
  fp8attn_telemetry t{};
  t.struct_size = sizeof t;
  ra.telemetry = &t;
  ASSERT_EQ(tele.run(ra), FP8ATTN_OK);

  PlanFixture plan(ctx_, make_desc(shape_, FP8ATTN_DTYPE_F32), shape_);  // desc.telemetry = 0
  fp8attn_attention_args a = args(FP8ATTN_DTYPE_F32);
  a.scale_state = current;
  ASSERT_EQ(plan.run(a), FP8ATTN_OK);
  float logit_scale = 0.0f;
  ASSERT_EQ(fp8attn_scale_state_get_scale(current, 0, FP8ATTN_TENSOR_LOGIT, &logit_scale, nullptr, nullptr), FP8ATTN_OK);
  const float expected = static_cast<float>(448.0 / t.max_abs_scaled_logit);
  std::printf("logit amax %g: logit scale %g, expected %g\n", t.max_abs_scaled_logit, logit_scale, expected);
  EXPECT_EQ(logit_scale, expected);

  fp8attn_scale_state saved = state_;
  state_ = current;  // expect_refused checks this state
  fp8attn_attention_args again = args(FP8ATTN_DTYPE_F32);
  again.scale_state = current;
  expect_refused(plan, again, FP8ATTN_STATUS_UNSUPPORTED, "no place to apply a logit scale");
  state_ = saved;
  fp8attn_scale_state_destroy(current);
}

TEST_F(ForwardStateRefusals, ANumericsFailureLeavesTheStateAndAmaxOUntouched) {
  // A NaN code in K makes every logit of its key NaN, and O NaN. (Descales whose product
  // overflows are refused before the call computes: BAD_SCALE.)
  in_.k[0] = 0x7F;
  const std::vector<uint8_t> blob = serialize(state_);
  PlanFixture plan(ctx_, make_desc(shape_, FP8ATTN_DTYPE_F32), shape_);
  fp8attn_attention_args a = args(FP8ATTN_DTYPE_F32);
  a.scale_state = state_;
  a.scale_state_layer = 1;
  float amax_o = -7.0f;
  a.amax_o = &amax_o;
  fp8attn_error err = make_error();
  EXPECT_EQ(plan.run(a, &err), FP8ATTN_STATUS_NUMERICS) << err.message;
  EXPECT_EQ(amax_o, -7.0f);
  EXPECT_EQ(serialize(state_), blob);
}

// fp8attn_scale_state_report_amax_device: host memory on CPU and emulator contexts.
TEST(ReportAmaxDevice, RecordsTheReportedKindsOnlyAsTheBatchReportDoes) {
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.5f, 100.0f);
  for (int32_t backend : {FP8ATTN_BACKEND_CPU, FP8ATTN_BACKEND_EMULATOR}) {
    fp8attn_context ctx = make_context(backend);
    fp8attn_scale_state_options o{};
    o.struct_size = sizeof o;
    o.num_layers = 3;
    fp8attn_scale_state a = nullptr, b = nullptr;
    ASSERT_EQ(fp8attn_scale_state_create(ctx, &o, &a, nullptr), FP8ATTN_OK);
    ASSERT_EQ(fp8attn_scale_state_create(ctx, &o, &b, nullptr), FP8ATTN_OK);
    float amax[FP8ATTN_NUM_TENSOR_KINDS];
    for (float& x : amax) x = u(rng);
    amax[FP8ATTN_TENSOR_P] = -1.0f;  // not reported
    amax[FP8ATTN_TENSOR_DP] = -1.0f;
    ASSERT_EQ(fp8attn_scale_state_report_amax_device(a, 2, amax, nullptr, nullptr), FP8ATTN_OK);
    std::vector<float> batch(3 * FP8ATTN_NUM_TENSOR_KINDS, -1.0f);
    std::memcpy(&batch[2 * FP8ATTN_NUM_TENSOR_KINDS], amax, sizeof amax);
    ASSERT_EQ(fp8attn_scale_state_report_amax_batch(b, batch.data(), batch.size(), nullptr), FP8ATTN_OK);
    ASSERT_EQ(fp8attn_scale_state_step(a, nullptr), FP8ATTN_OK);
    ASSERT_EQ(fp8attn_scale_state_step(b, nullptr), FP8ATTN_OK);
    EXPECT_EQ(serialize(a), serialize(b));
    float sq = 0.0f, sp = 0.0f;
    ASSERT_EQ(fp8attn_scale_state_get_scale(a, 2, FP8ATTN_TENSOR_Q, &sq, nullptr, nullptr), FP8ATTN_OK);
    ASSERT_EQ(fp8attn_scale_state_get_scale(a, 2, FP8ATTN_TENSOR_P, &sp, nullptr, nullptr), FP8ATTN_OK);
    EXPECT_EQ(sq, static_cast<float>(448.0 / amax[FP8ATTN_TENSOR_Q]));
    EXPECT_EQ(sp, 1.0f);  // P was not reported

    // Refusals, each leaving the state as it was.
    const std::vector<uint8_t> blob = serialize(a);
    fp8attn_error err = make_error();
    float bad[FP8ATTN_NUM_TENSOR_KINDS];
    std::memcpy(bad, amax, sizeof bad);
    bad[5] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_EQ(fp8attn_scale_state_report_amax_device(a, 0, bad, nullptr, &err), FP8ATTN_STATUS_BAD_SCALE);
    bad[5] = std::numeric_limits<float>::infinity();
    EXPECT_EQ(fp8attn_scale_state_report_amax_device(a, 0, bad, nullptr, &err), FP8ATTN_STATUS_BAD_SCALE);
    EXPECT_EQ(fp8attn_scale_state_report_amax_device(a, 3, amax, nullptr, &err), FP8ATTN_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(fp8attn_scale_state_report_amax_device(a, -1, amax, nullptr, &err), FP8ATTN_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(fp8attn_scale_state_report_amax_device(a, 0, nullptr, nullptr, &err), FP8ATTN_STATUS_NULL_POINTER);
    EXPECT_EQ(fp8attn_scale_state_report_amax_device(nullptr, 0, amax, nullptr, &err), FP8ATTN_STATUS_BAD_HANDLE);
    auto* fake_stream = reinterpret_cast<CUstream_st*>(uintptr_t{0x1000});
    if (backend == FP8ATTN_BACKEND_CPU) {
      EXPECT_EQ(fp8attn_scale_state_report_amax_device(a, 0, amax, fake_stream, &err), FP8ATTN_STATUS_BAD_STREAM);
      EXPECT_NE(std::string(err.message).find("pass NULL"), std::string::npos) << err.message;
    }
    EXPECT_EQ(serialize(a), blob);
    fp8attn_scale_state_destroy(a);
    fp8attn_scale_state_destroy(b);
    fp8attn_context_destroy(ctx);
  }
}

}  // namespace
}  // namespace fp8attn::training_test
