// The Hopper kernel's E4M3 output and amax_o through the C API: FP8ATTN_BACKEND_EMULATOR
// against the CPU engine on the same fresh inputs, under round-robin and three shuffle seeds.
// Equal E4M3 bytes (round_e4m3_satfinite(O · out_scale), with out_scale chosen so that some
// outputs saturate) and equal amax_o bits; E4M3 and BF16 input kernels, BF16 output for amax_o.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/numerics/bfloat16.hpp"
#include "tests/kernels/fp8_fwd_emu_support.hpp"
#include "tests/training/training_test_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::training_test {
namespace {

struct OutputCase {
  Shape shape;
  bool causal = false;
  std::vector<int32_t> cu_q, cu_k;  ///< packed layout when set (shape: batch 1, the totals as seqlens)
  int32_t out_dtype = FP8ATTN_DTYPE_E4M3;
  bool telemetry = false;  ///< the plan's desc.telemetry (the call turns the kernel's on anyway)
  const char* name = "";
  int32_t input_dtype = FP8ATTN_DTYPE_E4M3;  ///< BF16: the HGMMA kernels' epilogue is the same
};

/// N(0, σ) inputs in BF16, as bytes (two per element) in the Inputs vectors.
Inputs random_bf16_inputs(const Shape& s, std::mt19937_64& rng, float sigma) {
  std::normal_distribution<float> normal(0.0f, sigma);
  auto draw = [&](int64_t n) {
    std::vector<uint8_t> bytes(static_cast<size_t>(n) * 2);
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t b = num::float_to_bf16(normal(rng));
      std::memcpy(&bytes[static_cast<size_t>(i) * 2], &b, 2);
    }
    return bytes;
  };
  return {draw(s.q_elems()), draw(s.kv_elems()), draw(s.kv_elems())};
}

struct Outcome {
  int32_t status = -1;
  std::vector<uint8_t> out;  ///< raw output bytes
  float amax_o = -1.0f;
  fp8attn_telemetry telemetry{};
};

/// One forward through the C API on a fresh context of `backend`; `schedule` sets the emulator's.
Outcome run(const OutputCase& c, Inputs& in, int32_t backend, const std::string& schedule, float out_scale) {
  if (!schedule.empty()) setenv("FP8ATTN_EMULATOR_SCHEDULE", schedule.c_str(), 1);
  fp8attn_context ctx = make_context(backend);
  unsetenv("FP8ATTN_EMULATOR_SCHEDULE");
  const Shape& s = c.shape;
  const bool packed = !c.cu_q.empty();
  const int64_t rows_q = packed ? c.cu_q.back() : s.seqlen_q, rows_k = packed ? c.cu_k.back() : s.seqlen_k;
  const int64_t batch = packed ? static_cast<int64_t>(c.cu_q.size()) - 1 : s.batch;
  int64_t max_q = s.seqlen_q, max_k = s.seqlen_k;
  if (packed) {
    max_q = max_k = 0;
    for (size_t b = 0; b + 1 < c.cu_q.size(); ++b) {
      max_q = std::max<int64_t>(max_q, c.cu_q[b + 1] - c.cu_q[b]);
      max_k = std::max<int64_t>(max_k, c.cu_k[b + 1] - c.cu_k[b]);
    }
  }
  fp8attn_attention_desc desc = make_desc(s, c.out_dtype, c.telemetry, c.causal);
  desc.input_dtype = c.input_dtype;
  fp8attn_plan plan = nullptr;
  Outcome r;
  EXPECT_EQ(fp8attn_plan_create(ctx, &desc, &plan, nullptr), FP8ATTN_OK);
  size_t bytes = 0;
  EXPECT_EQ(fp8attn_plan_workspace_size(plan, batch, max_q, max_k, &bytes, nullptr), FP8ATTN_OK);
  std::vector<unsigned char> workspace(bytes == 0 ? 1 : bytes, 0xCD);
  const size_t elem = c.out_dtype == FP8ATTN_DTYPE_E4M3 ? 1 : c.out_dtype == FP8ATTN_DTYPE_BF16 ? 2 : 4;
  r.out.assign(static_cast<size_t>(s.q_elems()) * elem, 0x7F);  // poisoned (E4M3 NaN)
  fp8attn_attention_args a = make_args(s, in, r.out.data(), c.out_dtype);
  std::vector<int32_t> cu_q = c.cu_q, cu_k = c.cu_k;
  for (fp8attn_tensor* t : {&a.q, &a.k, &a.v}) t->dtype = c.input_dtype;
  if (packed) {
    a.q = tensor(in.q.data(), c.input_dtype, {rows_q, s.heads_q, s.head_dim});
    a.k = tensor(in.k.data(), c.input_dtype, {rows_k, s.heads_kv, s.head_dim});
    a.v = tensor(in.v.data(), c.input_dtype, {rows_k, s.heads_kv, s.head_dim});
    a.out = tensor(r.out.data(), c.out_dtype, {rows_q, s.heads_q, s.head_dim});
    a.cu_seqlens_q = tensor(cu_q.data(), FP8ATTN_DTYPE_I32, {batch + 1});
    a.cu_seqlens_k = tensor(cu_k.data(), FP8ATTN_DTYPE_I32, {batch + 1});
  }
  // Per-tensor descales, as a real quantized input carries.
  const float qd = 0.43f, kd = 0.77f, vd = 1.7f;
  Shape descale_shape = s;
  descale_shape.batch = batch;
  a.q_descale = broadcast_descale(&qd, descale_shape);
  a.k_descale = broadcast_descale(&kd, descale_shape);
  a.v_descale = broadcast_descale(&vd, descale_shape);
  if (c.out_dtype == FP8ATTN_DTYPE_E4M3) a.out_scale = &out_scale;
  a.amax_o = &r.amax_o;
  r.telemetry.struct_size = sizeof r.telemetry;
  a.telemetry = &r.telemetry;
  fp8attn_error err = make_error();
  r.status = fp8attn_attention_forward(plan, &a, workspace.data(), workspace.size(), nullptr, &err);
  EXPECT_EQ(r.status, FP8ATTN_OK) << c.name << " backend " << backend << ": " << err.message;
  fp8attn_plan_destroy(plan);
  fp8attn_context_destroy(ctx);
  return r;
}

