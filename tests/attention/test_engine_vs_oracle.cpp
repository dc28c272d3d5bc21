// The CPU tile engine against the FP64 oracle (REFERENCE backend), on fresh random inputs.
// Bound 1 (FlashAttention-3's test): max|engine − oracle| ≤ 2·max|ref_p − oracle| + 1e-3, where
// ref_p keeps the inputs' quantization and rounds P to the kernel's precision (E4M3 with S_p, or
// BF16), with an exact row max and BF16 output. Inputs: Q, K, V ~ N(0,1) i.i.d., quantized to
// E4M3 with per-(sequence, KV head) descales, or to BF16. LSE: relative error ≤ 1e-4, plus, for
// E4M3 under the default accumulator model, the bound of lse_accumulator_slack.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "kernels/sm90/mask.hpp"
#include "tools/common/forward_runner.hpp"
#include "tools/common/fresh_seed.hpp"
#include "tools/common/low_precision_reference.hpp"

namespace fp8attn::testing {
using namespace fp8attn::workloads;
namespace {

using workloads::AttentionShape;
using workloads::ScaleGranularity;

struct Case {
  std::string name;
  AttentionShape shape;
  int32_t dtype = FP8ATTN_DTYPE_E4M3;
  int32_t out_dtype = FP8ATTN_DTYPE_BF16;
  bool causal = false;
  int window_left = -1, window_right = -1;
  int kv_order = FP8ATTN_KV_ORDER_REVERSE;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

/// What the tensor core's addition (accumulator_model, the default) may move each row's LSE by,
/// [batch][heads_q][seqlen_q]. Per instruction of K products (32 E4M3, 16 BF16) of a logit's QKᵀ
/// chain: each of its K + 1 addends is cut by less than 2^(E − F), with 2^E at most the larger of
/// 8·max|q·k| (8: an E4M3 subnormal input counts at 2^-6 though it may be 2^-9) and the
/// accumulator, which is at most the prefix Σ|q·k| plus the error so far; the result is then cut by
/// less than 2^-R of itself (F = 13, R = 13 for E4M3; F = 25, R = 23 for BF16). The descales scale
/// every addend alike, so the bound holds in dequantized units; a log-sum-exp moves by at most its
/// largest logit's change. Zero under FP32 accumulation (its error is in the plain 1e-4 bound).
std::vector<double> lse_accumulator_slack(const fp8attn_attention_desc& desc, const AttentionShape& s,
                                          const workloads::DequantizedInputs& in) {
  std::vector<double> slack(static_cast<size_t>(s.batch * s.heads_q * s.seqlen_q), 0.0);
  if (desc.accumulator_model != FP8ATTN_ACCUMULATOR_TENSOR_CORE) return slack;
  const bool fp8 = desc.input_dtype == FP8ATTN_DTYPE_E4M3;
  const int d = s.head_dim, group = s.heads_q / s.heads_kv, k_instr = fp8 ? 32 : 16;
  const double cut = std::ldexp(1.0, fp8 ? -13 : -25), result_cut = std::ldexp(1.0, fp8 ? -13 : -23);
  const double scale = desc.softmax_scale == 0.0f ? 1.0 / std::sqrt(static_cast<double>(d)) : desc.softmax_scale;
  const sm90::MaskParams mask{desc.causal != 0, desc.window_left, desc.window_right, s.seqlen_q, s.seqlen_k};
  for (int64_t b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads_q; ++h)
      for (int64_t i = 0; i < s.seqlen_q; ++i) {
        const double* q = &in.q[((b * s.seqlen_q + i) * s.heads_q + h) * d];
        const sm90::KeyRange keys = sm90::visible_keys(mask, i);
        double worst = 0.0;
        for (int64_t j = keys.first; j <= keys.last; ++j) {
          const double* k = &in.k[((b * s.seqlen_k + j) * s.heads_kv + h / group) * d];
          double prefix = 0.0, err = 0.0;
          for (int e0 = 0; e0 < d; e0 += k_instr) {
            double top = 0.0, sum = 0.0;
            for (int e = e0; e < e0 + k_instr; ++e) {
              const double p = std::fabs(q[e] * k[e]);
              top = std::max(top, p);
              sum += p;
            }
            const double addends = (k_instr + 1) * cut * std::max(8.0 * top, prefix + err);
            prefix += sum;
            err += addends + result_cut * (prefix + err + addends);
          }
          worst = std::max(worst, err);
        }
        slack[(b * s.heads_q + h) * s.seqlen_q + i] = scale * worst;
      }
  return slack;
}


class EngineVsOracle : public ::testing::TestWithParam<Case> {};

TEST_P(EngineVsOracle, WithinTwiceTheLowPrecisionReferencePlusAbs) {
  const Case& c = GetParam();
  const uint64_t seed = workloads::fresh_seed();
  const auto real = workloads::normal_inputs(c.shape, seed);
  const auto quantized = workloads::quantize(real, c.dtype, ScaleGranularity::PerHead);
  auto desc = make_desc(c.shape, c.dtype, c.out_dtype);
  desc.causal = c.causal;
  desc.window_left = c.window_left;
  desc.window_right = c.window_right;
  desc.kv_order = c.kv_order;

  const ForwardResult engine = run_forward(desc, c.shape, quantized);
  auto oracle_desc = desc;
  oracle_desc.output_dtype = FP8ATTN_DTYPE_F32;
  const ForwardResult oracle = run_forward(oracle_desc, c.shape, quantized, {FP8ATTN_BACKEND_REFERENCE});
  const auto dequantized = workloads::dequantize(real, quantized);
  const auto ref_p = low_precision_reference(desc, c.shape, dequantized);
  const auto lse_slack = lse_accumulator_slack(desc, c.shape, dequantized);

  for (float x : engine.out) ASSERT_TRUE(std::isfinite(x)) << "unwritten or non-finite output, seed " << seed;
  const double err = max_abs_diff(engine.out, oracle.out);
  const double ref_err = max_abs_diff(ref_p, oracle.out);
  const double bound = 2.0 * ref_err + 1e-3;
  std::printf("[%s] seed %llu: max|engine-oracle| = %.3e, max|ref_p-oracle| = %.3e, bound %.3e\n", c.name.c_str(),
              static_cast<unsigned long long>(seed), err, ref_err, bound);
  EXPECT_LE(err, bound) << "seed " << seed;

  // Each row's error as a fraction of its bound, 1e-4 relative plus the accumulator's slack.
  double lse_err = 0.0, lse_of_bound = 0.0, max_slack = 0.0;
  for (size_t i = 0; i < engine.lse.size(); ++i) {
    if (std::isinf(oracle.lse[i])) {
      EXPECT_TRUE(std::isinf(engine.lse[i]) && engine.lse[i] < 0) << "row " << i << " has no visible key";
      continue;
    }
    const double magnitude = std::max(1.0, std::fabs(double(oracle.lse[i])));
    const double diff = std::fabs(double(engine.lse[i]) - oracle.lse[i]);
    lse_err = std::max(lse_err, diff / magnitude);
    lse_of_bound = std::max(lse_of_bound, diff / (1e-4 * magnitude + lse_slack[i]));
    max_slack = std::max(max_slack, lse_slack[i]);
  }
  std::printf("[%s] max relative LSE error %.3e; worst row at %.3f of its bound (1e-4 relative + accumulator slack, "
              "largest slack %.2e)\n",
              c.name.c_str(), lse_err, lse_of_bound, max_slack);
  EXPECT_LE(lse_of_bound, 1.0) << "seed " << seed;

  // Under FP32 accumulation the LSE keeps the plain 1e-4 bound, E4M3 and BF16 alike.
  {
    auto full_desc = desc;
    full_desc.accumulator_model = FP8ATTN_ACCUMULATOR_FP32;
    const ForwardResult full = run_forward(full_desc, c.shape, quantized);
    double full_err = 0.0;
    for (size_t i = 0; i < full.lse.size(); ++i)
      if (!std::isinf(oracle.lse[i]))
        full_err = std::max(full_err, std::fabs(double(full.lse[i]) - oracle.lse[i]) / std::max(1.0, std::fabs(double(oracle.lse[i]))));
    const double full_out_err = max_abs_diff(full.out, oracle.out);
    std::printf("[%s] FP32 accumulation: max relative LSE error %.3e (bound 1e-4), max|out-oracle| %.3e (bound %.3e)\n",
                c.name.c_str(), full_err, full_out_err, bound);
    EXPECT_LE(full_err, 1e-4) << "seed " << seed;
    EXPECT_LE(full_out_err, bound) << "FP32 accumulation, the same output bound; seed " << seed;
  }
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (int hd : {64, 128, 256})
    for (bool causal : {false, true})
      for (int32_t dt : {FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16}) {
        Case c;
        c.shape = {2, 300, 300, 2, 2, hd};
        c.dtype = dt;
        c.causal = causal;
        c.name = std::string(dt == FP8ATTN_DTYPE_E4M3 ? "e4m3" : "bf16") + "_hd" + std::to_string(hd) +
                 (causal ? "_causal" : "");
        v.push_back(c);
      }
  Case gqa;
  gqa.name = "e4m3_hd128_gqa8to1_causal_f32out";
  gqa.shape = {1, 257, 257, 8, 1, 128};
  gqa.causal = true;
  gqa.out_dtype = FP8ATTN_DTYPE_F32;
  v.push_back(gqa);
  Case rect;
  rect.name = "e4m3_hd64_causal_bottom_right_sq100_sk450";
  rect.shape = {1, 100, 450, 2, 1, 64};
  rect.causal = true;
  v.push_back(rect);
  Case rect2 = rect;
  rect2.name = "e4m3_hd64_causal_sq450_sk100_empty_rows";
  rect2.shape = {1, 450, 100, 2, 1, 64};
  v.push_back(rect2);
  Case win;
  win.name = "e4m3_hd128_window_64_0";
  win.shape = {1, 600, 600, 2, 2, 128};
  win.window_left = 64;
  win.window_right = 0;
  v.push_back(win);
  Case win2 = win;
  win2.name = "bf16_hd128_window_100_40";
  win2.dtype = FP8ATTN_DTYPE_BF16;
  win2.window_left = 100;
  win2.window_right = 40;
  v.push_back(win2);
  Case fwd;
  fwd.name = "e4m3_hd128_forward_order";
  fwd.shape = {1, 500, 500, 2, 2, 128};
  fwd.kv_order = FP8ATTN_KV_ORDER_FORWARD;
  v.push_back(fwd);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Shapes, EngineVsOracle, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// Varlen: packed sequences of lengths 1, 127, 128, 129 and 1000 must match padded runs of the
// same sequences, and the oracle.
TEST(EngineVarlen, PackedSequencesMatchOracle) {
  const std::vector<int64_t> lengths{1, 127, 128, 129, 1000};
  std::vector<int32_t> cu{0};
  for (int64_t n : lengths) cu.push_back(cu.back() + static_cast<int32_t>(n));
  for (int hd : {64, 128}) {
    for (bool causal : {false, true}) {
      const AttentionShape packed{1, cu.back(), cu.back(), 4, 2, hd};
      const uint64_t seed = workloads::fresh_seed();
      const auto real = workloads::normal_inputs(packed, seed);
      const auto quantized = workloads::quantize(real, FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerTensor);
      auto desc = make_desc(packed, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
      desc.causal = causal;
      ForwardOptions o;
      o.cu_seqlens_q = &cu;
      o.cu_seqlens_k = &cu;
      const ForwardResult engine = run_forward(desc, packed, quantized, o);
      o.backend = FP8ATTN_BACKEND_REFERENCE;
      const ForwardResult oracle = run_forward(desc, packed, quantized, o);
      for (float x : engine.out) ASSERT_TRUE(std::isfinite(x)) << "unwritten output, seed " << seed;
      // Each sequence attends only within itself: compare to a per-sequence low-precision reference.
      double err = 0.0, ref_err = 0.0;
      const auto deq = workloads::dequantize(real, quantized);
      for (size_t b = 0; b + 1 < cu.size(); ++b) {
        const int64_t n = cu[b + 1] - cu[b];
        const AttentionShape one{1, n, n, packed.heads_q, packed.heads_kv, hd};
        workloads::DequantizedInputs slice;
        const size_t qrow = static_cast<size_t>(packed.heads_q) * hd, krow = static_cast<size_t>(packed.heads_kv) * hd;
        slice.q.assign(deq.q.begin() + cu[b] * qrow, deq.q.begin() + cu[b + 1] * qrow);
        slice.k.assign(deq.k.begin() + cu[b] * krow, deq.k.begin() + cu[b + 1] * krow);
        slice.v.assign(deq.v.begin() + cu[b] * krow, deq.v.begin() + cu[b + 1] * krow);
        const auto ref = low_precision_reference(desc, one, slice);
        const std::vector<float> eng(engine.out.begin() + cu[b] * qrow, engine.out.begin() + cu[b + 1] * qrow);
        const std::vector<float> ora(oracle.out.begin() + cu[b] * qrow, oracle.out.begin() + cu[b + 1] * qrow);
        err = std::max(err, max_abs_diff(eng, ora));
        ref_err = std::max(ref_err, max_abs_diff(ref, ora));
      }
      std::printf("[varlen hd%d%s] seed %llu: max|engine-oracle| = %.3e, bound %.3e\n", hd, causal ? " causal" : "",
                  static_cast<unsigned long long>(seed), err, 2 * ref_err + 1e-3);
      EXPECT_LE(err, 2 * ref_err + 1e-3) << "seed " << seed;
    }
  }
}

}  // namespace
}  // namespace fp8attn::testing
