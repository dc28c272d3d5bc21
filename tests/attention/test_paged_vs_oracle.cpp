// The paged CPU forward against the FP64 oracle, with the bound of test_engine_vs_oracle.cpp
// (FlashAttention-3's): max|engine − oracle| ≤ 2·max|ref_p − oracle| + 1e-3, where ref_p keeps the
// inputs' quantization and rounds P to the kernel's precision. Inputs: Q, K, V ~ N(0, 1) i.i.d.,
// quantized to E4M3 with per-(sequence, KV head) descales, or to BF16; K and V scattered into
// pages of 16 in a shuffled order. The oracle runs paged too (REFERENCE backend).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
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

struct OracleCase {
  std::string name;
  int32_t dtype;  ///< Q's
  bool causal;
  int32_t kv_dtype = 0;  ///< 0: Q's. E4M3 under BF16 Q: the mixed-precision path (docs/numerics.md)
};

void PrintTo(const OracleCase& c, std::ostream* os) { *os << c.name; }

class PagedVsOracle : public ::testing::TestWithParam<OracleCase> {};

TEST_P(PagedVsOracle, WithinTwiceTheLowPrecisionReferencePlusAbs) {
  const OracleCase& c = GetParam();
  const uint64_t seed = workloads::fresh_seed();
  const workloads::AttentionShape shape{2, 300, 300, 4, 2, 128};
  const auto real = workloads::normal_inputs(shape, seed);
  const int32_t kv_dtype = c.kv_dtype == 0 ? c.dtype : c.kv_dtype;
  auto quantized = workloads::quantize(real, kv_dtype, workloads::ScaleGranularity::PerHead);
  if (kv_dtype != c.dtype) {  // Q in its own dtype (BF16, unit descales), K and V as quantized
    const auto q_only = workloads::quantize(real, c.dtype, workloads::ScaleGranularity::PerHead);
    quantized.q = q_only.q;
    quantized.q_descale = q_only.q_descale;
  }
  const size_t es = dtype_bytes(kv_dtype), row = static_cast<size_t>(shape.heads_kv * shape.head_dim) * es;
  std::mt19937_64 rng(seed);
  PagedLayout layout;
  layout.page_size = 16;
  layout.seqlen_k = {shape.seqlen_k, shape.seqlen_k};
  PagedKvData kv = make_paged_kv(layout, kv_dtype, shape.heads_kv, shape.head_dim, rng,
                                 [&](int64_t b, int64_t j, uint8_t* k, uint8_t* v) {
                                   const size_t at = static_cast<size_t>(b * shape.seqlen_k + j) * row;
                                   std::memcpy(k, &quantized.k[at], row);
                                   std::memcpy(v, &quantized.v[at], row);
                                 });

  fp8attn_attention_desc desc{};
  desc.struct_size = sizeof desc;
  fp8attn_attention_desc_init(&desc);
  desc.input_dtype = c.dtype;
  desc.kv_dtype = c.kv_dtype;
  desc.output_dtype = FP8ATTN_DTYPE_F32;  // ref_p rounds O to BF16: a looser bound than F32 needs
  desc.head_dim = shape.head_dim;
  desc.num_heads_q = shape.heads_q;
  desc.num_heads_kv = shape.heads_kv;
  desc.causal = c.causal;
  desc.page_size = 16;

  auto run = [&](int32_t backend) {
    Outputs o;
    o.out.assign(static_cast<size_t>(shape.batch * shape.seqlen_q * shape.heads_q * shape.head_dim), kPoison);
    fp8attn_attention_args a{};
    a.struct_size = sizeof a;
    a.q = dense_host_tensor(quantized.q.data(), c.dtype, {shape.batch, shape.seqlen_q, shape.heads_q, shape.head_dim});
    a.out = dense_host_tensor(o.out.data(), FP8ATTN_DTYPE_F32, {shape.batch, shape.seqlen_q, shape.heads_q, shape.head_dim});
    a.q_descale = dense_host_tensor(quantized.q_descale.data(), FP8ATTN_DTYPE_F32, {shape.batch, shape.heads_kv});
    a.k_descale = dense_host_tensor(quantized.k_descale.data(), FP8ATTN_DTYPE_F32, {shape.batch, shape.heads_kv});
    a.v_descale = dense_host_tensor(quantized.v_descale.data(), FP8ATTN_DTYPE_F32, {shape.batch, shape.heads_kv});
    fp8attn_paged_kv pkv = kv.paged();
    a.next = &pkv;
    run_forward(backend, desc, a, shape.batch, shape.seqlen_q, shape.seqlen_k, o);
    return o;
  };
  const Outputs engine = run(FP8ATTN_BACKEND_CPU);
  ASSERT_EQ(engine.status, FP8ATTN_OK) << engine.message;
  const Outputs oracle = run(FP8ATTN_BACKEND_REFERENCE);
  ASSERT_EQ(oracle.status, FP8ATTN_OK) << oracle.message;
  fp8attn_attention_desc ref_desc = desc;
  ref_desc.page_size = 0;
  auto dequantized = workloads::dequantize(real, quantized);
  if (kv_dtype != c.dtype) {  // Q's BF16 codes, not E4M3 ones
    for (size_t i = 0; i < dequantized.q.size(); ++i) {
      uint16_t code;
      std::memcpy(&code, &quantized.q[2 * i], 2);
      dequantized.q[i] = num::bf16_to_float(code) * quantized.q_descale[0];
    }
  }
  // NOTE: ref_p rounds P as Q's dtype's path does (BF16 for BF16 Q over an E4M3 cache).
  const auto ref_p = workloads::low_precision_reference(ref_desc, shape, dequantized);
  for (float x : engine.out) ASSERT_TRUE(std::isfinite(x)) << "seed " << seed;
  const double err = workloads::max_abs_diff(engine.out, oracle.out);
  const double ref_err = workloads::max_abs_diff(ref_p, oracle.out);
  const double bound = 2.0 * ref_err + 1e-3;
  std::printf("[%s] seed %llu: max|paged engine-oracle| = %.3e, max|ref_p-oracle| = %.3e, bound %.3e; "
              "RMSE vs the oracle %.3e\n",
              c.name.c_str(), static_cast<unsigned long long>(seed), err, ref_err, bound,
              workloads::rmse(engine.out, oracle.out));
  EXPECT_LE(err, bound) << "seed " << seed;
}

INSTANTIATE_TEST_SUITE_P(Paged, PagedVsOracle,
                         ::testing::Values(OracleCase{"e4m3", FP8ATTN_DTYPE_E4M3, false},
                                           OracleCase{"e4m3_causal", FP8ATTN_DTYPE_E4M3, true},
                                           OracleCase{"bf16", FP8ATTN_DTYPE_BF16, false},
                                           OracleCase{"bf16_causal", FP8ATTN_DTYPE_BF16, true},
                                           OracleCase{"bf16_q_e4m3_cache", FP8ATTN_DTYPE_BF16, false, FP8ATTN_DTYPE_E4M3},
                                           OracleCase{"bf16_q_e4m3_cache_causal", FP8ATTN_DTYPE_BF16, true,
                                                      FP8ATTN_DTYPE_E4M3}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace fp8attn::paged_test
