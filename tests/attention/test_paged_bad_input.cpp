// Every refusal of a paged forward, on the CPU and reference backends: the status, a message that
// names the field, and out and lse still holding their poison. Each test starts from a valid call
// (checked to succeed) and breaks one thing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/attention/paged_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::paged_test {
namespace {

constexpr int32_t kBackends[] = {FP8ATTN_BACKEND_CPU, FP8ATTN_BACKEND_REFERENCE};

/// A valid paged call: E4M3, head_dim 64, 2 query heads over 1 KV head, pages of 16, two
/// sequences of 40 and 17 keys, padded queries of 8 rows.
struct PagedCall {
  std::mt19937_64 rng{workloads::fresh_seed()};
  fp8attn_attention_desc desc{};
  PagedKvData kv;
  Queries q;
  Outputs o;
  fp8attn_attention_args args{};
  fp8attn_paged_kv pkv{};
  std::vector<float> k_scales, v_scales;  // per-head or per-token scale caches when a test sets them

  PagedCall() {
    desc.struct_size = sizeof desc;
    fp8attn_attention_desc_init(&desc);
    desc.output_dtype = FP8ATTN_DTYPE_F32;
    desc.head_dim = 64;
    desc.num_heads_q = 2;
    desc.num_heads_kv = 1;
    desc.page_size = 16;
    PagedLayout layout;
    layout.page_size = 16;
    layout.seqlen_k = {40, 17};
    kv = make_paged_kv(layout, FP8ATTN_DTYPE_E4M3, 1, 64, rng);
    q = make_queries(FP8ATTN_DTYPE_E4M3, 2, 64, {8, 8}, true, rng);
    args = query_args(q, o, 64);
    pkv = kv.paged();
    args.next = &pkv;
  }

