// A paged cache's scale caches (fp8attn_paged_kv.scale_granularity) on the CPU engine and the
// FP64 reference: PER_HEAD is the per-(sequence, KV head) descale with a batch stride of 0, bit
// for bit; PER_TOKEN_HEAD stays within the forward's oracle bound; and on FlashAttention-3's
// outlier inputs per-token descales beat per-head ones (the figures are in docs/numerics.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tests/attention/paged_support.hpp"
#include "tools/common/attention_inputs.hpp"
#include "tools/common/fresh_seed.hpp"
#include "tools/common/low_precision_reference.hpp"

namespace fp8attn::paged_test {
namespace {

uint64_t seed_of_run() {
  // NOTE: FP8ATTN_PAGED_SCALE_SEED replays a run (docs/numerics.md gives the seed of its figures).
  if (const char* s = std::getenv("FP8ATTN_PAGED_SCALE_SEED")) return std::strtoull(s, nullptr, 10);
  return workloads::fresh_seed();
}

/// Real inputs quantized for a paged cache: Q per (sequence, KV head) as the forward tests do,
/// K and V to E4M3 with one descale per KV head (PER_HEAD) or per (token, KV head)
/// (PER_TOKEN_HEAD), 448 / amax each; the dequantized values for the references.
struct ScaledInputs {
  workloads::QuantizedInputs q;          ///< Q's codes and q_descale (K's and V's unused)
  std::vector<uint8_t> k, v;             ///< [batch, seqlen_k, heads_kv, head_dim] codes
  std::vector<float> k_scale, v_scale;   ///< PER_HEAD [heads_kv]; PER_TOKEN_HEAD [batch, seqlen_k, heads_kv]
  workloads::DequantizedInputs deq;
};

ScaledInputs scale_inputs(const workloads::AttentionInputs& real, int32_t granularity, bool power_of_two = false,
                          int32_t q_dtype = FP8ATTN_DTYPE_E4M3) {
  const auto& s = real.shape;
  ScaledInputs r;
  r.q = workloads::quantize(real, q_dtype, workloads::ScaleGranularity::PerHead);
  r.deq = workloads::dequantize(real, r.q);
  const int d = s.head_dim;
  const int64_t rows = s.batch * s.seqlen_k;
  r.k.resize(real.k.size());
  r.v.resize(real.v.size());
  auto quantize_tensor = [&](const std::vector<float>& x, std::vector<uint8_t>& codes, std::vector<float>& scale,
                             std::vector<double>& deq) {
    // the amax of each slice, then codes = e4m3(x · 448 / amax) and descale = amax / 448
    if (granularity == FP8ATTN_KV_SCALE_PER_HEAD) {
      scale.assign(static_cast<size_t>(s.heads_kv), 0.0f);
      for (int64_t r0 = 0; r0 < rows; ++r0)
        for (int h = 0; h < s.heads_kv; ++h)
          for (int e = 0; e < d; ++e) scale[h] = std::max(scale[h], std::fabs(x[(r0 * s.heads_kv + h) * d + e]));
    } else {
      scale.assign(static_cast<size_t>(rows * s.heads_kv), 0.0f);
      for (int64_t r0 = 0; r0 < rows; ++r0)
        for (int h = 0; h < s.heads_kv; ++h)
          for (int e = 0; e < d; ++e)
            scale[r0 * s.heads_kv + h] = std::max(scale[r0 * s.heads_kv + h], std::fabs(x[(r0 * s.heads_kv + h) * d + e]));
    }
    for (float& a : scale) a = a > 0.0f ? a / 448.0f : 1.0f;
    if (power_of_two)  // the smallest power of two ≥ amax / 448: an E8M0 scale, as MX formats keep
      for (float& a : scale) a = std::exp2(std::ceil(std::log2(a)));
    for (int64_t r0 = 0; r0 < rows; ++r0)
      for (int h = 0; h < s.heads_kv; ++h) {
        const float ds = granularity == FP8ATTN_KV_SCALE_PER_HEAD ? scale[h] : scale[r0 * s.heads_kv + h];
        for (int e = 0; e < d; ++e) {
          const size_t i = static_cast<size_t>((r0 * s.heads_kv + h) * d + e);
          codes[i] = num::float_to_e4m3(x[i] / ds);
          deq[i] = static_cast<double>(num::e4m3_to_float(codes[i])) * ds;
        }
      }
  };
  quantize_tensor(real.k, r.k, r.k_scale, r.deq.k);
  quantize_tensor(real.v, r.v, r.v_scale, r.deq.v);
  return r;
}

/// The paged forward over `in` with the given granularity (pages of `page_size`, shuffled); F32
/// output. BF16 `q_dtype`: BF16 Q over the E4M3 cache (`in` from scale_inputs with BF16 Q).
Outputs run_scaled(int32_t backend, const workloads::AttentionShape& s, ScaledInputs& in, int32_t granularity,
                   bool causal, uint64_t seed, int64_t page_size = 16, int32_t q_dtype = FP8ATTN_DTYPE_E4M3) {
  std::mt19937_64 rng(seed);
  const size_t row = static_cast<size_t>(s.heads_kv * s.head_dim);
  PagedLayout layout;
  layout.page_size = page_size;
  layout.seqlen_k.assign(static_cast<size_t>(s.batch), s.seqlen_k);
  PagedKvData kv = make_paged_kv(layout, FP8ATTN_DTYPE_E4M3, s.heads_kv, s.head_dim, rng,
                                 [&](int64_t b, int64_t j, uint8_t* k, uint8_t* v) {
                                   const size_t at = static_cast<size_t>(b * s.seqlen_k + j) * row;
                                   std::memcpy(k, &in.k[at], row);
                                   std::memcpy(v, &in.v[at], row);
                                 });
  // The scale caches beside the pages: token j of sequence b at its page slot.
  std::vector<float> k_cache_scale, v_cache_scale;
  fp8attn_paged_kv pkv = kv.paged();
  pkv.scale_granularity = granularity;
  if (granularity == FP8ATTN_KV_SCALE_PER_HEAD) {
    pkv.k_descale = dense_host_tensor(in.k_scale.data(), FP8ATTN_DTYPE_F32, {s.heads_kv});
    pkv.v_descale = dense_host_tensor(in.v_scale.data(), FP8ATTN_DTYPE_F32, {s.heads_kv});
  } else {
    k_cache_scale.assign(static_cast<size_t>(kv.num_pages * page_size * s.heads_kv), std::nanf(""));
    v_cache_scale = k_cache_scale;  // NaN in the slots no sequence uses: never read
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t j = 0; j < s.seqlen_k; ++j)
        for (int h = 0; h < s.heads_kv; ++h) {
          const size_t slot = static_cast<size_t>((kv.entry(b, j / page_size) * page_size + j % page_size) * s.heads_kv + h);
          k_cache_scale[slot] = in.k_scale[static_cast<size_t>((b * s.seqlen_k + j) * s.heads_kv + h)];
          v_cache_scale[slot] = in.v_scale[static_cast<size_t>((b * s.seqlen_k + j) * s.heads_kv + h)];
        }
    pkv.k_descale = dense_host_tensor(k_cache_scale.data(), FP8ATTN_DTYPE_F32, {kv.num_pages, page_size, s.heads_kv});
    pkv.v_descale = dense_host_tensor(v_cache_scale.data(), FP8ATTN_DTYPE_F32, {kv.num_pages, page_size, s.heads_kv});
  }
  fp8attn_attention_desc desc{};
  desc.struct_size = sizeof desc;
  fp8attn_attention_desc_init(&desc);
  desc.input_dtype = q_dtype;
  desc.kv_dtype = FP8ATTN_DTYPE_E4M3;
  desc.output_dtype = FP8ATTN_DTYPE_F32;
  desc.head_dim = s.head_dim;
  desc.num_heads_q = s.heads_q;
  desc.num_heads_kv = s.heads_kv;
  desc.causal = causal;
  desc.page_size = static_cast<int32_t>(page_size);
  Outputs o;
  o.out.assign(static_cast<size_t>(s.batch * s.seqlen_q * s.heads_q * s.head_dim), kPoison);
  fp8attn_attention_args a{};
  a.struct_size = sizeof a;
  a.q = dense_host_tensor(in.q.q.data(), q_dtype, {s.batch, s.seqlen_q, s.heads_q, s.head_dim});
  a.out = dense_host_tensor(o.out.data(), FP8ATTN_DTYPE_F32, {s.batch, s.seqlen_q, s.heads_q, s.head_dim});
  a.q_descale = dense_host_tensor(in.q.q_descale.data(), FP8ATTN_DTYPE_F32, {s.batch, s.heads_kv});
  a.next = &pkv;
  run_forward(backend, desc, a, s.batch, s.seqlen_q, s.seqlen_k, o);
  return o;
}

TEST(PagedKvScales, PerHeadIsTheSequenceDescaleWithBatchStrideZero) {
  const uint64_t seed = seed_of_run();
  const workloads::AttentionShape s{2, 70, 150, 4, 2, 64};
  ScaledInputs in = scale_inputs(workloads::normal_inputs(s, seed, 3.0f), FP8ATTN_KV_SCALE_PER_HEAD);
  const Outputs paged = run_scaled(FP8ATTN_BACKEND_CPU, s, in, FP8ATTN_KV_SCALE_PER_HEAD, true, seed);
  ASSERT_EQ(paged.status, FP8ATTN_OK) << paged.message;
  // The same pages with the descales given as args.k_descale/v_descale [batch, heads_kv], stride (0, 1).
  ScaledInputs copy = in;
  std::mt19937_64 rng(seed);
  const size_t row = static_cast<size_t>(s.heads_kv * s.head_dim);
  PagedLayout layout;
  layout.seqlen_k = {s.seqlen_k, s.seqlen_k};
  PagedKvData kv = make_paged_kv(layout, FP8ATTN_DTYPE_E4M3, s.heads_kv, s.head_dim, rng,
                                 [&](int64_t b, int64_t j, uint8_t* k, uint8_t* v) {
                                   std::memcpy(k, &copy.k[static_cast<size_t>(b * s.seqlen_k + j) * row], row);
                                   std::memcpy(v, &copy.v[static_cast<size_t>(b * s.seqlen_k + j) * row], row);
                                 });
  fp8attn_paged_kv pkv = kv.paged();
  fp8attn_attention_desc desc{};
  desc.struct_size = sizeof desc;
  fp8attn_attention_desc_init(&desc);
  desc.output_dtype = FP8ATTN_DTYPE_F32;
  desc.head_dim = s.head_dim;
  desc.num_heads_q = s.heads_q;
  desc.num_heads_kv = s.heads_kv;
  desc.causal = 1;
  desc.page_size = 16;
  Outputs o;
  o.out.assign(paged.out.size(), kPoison);
  fp8attn_attention_args a{};
  a.struct_size = sizeof a;
  a.q = dense_host_tensor(copy.q.q.data(), FP8ATTN_DTYPE_E4M3, {s.batch, s.seqlen_q, s.heads_q, s.head_dim});
  a.out = dense_host_tensor(o.out.data(), FP8ATTN_DTYPE_F32, {s.batch, s.seqlen_q, s.heads_q, s.head_dim});
  a.q_descale = dense_host_tensor(copy.q.q_descale.data(), FP8ATTN_DTYPE_F32, {s.batch, s.heads_kv});
  a.k_descale = dense_host_tensor(copy.k_scale.data(), FP8ATTN_DTYPE_F32, {s.batch, s.heads_kv});
  a.v_descale = dense_host_tensor(copy.v_scale.data(), FP8ATTN_DTYPE_F32, {s.batch, s.heads_kv});
  a.k_descale.stride[0] = a.v_descale.stride[0] = 0;
  a.next = &pkv;
  run_forward(FP8ATTN_BACKEND_CPU, desc, a, s.batch, s.seqlen_q, s.seqlen_k, o);
  ASSERT_EQ(o.status, FP8ATTN_OK) << o.message;
  std::string where;
  EXPECT_TRUE(same_bits(paged.out, o.out, &where)) << where << " (seed " << seed << ")";
}

/// Per-token descales: any positive value, or powers of two (E8M0, as MX formats keep them).
/// With powers of two each key's V ratio to its block's largest is a power of two, P̃'s scaled
/// column is exact and the bound is the forward's own, 2·max|ref_p − oracle| + 1e-3. With any
/// other value the ratio's product is rounded in P's cast, also for the row's largest P̃ (which
/// is exact, S_p, without it): the max-error bound is then 5·max|ref_p − oracle| + 1e-3 (measured
/// up to 3.4× over 40 runs; docs/numerics.md, "Paged KV caches"). The RMSE against the oracle is
/// the sharper check: within 1.1× of ref_p's with powers of two (measured 0.97 .. 0.99×), 1.4×
/// with any descales (measured 1.12 .. 1.21×).
/// BF16 Q over the E4M3 cache: V's descale multiplies P̃'s column whole before P's BF16 cast
/// (kv_cache_math.hpp), whose rounding is then ref_p's own, so any descales keep the forward's
/// bound, 2·max|ref_p − oracle| + 1e-3, and an RMSE within 1.1× of ref_p's.
struct PerTokenCase {
  bool causal;
  bool power_of_two;
  bool bf16_q = false;
};

class PagedPerToken : public ::testing::TestWithParam<PerTokenCase> {};

TEST_P(PagedPerToken, WithinTheLowPrecisionReferenceBound) {
  const PerTokenCase c = GetParam();
  const uint64_t seed = seed_of_run();
  const workloads::AttentionShape s{2, 200, 300, 4, 2, 128};
  const int32_t q_dtype = c.bf16_q ? FP8ATTN_DTYPE_BF16 : FP8ATTN_DTYPE_E4M3;
  ScaledInputs in =
      scale_inputs(workloads::normal_inputs(s, seed), FP8ATTN_KV_SCALE_PER_TOKEN_HEAD, c.power_of_two, q_dtype);
  const Outputs engine =
      run_scaled(FP8ATTN_BACKEND_CPU, s, in, FP8ATTN_KV_SCALE_PER_TOKEN_HEAD, c.causal, seed, 16, q_dtype);
  ASSERT_EQ(engine.status, FP8ATTN_OK) << engine.message;
  const Outputs oracle =
      run_scaled(FP8ATTN_BACKEND_REFERENCE, s, in, FP8ATTN_KV_SCALE_PER_TOKEN_HEAD, c.causal, seed, 16, q_dtype);
  ASSERT_EQ(oracle.status, FP8ATTN_OK) << oracle.message;
  fp8attn_attention_desc desc{};
  desc.struct_size = sizeof desc;
  fp8attn_attention_desc_init(&desc);
  desc.head_dim = s.head_dim;
  desc.num_heads_q = s.heads_q;
  desc.num_heads_kv = s.heads_kv;
  desc.causal = c.causal;
  desc.input_dtype = q_dtype;  // NOTE: ref_p rounds P to BF16 under BF16 Q
  const auto ref_p = workloads::low_precision_reference(desc, s, in.deq);
  for (float x : engine.out) ASSERT_TRUE(std::isfinite(x)) << "seed " << seed;
  const double err = workloads::max_abs_diff(engine.out, oracle.out);
  const double ref_err = workloads::max_abs_diff(ref_p, oracle.out);
  const bool exact_ratio = c.power_of_two || c.bf16_q;
  const double bound = (exact_ratio ? 2.0 : 5.0) * ref_err + 1e-3;
  const double rms = workloads::rmse(engine.out, oracle.out), ref_rms = workloads::rmse(ref_p, oracle.out);
  std::printf("[per-token%s%s%s] seed %llu: max|engine-oracle| = %.3e, max|ref_p-oracle| = %.3e, bound %.3e; RMSE "
              "%.3e, ref_p's %.3e\n",
              c.bf16_q ? " bf16-q" : "", c.causal ? " causal" : "", c.power_of_two ? " pow2" : "", static_cast<unsigned long long>(seed), err,
              ref_err, bound, rms, ref_rms);
  EXPECT_LE(err, bound) << "seed " << seed;
  EXPECT_LE(rms, (exact_ratio ? 1.1 : 1.4) * ref_rms) << "seed " << seed;
}

INSTANTIATE_TEST_SUITE_P(Paged, PagedPerToken,
                         ::testing::Values(PerTokenCase{false, false}, PerTokenCase{true, false},
                                           PerTokenCase{false, true}, PerTokenCase{true, true},
                                           PerTokenCase{true, false, true}),
                         [](const auto& info) {
                           return std::string(info.param.bf16_q ? "bf16_q_" : "") +
                                  (info.param.causal ? "causal" : "full") +
                                  (info.param.power_of_two ? "_pow2_scales" : "_any_scales");
                         });

/// sqrt(mean (a − b)²) against FP64 attention on the real (unquantized) inputs.
double rmse_vs_fp64(const workloads::AttentionShape& s, const workloads::AttentionInputs& real,
                    const std::vector<float>& out) {
  const int d = s.head_dim, group = s.heads_q / s.heads_kv;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<double> logits(static_cast<size_t>(s.seqlen_k));
  double sum_sq = 0.0;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t i = 0; i < s.seqlen_q; ++i)
      for (int h = 0; h < s.heads_q; ++h) {
        const float* q = &real.q[static_cast<size_t>(((b * s.seqlen_q + i) * s.heads_q + h) * d)];
        double m = -INFINITY, l = 0.0;
        for (int64_t j = 0; j < s.seqlen_k; ++j) {
          const float* k = &real.k[static_cast<size_t>(((b * s.seqlen_k + j) * s.heads_kv + h / group) * d)];
          double dot = 0.0;
          for (int e = 0; e < d; ++e) dot += static_cast<double>(q[e]) * k[e];
          logits[j] = dot * scale;
          m = std::max(m, logits[j]);
        }
        std::vector<double> o(static_cast<size_t>(d), 0.0);
        for (int64_t j = 0; j < s.seqlen_k; ++j) {
          const double p = std::exp(logits[j] - m);
          l += p;
          const float* v = &real.v[static_cast<size_t>(((b * s.seqlen_k + j) * s.heads_kv + h / group) * d)];
          for (int e = 0; e < d; ++e) o[e] += p * v[e];
        }
        for (int e = 0; e < d; ++e) {
          const double diff = out[static_cast<size_t>(((b * s.seqlen_q + i) * s.heads_q + h) * d + e)] - o[e] / l;
          sum_sq += diff * diff;
        }
      }
  return std::sqrt(sum_sq / static_cast<double>(out.size()));
}

