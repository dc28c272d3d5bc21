// The decode path (desc.decode = 1) on the CPU engine through the C ABI: GQA-packed tiles over KV
// splits merged by the combine rule. Checked against the plain forward (one split: the same
// bits), the FP64 reference backend (every split count: within twice the plain forward's own
// error plus 1e-3 on out, 1e-4 relative on the LSE), paged against contiguous (the same bits),
// batch invariance of a fixed num_splits, and bad input. Inputs: fresh N(0, 1) codes (E4M3 or
// BF16) for Q, K and V; outputs poisoned before every call (paged_support.hpp).
#include <gtest/gtest.h>

#include <algorithm>
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
  int32_t dtype = FP8ATTN_DTYPE_E4M3;
  int heads_q = 8, heads_kv = 2, head_dim = 64;
  int64_t page_size = 16;
  std::vector<int64_t> seqlen_k;
  std::vector<int64_t> seqlen_q;  ///< 1..8 per sequence (varlen queries)
  bool causal = true;
  int window_left = -1, window_right = -1;
  int sink_tokens = 0;
  int32_t softmax_variant = FP8ATTN_SOFTMAX_STANDARD;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

fp8attn_attention_desc desc_of(const Case& c, uint32_t decode, int32_t splits, bool paged) {
  fp8attn_attention_desc d{};
  d.struct_size = sizeof d;
  fp8attn_attention_desc_init(&d);
  d.input_dtype = c.dtype;
  d.output_dtype = FP8ATTN_DTYPE_F32;
  d.head_dim = c.head_dim;
  d.num_heads_q = c.heads_q;
  d.num_heads_kv = c.heads_kv;
  d.causal = c.causal;
  d.window_left = c.window_left;
  d.window_right = c.window_right;
  d.page_size = paged ? static_cast<int32_t>(c.page_size) : 0;
  d.sink_tokens = c.sink_tokens;
  d.softmax_variant = c.softmax_variant;
  d.decode = decode;
  d.num_splits = splits;
  return d;
}

/// The inputs of one case and the calls on them.
struct DecodeRun {
  Case c;
  PagedKvData kv;
  Queries q;
  int64_t longest = 0;
  std::vector<float> k_scales, v_scales;  ///< per-(token, KV head) descales of the pages, when set

  DecodeRun(const Case& cs, std::mt19937_64& rng) : c(cs) {
    PagedLayout l;
    l.page_size = c.page_size;
    l.seqlen_k = c.seqlen_k;
    kv = make_paged_kv(l, c.dtype, c.heads_kv, c.head_dim, rng);
    q = make_queries(c.dtype, c.heads_q, c.head_dim, c.seqlen_q, /*padded=*/false, rng);
    for (int64_t s : c.seqlen_k) longest = std::max(longest, s);
  }

  Outputs call(int32_t backend, uint32_t decode, int32_t splits, bool paged) {
    Outputs o;
    fp8attn_attention_args a = query_args(q, o, c.head_dim);
    fp8attn_paged_kv pkv = kv.paged();
    if (!k_scales.empty()) {
      pkv.scale_granularity = FP8ATTN_KV_SCALE_PER_TOKEN_HEAD;
      pkv.k_descale = dense_host_tensor(k_scales.data(), FP8ATTN_DTYPE_F32, {kv.num_pages, c.page_size, c.heads_kv});
      pkv.v_descale = dense_host_tensor(v_scales.data(), FP8ATTN_DTYPE_F32, {kv.num_pages, c.page_size, c.heads_kv});
    }
    if (paged) {
      a.next = &pkv;
    } else {
      const int64_t total_k = kv.cu_seqlens_k.back();
      a.k = dense_host_tensor(kv.k_packed.data(), c.dtype, {total_k, c.heads_kv, c.head_dim});
      a.v = dense_host_tensor(kv.v_packed.data(), c.dtype, {total_k, c.heads_kv, c.head_dim});
      a.cu_seqlens_k = dense_host_tensor(kv.cu_seqlens_k.data(), FP8ATTN_DTYPE_I32, {kv.batch + 1});
    }
    run_forward(backend, desc_of(c, decode, splits, paged), a, q.batch(), q.max_len(),
                paged ? kv.max_seqlen_k : longest, o);
    return o;
  }
};

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0.0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

