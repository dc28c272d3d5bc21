// The paged forward through the C API: FP8ATTN_BACKEND_EMULATOR (the Hopper kernel on the SIMT
// emulator) against the CPU engine's paged run of the same call, bit-equal in O and the LSE, on
// fresh N(0, 1) codes, pages in a shuffled order with NaN codes in every unused slot, a table
// whose row stride exceeds its row, under round-robin and a shuffled schedule. Both load paths
// (TMA boxes at page 16 and 64, the gather at page 3), E4M3 and BF16, padded and packed queries,
// GQA, causal chunked prefill, a window, PER_HEAD and PER_TOKEN_HEAD scale caches, and BF16 Q over
// an E4M3 cache.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/sm90/attention/fwd_paged_kv.hpp"
#include "tests/attention/paged_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::paged_test {
namespace {

struct EngineCase {
  const char* name;
  int32_t dtype;
  int heads_q, heads_kv, head_dim;
  PagedLayout layout;
  std::vector<int64_t> seqlen_q;  ///< padded: one length for all
  bool padded, causal;
  int window_left = -1;
  bool per_head_scales = false;  ///< E4M3: a PER_HEAD scale cache instead of the args' descales
  bool per_token_scales = false;  ///< E4M3 cache: a PER_TOKEN_HEAD scale cache
  int32_t kv_dtype = -1;          ///< the cache's dtype when not Q's (BF16 Q over an E4M3 cache)
  bool decode = false;            ///< desc.decode = 1 (the decode kernels)
  bool telemetry = false;         ///< desc.telemetry = 1: the counts and max |logit| compared too
};

void expect_emulator_matches_engine(const EngineCase& c) {
  const uint64_t seed = workloads::fresh_seed();
  std::mt19937_64 rng(seed);
  const int32_t kv_dtype = c.kv_dtype < 0 ? c.dtype : c.kv_dtype;
  PagedKvData kv = make_paged_kv(c.layout, kv_dtype, c.heads_kv, c.head_dim, rng);
  std::vector<int64_t> seqlen_q = c.seqlen_q;
  if (c.padded) seqlen_q.assign(static_cast<size_t>(kv.batch), c.seqlen_q[0]);
  Queries q = make_queries(c.dtype, c.heads_q, c.head_dim, seqlen_q, c.padded, rng);
  fp8attn_attention_desc d{};
  d.struct_size = sizeof d;
  fp8attn_attention_desc_init(&d);
  d.input_dtype = c.dtype;
  d.kv_dtype = kv_dtype;
  d.decode = c.decode ? 1 : 0;
  d.output_dtype = FP8ATTN_DTYPE_F32;
  d.head_dim = c.head_dim;
  d.num_heads_q = c.heads_q;
  d.num_heads_kv = c.heads_kv;
  d.causal = c.causal;
  d.window_left = c.window_left;
  d.page_size = static_cast<int32_t>(c.layout.page_size);
  d.telemetry = c.telemetry ? 1 : 0;
  std::vector<float> k_scale(static_cast<size_t>(c.heads_kv)), v_scale(k_scale.size());
  std::uniform_real_distribution<float> scale(0.25f, 2.0f);
  for (size_t h = 0; h < k_scale.size(); ++h) k_scale[h] = scale(rng), v_scale[h] = scale(rng);
  // PER_TOKEN_HEAD: [num_pages, page_size, heads_kv], a fresh descale per (token, head) over
  // 2^-4..2^2 (log-uniform), so each key's ratio to its block's largest varies; NaN in the slots
  // no sequence uses, which only a read outside the block table would meet.
  const size_t token_scales = static_cast<size_t>(kv.num_pages * kv.page_size * c.heads_kv);
  std::vector<float> k_token(token_scales, std::nanf("")), v_token(token_scales, std::nanf(""));
  if (c.per_token_scales) {
    std::uniform_real_distribution<float> log2_scale(-4.0f, 2.0f);
    for (int64_t b = 0; b < kv.batch; ++b)
      for (int64_t j = 0; j < kv.seqused[static_cast<size_t>(b)]; ++j)
        for (int h = 0; h < c.heads_kv; ++h) {
          const size_t at = static_cast<size_t>((kv.entry(b, j / kv.page_size) * kv.page_size + j % kv.page_size) *
                                                    c.heads_kv + h);
          k_token[at] = std::exp2(log2_scale(rng));
          v_token[at] = std::exp2(log2_scale(rng));
        }
  }

  auto run = [&](int32_t backend, const std::string& schedule, Outputs& o, fp8attn_telemetry& tel) {
    fp8attn_attention_args a = query_args(q, o, c.head_dim);
    // NOTE: poisoned counts, so a backend that leaves them unwritten cannot match the other.
    tel = fp8attn_telemetry{sizeof(fp8attn_telemetry), 0xA5A5A5A5u, 0x5A5A5A5Au, -1.0f};
    if (c.telemetry) a.telemetry = &tel;
    fp8attn_paged_kv pkv = kv.paged();
    if (c.per_head_scales) {
      pkv.scale_granularity = FP8ATTN_KV_SCALE_PER_HEAD;
      pkv.k_descale = dense_host_tensor(k_scale.data(), FP8ATTN_DTYPE_F32, {c.heads_kv});
      pkv.v_descale = dense_host_tensor(v_scale.data(), FP8ATTN_DTYPE_F32, {c.heads_kv});
    }
    if (c.per_token_scales) {
      pkv.scale_granularity = FP8ATTN_KV_SCALE_PER_TOKEN_HEAD;
      pkv.k_descale = dense_host_tensor(k_token.data(), FP8ATTN_DTYPE_F32, {kv.num_pages, kv.page_size, c.heads_kv});
      pkv.v_descale = dense_host_tensor(v_token.data(), FP8ATTN_DTYPE_F32, {kv.num_pages, kv.page_size, c.heads_kv});
    }
    a.next = &pkv;
    if (!schedule.empty()) setenv("FP8ATTN_EMULATOR_SCHEDULE", schedule.c_str(), 1);
    run_forward(backend, d, a, q.batch(), q.max_len(), kv.max_seqlen_k, o);
    unsetenv("FP8ATTN_EMULATOR_SCHEDULE");
  };
  Outputs engine;
  fp8attn_telemetry engine_tel{}, kernel_tel{};
  run(FP8ATTN_BACKEND_CPU, "", engine, engine_tel);
  ASSERT_EQ(engine.status, FP8ATTN_OK) << c.name << ": " << engine.message;
  for (const std::string& schedule : {std::string("round-robin"), "shuffle:" + std::to_string(seed)}) {
    Outputs kernel;
    run(FP8ATTN_BACKEND_EMULATOR, schedule, kernel, kernel_tel);
    ASSERT_EQ(kernel.status, FP8ATTN_OK) << c.name << ": " << kernel.message << " (seed " << seed << ")";
    std::string where;
    EXPECT_TRUE(same_bits(engine.out, kernel.out, &where))
        << c.name << " out, " << where << ", " << schedule << ", seed " << seed;
    EXPECT_TRUE(same_bits(engine.lse, kernel.lse, &where))
        << c.name << " lse, " << where << ", " << schedule << ", seed " << seed;
    if (c.telemetry) {
      EXPECT_GT(engine_tel.p_positive, 0u) << c.name << ", seed " << seed;
      EXPECT_EQ(engine_tel.p_positive, kernel_tel.p_positive) << c.name << ", " << schedule << ", seed " << seed;
      EXPECT_EQ(engine_tel.p_underflow, kernel_tel.p_underflow) << c.name << ", " << schedule << ", seed " << seed;
      EXPECT_EQ(engine_tel.max_abs_scaled_logit, kernel_tel.max_abs_scaled_logit)
          << c.name << ", " << schedule << ", seed " << seed;
    }
    std::printf("%s [%s]: %zu outputs compared\n", c.name, schedule.c_str(), kernel.out.size());
  }
}

PagedLayout layout(int64_t page, std::vector<int64_t> seqlen_k, int64_t shared = 0) {
  PagedLayout l;
  l.page_size = page;
  l.seqlen_k = std::move(seqlen_k);
  l.shared_pages = shared;
  return l;
}

TEST(PagedFwdEmuEngine, TmaBoxesE4M3ChunkedPrefillGqa) {
  expect_emulator_matches_engine({"page16 e4m3 gqa causal", FP8ATTN_DTYPE_E4M3, 8, 1, 128,
                                  layout(16, {300, 17, 0, 230}, 0), {40, 5, 3, 64}, false, true});
}

TEST(PagedFwdEmuEngine, GatherBf16SharedPages) {
  expect_emulator_matches_engine({"page3 bf16 shared", FP8ATTN_DTYPE_BF16, 4, 2, 64, layout(3, {100, 61, 2}, 7),
                                  {9}, true, true});
}

TEST(PagedFwdEmuEngine, TmaBoxesWindowPerHeadScales) {
  expect_emulator_matches_engine({"page64 e4m3 window per-head", FP8ATTN_DTYPE_E4M3, 4, 2, 64,
                                  layout(64, {500, 64, 65}), {33, 1, 20}, false, true, 100, true});
}

// Per-(token, head) descales: the producer gathers them by page beside K and V, the consumer
// scales the logits by K's and P̃ by V's ratios, and promotes each block's P·V by V's largest.
TEST(PagedFwdEmuEngine, TmaBoxesPerTokenScalesChunkedPrefillGqa) {
  EngineCase c{"page64 e4m3 gqa causal per-token", FP8ATTN_DTYPE_E4M3, 4, 2, 64,
               layout(64, {300, 64, 0, 129}), {40, 1, 3, 64}, false, true};
  c.per_token_scales = true;
  expect_emulator_matches_engine(c);
}

// The telemetry's counts and max |logit| under per-token descales: the logit figure includes
// each key's K descale, and the P counts are taken on P̃ after V's ratios, as in the engine.
TEST(PagedFwdEmuEngine, PerTokenScalesWithTelemetry) {
  EngineCase c{"page16 e4m3 gqa causal per-token telemetry", FP8ATTN_DTYPE_E4M3, 4, 2, 64,
               layout(16, {150, 33}), {20, 5}, false, true};
  c.per_token_scales = true;
  c.telemetry = true;
  expect_emulator_matches_engine(c);
}

TEST(PagedFwdEmuEngine, GatherPerTokenScalesChunkedPrefillGqa) {
  EngineCase c{"page3 e4m3 gqa causal per-token", FP8ATTN_DTYPE_E4M3, 6, 2, 128, layout(3, {200, 61, 2}, 4),
               {33, 7, 2}, false, true};
  c.per_token_scales = true;
  expect_emulator_matches_engine(c);
}

// The decode path under E4M3 Q: the every-block decode kernels take the per-token descales as
// the forward's every-block kernel does (each block's P·V promoted by its largest V descale),
// split by split as the engine's decode path, through the TMA boxes and the gather.
TEST(PagedFwdEmuEngine, PerTokenScalesDecodeTmaBoxes) {
  EngineCase c{"page16 e4m3 gqa decode per-token", FP8ATTN_DTYPE_E4M3, 8, 2, 128, layout(16, {300, 17, 0, 230}, 0),
               {1, 4, 2, 1}, false, true};
  c.per_token_scales = true;
  c.decode = true;
  expect_emulator_matches_engine(c);
}

TEST(PagedFwdEmuEngine, PerTokenScalesDecodeGather) {
  EngineCase c{"page3 e4m3 gqa decode per-token", FP8ATTN_DTYPE_E4M3, 4, 1, 64, layout(3, {500, 2, 61}, 3),
               {8, 1, 3}, false, true};
  c.per_token_scales = true;
  c.decode = true;
  expect_emulator_matches_engine(c);
}

// BF16 Q over an E4M3 cache: the BF16 kernel, its gather decoding the codes to BF16 (also at
// page sizes whose TMA boxes would fit), with PER_HEAD descales or none.
TEST(PagedFwdEmuEngine, MixedBf16QueriesOverE4m3CachePage16) {
  EngineCase c{"page16 bf16 q over e4m3 gqa causal per-head", FP8ATTN_DTYPE_BF16, 8, 2, 128,
               layout(16, {300, 17, 0, 230}, 0), {40, 5, 3, 64}, false, true, -1, true};
  c.kv_dtype = FP8ATTN_DTYPE_E4M3;
  expect_emulator_matches_engine(c);
}

TEST(PagedFwdEmuEngine, MixedBf16QueriesOverE4m3CachePage64) {
  EngineCase c{"page64 bf16 q over e4m3 gqa causal", FP8ATTN_DTYPE_BF16, 4, 2, 64, layout(64, {500, 64, 65}, 1),
               {33, 1, 20}, true, true};
  c.seqlen_q = {33};
  c.kv_dtype = FP8ATTN_DTYPE_E4M3;
  expect_emulator_matches_engine(c);
}

// BF16 Q over an E4M3 cache with per-(token, head) descales: the BF16 kernel's producer gathers
// them as the E4M3 kernel's does; its consumer scales the logits by K's and P̃'s columns by V's
// whole before P's BF16 cast, with no promotion (kv_cache_math.hpp). Head_dim 64 runs the
// serial schedule, 128 the overlapped one (fwd_config.hpp).
TEST(PagedFwdEmuEngine, MixedBf16QueriesGatherPerTokenScalesPage3) {
  EngineCase c{"page3 bf16 q over e4m3 gqa causal per-token", FP8ATTN_DTYPE_BF16, 6, 2, 128,
               layout(3, {200, 61, 2}, 4), {33, 7, 2}, false, true};
  c.kv_dtype = FP8ATTN_DTYPE_E4M3;
  c.per_token_scales = true;
  expect_emulator_matches_engine(c);
}

TEST(PagedFwdEmuEngine, MixedBf16QueriesPerTokenScalesPage64) {
  EngineCase c{"page64 bf16 q over e4m3 gqa causal per-token", FP8ATTN_DTYPE_BF16, 4, 2, 64,
               layout(64, {300, 64, 0, 129}), {40, 1, 3, 64}, false, true};
  c.kv_dtype = FP8ATTN_DTYPE_E4M3;
  c.per_token_scales = true;
  expect_emulator_matches_engine(c);
}

// Head_dim 256: the BF16 kernel's stage descales fit because its shared storage is not rounded
// up to whole KB (fwd_config.hpp); overlapped without telemetry, serial with it.
TEST(PagedFwdEmuEngine, MixedBf16QueriesPerTokenScalesHeadDim256) {
  EngineCase c{"page16 bf16 q over e4m3 hd256 causal per-token", FP8ATTN_DTYPE_BF16, 4, 2, 256,
               layout(16, {170, 33}), {20, 5}, false, true};
  c.kv_dtype = FP8ATTN_DTYPE_E4M3;
  c.per_token_scales = true;
  expect_emulator_matches_engine(c);
}

TEST(PagedFwdEmuEngine, MixedBf16QueriesPerTokenScalesHeadDim256Telemetry) {
  EngineCase c{"page3 bf16 q over e4m3 hd256 per-token telemetry", FP8ATTN_DTYPE_BF16, 2, 1, 256,
               layout(3, {100, 7}, 2), {9}, true, false};
  c.kv_dtype = FP8ATTN_DTYPE_E4M3;
  c.per_token_scales = true;
  c.telemetry = true;
  expect_emulator_matches_engine(c);
}

TEST(PagedFwdEmuEngine, MixedBf16QueriesPerTokenScalesHeadDim256Decode) {
  EngineCase c{"page16 bf16 q over e4m3 hd256 decode per-token", FP8ATTN_DTYPE_BF16, 8, 2, 256,
               layout(16, {200, 17}), {1, 3}, false, true};
  c.kv_dtype = FP8ATTN_DTYPE_E4M3;
  c.per_token_scales = true;
  c.decode = true;
  expect_emulator_matches_engine(c);
}

TEST(PagedFwdEmuEngine, MixedBf16QueriesOverE4m3CacheDecode) {
  EngineCase c{"page16 bf16 q over e4m3 gqa decode", FP8ATTN_DTYPE_BF16, 8, 2, 128, layout(16, {300, 17, 0, 230}, 0),
               {1, 4, 2, 1}, false, true};
  c.kv_dtype = FP8ATTN_DTYPE_E4M3;
  c.decode = true;
  expect_emulator_matches_engine(c);
}

// The BF16 decode kernels take per-token descales by the same rule (the forward's producer and
// serial main loop), bit-equal to the engine's decode path.
TEST(PagedFwdEmuEngine, MixedBf16QueriesPerTokenScalesDecode) {
  EngineCase c{"page16 bf16 q over e4m3 gqa decode per-token", FP8ATTN_DTYPE_BF16, 8, 2, 128,
               layout(16, {300, 17, 0, 230}, 0), {1, 4, 2, 1}, false, true};
  c.kv_dtype = FP8ATTN_DTYPE_E4M3;
  c.per_token_scales = true;
  c.decode = true;
  expect_emulator_matches_engine(c);
}

// The gather's decode of E4M3 codes to BF16, all 256 codes: the BF16 of the code's float value,
// bit for bit (an E4M3 NaN becomes a BF16 NaN of its sign).
TEST(PagedFwdEmuEngine, GatherDecodesEveryE4m3CodeToItsBf16) {
  for (uint32_t code = 0; code < 256; ++code) {
    const float value = num::e4m3_to_float(static_cast<uint8_t>(code));
    const uint32_t bits = sm90::e4m3_to_bf16_bits(code);
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(num::bf16_to_float(static_cast<uint16_t>(bits)))) << code;
      EXPECT_EQ(bits >> 15, code >> 7) << code;
      continue;
    }
    EXPECT_EQ(num::bf16_to_float(static_cast<uint16_t>(bits)), value) << "code " << code;
    EXPECT_EQ(bits, num::float_to_bf16(value)) << "code " << code;
  }
  EXPECT_EQ(sm90::e4m3x4_to_bf16x4(0x01B83800u),
            0x0000'BF80'3F80'0000ull | uint64_t{sm90::e4m3_to_bf16_bits(0x01u)} << 48);
}

}  // namespace
}  // namespace fp8attn::paged_test
