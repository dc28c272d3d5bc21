// Finite, positive descales whose products leave FP32's range: the forward refuses them at the
// call (BAD_SCALE, outputs untouched) on every host-memory backend, never answers NaN from finite
// inputs, and computes a logit scale just inside the range correctly (near-uniform attention).
// Non-finite outputs from finite BF16 inputs can only be found after computing: NUMERICS, the one
// failure that leaves the outputs written, as the header says. Descales on BF16 inputs are
// applied as on E4M3 inputs.
#include <cfloat>

#include "tests/attention/call_contract_support.hpp"

namespace fp8attn::contract_test {
namespace {

/// Runs E4M3 inputs with the given per-tensor descales; expects BAD_SCALE, a message naming
/// `field`, and out and lse untouched.
void expect_refused(int32_t backend, float qd, float kd, float vd, const char* field) {
  const uint64_t seed = announced_seed();
  Planned p(backend, make_desc(FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32, 64));
  ASSERT_NE(p.plan, nullptr);
  ForwardCall f(FP8ATTN_DTYPE_E4M3, 2, 40, 70, 2, 64, seed);
  BroadcastDescale q(qd), k(kd), v(vd);
  f.args.q_descale = q.tensor(2, 2);
  f.args.k_descale = k.tensor(2, 2);
  f.args.v_descale = v.tensor(2, 2);
  fp8attn_error err = fresh_error();
  EXPECT_EQ(f.run(p.plan, &err), FP8ATTN_STATUS_BAD_SCALE) << backend_name(backend) << ": " << err.message;
  EXPECT_NE(std::string(err.message).find(field), std::string::npos) << err.message;
  EXPECT_TRUE(untouched(f.out)) << backend_name(backend) << ": out written on failure";
  EXPECT_TRUE(untouched(f.lse)) << backend_name(backend) << ": lse written on failure";
}

TEST(ExtremeScales, LogitScaleUnderflowingFp32IsRefusedBeforeAnyOutput) {
  for (int32_t b : kHostBackends) {
    expect_refused(b, 1e-30f, 1e-30f, 1.0f, "args.q_descale");
    expect_refused(b, 1e-30f, 1e-30f, 1.0f, "args.k_descale");
  }
}

TEST(ExtremeScales, LogitScaleOverflowingFp32IsRefusedBeforeAnyOutput) {
  for (int32_t b : kHostBackends) expect_refused(b, 1e30f, 1e30f, 1.0f, "overflows FP32");
}

TEST(ExtremeScales, FiniteLogitScaleThatCanOverflowALogitIsRefused) {
  // 1e17 · 1e17 · 0.125 · log2(e) ≈ 1.8e33, times up to 64 · 448² of the E4M3 logits: above FLT_MAX / 4.
  for (int32_t b : kHostBackends) expect_refused(b, 1e17f, 1e17f, 1.0f, "out of FP32's range");
}

TEST(ExtremeScales, VDescaleThatCanOverflowTheOutputIsRefused) {
  for (int32_t b : kHostBackends) expect_refused(b, 1.0f, 1.0f, 1e37f, "args.v_descale");
}

TEST(ExtremeScales, PerBlockDescalesThatCanOverflowALogitAreRefused) {
  const uint64_t seed = announced_seed();
  for (int32_t backend : kHostBackends) {
    Planned p(backend, make_desc(FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32, 64, 1));
    ASSERT_NE(p.plan, nullptr);
    int32_t block_m = 0, block_n = 0;
    ASSERT_EQ(fp8attn_plan_get_tile(p.plan, &block_m, &block_n, nullptr), FP8ATTN_OK);
    ForwardCall f(FP8ATTN_DTYPE_E4M3, 1, 40, 70, 1, 64, seed);
    const int64_t kv_blocks = (70 + block_n - 1) / block_n, q_blocks = (40 + block_m - 1) / block_m;
    std::vector<float> qb(static_cast<size_t>(q_blocks), 1e20f), kb(static_cast<size_t>(kv_blocks), 1e20f);
    f.args.q_block_descale = dense_host_tensor(qb.data(), FP8ATTN_DTYPE_F32, {1, 1, q_blocks});
    f.args.k_block_descale = dense_host_tensor(kb.data(), FP8ATTN_DTYPE_F32, {1, 1, kv_blocks});
    fp8attn_error err = fresh_error();
    EXPECT_EQ(f.run(p.plan, &err), FP8ATTN_STATUS_BAD_SCALE) << backend_name(backend) << ": " << err.message;
    EXPECT_NE(std::string(err.message).find("args.k_block_descale"), std::string::npos) << err.message;
    EXPECT_TRUE(untouched(f.out) && untouched(f.lse)) << backend_name(backend) << ": outputs written on failure";
  }
}

TEST(ExtremeScales, TinyButNormalLogitScaleGivesUniformAttention) {
  // 1e-18 · 1e-18 · 0.125 · log2(e) ≈ 1.8e-37, above FLT_MIN: every logit is ~1e-29 in exp2
  // units, so P is uniform over the keys and O is the mean of V's rows (times v_descale).
  const uint64_t seed = announced_seed();
  for (int32_t backend : kHostBackends) {
    Planned p(backend, make_desc(FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32, 64));
    ASSERT_NE(p.plan, nullptr);
    ForwardCall f(FP8ATTN_DTYPE_E4M3, 1, 40, 70, 2, 64, seed);
    BroadcastDescale q(1e-18f), k(1e-18f), v(0.5f);
    f.args.q_descale = q.tensor(1, 2);
    f.args.k_descale = k.tensor(1, 2);
    f.args.v_descale = v.tensor(1, 2);
    fp8attn_error err = fresh_error();
    ASSERT_EQ(f.run(p.plan, &err), FP8ATTN_OK) << backend_name(backend) << ": " << err.message;
    for (int h = 0; h < 2; ++h)
      for (int e = 0; e < 64; ++e) {
        double mean = 0.0;
        for (int64_t j = 0; j < 70; ++j) mean += num::e4m3_to_float(f.v8[static_cast<size_t>((j * 2 + h) * 64 + e)]);
        mean = mean / 70.0 * 0.5;
        for (int64_t i = 0; i < 40; ++i) {
          const float o = f.out[static_cast<size_t>((i * 2 + h) * 64 + e)];
          ASSERT_TRUE(std::isfinite(o)) << backend_name(backend);
          // NOTE: the E4M3 P·V accumulator keeps 13 mantissa bits (the default model): 2e-3
          // absolute against |V| ~ 1 covers its truncations, and nothing else of a NaN or a
          // softmax that is not uniform.
          ASSERT_NEAR(o, mean, 2e-3) << backend_name(backend) << " row " << i << " head " << h;
        }
      }
    for (float l : f.lse) ASSERT_TRUE(std::isfinite(l)) << backend_name(backend);
  }
}

TEST(ExtremeScales, OverflowingBf16InputsReportNumericsWithOutputsWritten) {
  // Finite BF16 codes near 1e20: Q·Kᵀ overflows FP32, which no check before the call can see. The
  // header names NUMERICS as the one failure after which out and lse hold unspecified values. The
  // CPU backend scans its outputs; the Hopper backends do not (the header says so).
  const uint64_t seed = announced_seed();
  for (int32_t backend : {FP8ATTN_BACKEND_CPU}) {
    Planned p(backend, make_desc(FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_F32, 64, 1));
    ASSERT_NE(p.plan, nullptr);
    ForwardCall f(FP8ATTN_DTYPE_BF16, 1, 40, 70, 1, 64, seed, 1e20f);
    fp8attn_error err = fresh_error();
    EXPECT_EQ(f.run(p.plan, &err), FP8ATTN_STATUS_NUMERICS) << backend_name(backend) << ": " << err.message;
    EXPECT_FALSE(untouched(f.out)) << backend_name(backend) << ": NUMERICS is documented to leave out written";
  }
}

/// Runs BF16 inputs with descales (qd, kd, vd) and a softmax scale; returns the F32 output.
std::vector<float> bf16_forward(int32_t backend, uint64_t seed, float softmax_scale, float qd, float kd, float vd,
                                bool with_descales) {
  fp8attn_attention_desc d = make_desc(FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_F32, 64);
  d.softmax_scale = softmax_scale;
  Planned p(backend, d);
  EXPECT_NE(p.plan, nullptr);
  if (!p.plan) return {};
  ForwardCall f(FP8ATTN_DTYPE_BF16, 2, 33, 50, 2, 64, seed);
  BroadcastDescale q(qd), k(kd), v(vd);
  if (with_descales) {
    f.args.q_descale = q.tensor(2, 2);
    f.args.k_descale = k.tensor(2, 2);
    f.args.v_descale = v.tensor(2, 2);
  }
  fp8attn_error err = fresh_error();
  EXPECT_EQ(f.run(p.plan, &err), FP8ATTN_OK) << backend_name(backend) << ": " << err.message;
  return f.out;
}

TEST(Bf16Descales, AreAppliedToTheLogitsAndTheOutputAsForE4m3) {
  // Powers of two make each comparison exact: q_descale 2 equals a doubled softmax scale, and
  // v_descale 4 multiplies O by 4, bit for bit (FlashAttention-3 would ignore all three).
  const uint64_t seed = announced_seed();
  const float s = 0.125f;
  for (int32_t backend : kHostBackends) {
    const std::vector<float> plain = bf16_forward(backend, seed, s, 1, 1, 1, false);
    const std::vector<float> doubled = bf16_forward(backend, seed, 2 * s, 1, 1, 1, false);
    const std::vector<float> with_q = bf16_forward(backend, seed, s, 2, 1, 1, true);
    const std::vector<float> with_v = bf16_forward(backend, seed, s, 1, 1, 4, true);
    ASSERT_EQ(plain.size(), with_q.size());
    size_t differs = 0;
    for (size_t i = 0; i < plain.size(); ++i) {
      ASSERT_EQ(with_q[i], doubled[i]) << backend_name(backend) << " element " << i;
      ASSERT_EQ(with_v[i], 4.0f * plain[i]) << backend_name(backend) << " element " << i;
      differs += with_q[i] != plain[i];
    }
    EXPECT_GT(differs, plain.size() / 2) << backend_name(backend) << ": q_descale changed nothing";
  }
}

}  // namespace
}  // namespace fp8attn::contract_test
