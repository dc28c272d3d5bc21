// The forward's softmax telemetry against counts known in advance: queries q = σ (a random sign
// vector of E4M3 ±1), key 0 = σ and every other key −σ, so each row's logits are +64 (key 0) and
// −64 (the rest). With softmax_scale 1/8 key 0 holds the row max and each other key's P̃ is
// e^−16 ≈ 1e−7 (times the P scale): positive in FP32, 0 once cast to E4M3. So p_positive is
// every visible entry, p_underflow every entry but key 0's, and max |scaled logit| is 8, on the
// CPU engine and on the emulated Hopper kernel alike.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "tools/common/fresh_seed.hpp"
#include "tools/common/host_tensor.hpp"

namespace fp8attn::testing {
namespace {

class TelemetryCounts : public ::testing::TestWithParam<int32_t> {};

TEST_P(TelemetryCounts, OneDominantKeyGivesKnownPositiveAndUnderflowCounts) {
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  constexpr int64_t kHeadsQ = 2, kHeadsKv = 1, kDim = 64;
  // NOTE: at most 64 keys, one key block on every tile: key 0 sets the row max before any other
  // P̃ is formed, so no rescaling can lift an entry out of underflow.
  const int64_t sq = 3 + static_cast<int64_t>(rng() % 38), sk = 2 + static_cast<int64_t>(rng() % 63);
  std::vector<uint8_t> sigma(kDim);
  for (auto& b : sigma) b = static_cast<uint8_t>(0x38 | ((rng() & 1) << 7));  // E4M3 ±1
  std::vector<uint8_t> q(static_cast<size_t>(sq * kHeadsQ * kDim)), k(static_cast<size_t>(sk * kHeadsKv * kDim)),
      v(k.size());
  for (size_t i = 0; i < q.size(); ++i) q[i] = sigma[i % kDim];
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(sigma[i % kDim] ^ (i < kDim ? 0 : 0x80));
  for (auto& b : v) b = static_cast<uint8_t>(rng() % 0x38 | ((rng() & 1) << 7));
  std::vector<float> out(static_cast<size_t>(sq * kHeadsQ * kDim), -777.0f);

  fp8attn_context_options co{};
  co.struct_size = sizeof co;
  co.backend = GetParam();
  co.num_threads = 2;
  co.log_level = FP8ATTN_LOG_OFF;
  fp8attn_context ctx = nullptr;
  ASSERT_EQ(fp8attn_context_create(&co, &ctx, nullptr), FP8ATTN_OK);
  fp8attn_attention_desc d{};
  d.struct_size = sizeof d;
  fp8attn_attention_desc_init(&d);
  d.head_dim = kDim;
  d.num_heads_q = kHeadsQ;
  d.num_heads_kv = kHeadsKv;
  d.output_dtype = FP8ATTN_DTYPE_F32;
  d.softmax_scale = 0.125f;
  d.telemetry = 1;
  fp8attn_plan plan = nullptr;
  ASSERT_EQ(fp8attn_plan_create(ctx, &d, &plan, nullptr), FP8ATTN_OK);
  size_t bytes = 0;
  ASSERT_EQ(fp8attn_plan_workspace_size(plan, 1, sq, sk, &bytes, nullptr), FP8ATTN_OK);
  std::vector<unsigned char> ws(bytes, 0xAB);
  fp8attn_telemetry t{};
  t.struct_size = sizeof t;
  t.p_positive = t.p_underflow = 0xDEAD;
  t.max_abs_scaled_logit = -1.0f;
  fp8attn_attention_args a{};
  a.struct_size = sizeof a;
  a.q = workloads::dense_host_tensor(q.data(), FP8ATTN_DTYPE_E4M3, {1, sq, kHeadsQ, kDim});
  a.k = workloads::dense_host_tensor(k.data(), FP8ATTN_DTYPE_E4M3, {1, sk, kHeadsKv, kDim});
  a.v = workloads::dense_host_tensor(v.data(), FP8ATTN_DTYPE_E4M3, {1, sk, kHeadsKv, kDim});
  a.out = workloads::dense_host_tensor(out.data(), FP8ATTN_DTYPE_F32, {1, sq, kHeadsQ, kDim});
  a.telemetry = &t;
  fp8attn_error err{};
  err.struct_size = sizeof err;
  const int32_t s = fp8attn_attention_forward(plan, &a, ws.data(), ws.size(), nullptr, &err);
  fp8attn_plan_destroy(plan);
  fp8attn_context_destroy(ctx);
  ASSERT_EQ(s, FP8ATTN_OK) << err.message;
  const uint64_t entries = static_cast<uint64_t>(kHeadsQ * sq * sk);
  std::printf("Sq %lld, Sk %lld: p_positive %llu (want %llu), p_underflow %llu (want %llu), max %.6g\n",
              static_cast<long long>(sq), static_cast<long long>(sk), static_cast<unsigned long long>(t.p_positive),
              static_cast<unsigned long long>(entries), static_cast<unsigned long long>(t.p_underflow),
              static_cast<unsigned long long>(entries - kHeadsQ * sq), t.max_abs_scaled_logit);
  EXPECT_EQ(t.p_positive, entries) << "seed " << seed;
  EXPECT_EQ(t.p_underflow, entries - static_cast<uint64_t>(kHeadsQ * sq)) << "seed " << seed;
  EXPECT_EQ(t.max_abs_scaled_logit, 8.0f) << "seed " << seed;
  // Every row attends to key 0 alone (the others' weights underflow): out = v[0] of its head.
  for (int64_t r = 0; r < sq * kHeadsQ; ++r)
    ASSERT_NE(out[static_cast<size_t>(r * kDim)], -777.0f) << "row " << r << " not written";
}

INSTANTIATE_TEST_SUITE_P(Backends, TelemetryCounts, ::testing::Values(FP8ATTN_BACKEND_CPU, FP8ATTN_BACKEND_EMULATOR),
                         [](const auto& info) {
                           return std::string(info.param == FP8ATTN_BACKEND_CPU ? "Cpu" : "Emulator");
                         });

}  // namespace
}  // namespace fp8attn::testing
