// The decode path's FP32 tile (desc.accumulator_model = FP8ATTN_ACCUMULATOR_FP32 with
// desc.decode = 1: lib/attention/engine/decode_fp32.cpp), which streams each K and V row once per
// KV group. Checked against the FP64 reference backend within the decode bound of
// test_decode_forward.cpp (twice the plain FP32 forward's own error plus 1e-3 on out, 1e-4
// relative on the LSE) for every split count, paged against contiguous (the same bits), and every
// vector-ISA build of the tile against the portable one (the same bits; in process, through the
// engine, since FP8ATTN_CPU_ISA steers the library's copy only at start-up). Inputs: fresh N(0, 1)
// codes, seed printed; outputs poisoned before every call (paged_support.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "lib/attention/attention_config.hpp"
#include "lib/attention/attention_problem.hpp"
#include "lib/attention/engine/decode_engine.hpp"
#include "lib/attention/engine/decode_fp32.hpp"
#include "lib/core/error.hpp"
#include "lib/core/thread_pool.hpp"
#include "lib/cpu_isa/cpu_isa.hpp"
#include "tests/attention/paged_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::paged_test {
namespace {

/// The avx512bf16 level's E4M3 products on vdpbf16ps in every test here, whatever this CPU's
/// measured choice (bf16_dot_products_active): the comparisons of the levels then cover them on
/// every CPU that has the instruction. The FMAs' form is the avx512 level's.
class Bf16DotProductsOn : public ::testing::Environment {
 public:
  void SetUp() override { set_bf16_dot_products(Bf16DotChoice::kOn); }
  void TearDown() override { set_bf16_dot_products(Bf16DotChoice::kMeasure); }
};
[[maybe_unused]] ::testing::Environment* const kBf16DotProductsOn =
    ::testing::AddGlobalTestEnvironment(new Bf16DotProductsOn);

struct Fp32Case {
  std::string name;
  int32_t dtype = FP8ATTN_DTYPE_E4M3;
  int heads_q = 16, heads_kv = 2, head_dim = 128;
  int64_t page_size = 16;
  std::vector<int64_t> seqlen_k, seqlen_q;
  bool causal = true;
  int window_left = -1, window_right = -1, sink_tokens = 0;
  int32_t softmax_variant = FP8ATTN_SOFTMAX_STANDARD;
};

void PrintTo(const Fp32Case& c, std::ostream* os) { *os << c.name; }

fp8attn_attention_desc fp32_desc(const Fp32Case& c, uint32_t decode, int32_t splits, bool paged) {
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
  d.accumulator_model = FP8ATTN_ACCUMULATOR_FP32;
  d.telemetry = 1;
  return d;
}

struct Fp32Run {
  Fp32Case c;
  PagedKvData kv;
  Queries q;
  int64_t longest = 0;

  Fp32Run(const Fp32Case& cs, std::mt19937_64& rng) : c(cs) {
    PagedLayout l;
    l.page_size = c.page_size;
    l.seqlen_k = c.seqlen_k;
    kv = make_paged_kv(l, c.dtype, c.heads_kv, c.head_dim, rng);
    q = make_queries(c.dtype, c.heads_q, c.head_dim, c.seqlen_q, /*padded=*/false, rng);
    for (int64_t s : c.seqlen_k) longest = std::max(longest, s);
  }

  /// The args over the paged cache (paged) or the same K and V packed; `pkv` must outlive them.
  fp8attn_attention_args args(Outputs& o, fp8attn_paged_kv& pkv, bool paged) {
    fp8attn_attention_args a = query_args(q, o, c.head_dim);
    pkv = kv.paged();
    if (paged) {
      a.next = &pkv;
    } else {
      const int64_t total_k = kv.cu_seqlens_k.back();
      a.k = dense_host_tensor(kv.k_packed.data(), c.dtype, {total_k, c.heads_kv, c.head_dim});
      a.v = dense_host_tensor(kv.v_packed.data(), c.dtype, {total_k, c.heads_kv, c.head_dim});
      a.cu_seqlens_k = dense_host_tensor(kv.cu_seqlens_k.data(), FP8ATTN_DTYPE_I32, {kv.batch + 1});
    }
    return a;
  }

