// The scale state on the GPU path, run on FP8ATTN_BACKEND_EMULATOR through the C API:
// the forward reads the state's descales and output scale and hands its amaxes, which the kernel
// leaves in the workspace, to the state through the stream-ordered pickup
// (lib/scale/device_amax_pickup.hpp); fp8attn_scale_state_report_amax_device takes the same
// path. A 50-step delayed-scaling loop on the emulator must equal the same loop on the CPU
// engine bit for bit (scales, E4M3 outputs, amax_o, the serialized state), and a call that fails
// must leave the state, amax_o and the output as they were.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/numerics/bfloat16.hpp"
#include "tests/training/training_test_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::training_test {
namespace {

fp8attn_scale_state make_state(fp8attn_context ctx, int layers, int history) {
  fp8attn_scale_state_options o{};
  o.struct_size = sizeof o;
  o.num_layers = layers;
  o.amax_history_len = history;
  o.margin = 1.0f;
  for (int t = 0; t < FP8ATTN_NUM_TENSOR_KINDS; ++t) o.recipe[t] = FP8ATTN_RECIPE_DELAYED;
  o.recipe[FP8ATTN_TENSOR_LOGIT] = FP8ATTN_RECIPE_GEOMETRY;  // no σ: the logit scale stays 1
  fp8attn_scale_state state = nullptr;
  EXPECT_EQ(fp8attn_scale_state_create(ctx, &o, &state, nullptr), FP8ATTN_OK);
  return state;
}

/// One side of the loop: a context of `backend`, its state and an E4M3-output plan.
struct Side {
  fp8attn_context ctx;
  fp8attn_scale_state state;
  PlanFixture plan;
  Side(int32_t backend, const Shape& s, int layers, int history)
      : ctx(make_context(backend)), state(make_state(ctx, layers, history)), plan(ctx, make_desc(s, FP8ATTN_DTYPE_E4M3), s) {}
  ~Side() {
    fp8attn_plan_destroy(plan.plan);
    plan.plan = nullptr;
    fp8attn_scale_state_destroy(state);
    fp8attn_context_destroy(ctx);
  }
  float scale(int layer, int kind, float* inv = nullptr) {
    float sc = -1.0f;
    EXPECT_EQ(fp8attn_scale_state_get_scale(state, layer, kind, &sc, inv, nullptr), FP8ATTN_OK);
    return sc;
  }
};

TEST(DeviceStateEmulated, FiftyDelayedStepsOnTheEmulatorEqualTheCpuLoop) {
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const Shape s{1, 40, 100, 2, 1, 64};
  constexpr int kSteps = 50, kLayers = 3, kLayer = 2, kHistory = 8;
  Side cpu(FP8ATTN_BACKEND_CPU, s, kLayers, kHistory), emu(FP8ATTN_BACKEND_EMULATOR, s, kLayers, kHistory);
  int o_scale_changes = 0;
  float previous_o_scale = 1.0f;
  for (int step = 0; step < kSteps; ++step) {
    // σ drifts by about e^±1.5, so the scales follow a moving amax.
    const float sigma = 0.6f * std::exp(1.5f * std::sin(step / 6.0f));
    std::array<float, 4> scale{};
    for (int kind = 0; kind < 4; ++kind) {
      float inv_cpu = 0.0f, inv_emu = 0.0f;
      scale[kind] = cpu.scale(kLayer, kind, &inv_cpu);
      ASSERT_EQ(emu.scale(kLayer, kind, &inv_emu), scale[kind]) << "step " << step << " kind " << kind;
      ASSERT_EQ(inv_emu, inv_cpu) << "step " << step << " kind " << kind;
    }
    o_scale_changes += scale[FP8ATTN_TENSOR_O] != previous_o_scale;
    previous_o_scale = scale[FP8ATTN_TENSOR_O];

    // The framework's casts with the state's scales; their amaxes go to the CPU state from the
    // host and to the emulator's state from "device" memory (the emulator's is host memory).
    const Quantized q = draw_e4m3(s.q_elems(), sigma, scale[0], rng);
    const Quantized k = draw_e4m3(s.kv_elems(), sigma, scale[1], rng);
    const Quantized v = draw_e4m3(s.kv_elems(), sigma, scale[2], rng);
    Inputs in{q.bits, k.bits, v.bits};
    std::array<float, FP8ATTN_NUM_TENSOR_KINDS> device_amax;
    device_amax.fill(-1.0f);
    device_amax[FP8ATTN_TENSOR_Q] = q.amax;
    device_amax[FP8ATTN_TENSOR_K] = k.amax;
    device_amax[FP8ATTN_TENSOR_V] = v.amax;
    for (int kind = 0; kind < 3; ++kind)
      ASSERT_EQ(fp8attn_scale_state_report_amax(cpu.state, kLayer, kind, device_amax[kind], nullptr), FP8ATTN_OK);
    fp8attn_error err = make_error();
    ASSERT_EQ(fp8attn_scale_state_report_amax_device(emu.state, kLayer, device_amax.data(), nullptr, &err), FP8ATTN_OK)
        << err.message;

    // The forward with everything from the state, on both.
    std::vector<uint8_t> out_cpu(static_cast<size_t>(s.q_elems()), 0x7F), out_emu(out_cpu.size(), 0x7F);
    float amax_cpu = -1.0f, amax_emu = -2.0f;
    fp8attn_attention_args a = make_args(s, in, out_cpu.data(), FP8ATTN_DTYPE_E4M3);
    a.scale_state = cpu.state;
    a.scale_state_layer = kLayer;
    a.amax_o = &amax_cpu;
    ASSERT_EQ(cpu.plan.run(a, &err), FP8ATTN_OK) << "step " << step << ": " << err.message;
    a.out.data = out_emu.data();
    a.scale_state = emu.state;
    a.amax_o = &amax_emu;
    ASSERT_EQ(emu.plan.run(a, &err), FP8ATTN_OK) << "step " << step << ": " << err.message;
    ASSERT_EQ(amax_emu, amax_cpu) << "step " << step;
    int64_t differ = 0;
    for (size_t i = 0; i < out_cpu.size(); ++i) differ += out_cpu[i] != out_emu[i];
    ASSERT_EQ(differ, 0) << "step " << step << ": E4M3 outputs differ";
    if (step % 10 == 0)
      std::printf("step %2d σ %.3f: scale Q %.4g K %.4g V %.4g O %.4g; amax_o %.6g on both\n", step, sigma, scale[0],
                  scale[1], scale[2], scale[3], amax_emu);
    ASSERT_EQ(serialize(emu.state), serialize(cpu.state)) << "step " << step << ": the states differ before step()";
    ASSERT_EQ(fp8attn_scale_state_step(cpu.state, nullptr), FP8ATTN_OK);
    ASSERT_EQ(fp8attn_scale_state_step(emu.state, nullptr), FP8ATTN_OK);
  }
  EXPECT_EQ(serialize(emu.state), serialize(cpu.state));
  std::printf("the O scale changed at %d of %d steps\n", o_scale_changes, kSteps);
  EXPECT_GT(o_scale_changes, 10);  // the loop followed a drifting amax
}

/// Sets FP8ATTN_EMULATOR_FAIL=launch for the lifetime of the object (read at context creation).
struct InjectedLaunchFailure {
  InjectedLaunchFailure() { setenv("FP8ATTN_EMULATOR_FAIL", "launch", 1); }
  ~InjectedLaunchFailure() { unsetenv("FP8ATTN_EMULATOR_FAIL"); }
};

TEST(DeviceStateEmulated, AFailingLaunchLeavesTheStateAmaxOAndOutputUntouched) {
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const Shape s{1, 33, 65, 2, 2, 64};
  Inputs in = random_inputs(s, rng);
  for (const bool inject : {false, true}) {
    // Without the injection first: the same call reaches its launch and changes the state, so
    // the injected case cannot pass vacuously.
    std::unique_ptr<InjectedLaunchFailure> failure(inject ? new InjectedLaunchFailure : nullptr);
    Side emu(FP8ATTN_BACKEND_EMULATOR, s, 2, 4);
    failure.reset();
    ASSERT_EQ(fp8attn_scale_state_report_amax(emu.state, 1, FP8ATTN_TENSOR_O, 0.01f, nullptr), FP8ATTN_OK);
    const std::vector<uint8_t> blob = serialize(emu.state);
    std::vector<uint8_t> out(static_cast<size_t>(s.q_elems()), 0xA5);
    fp8attn_attention_args a = make_args(s, in, out.data(), FP8ATTN_DTYPE_E4M3);
    a.scale_state = emu.state;
    a.scale_state_layer = 1;
    float amax_o = -7.0f;
    a.amax_o = &amax_o;
    fp8attn_error err = make_error();
    const int32_t status = emu.plan.run(a, &err);
    std::printf("injected %d: %s %s\n", inject, fp8attn_status_name(status), err.message);
    if (!inject) {
      ASSERT_EQ(status, FP8ATTN_OK) << err.message;
      EXPECT_GT(amax_o, 0.01f) << "O of N(0,1) inputs should exceed the amax reported before";
      EXPECT_NE(serialize(emu.state), blob) << "a successful call reports its amaxes";
      continue;
    }
    EXPECT_EQ(status, FP8ATTN_STATUS_DEVICE_ERROR);
    EXPECT_NE(std::string(err.message).find("attention forward launch failed"), std::string::npos) << err.message;
    EXPECT_EQ(amax_o, -7.0f);
    EXPECT_EQ(serialize(emu.state), blob) << "a failed launch changed the state";
    for (uint8_t b : out) ASSERT_EQ(b, 0xA5) << "a failed launch wrote the output";
    // Each failed call gives its staging slot back: more failures than the pool has slots
    // (256) still fail with DEVICE_ERROR, not with a full pool.
    int device_errors = 0;
    for (int call = 0; call < 300; ++call) device_errors += emu.plan.run(a, nullptr) == FP8ATTN_STATUS_DEVICE_ERROR;
    EXPECT_EQ(device_errors, 300);
  }
}

TEST(DeviceStateEmulated, ANonFiniteAmaxDropsTheWholeReportWithNumerics) {
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const Shape s{1, 33, 65, 2, 2, 64};
  Side emu(FP8ATTN_BACKEND_EMULATOR, s, 2, 4);
  // BF16 inputs whose V rows are all 3e38: P·V sums past FLT_MAX, so max |O| is infinite. (With
  // E4M3 inputs no finite descale gets there: one that could is refused before the call.)
  fp8attn_attention_desc d = make_desc(s, FP8ATTN_DTYPE_E4M3);
  d.input_dtype = FP8ATTN_DTYPE_BF16;
  PlanFixture plan(emu.ctx, d, s);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint16_t> q(static_cast<size_t>(s.q_elems())), k(static_cast<size_t>(s.kv_elems()));
  for (auto& x : q) x = num::float_to_bf16(normal(rng));
  for (auto& x : k) x = num::float_to_bf16(normal(rng));
  std::vector<uint16_t> v(k.size(), num::float_to_bf16(3.0e38f));
  const std::vector<uint8_t> blob = serialize(emu.state);
  std::vector<uint8_t> out(static_cast<size_t>(s.q_elems()), 0xA5);
  Inputs unused = random_inputs(s, rng);
  fp8attn_attention_args a = make_args(s, unused, out.data(), FP8ATTN_DTYPE_E4M3);
  a.q = tensor(q.data(), FP8ATTN_DTYPE_BF16, {s.batch, s.seqlen_q, s.heads_q, s.head_dim});
  a.k = tensor(k.data(), FP8ATTN_DTYPE_BF16, {s.batch, s.seqlen_k, s.heads_kv, s.head_dim});
  a.v = tensor(v.data(), FP8ATTN_DTYPE_BF16, {s.batch, s.seqlen_k, s.heads_kv, s.head_dim});
  a.scale_state = emu.state;
  a.scale_state_layer = 1;
  float amax_o = -7.0f;
  a.amax_o = &amax_o;
  fp8attn_error err = make_error();
  EXPECT_EQ(plan.run(a, &err), FP8ATTN_STATUS_NUMERICS) << err.message;
  EXPECT_NE(std::string(err.message).find("not finite"), std::string::npos) << err.message;
  EXPECT_EQ(amax_o, -7.0f);
  EXPECT_EQ(serialize(emu.state), blob);
}

TEST(DeviceStateEmulated, AmaxOWithoutAStateAndADeviceReportOnAnEmulatedStream) {
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const Shape s{2, 50, 70, 2, 1, 128};
  Inputs in = random_inputs(s, rng, 0.8f);
  // amax_o with F32 output and no state (the plan has desc.telemetry = 0): max |O| exactly.
  Side emu(FP8ATTN_BACKEND_EMULATOR, s, 1, 2);
  PlanFixture f32(emu.ctx, make_desc(s, FP8ATTN_DTYPE_F32), s);
  std::vector<float> out(static_cast<size_t>(s.q_elems()), std::numeric_limits<float>::quiet_NaN());
  fp8attn_attention_args a = make_args(s, in, out.data(), FP8ATTN_DTYPE_F32);
  float amax_o = -1.0f;
  a.amax_o = &amax_o;
  fp8attn_error err = make_error();
  ASSERT_EQ(f32.run(a, &err), FP8ATTN_OK) << err.message;
  std::printf("amax_o %.9g, max |O| of the output %.9g\n", amax_o, max_abs(out));
  EXPECT_EQ(amax_o, max_abs(out));
  // Any emulated stream is accepted (its work has completed on return).
  const float amax[FP8ATTN_NUM_TENSOR_KINDS] = {1.5f, -1.0f, 2.0f, -1.0f, 4.0f, -1.0f, -1.0f, -1.0f};
  auto* stream = reinterpret_cast<CUstream_st*>(uintptr_t{0x1000});
  ASSERT_EQ(fp8attn_scale_state_report_amax_device(emu.state, 0, amax, stream, &err), FP8ATTN_OK) << err.message;
  ASSERT_EQ(fp8attn_scale_state_step(emu.state, nullptr), FP8ATTN_OK);
  EXPECT_EQ(emu.scale(0, FP8ATTN_TENSOR_Q), static_cast<float>(448.0 / 1.5 / 2.0));  // margin 1
  EXPECT_EQ(emu.scale(0, FP8ATTN_TENSOR_K), 1.0f);                                   // not reported
}

}  // namespace
}  // namespace fp8attn::training_test