void expect_emulator_matches_cpu(const OutputCase& c) {
  const uint64_t seed = workloads::fresh_seed();
  std::mt19937_64 rng(seed);
  Inputs in = c.input_dtype == FP8ATTN_DTYPE_BF16 ? random_bf16_inputs(c.shape, rng, 1.5f)
                                                  : random_inputs(c.shape, rng, 1.5f);
  // The scale from a first CPU call, so that about the largest 10% of |O|·scale saturate.
  const Outcome probe = run(c, in, FP8ATTN_BACKEND_CPU, "", 1.0f);
  ASSERT_GT(probe.amax_o, 0.0f) << c.name;
  const float out_scale = 2.5f * 448.0f / probe.amax_o;
  const Outcome cpu = run(c, in, FP8ATTN_BACKEND_CPU, "", out_scale);
  ASSERT_EQ(cpu.status, FP8ATTN_OK);
  int64_t saturated = 0;
  if (c.out_dtype == FP8ATTN_DTYPE_E4M3)
    for (uint8_t b : cpu.out) saturated += (b & 0x7F) == 0x7E;
  for (const std::string& schedule : testing::emulator_schedules(seed)) {
    const Outcome emu = run(c, in, FP8ATTN_BACKEND_EMULATOR, schedule, out_scale);
    ASSERT_EQ(emu.status, FP8ATTN_OK);
    int64_t differ = 0;
    for (size_t i = 0; i < cpu.out.size(); ++i) differ += cpu.out[i] != emu.out[i];
    EXPECT_EQ(differ, 0) << c.name << ": output bytes differ, schedule " << schedule << ", seed " << seed;
    EXPECT_EQ(std::memcmp(&cpu.amax_o, &emu.amax_o, sizeof(float)), 0)
        << c.name << " " << schedule << ": amax_o " << cpu.amax_o << " vs " << emu.amax_o;
    if (c.telemetry) {
      EXPECT_EQ(std::memcmp(&cpu.telemetry.max_abs_scaled_logit, &emu.telemetry.max_abs_scaled_logit, 4), 0) << c.name;
    }
    std::printf("%s [%s]: %zu bytes, %lld differ, %lld saturated; amax_o %.9g (CPU %.9g), out_scale %g\n", c.name,
                schedule.c_str(), cpu.out.size(), static_cast<long long>(differ), static_cast<long long>(saturated),
                emu.amax_o, cpu.amax_o, out_scale);
  }
  if (c.out_dtype == FP8ATTN_DTYPE_E4M3) {
    EXPECT_GT(saturated, 0) << c.name << ": the case should reach saturation";
  }
}

TEST(Fp8FwdEmuOutputs, E4m3HeadDim64GqaCausal) {
  expect_emulator_matches_cpu({{2, 70, 150, 4, 2, 64}, true, {}, {}, FP8ATTN_DTYPE_E4M3, true, "hd64 GQA causal"});
}

TEST(Fp8FwdEmuOutputs, E4m3HeadDim128Full) {
  expect_emulator_matches_cpu({{1, 90, 130, 2, 2, 128}, false, {}, {}, FP8ATTN_DTYPE_E4M3, false, "hd128 full"});
}

TEST(Fp8FwdEmuOutputs, E4m3HeadDim256VarlenGqaCausal) {
  expect_emulator_matches_cpu(
      {{1, 100, 140, 2, 1, 256}, true, {0, 37, 100}, {0, 50, 140}, FP8ATTN_DTYPE_E4M3, false, "hd256 varlen GQA causal"});
}

TEST(Fp8FwdEmuOutputs, E4m3HeadDim64VarlenFull) {
  expect_emulator_matches_cpu(
      {{1, 130, 200, 3, 1, 64}, false, {0, 1, 60, 130}, {0, 80, 81, 200}, FP8ATTN_DTYPE_E4M3, true, "hd64 varlen GQA full"});
}

TEST(Fp8FwdEmuOutputs, E4m3OutputOfTheBf16InputKernel) {
  OutputCase c{{2, 60, 90, 2, 1, 128}, true, {}, {}, FP8ATTN_DTYPE_E4M3, false, "BF16 inputs hd128 E4M3 out"};
  c.input_dtype = FP8ATTN_DTYPE_BF16;
  expect_emulator_matches_cpu(c);
}

TEST(Fp8FwdEmuOutputs, AmaxOWithBf16Output) {
  expect_emulator_matches_cpu({{2, 50, 110, 2, 1, 128}, true, {}, {}, FP8ATTN_DTYPE_BF16, false, "hd128 BF16 amax_o"});
}

}  // namespace
}  // namespace fp8attn::training_test