  Outputs call(int32_t backend, uint32_t decode, int32_t splits, bool paged) {
    Outputs o;
    fp8attn_paged_kv pkv{};
    const fp8attn_attention_args a = args(o, pkv, paged);
    run_forward(backend, fp32_desc(c, decode, splits, paged), a, q.batch(), q.max_len(),
                paged ? kv.max_seqlen_k : longest, o);
    return o;
  }

  /// The decode engine in this process (the ISA choice of set_active_cpu_isa applies), paged.
  Outputs engine_call(int32_t splits, fp8attn_telemetry* telemetry) {
    Outputs o;
    fp8attn_paged_kv pkv{};
    const fp8attn_attention_args a = args(o, pkv, true);
    const AttentionConfig config = make_attention_config(fp32_desc(c, 1, splits, true));
    const AttentionProblem problem = make_attention_problem(config, a, FP8ATTN_DEVICE_HOST);
    EXPECT_TRUE(engine::decode_fp32_applies(config, problem)) << "the FP32 tile does not take this case";
    ThreadPool pool(2);
    std::vector<unsigned char> ws(
        engine::decode_engine_workspace_size(config, pool.size(), q.batch(), q.max_len(), kv.max_seqlen_k) + 1, 0xA5);
    AttentionProblem with_telemetry = problem;
    with_telemetry.telemetry = telemetry;
    try {
      engine::decode_engine_forward(config, with_telemetry, pool, ws.data());
      o.status = FP8ATTN_OK;
    } catch (const Error& e) {  // NUMERICS: the outputs are written and hold a NaN or an inf
      o.status = e.status();
      o.message = e.what();
    }
    return o;
  }
};

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0.0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

double max_lse_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isinf(a[i]) || std::isinf(b[i])) {
      if (a[i] != b[i]) return INFINITY;  // both −inf where no key is visible
      continue;
    }
    m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]) / std::max(1.0, std::fabs(static_cast<double>(b[i]))));
  }
  return m;
}

std::vector<Fp32Case> fp32_cases() {
  std::vector<Fp32Case> v;
  // GQA 8:1 (the fast path's 8-row groups), 4:1 and 3:1 (its 4-row and ragged groups), MHA; KV
  // lengths 0, 1 and several blocks; 1..8 queries per sequence.
  struct Heads {
    const char* name;
    int q, kv;
  };
  // MHA over 10 KV heads: two work items per split (8 KV heads, then 2).
  const Heads heads[] = {{"gqa8to1", 16, 2}, {"gqa4to1", 8, 2}, {"gqa3to1", 3, 1}, {"mha", 2, 2}, {"mha10", 10, 10}};
  for (const Heads& h : heads)
    for (int32_t dtype : {FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16}) {
      Fp32Case c;
      c.name = std::string(h.name) + (dtype == FP8ATTN_DTYPE_E4M3 ? "_e4m3" : "_bf16") + "_causal_page16_hd128";
      c.dtype = dtype;
      c.heads_q = h.q;
      c.heads_kv = h.kv;
      c.seqlen_k = {0, 1, 9, 700, 1500, 8};
      c.seqlen_q = {1, 2, 3, 8, 5, 8};
      v.push_back(c);
    }
  Fp32Case win;
  win.name = "gqa4to1_window_300_0_page1_hd64";
  win.heads_q = 8;
  win.head_dim = 64;
  win.page_size = 1;
  win.seqlen_k = {1200, 4, 600};
  win.seqlen_q = {4, 4, 7};
  win.window_left = 300;
  win.window_right = 0;
  v.push_back(win);
  Fp32Case sink;
  sink.name = "gqa8to1_sink_tokens4_stabilized_non_causal_page64_hd256";
  sink.heads_q = 8;
  sink.heads_kv = 1;
  sink.head_dim = 256;
  sink.page_size = 64;
  sink.causal = false;
  sink.seqlen_k = {1000, 3, 260};
  sink.seqlen_q = {8, 2, 1};
  sink.sink_tokens = 4;
  sink.softmax_variant = FP8ATTN_SOFTMAX_STABILIZED;
  v.push_back(sink);
  return v;
}