  Outputs run(int32_t backend) {
    std::fill(o.out.begin(), o.out.end(), kPoison);
    std::fill(o.lse.begin(), o.lse.end(), kPoison);
    run_forward(backend, desc, args, q.batch(), q.max_len(), kv.max_seqlen_k, o);
    return o;
  }
};

std::string backend_name(int32_t b) { return b == FP8ATTN_BACKEND_CPU ? "cpu" : "reference"; }

/// The call fails on each host backend with `status`, a message containing `fragment`, and its
/// outputs untouched.
void expect_refused(PagedCall& c, int32_t status, const std::string& fragment) {
  for (const int32_t backend : kBackends) {
    const Outputs o = c.run(backend);
    EXPECT_EQ(o.status, status) << backend_name(backend) << ": " << fp8attn_status_name(o.status) << ": " << o.message;
    EXPECT_NE(o.message.find(fragment), std::string::npos)
        << backend_name(backend) << ": message \"" << o.message << "\" lacks \"" << fragment << "\"";
    EXPECT_TRUE(o.untouched()) << backend_name(backend) << ": outputs written by a refused call";
  }
}

TEST(PagedBadInput, TheValidCallSucceeds) {
  PagedCall c;
  for (const int32_t backend : kBackends) {
    const Outputs o = c.run(backend);
    ASSERT_EQ(o.status, FP8ATTN_OK) << o.message;
    EXPECT_FALSE(o.untouched());
  }
}

// ---- plan creation --------------------------------------------------------------------------

TEST(PagedBadInput, NegativePageSize) {
  PagedCall c;
  c.desc.page_size = -1;
  expect_refused(c, FP8ATTN_STATUS_BAD_OPTION, "desc.page_size");
}

TEST(PagedBadInput, UnknownKvDtype) {
  PagedCall c;
  c.desc.kv_dtype = FP8ATTN_DTYPE_F32;
  expect_refused(c, FP8ATTN_STATUS_BAD_DTYPE, "desc.kv_dtype");
}

TEST(PagedBadInput, E4m3QueriesOverBf16Cache) {
  PagedCall c;
  c.desc.kv_dtype = FP8ATTN_DTYPE_BF16;
  expect_refused(c, FP8ATTN_STATUS_BAD_DTYPE, "E4M3 Q over BF16 K and V");
}

// The emulated Hopper kernel gathers pages, applies per-(token, head) descales (E4M3 and BF16 Q,
// forward and decode) and runs BF16 Q over an E4M3 paged cache (tests/kernels/test_paged_fwd_emu*.cpp);
// what it lacks is refused by name, with the outputs untouched: BF16 Q over E4M3 K and V without
// pages.
TEST(PagedBadInput, EmulatorBackendRefusesWhatTheKernelLacks) {
  PagedCall c;
  const size_t n = static_cast<size_t>(c.kv.num_pages * 16);
  c.k_scales.assign(n, 0.25f);
  c.v_scales.assign(n, 0.5f);
  for (size_t i = 0; i < n; ++i) c.k_scales[i] += 0.01f * static_cast<float>(i % 7);  // not all equal
  c.pkv.scale_granularity = FP8ATTN_KV_SCALE_PER_TOKEN_HEAD;
  c.pkv.k_descale = dense_host_tensor(c.k_scales.data(), FP8ATTN_DTYPE_F32, {c.kv.num_pages, 16, 1});
  c.pkv.v_descale = dense_host_tensor(c.v_scales.data(), FP8ATTN_DTYPE_F32, {c.kv.num_pages, 16, 1});
  ASSERT_EQ(c.run(FP8ATTN_BACKEND_CPU).status, FP8ATTN_OK) << c.o.message;  // valid input
  ASSERT_EQ(c.run(FP8ATTN_BACKEND_EMULATOR).status, FP8ATTN_OK) << c.o.message;  // the E4M3 forward runs them
  EXPECT_FALSE(c.o.untouched());
  // The decode path: one query row per sequence.
  c.q = make_queries(FP8ATTN_DTYPE_E4M3, 2, 64, {1, 1}, true, c.rng);
  c.args = query_args(c.q, c.o, 64);
  c.args.next = &c.pkv;
  c.desc.decode = 1;
  ASSERT_EQ(c.run(FP8ATTN_BACKEND_CPU).status, FP8ATTN_OK) << c.o.message;  // valid input
  ASSERT_EQ(c.run(FP8ATTN_BACKEND_EMULATOR).status, FP8ATTN_OK) << c.o.message;  // the every-block decode kernel
  EXPECT_FALSE(c.o.untouched());
  // BF16 Q over the E4M3 cache: the emulator runs it with per-token descales (V's whole on P̃,
  // kv_cache_math.hpp), on the decode path too, and with PER_HEAD ones.
  c.desc.input_dtype = FP8ATTN_DTYPE_BF16;
  c.desc.kv_dtype = FP8ATTN_DTYPE_E4M3;
  c.q = make_queries(FP8ATTN_DTYPE_BF16, 2, 64, {1, 1}, true, c.rng);
  c.args = query_args(c.q, c.o, 64);
  c.args.next = &c.pkv;
  ASSERT_EQ(c.run(FP8ATTN_BACKEND_CPU).status, FP8ATTN_OK) << c.o.message;  // valid input
  ASSERT_EQ(c.run(FP8ATTN_BACKEND_EMULATOR).status, FP8ATTN_OK) << c.o.message;
  EXPECT_FALSE(c.o.untouched());
  c.desc.decode = 0;
  c.q = make_queries(FP8ATTN_DTYPE_BF16, 2, 64, {8, 8}, true, c.rng);
  c.args = query_args(c.q, c.o, 64);
  c.args.next = &c.pkv;
  ASSERT_EQ(c.run(FP8ATTN_BACKEND_CPU).status, FP8ATTN_OK) << c.o.message;  // valid input
  ASSERT_EQ(c.run(FP8ATTN_BACKEND_EMULATOR).status, FP8ATTN_OK) << c.o.message;
  EXPECT_FALSE(c.o.untouched());
  c.pkv.scale_granularity = FP8ATTN_KV_SCALE_PER_HEAD;
  c.pkv.k_descale = dense_host_tensor(c.k_scales.data(), FP8ATTN_DTYPE_F32, {1});
  c.pkv.v_descale = dense_host_tensor(c.v_scales.data(), FP8ATTN_DTYPE_F32, {1});
  ASSERT_EQ(c.run(FP8ATTN_BACKEND_EMULATOR).status, FP8ATTN_OK) << c.o.message;
  EXPECT_FALSE(c.o.untouched());
  // ... but not without pages: refused when the plan is made.
  c.desc.page_size = 0;
  c.run(FP8ATTN_BACKEND_EMULATOR);
  EXPECT_EQ(c.o.status, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND) << c.o.message;
  EXPECT_NE(c.o.message.find("desc.kv_dtype"), std::string::npos) << c.o.message;
  EXPECT_NE(c.o.message.find("over an E4M3 paged cache (desc.page_size >= 1)"), std::string::npos) << c.o.message;
  EXPECT_TRUE(c.o.untouched()) << "outputs written by a refused call";
}

// ---- the extension chain --------------------------------------------------------------------

TEST(PagedBadInput, UnknownStructType) {
  PagedCall c;
  c.pkv.struct_type = 77;
  expect_refused(c, FP8ATTN_STATUS_BAD_EXTENSION, "struct_type 77");
}

TEST(PagedBadInput, StructTooSmallForItsHeader) {
  PagedCall c;
  c.pkv.struct_size = 8;
  expect_refused(c, FP8ATTN_STATUS_BAD_STRUCT_SIZE, "too small for its header");
  c.pkv.struct_size = offsetof(fp8attn_paged_kv, max_seqlen_k);
  expect_refused(c, FP8ATTN_STATUS_BAD_STRUCT_SIZE, "fp8attn_paged_kv.struct_size");
}

TEST(PagedBadInput, TwoPagedStructsOrALoop) {
  PagedCall c;
  fp8attn_paged_kv second = c.pkv;
  c.pkv.next = &second;
  expect_refused(c, FP8ATTN_STATUS_BAD_EXTENSION, "two fp8attn_paged_kv");
  c.pkv.next = &c.pkv;
  expect_refused(c, FP8ATTN_STATUS_BAD_EXTENSION, "two fp8attn_paged_kv");
}

TEST(PagedBadInput, PagedStructOnAPlanWithPageSizeZero) {
  PagedCall c;
  c.desc.page_size = 0;
  expect_refused(c, FP8ATTN_STATUS_BAD_EXTENSION, "desc.page_size is 0");
}

TEST(PagedBadInput, PagedPlanWithoutTheStruct) {
  PagedCall c;
  c.args.next = nullptr;
  expect_refused(c, FP8ATTN_STATUS_BAD_EXTENSION, "carries no fp8attn_paged_kv");
}

TEST(PagedBadInput, ContiguousKeysBesideTheCache) {
  PagedCall c;
  c.args.k = dense_host_tensor(c.kv.k_packed.data(), FP8ATTN_DTYPE_E4M3, {57, 1, 64});
  expect_refused(c, FP8ATTN_STATUS_INVALID_ARGUMENT, "args.k, args.v and args.cu_seqlens_k must be absent");
}

// ---- the caches ----------------------------------------------------------------------------

TEST(PagedBadInput, CachePageSizeDiffersFromThePlan) {
  PagedCall c;
  c.pkv.k_cache.shape[0] *= 2;
  c.pkv.k_cache.shape[1] = 8;  // the same bytes as pages of 8
  expect_refused(c, FP8ATTN_STATUS_BAD_SHAPE, "desc.page_size");
}

TEST(PagedBadInput, CacheHeadsOrDimsWrong) {
  PagedCall c;
  c.pkv.v_cache.shape[3] = 32;
  expect_refused(c, FP8ATTN_STATUS_BAD_SHAPE, "paged_kv.v_cache");
  PagedCall d;
  d.pkv.k_cache.shape[2] = 2;
  d.pkv.k_cache.shape[1] = 8;
  d.desc.page_size = 8;
  expect_refused(d, FP8ATTN_STATUS_BAD_SHAPE, "num_heads_kv");
}

TEST(PagedBadInput, CachesWithDifferentPageCounts) {
  PagedCall c;
  c.pkv.v_cache.shape[0] -= 1;
  expect_refused(c, FP8ATTN_STATUS_BAD_SHAPE, "page count");
}

TEST(PagedBadInput, CacheWhoseStridesOverlap) {
  PagedCall c;
  c.pkv.k_cache.stride[0] = 64;  // pages one token apart: page p's token 1 is page p + 1's token 0
  expect_refused(c, FP8ATTN_STATUS_BAD_STRIDE, "paged_kv.k_cache has overlapping elements");
  PagedCall d;
  d.pkv.v_cache.stride[1] = 0;
  expect_refused(d, FP8ATTN_STATUS_BAD_STRIDE, "paged_kv.v_cache has overlapping elements");
}

TEST(PagedBadInput, CacheDtypeIsNotThePlans) {
  PagedCall c;
  c.pkv.k_cache.dtype = FP8ATTN_DTYPE_BF16;
  c.pkv.k_cache.shape[0] /= 2;
  c.pkv.v_cache.shape[0] /= 2;
  expect_refused(c, FP8ATTN_STATUS_BAD_DTYPE, "paged_kv.k_cache");
}

// ---- block table and seqused_k ---------------------------------------------------------------

TEST(PagedBadInput, BlockTableEntryPastThePool) {
  PagedCall c;
  c.kv.entry(1, 1) = static_cast<int32_t>(c.kv.num_pages);
  expect_refused(c, FP8ATTN_STATUS_INVALID_ARGUMENT, "paged_kv.block_table[1, 1]");
}

TEST(PagedBadInput, NegativeBlockTableEntry) {
  PagedCall c;
  c.kv.entry(0, 2) = -1;
  expect_refused(c, FP8ATTN_STATUS_INVALID_ARGUMENT, "paged_kv.block_table[0, 2] = -1");
}

TEST(PagedBadInput, EntriesPastTheLastPageAreNotRead) {
  PagedCall c;
  c.kv.entry(1, 2) = -1;  // sequence 1 has 17 keys: pages 0 and 1; the table has 3 columns
  const Outputs o = c.run(FP8ATTN_BACKEND_CPU);
  EXPECT_EQ(o.status, FP8ATTN_OK) << o.message;
}

TEST(PagedBadInput, BlockTableDtypeAndShape) {
  PagedCall c;
  c.pkv.block_table.dtype = FP8ATTN_DTYPE_F32;
  expect_refused(c, FP8ATTN_STATUS_BAD_DTYPE, "paged_kv.block_table");
  PagedCall d;
  d.pkv.block_table.shape[0] = 3;
  expect_refused(d, FP8ATTN_STATUS_BAD_SHAPE, "paged_kv.block_table");
}

TEST(PagedBadInput, NegativeSeqused) {
  PagedCall c;
  c.kv.seqused[1] = -1;
  expect_refused(c, FP8ATTN_STATUS_BAD_SEQLENS, "paged_kv.seqused_k[1] = -1");
}

TEST(PagedBadInput, SequsedAboveMaxSeqlen) {
  PagedCall c;
  c.pkv.max_seqlen_k = 39;
  expect_refused(c, FP8ATTN_STATUS_BAD_SEQLENS, "paged_kv.max_seqlen_k = 39");
}

TEST(PagedBadInput, SequsedAboveTheTablesPages) {
  PagedCall c;
  c.pkv.max_seqlen_k = 100;
  c.kv.seqused[0] = 49;  // 4 pages; the table lists 3
  expect_refused(c, FP8ATTN_STATUS_BAD_SEQLENS, "the block table has 3 per sequence");
}

TEST(PagedBadInput, SequsedDtypeAndShape) {
  PagedCall c;
  c.pkv.seqused_k.dtype = FP8ATTN_DTYPE_F32;
  expect_refused(c, FP8ATTN_STATUS_BAD_DTYPE, "paged_kv.seqused_k");
  PagedCall d;
  d.pkv.seqused_k.shape[0] = 1;
  expect_refused(d, FP8ATTN_STATUS_BAD_SHAPE, "paged_kv.seqused_k");
}

TEST(PagedBadInput, NegativeMaxSeqlen) {
  PagedCall c;
  c.pkv.max_seqlen_k = -1;
  expect_refused(c, FP8ATTN_STATUS_BAD_SHAPE, "paged_kv.max_seqlen_k");
}

// ---- scale caches ---------------------------------------------------------------------------

TEST(PagedBadInput, UnknownScaleGranularity) {
  PagedCall c;
  c.pkv.scale_granularity = 3;
  expect_refused(c, FP8ATTN_STATUS_BAD_OPTION, "paged_kv.scale_granularity");
}

TEST(PagedBadInput, DescalesWithoutAGranularity) {
  PagedCall c;
  c.k_scales.assign(1, 0.5f);
  c.pkv.k_descale = dense_host_tensor(c.k_scales.data(), FP8ATTN_DTYPE_F32, {1});
  expect_refused(c, FP8ATTN_STATUS_BAD_OPTION, "scale_granularity is NONE");
}

TEST(PagedBadInput, PerHeadDescaleNotFinite) {
  PagedCall c;
  c.k_scales.assign(1, 0.5f);
  c.v_scales.assign(1, std::numeric_limits<float>::quiet_NaN());
  c.pkv.scale_granularity = FP8ATTN_KV_SCALE_PER_HEAD;
  c.pkv.k_descale = dense_host_tensor(c.k_scales.data(), FP8ATTN_DTYPE_F32, {1});
  c.pkv.v_descale = dense_host_tensor(c.v_scales.data(), FP8ATTN_DTYPE_F32, {1});
  expect_refused(c, FP8ATTN_STATUS_BAD_SCALE, "paged_kv.v_descale[0]");
}

TEST(PagedBadInput, PerTokenDescaleZeroInUse) {
  PagedCall c;
  const size_t n = static_cast<size_t>(c.kv.num_pages * 16);
  c.k_scales.assign(n, 0.25f);
  c.v_scales.assign(n, 0.25f);
  const int64_t page = c.kv.entry(1, 1);
  c.k_scales[static_cast<size_t>(page * 16)] = 0.0f;  // sequence 1's key 16
  c.pkv.scale_granularity = FP8ATTN_KV_SCALE_PER_TOKEN_HEAD;
  c.pkv.k_descale = dense_host_tensor(c.k_scales.data(), FP8ATTN_DTYPE_F32, {c.kv.num_pages, 16, 1});
  c.pkv.v_descale = dense_host_tensor(c.v_scales.data(), FP8ATTN_DTYPE_F32, {c.kv.num_pages, 16, 1});
  expect_refused(c, FP8ATTN_STATUS_BAD_SCALE, "paged_kv.k_descale[" + std::to_string(page) + ", 0, 0]");
  // A bad descale in a slot no sequence uses is not read.
  c.k_scales[static_cast<size_t>(page * 16)] = 0.25f;
  c.k_scales[static_cast<size_t>(c.kv.entry(1, 1) * 16 + 15)] = 0.0f;  // sequence 1 uses 17 keys: token 0 only
  EXPECT_EQ(c.run(FP8ATTN_BACKEND_CPU).status, FP8ATTN_OK) << c.o.message;
}

TEST(PagedBadInput, PerTokenDescaleShape) {
  PagedCall c;
  c.k_scales.assign(static_cast<size_t>(c.kv.num_pages * 16), 1.0f);
  c.pkv.scale_granularity = FP8ATTN_KV_SCALE_PER_TOKEN_HEAD;
  c.pkv.k_descale = dense_host_tensor(c.k_scales.data(), FP8ATTN_DTYPE_F32, {c.kv.num_pages * 16, 1});
  c.pkv.v_descale = c.pkv.k_descale;
  expect_refused(c, FP8ATTN_STATUS_BAD_SHAPE, "paged_kv.k_descale");
}

TEST(PagedBadInput, GranularityTogetherWithArgsDescales) {
  PagedCall c;
  c.k_scales.assign(1, 0.5f);
  c.pkv.scale_granularity = FP8ATTN_KV_SCALE_PER_HEAD;
  c.pkv.k_descale = dense_host_tensor(c.k_scales.data(), FP8ATTN_DTYPE_F32, {1});
  c.pkv.v_descale = c.pkv.k_descale;
  float one = 1.0f;
  c.args.k_descale = dense_host_tensor(&one, FP8ATTN_DTYPE_F32, {2, 1});
  c.args.k_descale.stride[0] = c.args.k_descale.stride[1] = 0;
  expect_refused(c, FP8ATTN_STATUS_BAD_OPTION, "both set");
}

TEST(PagedBadInput, GranularityOnABf16Cache) {
  PagedCall c;
  c.desc.input_dtype = FP8ATTN_DTYPE_BF16;
  PagedLayout layout;
  layout.seqlen_k = {40, 17};
  c.kv = make_paged_kv(layout, FP8ATTN_DTYPE_BF16, 1, 64, c.rng);
  c.q = make_queries(FP8ATTN_DTYPE_BF16, 2, 64, {8, 8}, true, c.rng);
  c.args = query_args(c.q, c.o, 64);
  c.pkv = c.kv.paged();
  c.args.next = &c.pkv;
  c.k_scales.assign(1, 0.5f);
  c.pkv.scale_granularity = FP8ATTN_KV_SCALE_PER_HEAD;
  c.pkv.k_descale = dense_host_tensor(c.k_scales.data(), FP8ATTN_DTYPE_F32, {1});
  c.pkv.v_descale = c.pkv.k_descale;
  expect_refused(c, FP8ATTN_STATUS_BAD_OPTION, "scale caches go with an E4M3 cache");
}

TEST(PagedBadInput, BackwardRefusesPagedPlan) {
  fp8attn_attention_desc d{};
  d.struct_size = sizeof d;
  fp8attn_attention_desc_init(&d);
  d.input_dtype = d.output_dtype = FP8ATTN_DTYPE_BF16;
  d.page_size = 16;
  fp8attn_context ctx = nullptr;
  fp8attn_plan plan = nullptr;
  fp8attn_context_options opt{};
  opt.struct_size = sizeof opt;
  opt.backend = FP8ATTN_BACKEND_CPU;
  opt.num_threads = 1;
  ASSERT_EQ(fp8attn_context_create(&opt, &ctx, nullptr), FP8ATTN_OK);
  ASSERT_EQ(fp8attn_plan_create(ctx, &d, &plan, nullptr), FP8ATTN_OK);
  fp8attn_attention_bwd_args b{};
  b.struct_size = sizeof b;
  fp8attn_error err{};
  err.struct_size = sizeof err;
  EXPECT_EQ(fp8attn_attention_backward(plan, &b, nullptr, 0, nullptr, &err), FP8ATTN_STATUS_UNSUPPORTED) << err.message;
  EXPECT_NE(std::string(err.message).find("desc.page_size = 16"), std::string::npos) << err.message;
  fp8attn_plan_destroy(plan);
  fp8attn_context_destroy(ctx);
}

}  // namespace
}  // namespace fp8attn::paged_test