double max_lse_diff(const std::vector<float>& a, const std::vector<float>& b, bool relative) {
  double m = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isinf(a[i]) || std::isinf(b[i])) {
      if (a[i] != b[i]) return INFINITY;  // both −inf where no key is visible
      continue;
    }
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    m = std::max(m, relative ? d / std::max(1.0, std::fabs(static_cast<double>(b[i]))) : d);
  }
  return m;
}

class DecodeCases : public ::testing::TestWithParam<Case> {};

TEST_P(DecodeCases, decode_matches_forward_and_oracle_for_every_split_count) {
  const uint64_t seed = workloads::fresh_seed();
  std::mt19937_64 rng(seed);
  DecodeRun run(GetParam(), rng);
  const Outputs forward = run.call(FP8ATTN_BACKEND_CPU, 0, 0, false);
  ASSERT_EQ(forward.status, FP8ATTN_OK) << forward.message;
  const Outputs oracle = run.call(FP8ATTN_BACKEND_REFERENCE, 0, 0, false);
  ASSERT_EQ(oracle.status, FP8ATTN_OK) << oracle.message;
  const double fwd_err = max_abs_diff(forward.out, oracle.out);
  const double fwd_lse_err = max_lse_diff(forward.lse, oracle.lse, true);
  const double bound = 2.0 * fwd_err + 1e-3, lse_bound = 2.0 * fwd_lse_err + 1e-4;
  std::string where;
  size_t split_differ = 0;
  for (int32_t splits : {1, 2, 3, 7, 16, 0}) {
    SCOPED_TRACE("num_splits " + std::to_string(splits) + ", seed " + std::to_string(seed));
    const Outputs contiguous = run.call(FP8ATTN_BACKEND_CPU, 1, splits, false);
    ASSERT_EQ(contiguous.status, FP8ATTN_OK) << contiguous.message;
    const Outputs paged = run.call(FP8ATTN_BACKEND_CPU, 1, splits, true);
    ASSERT_EQ(paged.status, FP8ATTN_OK) << paged.message;
    EXPECT_TRUE(same_bits(paged.out, contiguous.out, &where)) << "paged vs contiguous out, " << where;
    EXPECT_TRUE(same_bits(paged.lse, contiguous.lse, &where)) << "paged vs contiguous lse, " << where;
    if (splits == 1) {
      // NOTE: one split visits the forward's blocks in its order with the forward's per-row
      // arithmetic and epilogue, and packing rows changes no row's operations.
      EXPECT_TRUE(same_bits(contiguous.out, forward.out, &where)) << "one split vs forward out, " << where;
      EXPECT_TRUE(same_bits(contiguous.lse, forward.lse, &where)) << "one split vs forward lse, " << where;
    }
    // NOTE: with several splits the long sequences' rows take another path (per-split maxima,
    // the combine's weights), so their bits differ from the forward's somewhere, for some split
    // count: this shows the splits ran. (A row whose visible keys all lie in one split gets the
    // forward's bits: the combine of one part of weight 1 is exact.)
    size_t differ = 0;
    for (size_t i = 0; i < forward.out.size(); ++i) differ += contiguous.out[i] != forward.out[i];
    if (splits > 1) split_differ += differ;
    const double err = max_abs_diff(contiguous.out, oracle.out);
    const double lse_err = max_lse_diff(contiguous.lse, oracle.lse, true);
    std::printf("[%s] splits %d: max|out-oracle| %.3e (bound %.3e), LSE rel %.3e (bound %.3e), %zu outputs differ "
                "from the forward's\n", run.c.name.c_str(), splits, err, bound, lse_err, lse_bound, differ);
    EXPECT_LE(err, bound);
    EXPECT_LE(lse_err, lse_bound);
    for (float x : contiguous.out) ASSERT_TRUE(std::isfinite(x));
  }
  EXPECT_GT(split_differ, 0u) << "every num_splits gave the forward's bits";
}