// FlashAttention-3's Table 3 distribution: N(0,1) + N(0,100)·Bernoulli(0.001) i.i.d. An outlier
// in K or V inflates the one descale of its whole head under PER_HEAD, so every other token
// keeps fewer of E4M3's bits; under PER_TOKEN_HEAD it costs only its own row.
TEST(PagedKvScales, PerTokenHeadBeatsPerHeadOnOutliers) {
  // NOTE: the claim is about the outlier inputs' distribution, so it is judged on the RMSE summed
  // over three draws (seed, seed + 1, seed + 2): a single draw can favour per-head scales (about
  // one seed in several tens did).
  const uint64_t seed = seed_of_run();
  const workloads::AttentionShape s{1, 256, 2048, 4, 4, 128};
  double sum_head = 0.0, sum_token = 0.0;
  for (uint64_t draw = seed; draw < seed + 3; ++draw) {
    const auto real = workloads::outlier_inputs(s, draw);
    ScaledInputs per_head = scale_inputs(real, FP8ATTN_KV_SCALE_PER_HEAD);
    ScaledInputs per_token = scale_inputs(real, FP8ATTN_KV_SCALE_PER_TOKEN_HEAD);
    ScaledInputs per_token2 = scale_inputs(real, FP8ATTN_KV_SCALE_PER_TOKEN_HEAD, true);
    const Outputs head_out = run_scaled(FP8ATTN_BACKEND_CPU, s, per_head, FP8ATTN_KV_SCALE_PER_HEAD, false, draw);
    const Outputs token_out =
        run_scaled(FP8ATTN_BACKEND_CPU, s, per_token, FP8ATTN_KV_SCALE_PER_TOKEN_HEAD, false, draw);
    const Outputs token2_out =
        run_scaled(FP8ATTN_BACKEND_CPU, s, per_token2, FP8ATTN_KV_SCALE_PER_TOKEN_HEAD, false, draw);
    ASSERT_EQ(head_out.status, FP8ATTN_OK) << head_out.message;
    ASSERT_EQ(token_out.status, FP8ATTN_OK) << token_out.message;
    ASSERT_EQ(token2_out.status, FP8ATTN_OK) << token2_out.message;
    const double rmse_head = rmse_vs_fp64(s, real, head_out.out), rmse_token = rmse_vs_fp64(s, real, token_out.out),
                 rmse_token2 = rmse_vs_fp64(s, real, token2_out.out);
    std::printf("outliers, seed %llu, batch 1, 4 heads, seqlen_q 256, seqlen_k 2048, head_dim 128, pages of 16: "
                "RMSE vs FP64 per-head %.3e, per-token-head %.3e (amax/448), %.3e (power-of-two)\n",
                static_cast<unsigned long long>(draw), rmse_head, rmse_token, rmse_token2);
    sum_head += rmse_head;
    sum_token += rmse_token;
  }
  EXPECT_LT(sum_token, sum_head) << "summed over seeds " << seed << " to " << seed + 2;
}

}  // namespace
}  // namespace fp8attn::paged_test
