// The paged KV cache through the C ABI on the CPU engine and the FP64 reference: a paged run is
// bit-equal (out and LSE) to the contiguous run of the same K and V, with the pages in a shuffled
// order, unused slots holding NaN codes, a block table whose row stride exceeds its row, and
// every mask, layout and head grouping the contiguous forward takes. Fresh random inputs; outputs
// poisoned before every call.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tests/attention/paged_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::paged_test {
namespace {

struct Case {
  std::string name;
  int32_t dtype = FP8ATTN_DTYPE_E4M3;  ///< Q's; K and V's is kv_dtype (0: the same)
  int32_t kv_dtype = 0;
  int heads_q = 4, heads_kv = 2, head_dim = 64;
  PagedLayout layout;
  std::vector<int64_t> seqlen_q;  ///< padded: one length for all
  bool padded = true;
  bool causal = false;
  int window_left = -1, window_right = -1;
  int sink_tokens = 0;
  int32_t softmax_variant = FP8ATTN_SOFTMAX_STANDARD;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

fp8attn_attention_desc desc_of(const Case& c) {
  fp8attn_attention_desc d{};
  d.struct_size = sizeof d;
  fp8attn_attention_desc_init(&d);
  d.input_dtype = c.dtype;
  d.kv_dtype = c.kv_dtype;
  d.output_dtype = FP8ATTN_DTYPE_F32;
  d.head_dim = c.head_dim;
  d.num_heads_q = c.heads_q;
  d.num_heads_kv = c.heads_kv;
  d.causal = c.causal;
  d.window_left = c.window_left;
  d.window_right = c.window_right;
  d.sink_tokens = c.sink_tokens;
  d.softmax_variant = c.softmax_variant;
  return d;
}

/// Runs the case paged and contiguous (packed K and V with cu_seqlens_k) on `backend`.
void expect_paged_equals_contiguous(const Case& c, int32_t backend, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int32_t kv_dtype = c.kv_dtype == 0 ? c.dtype : c.kv_dtype;
  PagedKvData kv = make_paged_kv(c.layout, kv_dtype, c.heads_kv, c.head_dim, rng);
  std::vector<int64_t> seqlen_q = c.seqlen_q;
  if (c.padded) seqlen_q.assign(static_cast<size_t>(kv.batch), c.seqlen_q[0]);
  Queries q = make_queries(c.dtype, c.heads_q, c.head_dim, seqlen_q, c.padded, rng);

  fp8attn_attention_desc paged_desc = desc_of(c);
  paged_desc.page_size = static_cast<int32_t>(c.layout.page_size);
  Outputs paged;
  fp8attn_attention_args pa = query_args(q, paged, c.head_dim);
  fp8attn_paged_kv pkv = kv.paged();
  pa.next = &pkv;
  run_forward(backend, paged_desc, pa, q.batch(), q.max_len(), kv.max_seqlen_k, paged);
  ASSERT_EQ(paged.status, FP8ATTN_OK) << paged.message << " (seed " << seed << ")";

  Queries packed_q = q;
  packed_q.padded = false;
  Outputs contiguous;
  fp8attn_attention_args ca = query_args(packed_q, contiguous, c.head_dim);
  const int64_t total_k = kv.cu_seqlens_k.back();
  ca.k = dense_host_tensor(kv.k_packed.data(), kv_dtype, {total_k, c.heads_kv, c.head_dim});
  ca.v = dense_host_tensor(kv.v_packed.data(), kv_dtype, {total_k, c.heads_kv, c.head_dim});
  ca.cu_seqlens_k = dense_host_tensor(kv.cu_seqlens_k.data(), FP8ATTN_DTYPE_I32, {kv.batch + 1});
  int64_t longest = 0;
  for (int64_t s : c.layout.seqlen_k) longest = std::max(longest, s);
  run_forward(backend, desc_of(c), ca, q.batch(), q.max_len(), longest, contiguous);
  ASSERT_EQ(contiguous.status, FP8ATTN_OK) << contiguous.message;

  std::string where;
  EXPECT_TRUE(same_bits(paged.out, contiguous.out, &where)) << "out, " << where << " (seed " << seed << ")";
  EXPECT_TRUE(same_bits(paged.lse, contiguous.lse, &where)) << "lse, " << where << " (seed " << seed << ")";
  // NOTE: a row that sees no key writes zeros; every other output is finite (the NaN codes of the
  // unused slots were never read).
  for (float x : paged.out) ASSERT_TRUE(std::isfinite(x)) << "seed " << seed;
}

class PagedBitEqual : public ::testing::TestWithParam<Case> {};

TEST_P(PagedBitEqual, CpuEngineMatchesContiguousRun) {
  const uint64_t seed = workloads::fresh_seed();
  std::printf("[%s] seed %llu\n", GetParam().name.c_str(), static_cast<unsigned long long>(seed));
  expect_paged_equals_contiguous(GetParam(), FP8ATTN_BACKEND_CPU, seed);
}

TEST_P(PagedBitEqual, ReferenceBackendMatchesContiguousRun) {
  const uint64_t seed = workloads::fresh_seed();
  expect_paged_equals_contiguous(GetParam(), FP8ATTN_BACKEND_REFERENCE, seed);
}

std::vector<Case> cases() {
  std::vector<Case> v;
  // Every page size, with sequences of 0, 1, page − 1, page, page + 1 and several pages' keys.
  for (int64_t ps : {1, 3, 16, 64, 128, 816})
    for (bool causal : {false, true}) {
      Case c;
      c.name = "e4m3_page" + std::to_string(ps) + (causal ? "_causal" : "");
      c.layout.page_size = ps;
      c.layout.seqlen_k = {0, 1, ps - 1, ps, ps + 1, 3 * ps + 5};
      c.seqlen_q = {5};
      c.causal = causal;
      v.push_back(c);
    }
  Case bf16;
  bf16.name = "bf16_hd128_page16_causal";
  bf16.dtype = FP8ATTN_DTYPE_BF16;
  bf16.head_dim = 128;
  bf16.layout.seqlen_k = {200, 17, 64};
  bf16.seqlen_q = {33};
  bf16.causal = true;
  v.push_back(bf16);
  Case mixed = bf16;
  mixed.name = "bf16_q_over_e4m3_cache_page16_causal";
  mixed.kv_dtype = FP8ATTN_DTYPE_E4M3;
  v.push_back(mixed);
  // Causal chunked prefill under GQA 8:1, packed queries shorter than the keys in use.
  Case gqa;
  gqa.name = "e4m3_hd128_gqa8to1_chunked_prefill_varlen_q";
  gqa.heads_q = 8;
  gqa.heads_kv = 1;
  gqa.head_dim = 128;
  gqa.layout.page_size = 16;
  gqa.layout.seqlen_k = {300, 77, 129, 5};
  gqa.seqlen_q = {40, 77, 1, 0};
  gqa.padded = false;
  gqa.causal = true;
  v.push_back(gqa);
  Case win;
  win.name = "e4m3_window_40_3_causal_page64";
  win.layout.page_size = 64;
  win.layout.seqlen_k = {500, 260};
  win.seqlen_q = {70};
  win.causal = true;
  win.window_left = 40;
  win.window_right = 3;
  v.push_back(win);
  Case win2 = win;
  win2.name = "bf16_window_100_20_page3";
  win2.dtype = FP8ATTN_DTYPE_BF16;
  win2.causal = false;
  win2.window_left = 100;
  win2.window_right = 20;
  win2.layout.page_size = 3;
  v.push_back(win2);
  Case share;
  share.name = "e4m3_prefix_sharing_page16";
  share.layout.seqlen_k = {100, 150, 40};
  share.layout.shared_pages = 5;
  share.seqlen_q = {20};
  share.causal = true;
  v.push_back(share);
  Case col;
  col.name = "e4m3_column_major_block_table_mqa";
  col.heads_q = 3;
  col.heads_kv = 1;
  col.layout.page_size = 7;
  col.layout.seqlen_k = {50, 90, 1};
  col.layout.transposed_table = true;
  col.layout.max_seqlen_k = 400;  // a loose bound: more workspace, the same result
  col.seqlen_q = {9};
  v.push_back(col);
  Case sink;
  sink.name = "e4m3_sink_tokens4_stabilized_page16";
  sink.layout.seqlen_k = {300, 45};
  sink.seqlen_q = {64};
  sink.sink_tokens = 4;
  sink.softmax_variant = FP8ATTN_SOFTMAX_STABILIZED;
  v.push_back(sink);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Paged, PagedBitEqual, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

TEST(PagedDescInit, DefaultsAreNotPagedAndInputDtype) {
  fp8attn_attention_desc d;
  std::memset(&d, 0x5A, sizeof d);
  d.struct_size = sizeof d;
  ASSERT_EQ(fp8attn_attention_desc_init(&d), FP8ATTN_OK);
  EXPECT_EQ(d.page_size, 0);
  EXPECT_EQ(d.kv_dtype, 0);
}

}  // namespace
}  // namespace fp8attn::paged_test