class DecodeFp32Cases : public ::testing::TestWithParam<Fp32Case> {};

TEST_P(DecodeFp32Cases, decode_fp32_matches_oracle_for_every_split_count) {
  const uint64_t seed = workloads::fresh_seed();
  std::mt19937_64 rng(seed);
  Fp32Run run(GetParam(), rng);
  const Outputs forward = run.call(FP8ATTN_BACKEND_CPU, 0, 0, false);
  ASSERT_EQ(forward.status, FP8ATTN_OK) << forward.message;
  const Outputs oracle = run.call(FP8ATTN_BACKEND_REFERENCE, 0, 0, false);
  ASSERT_EQ(oracle.status, FP8ATTN_OK) << oracle.message;
  const double bound = 2.0 * max_abs_diff(forward.out, oracle.out) + 1e-3;
  const double lse_bound = 2.0 * max_lse_rel_diff(forward.lse, oracle.lse) + 1e-4;
  std::string where;
  for (int32_t splits : {1, 2, 3, 7, 16, 0}) {
    SCOPED_TRACE("num_splits " + std::to_string(splits) + ", seed " + std::to_string(seed));
    const Outputs contiguous = run.call(FP8ATTN_BACKEND_CPU, 1, splits, false);
    ASSERT_EQ(contiguous.status, FP8ATTN_OK) << contiguous.message;
    const Outputs paged = run.call(FP8ATTN_BACKEND_CPU, 1, splits, true);
    ASSERT_EQ(paged.status, FP8ATTN_OK) << paged.message;
    EXPECT_TRUE(same_bits(paged.out, contiguous.out, &where)) << "paged vs contiguous out, " << where;
    EXPECT_TRUE(same_bits(paged.lse, contiguous.lse, &where)) << "paged vs contiguous lse, " << where;
    const double err = max_abs_diff(paged.out, oracle.out), lse_err = max_lse_rel_diff(paged.lse, oracle.lse);
    std::printf("[%s] splits %d: max|out-oracle| %.3e (bound %.3e), LSE rel %.3e (bound %.3e)\n",
                run.c.name.c_str(), splits, err, bound, lse_err, lse_bound);
    EXPECT_LE(err, bound);
    EXPECT_LE(lse_err, lse_bound);
    for (float x : paged.out) ASSERT_TRUE(std::isfinite(x));
  }
}

INSTANTIATE_TEST_SUITE_P(DecodeFp32, DecodeFp32Cases, ::testing::ValuesIn(fp32_cases()),
                         [](const auto& info) { return info.param.name; });

