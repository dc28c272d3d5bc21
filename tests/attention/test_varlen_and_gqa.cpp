// Packed sequences whose query and key lengths differ, and GQA at 2:1 and 4:1. Bound
// (as in test_engine_vs_oracle.cpp): max|engine − ref| ≤ 2·max|ref_p − ref| + 1e-3, where ref is
// computed without the code path under test:
// - varlen: each sequence alone, as a padded [1, Sq_b, Sk_b] problem on the REFERENCE backend,
//   with its K/V rows cut by cu_seqlens_k (a K offset taken from the Q sequence then shows);
// - GQA: the MHA problem with each KV head copied to its query heads (h → h / group written out
//   here), so a wrong head mapping (h % heads_kv agrees with h / group only at 8:1 with 1 KV head)
//   shows. Inputs Q, K, V ~ N(0,1), E4M3 with one per-tensor descale each (identical for the
//   copies).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "tools/common/forward_runner.hpp"
#include "tools/common/fresh_seed.hpp"
#include "tools/common/low_precision_reference.hpp"

namespace fp8attn::testing {
using namespace fp8attn::workloads;
namespace {

/// Rows [r0, r1) of a [rows, heads·d] byte tensor.
std::vector<uint8_t> rows_of(const std::vector<uint8_t>& x, int64_t r0, int64_t r1, int64_t row_bytes) {
  return std::vector<uint8_t>(x.begin() + r0 * row_bytes, x.begin() + r1 * row_bytes);
}

TEST(EngineVarlen, DifferentQueryAndKeyLengthsPerSequence) {
  const std::vector<int64_t> lq{1, 130, 64, 300, 7}, lk{200, 5, 129, 300, 64};
  std::vector<int32_t> cu_q{0}, cu_k{0};
  for (size_t b = 0; b < lq.size(); ++b) {
    cu_q.push_back(cu_q.back() + static_cast<int32_t>(lq[b]));
    cu_k.push_back(cu_k.back() + static_cast<int32_t>(lk[b]));
  }
  const int hq = 4, hkv = 2, hd = 64;
  for (bool causal : {false, true}) {
    const AttentionShape packed{1, cu_q.back(), cu_k.back(), hq, hkv, hd};
    const uint64_t seed = fresh_seed();
    const auto real = normal_inputs(packed, seed);
    const auto quantized = quantize(real, FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerTensor);
    auto desc = make_desc(packed, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
    desc.causal = causal;
    ForwardOptions o;
    o.cu_seqlens_q = &cu_q;
    o.cu_seqlens_k = &cu_k;
    const ForwardResult engine = run_forward(desc, packed, quantized, o);
    const auto deq = dequantize(real, quantized);
    const int64_t qrow = int64_t{hq} * hd, krow = int64_t{hkv} * hd;
    double err = 0.0, ref_err = 0.0;
    for (size_t b = 0; b < lq.size(); ++b) {
      const AttentionShape one{1, lq[b], lk[b], hq, hkv, hd};
      QuantizedInputs slice = quantized;
      slice.q = rows_of(quantized.q, cu_q[b], cu_q[b + 1], qrow);
      slice.k = rows_of(quantized.k, cu_k[b], cu_k[b + 1], krow);
      slice.v = rows_of(quantized.v, cu_k[b], cu_k[b + 1], krow);
      const ForwardResult ref = run_forward(desc, one, slice, {FP8ATTN_BACKEND_REFERENCE});
      DequantizedInputs dslice;
      dslice.q.assign(deq.q.begin() + cu_q[b] * qrow, deq.q.begin() + cu_q[b + 1] * qrow);
      dslice.k.assign(deq.k.begin() + cu_k[b] * krow, deq.k.begin() + cu_k[b + 1] * krow);
      dslice.v.assign(deq.v.begin() + cu_k[b] * krow, deq.v.begin() + cu_k[b + 1] * krow);
      const auto ref_p = low_precision_reference(desc, one, dslice);
      const std::vector<float> eng(engine.out.begin() + cu_q[b] * qrow, engine.out.begin() + cu_q[b + 1] * qrow);
      for (float x : eng) ASSERT_TRUE(std::isfinite(x)) << "unwritten output in sequence " << b << ", seed " << seed;
      err = std::max(err, max_abs_diff(eng, ref.out));
      ref_err = std::max(ref_err, max_abs_diff(ref_p, ref.out));
    }
    std::printf("[varlen Sq≠Sk%s] seed %llu: max|engine-ref| = %.3e, bound %.3e\n", causal ? " causal" : "",
                static_cast<unsigned long long>(seed), err, 2 * ref_err + 1e-3);
    EXPECT_LE(err, 2 * ref_err + 1e-3) << "seed " << seed;
  }
}

void gqa_against_copied_heads(int hq, int hkv, bool causal) {
  const AttentionShape gqa{2, 150, 170, hq, hkv, 64};
  const AttentionShape mha{2, 150, 170, hq, hq, 64};
  const uint64_t seed = fresh_seed();
  const auto real = normal_inputs(gqa, seed);
  // The MHA inputs: KV head h / group copied to query head h.
  AttentionInputs copied = real;
  copied.shape = mha;
  const int64_t d = gqa.head_dim, group = hq / hkv, rows = gqa.batch * gqa.seqlen_k;
  copied.k.assign(static_cast<size_t>(rows * hq * d), 0.0f);
  copied.v.assign(copied.k.size(), 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int h = 0; h < hq; ++h)
      for (int64_t e = 0; e < d; ++e) {
        copied.k[(r * hq + h) * d + e] = real.k[(r * hkv + h / group) * d + e];
        copied.v[(r * hq + h) * d + e] = real.v[(r * hkv + h / group) * d + e];
      }
  const auto qg = quantize(real, FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerTensor);
  const auto qm = quantize(copied, FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerTensor);
  auto desc = make_desc(gqa, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
  desc.causal = causal;
  auto mha_desc = make_desc(mha, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
  mha_desc.causal = causal;
  const ForwardResult engine = run_forward(desc, gqa, qg);
  const ForwardResult ref = run_forward(mha_desc, mha, qm, {FP8ATTN_BACKEND_REFERENCE});
  const auto ref_p = low_precision_reference(mha_desc, mha, dequantize(copied, qm));
  for (float x : engine.out) ASSERT_TRUE(std::isfinite(x)) << "seed " << seed;
  const double err = max_abs_diff(engine.out, ref.out), bound = 2 * max_abs_diff(ref_p, ref.out) + 1e-3;
  std::printf("[gqa %d:%d%s] seed %llu: max|engine-ref| = %.3e, bound %.3e\n", hq, hkv, causal ? " causal" : "",
              static_cast<unsigned long long>(seed), err, bound);
  EXPECT_LE(err, bound) << "seed " << seed;
}

TEST(EngineGqa, TwoToOneMatchesCopiedHeads) { gqa_against_copied_heads(4, 2, false); }
TEST(EngineGqa, FourToOneMatchesCopiedHeads) { gqa_against_copied_heads(8, 2, true); }

}  // namespace
}  // namespace fp8attn::testing