std::vector<Case> cases() {
  std::vector<Case> v;
  struct Heads {
    const char* name;
    int q, kv;
  };
  const Heads heads[] = {{"gqa8to1", 16, 2}, {"gqa4to1", 8, 2}, {"mqa", 6, 1}, {"mha", 2, 2}};
  // Lengths 0, 1, and several KV blocks (longer than one split); queries 1..8.
  const std::vector<int64_t> seqlen_k = {0, 1, 9, 700, 1500, 8};
  const std::vector<int64_t> seqlen_q = {1, 2, 3, 8, 5, 8};
  for (const Heads& h : heads)
    for (int64_t page : {1, 16, 64})
      for (int32_t dtype : {FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16}) {
        if (page == 1 && dtype == FP8ATTN_DTYPE_BF16) continue;  // page 1 once per grouping is enough
        Case c;
        c.name = std::string(h.name) + "_page" + std::to_string(page) +
                 (dtype == FP8ATTN_DTYPE_E4M3 ? "_e4m3" : "_bf16") + "_causal";
        c.dtype = dtype;
        c.heads_q = h.q;
        c.heads_kv = h.kv;
        c.page_size = page;
        c.seqlen_k = seqlen_k;
        c.seqlen_q = seqlen_q;
        v.push_back(c);
      }
  Case win;
  win.name = "gqa4to1_window_300_0_causal_page16_hd128";
  win.head_dim = 128;
  win.seqlen_k = {1200, 4, 600};
  win.seqlen_q = {4, 4, 7};
  win.window_left = 300;
  win.window_right = 0;
  v.push_back(win);
  Case full;
  full.name = "gqa8to1_non_causal_window_500_2_page16";
  full.heads_q = 8;
  full.heads_kv = 1;
  full.causal = false;
  full.window_left = 500;
  full.window_right = 2;
  full.seqlen_k = {900, 3};
  full.seqlen_q = {6, 1};
  v.push_back(full);
  // Sink isolation (the sink block is slot 0 of the split grid) under the stabilized softmax.
  Case sink;
  sink.name = "gqa4to1_sink_tokens4_stabilized_page16";
  sink.seqlen_k = {1000, 3, 260};
  sink.seqlen_q = {8, 2, 1};
  sink.sink_tokens = 4;
  sink.softmax_variant = FP8ATTN_SOFTMAX_STABILIZED;
  v.push_back(sink);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Decode, DecodeCases, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

/// Per-(token, KV head) descales of an E4M3 paged cache: one split gives the plain paged
/// forward's bits; several splits stay within the bound against the reference backend.
TEST(DecodePerTokenScales, decode_paged_per_token_scales_match_forward_and_oracle) {
  const uint64_t seed = workloads::fresh_seed();
  std::mt19937_64 rng(seed);
  Case c;
  c.name = "per_token";
  c.heads_q = 8;
  c.heads_kv = 2;
  c.seqlen_k = {1300, 1, 40, 0};
  c.seqlen_q = {3, 1, 8, 2};
  DecodeRun run(c, rng);
  std::uniform_real_distribution<float> scale(0.25f, 2.0f);
  const size_t n = static_cast<size_t>(run.kv.num_pages * c.page_size * c.heads_kv);
  for (size_t i = 0; i < n; ++i) run.k_scales.push_back(scale(rng)), run.v_scales.push_back(scale(rng));
  const Outputs forward = run.call(FP8ATTN_BACKEND_CPU, 0, 0, true);
  ASSERT_EQ(forward.status, FP8ATTN_OK) << forward.message;
  const Outputs oracle = run.call(FP8ATTN_BACKEND_REFERENCE, 0, 0, true);
  ASSERT_EQ(oracle.status, FP8ATTN_OK) << oracle.message;
  const double bound = 2.0 * max_abs_diff(forward.out, oracle.out) + 1e-3;
  std::string where;
  for (int32_t splits : {1, 3, 7}) {
    SCOPED_TRACE("num_splits " + std::to_string(splits) + ", seed " + std::to_string(seed));
    const Outputs d = run.call(FP8ATTN_BACKEND_CPU, 1, splits, true);
    ASSERT_EQ(d.status, FP8ATTN_OK) << d.message;
    if (splits == 1) {
      EXPECT_TRUE(same_bits(d.out, forward.out, &where)) << where;
    }
    EXPECT_LE(max_abs_diff(d.out, oracle.out), bound);
  }
}

/// One sequence alone and at position 2 of a batch of other lengths: the same bits for a fixed
/// num_splits.
TEST(DecodeBatchInvariance, decode_fixed_num_splits_is_batch_invariant) {
  const uint64_t seed = workloads::fresh_seed();
  std::mt19937_64 rng(seed);
  for (int32_t splits : {2, 3, 7, 16}) {
    SCOPED_TRACE("num_splits " + std::to_string(splits) + ", seed " + std::to_string(seed));
    Case batch;
    batch.name = "batch";
    batch.heads_q = 8;
    batch.heads_kv = 2;
    batch.seqlen_k = {3000, 17, 1100, 0, 400};
    batch.seqlen_q = {1, 8, 4, 2, 3};
    DecodeRun big(batch, rng);
    // The lone sequence: sequence 2's keys and queries, copied out of the batch.
    Case alone = batch;
    alone.seqlen_k = {1100};
    alone.seqlen_q = {4};
    DecodeRun one(alone, rng);
    const size_t row = one.kv.row_bytes();
    const int64_t k0 = big.kv.cu_seqlens_k[2];
    std::copy(big.kv.k_packed.begin() + k0 * row, big.kv.k_packed.begin() + (k0 + 1100) * row, one.kv.k_packed.begin());
    std::copy(big.kv.v_packed.begin() + k0 * row, big.kv.v_packed.begin() + (k0 + 1100) * row, one.kv.v_packed.begin());
    const size_t q_row = static_cast<size_t>(batch.heads_q) * batch.head_dim;
    const int64_t q0 = big.q.cu_seqlens_q[2];
    std::copy(big.q.q.begin() + q0 * q_row, big.q.q.begin() + (q0 + 4) * q_row, one.q.q.begin());
    const Outputs in_batch = big.call(FP8ATTN_BACKEND_CPU, 1, splits, false);
    const Outputs lone = one.call(FP8ATTN_BACKEND_CPU, 1, splits, false);
    ASSERT_EQ(in_batch.status, FP8ATTN_OK) << in_batch.message;
    ASSERT_EQ(lone.status, FP8ATTN_OK) << lone.message;
    for (int64_t t = 0; t < 4; ++t)
      for (int h = 0; h < batch.heads_q; ++h) {
        for (int e = 0; e < batch.head_dim; ++e) {
          const float a = in_batch.out[((q0 + t) * batch.heads_q + h) * batch.head_dim + e];
          const float b = lone.out[(t * batch.heads_q + h) * batch.head_dim + e];
          ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << "token " << t << " head " << h << " dim " << e;
        }
        const float la = in_batch.lse[h * big.q.total() + q0 + t], lb = lone.lse[h * one.q.total() + t];
        ASSERT_EQ(std::memcmp(&la, &lb, sizeof la), 0) << "lse token " << t << " head " << h;
      }
  }
}

/// A fixed num_splits gives the same bits on 1 and 3 threads (each tile is one worker's).
TEST(DecodeThreadInvariance, decode_fixed_num_splits_is_thread_invariant) {
  const uint64_t seed = workloads::fresh_seed();
  std::mt19937_64 rng(seed);
  Case c;
  c.seqlen_k = {2000, 5, 900};
  c.seqlen_q = {2, 1, 8};
  DecodeRun run(c, rng);
  for (int32_t splits : {3, 16}) {
    Outputs one, three;
    for (auto [threads, o] : {std::pair{1, &one}, std::pair{3, &three}}) {
      fp8attn_attention_args a = query_args(run.q, *o, c.head_dim);
      fp8attn_paged_kv pkv = run.kv.paged();
      a.next = &pkv;
      run_forward(FP8ATTN_BACKEND_CPU, desc_of(c, 1, splits, true), a, run.q.batch(), run.q.max_len(),
                  run.kv.max_seqlen_k, *o, threads);
      ASSERT_EQ(o->status, FP8ATTN_OK) << o->message;
    }
    std::string where;
    EXPECT_TRUE(same_bits(one.out, three.out, &where)) << "num_splits " << splits << ", " << where << ", seed " << seed;
    EXPECT_TRUE(same_bits(one.lse, three.lse, &where)) << "num_splits " << splits << ", " << where;
  }
}

/// Status of a plan with the given decode fields; the message in `message`.
int32_t plan_status(uint32_t decode, int32_t splits, int32_t backend, std::string* message) {
  fp8attn_error err{};
  err.struct_size = sizeof err;
  fp8attn_context_options opt{};
  opt.struct_size = sizeof opt;
  opt.backend = backend;
  opt.num_threads = 1;
  fp8attn_context ctx = nullptr;
  int32_t st = fp8attn_context_create(&opt, &ctx, &err);
  if (st != FP8ATTN_OK) return -st;
  Case c;
  fp8attn_attention_desc d = desc_of(c, decode, splits, false);
  fp8attn_plan plan = nullptr;
  st = fp8attn_plan_create(ctx, &d, &plan, &err);
  *message = err.message;
  fp8attn_plan_destroy(plan);
  fp8attn_context_destroy(ctx);
  return st;
}

TEST(DecodeBadInput, decode_refuses_bad_fields_with_specific_status) {
  std::string m;
  EXPECT_EQ(plan_status(1, -1, FP8ATTN_BACKEND_CPU, &m), FP8ATTN_STATUS_BAD_OPTION);
  EXPECT_NE(m.find("num_splits"), std::string::npos) << m;
  EXPECT_EQ(plan_status(1, 257, FP8ATTN_BACKEND_CPU, &m), FP8ATTN_STATUS_BAD_OPTION);
  EXPECT_EQ(plan_status(1, 256, FP8ATTN_BACKEND_CPU, &m), FP8ATTN_OK) << m;
  EXPECT_EQ(plan_status(0, 4, FP8ATTN_BACKEND_CPU, &m), FP8ATTN_STATUS_BAD_OPTION);
  EXPECT_NE(m.find("decode"), std::string::npos) << m;
  EXPECT_EQ(plan_status(2, 0, FP8ATTN_BACKEND_CPU, &m), FP8ATTN_STATUS_BAD_OPTION);
  // The emulator runs the decode kernels (test_decode_emulated.cpp) and refuses bad fields alike.
  // (A negative status: this build has no emulator context, and there is nothing to check.)
  const int32_t emu = plan_status(1, 2, FP8ATTN_BACKEND_EMULATOR, &m);
  std::printf("emulator decode plan: status %d, %s\n", emu, m.c_str());
  if (emu >= 0) {
    EXPECT_EQ(emu, FP8ATTN_OK) << m;
    EXPECT_EQ(plan_status(1, 257, FP8ATTN_BACKEND_EMULATOR, &m), FP8ATTN_STATUS_BAD_OPTION);
    EXPECT_EQ(plan_status(0, 0, FP8ATTN_BACKEND_EMULATOR, &m), FP8ATTN_OK) << m;
  }
}

TEST(DecodeBadInput, decode_refuses_more_than_eight_queries_and_leaves_outputs) {
  const uint64_t seed = workloads::fresh_seed();
  std::mt19937_64 rng(seed);
  Case c;
  c.seqlen_k = {100, 50};
  c.seqlen_q = {9, 1};
  DecodeRun run(c, rng);
  for (bool paged : {false, true}) {
    const Outputs o = run.call(FP8ATTN_BACKEND_CPU, 1, 2, paged);
    EXPECT_EQ(o.status, FP8ATTN_STATUS_BAD_SHAPE) << o.message;
    EXPECT_NE(o.message.find("FP8ATTN_MAX_DECODE_Q_LEN"), std::string::npos) << o.message;
    EXPECT_TRUE(o.untouched());
    // The reference backend refuses it alike.
    const Outputs r = run.call(FP8ATTN_BACKEND_REFERENCE, 1, 2, paged);
    EXPECT_EQ(r.status, FP8ATTN_STATUS_BAD_SHAPE) << r.message;
    EXPECT_TRUE(r.untouched());
  }
}

TEST(DecodeDescInit, decode_defaults_are_off) {
  fp8attn_attention_desc d;
  std::memset(&d, 0x5A, sizeof d);
  d.struct_size = sizeof d;
  ASSERT_EQ(fp8attn_attention_desc_init(&d), FP8ATTN_OK);
  EXPECT_EQ(d.decode, 0u);
  EXPECT_EQ(d.num_splits, 0);
}

}  // namespace
}  // namespace fp8attn::paged_test