/// The AVX2 and AVX-512 builds of the FP32 decode tile give the portable build's bits: out, LSE
/// and the telemetry, on E4M3 and BF16, for one split and several.
TEST(DecodeFp32Isa, decode_fp32_every_isa_build_gives_the_portable_bits) {
  const CpuIsa best = best_cpu_isa();
  if (best == CpuIsa::kBaseline) GTEST_SKIP() << "one engine build only (FP8ATTN_NATIVE or not x86-64)";
  const uint64_t seed = workloads::fresh_seed();
  std::mt19937_64 rng(seed);
  const std::vector<Fp32Case> cases = fp32_cases();
  for (const Fp32Case& c : {cases[0], cases[3], cases.back()}) {
    Fp32Run run(c, rng);
    for (int32_t splits : {1, 3}) {
      ASSERT_TRUE(set_active_cpu_isa(CpuIsa::kBaseline));
      fp8attn_telemetry base_t{};
      base_t.struct_size = sizeof base_t;
      const Outputs base = run.engine_call(splits, &base_t);
      for (CpuIsa isa : {CpuIsa::kAvx2, CpuIsa::kAvx512, CpuIsa::kAvx512Bf16}) {
        if (static_cast<int>(isa) > static_cast<int>(best)) continue;
        const std::string where = c.name + ", " + cpu_isa_name(isa) + " vs baseline, num_splits " +
                                  std::to_string(splits) + ", seed " + std::to_string(seed);
        ASSERT_TRUE(set_active_cpu_isa(isa));
        fp8attn_telemetry t{};
        t.struct_size = sizeof t;
        const Outputs r = run.engine_call(splits, &t);
        std::string diff;
        EXPECT_TRUE(same_bits(base.out, r.out, &diff)) << where << ": " << diff;
        EXPECT_TRUE(same_bits(base.lse, r.lse, &diff)) << where << ": " << diff;
        EXPECT_EQ(base_t.p_positive, t.p_positive) << where;
        EXPECT_EQ(base_t.p_underflow, t.p_underflow) << where;
        EXPECT_EQ(base_t.max_abs_scaled_logit, t.max_abs_scaled_logit) << where;
        std::printf("%s: %s bit-equal to baseline (p_positive %llu)\n", where.c_str(), cpu_isa_name(isa),
                    static_cast<unsigned long long>(t.p_positive));
      }
    }
  }
  set_active_cpu_isa(best);
}

/// An E4M3 NaN code in one key's K row, or in its V row, reaches exactly the query rows that see
/// that key, with one split and with several (a split's NaN partial poisons the merge,
/// sm90::partial_row_lse). The keys' and the values' FP16 routes have no NaN, so a
/// chunk holding one takes the exact decode; every ISA build gives the same bits.
void expect_nan_code_reaches_its_rows(bool in_values) {
  const uint64_t seed = workloads::fresh_seed();
  std::mt19937_64 rng(seed);
  Fp32Case c = fp32_cases()[0];  // GQA 8:1, E4M3, causal, 16 query heads over 2 KV heads
  c.seqlen_k = {700, 40};
  c.seqlen_q = {1, 2};
  Fp32Run run(c, rng);
  // Key 300 of sequence 0, KV head 1, element 17 (of K) or 45 (of V): visible to sequence 0's one
  // query.
  const int64_t key = 300;
  const int64_t page = run.kv.entry(0, key / c.page_size);
  std::vector<uint8_t>& cache = in_values ? run.kv.v_cache : run.kv.k_cache;
  cache[static_cast<size_t>(((page * c.page_size + key % c.page_size) * c.heads_kv + 1) * c.head_dim +
                            (in_values ? 45 : 17))] = 0xFF;
  const int group = c.heads_q / c.heads_kv;
  std::map<int32_t, Outputs> base;  // per split count
  for (CpuIsa isa : {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512, CpuIsa::kAvx512Bf16}) {
    if (static_cast<int>(isa) > static_cast<int>(best_cpu_isa())) continue;
    ASSERT_TRUE(set_active_cpu_isa(isa));
    for (int32_t splits : {1, 3}) {
      const std::string where = std::string(in_values ? "V" : "K") + ", " + cpu_isa_name(isa) + ", num_splits " +
                                std::to_string(splits) + ", seed " + std::to_string(seed);
      const Outputs r = run.engine_call(splits, nullptr);
      EXPECT_EQ(r.status, FP8ATTN_STATUS_NUMERICS) << where << ": " << r.message;
      // Sequence 0 is token 0 of the packed output; sequence 1 holds tokens 1 and 2. A NaN in K
      // poisons every element of its rows (through the row's max and sum); one in V, at least
      // its own element of each row (the others through the row sum only when P is NaN).
      for (int64_t token = 0; token < 3; ++token)
        for (int h = 0; h < c.heads_q; ++h) {
          const bool sees_nan = token == 0 && h / group == 1;
          for (int e = 0; e < c.head_dim; ++e) {
            const float x = r.out[static_cast<size_t>((token * c.heads_q + h) * c.head_dim + e)];
            if (!sees_nan) {
              ASSERT_TRUE(std::isfinite(x)) << where << ": token " << token << ", head " << h << ", element " << e;
            } else if (!in_values || e == 45) {
              ASSERT_TRUE(std::isnan(x)) << where << ": token " << token << ", head " << h << ", element " << e;
            }
          }
        }
      if (isa == CpuIsa::kBaseline) {
        base[splits] = r;
        continue;
      }
      std::string diff;
      EXPECT_TRUE(same_bits(base[splits].out, r.out, &diff)) << where << " vs baseline: " << diff;
      EXPECT_TRUE(same_bits(base[splits].lse, r.lse, &diff)) << where << " vs baseline: " << diff;
    }
  }
  set_active_cpu_isa(best_cpu_isa());
}

TEST(DecodeFp32Nan, decode_fp32_nan_key_code_reaches_its_rows_in_every_isa_build) {
  expect_nan_code_reaches_its_rows(false);
}

TEST(DecodeFp32Nan, decode_fp32_nan_value_code_reaches_its_rows_in_every_isa_build) {
  expect_nan_code_reaches_its_rows(true);
}

/// Every ISA build above the baseline that this CPU has gives `base`'s bits (out, and the LSE when
/// `lse`) for the same call, in process (set_active_cpu_isa).
void expect_every_isa_build_matches(Fp32Run& run, int32_t splits, const Outputs& base, bool lse, uint64_t seed) {
  for (CpuIsa isa : {CpuIsa::kAvx2, CpuIsa::kAvx512, CpuIsa::kAvx512Bf16}) {
    if (static_cast<int>(isa) > static_cast<int>(best_cpu_isa())) continue;
    ASSERT_TRUE(set_active_cpu_isa(isa));
    const Outputs r = run.engine_call(splits, nullptr);
    const std::string where =
        std::string(cpu_isa_name(isa)) + " vs baseline, num_splits " + std::to_string(splits) + ", seed " +
        std::to_string(seed);
    std::string diff;
    EXPECT_TRUE(same_bits(base.out, r.out, &diff)) << where << ": " << diff;
    if (lse) {
      EXPECT_TRUE(same_bits(base.lse, r.lse, &diff)) << where << ": " << diff;
    }
  }
}

/// An E4M3 NaN code in one query head's Q row poisons exactly that row (out and LSE), and every
/// ISA build gives the baseline's bits, NaNs included. (AVX512-BF16 leaves such an item, and a
/// chunk whose P holds a NaN, on the FMAs; on the Zen 4 measured, vdpbf16ps propagates the same
/// NaN bits as the FMAs, so this test passes with or without that guard.)
TEST(DecodeFp32Nan, decode_fp32_nan_query_code_poisons_its_row_in_every_isa_build) {
  const uint64_t seed = workloads::fresh_seed();
  std::mt19937_64 rng(seed);
  Fp32Case c = fp32_cases()[0];  // GQA 8:1, E4M3, 16 query heads over 2 KV heads
  c.seqlen_k = {700, 40};
  c.seqlen_q = {1, 2};
  Fp32Run run(c, rng);
  const int nan_head = 11, nan_token = 0;  // sequence 0's query, KV head 1
  run.q.q[static_cast<size_t>((nan_token * c.heads_q + nan_head) * c.head_dim + 5)] = 0x7F;
  for (int32_t splits : {1, 3}) {
    ASSERT_TRUE(set_active_cpu_isa(CpuIsa::kBaseline));
    const Outputs base = run.engine_call(splits, nullptr);
    EXPECT_EQ(base.status, FP8ATTN_STATUS_NUMERICS) << base.message;
    for (int64_t token = 0; token < 3; ++token)
      for (int h = 0; h < c.heads_q; ++h) {
        const bool poisoned = token == nan_token && h == nan_head;
        for (int e = 0; e < c.head_dim; ++e)
          ASSERT_EQ(std::isnan(base.out[static_cast<size_t>((token * c.heads_q + h) * c.head_dim + e)]), poisoned)
              << "token " << token << ", head " << h << ", element " << e << ", seed " << seed;
      }
    expect_every_isa_build_matches(run, splits, base, true, seed);
  }
  set_active_cpu_isa(best_cpu_isa());
}

/// O rescaled into FP32 subnormals, which AVX512-BF16's vdpbf16ps would read as 0
/// (decode_fp32_bf16_avx512.hpp): the tile keeps that head's P·V on the FMAs for the block, and
/// every ISA build gives the portable bits. The logits are set through dim 0 alone (Q 32 there,
/// every other K dim 0): in the last block (the first one visited), key 449 has logit 64 and key
/// 450 logit 0, so 450's V (E4M3's least value, random signs, every other V 0 there) leaves O
/// near 2^-9 · 2^-8; key 400, two blocks of 224 before, has logit 1024, and O's rescale by
/// 2^((64 − 1024) · log2 e / sqrt(128)) ≈ 2^-122 makes it subnormal. Key 400's V is 0 in dims
/// 0-15, so those stay subnormal to the output (asserted: the case is exercised).
TEST(DecodeFp32Subnormal, decode_fp32_o_rescaled_into_subnormals_gives_the_portable_bits) {
  const uint64_t seed = workloads::fresh_seed();
  std::mt19937_64 rng(seed);
  Fp32Case c = fp32_cases()[0];  // GQA 8:1, E4M3, 16 query heads over 2 KV heads, head_dim 128
  c.seqlen_k = {600};
  c.seqlen_q = {1};
  Fp32Run run(c, rng);
  auto kv_at = [&](int64_t key, int head, int e) {
    const int64_t page = run.kv.entry(0, key / c.page_size);
    return static_cast<size_t>(((page * c.page_size + key % c.page_size) * c.heads_kv + head) * c.head_dim + e);
  };
  const uint8_t e4m3_zero = 0x00, e4m3_least = 0x01, e4m3_2 = 0x40, e4m3_32 = 0x60;
  for (int head = 0; head < c.heads_q; ++head) run.q.q[static_cast<size_t>(head) * c.head_dim] = e4m3_32;
  std::bernoulli_distribution negative(0.5);
  for (int head = 0; head < c.heads_kv; ++head)
    for (int64_t key = 0; key < c.seqlen_k[0]; ++key)
      for (int e = 0; e < c.head_dim; ++e) {
        uint8_t& k = run.kv.k_cache[kv_at(key, head, e)];
        uint8_t& v = run.kv.v_cache[kv_at(key, head, e)];
        k = e != 0 ? e4m3_zero : key == 449 ? e4m3_2 : key == 400 ? e4m3_32 : e4m3_zero;
        if (key == 450) v = static_cast<uint8_t>(e4m3_least | (negative(rng) ? 0x80 : 0x00));
        else if (key != 400 || e < 16) v = e4m3_zero;  // key 400's dims 16+ keep their random codes
      }
  int subnormals = 0;
  for (int32_t splits : {1, 3}) {
    ASSERT_TRUE(set_active_cpu_isa(CpuIsa::kBaseline));
    const Outputs base = run.engine_call(splits, nullptr);
    ASSERT_EQ(base.status, FP8ATTN_OK) << base.message;
    for (float x : base.out) subnormals += (x != 0.0f && std::fabs(x) < 0x1p-126f) ? 1 : 0;
    expect_every_isa_build_matches(run, splits, base, true, seed);
  }
  set_active_cpu_isa(best_cpu_isa());
  std::printf("subnormal outputs (both split counts): %d, seed %llu\n", subnormals,
              static_cast<unsigned long long>(seed));
  EXPECT_GT(subnormals, 0) << "no subnormal reached the output: the case does not exercise the rescale, seed " << seed;
}

}  // namespace
}  // namespace fp8attn::paged_test
