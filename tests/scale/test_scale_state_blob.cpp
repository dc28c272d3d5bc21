// Serialization: a bit-identical round trip, and every single-byte corruption and every
// truncation of a small blob rejected with a 6xxx status, leaving the state unchanged.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "tests/scale/scale_test_support.hpp"

namespace fp8attn::test {
namespace {

constexpr uint64_t kSeed = 4242;

/// A state with nonzero histories, scales, σ and auto-α progress.
void fill(fp8attn_scale_state state, int layers, int steps, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> amax(0.01f, 50.0f);
  const float sigma[2] = {1.25f, 0.75f};
  for (int l = 0; l < layers; ++l) ASSERT_EQ(fp8attn_scale_state_set_qk_sigma(state, l, sigma, 2, 16, 64, nullptr), FP8ATTN_OK);
  for (int s = 0; s < steps; ++s) {
    for (int l = 0; l < layers; ++l)
      for (int t = 0; t < FP8ATTN_NUM_TENSOR_KINDS; ++t)
        ASSERT_EQ(fp8attn_scale_state_report_amax(state, l, t, amax(rng), nullptr), FP8ATTN_OK);
    ASSERT_EQ(fp8attn_scale_state_step(state, nullptr), FP8ATTN_OK);
  }
}

bool is_numerics_status(int32_t status) { return status >= 6000 && status < 7000; }

TEST(ScaleStateBlob, RoundTripIsBitIdentical) {
  std::printf("seed %llu\n", static_cast<unsigned long long>(kSeed));
  std::mt19937_64 rng(kSeed);
  auto o = default_options();
  o.num_layers = 3;
  o.amax_history_len = 16;
  o.recipe[FP8ATTN_TENSOR_DP] = FP8ATTN_RECIPE_CURRENT;
  o.burn_in_steps = 5;
  StateFixture a(&o);
  fill(a.state, 3, 21, rng);
  const std::vector<uint8_t> blob = serialize(a.state);
  std::printf("blob of %zu bytes\n", blob.size());
  // A differently configured state takes the whole blob, options included.
  StateFixture b(nullptr);
  ASSERT_EQ(fp8attn_scale_state_deserialize(b.state, blob.data(), blob.size(), nullptr), FP8ATTN_OK);
  EXPECT_EQ(serialize(b.state), blob);
  for (int l = 0; l < 3; ++l)
    for (int t = 0; t < FP8ATTN_NUM_TENSOR_KINDS; ++t) EXPECT_EQ(a.scale(l, t), b.scale(l, t)) << l << "," << t;
  // Both continue identically.
  for (auto* s : {&a, &b}) {
    ASSERT_EQ(fp8attn_scale_state_report_amax(s->state, 2, FP8ATTN_TENSOR_K, 123.0f, nullptr), FP8ATTN_OK);
    ASSERT_EQ(fp8attn_scale_state_step(s->state, nullptr), FP8ATTN_OK);
  }
  EXPECT_EQ(serialize(a.state), serialize(b.state));
  // Too small a buffer.
  std::vector<uint8_t> small(blob.size() - 1);
  size_t written = 77;
  EXPECT_EQ(fp8attn_scale_state_serialize(a.state, small.data(), small.size(), &written, nullptr),
            FP8ATTN_STATUS_BUFFER_TOO_SMALL);
  EXPECT_EQ(written, 77u);
}

// A burn-in whose ratio ρ = max|S| / (σ_max·B_X²/√d_h) exceeds FP32's range (a huge reported max
// over a tiny σ) ends with α = 1, and the state's own blob still loads back.
TEST(ScaleStateBlob, AnOverflowingAutoAlphaRatioStillLoadsBack) {
  auto o = default_options();
  o.num_layers = 2;
  o.burn_in_steps = 3;
  StateFixture a(&o);
  const float sigma[1] = {1e-30f};
  for (int l = 0; l < 2; ++l) ASSERT_EQ(fp8attn_scale_state_set_qk_sigma(a.state, l, sigma, 1, 16, 64, nullptr), FP8ATTN_OK);
  for (int step = 0; step < 4; ++step) {
    for (int l = 0; l < 2; ++l)
      for (int t = 0; t < FP8ATTN_NUM_TENSOR_KINDS; ++t)
        ASSERT_EQ(fp8attn_scale_state_report_amax(a.state, l, t, 3e38f, nullptr), FP8ATTN_OK);
    ASSERT_EQ(fp8attn_scale_state_step(a.state, nullptr), FP8ATTN_OK);
  }
  const std::vector<uint8_t> blob = serialize(a.state);
  StateFixture b(nullptr);
  fp8attn_error err{};
  err.struct_size = sizeof err;
  ASSERT_EQ(fp8attn_scale_state_deserialize(b.state, blob.data(), blob.size(), &err), FP8ATTN_OK) << err.message;
  EXPECT_EQ(serialize(b.state), blob);
}

TEST(ScaleStateBlob, EveryByteFlipAndEveryTruncationIsRejected) {
  std::mt19937_64 rng(kSeed + 1);
  auto o = default_options();
  o.num_layers = 1;
  o.amax_history_len = 2;
  StateFixture src(&o);
  fill(src.state, 1, 3, rng);
  const std::vector<uint8_t> blob = serialize(src.state);

  StateFixture victim(nullptr);
  fill(victim.state, 1, 2, rng);
  const std::vector<uint8_t> before = serialize(victim.state);
  std::printf("small blob: %zu bytes; victim state: %zu bytes\n", blob.size(), before.size());

  int counts[4] = {0, 0, 0, 0};  // 6000, 6001, 6002, 6003
  fp8attn_error err{};
  err.struct_size = sizeof err;
  for (size_t i = 0; i < blob.size(); ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xFF}}) {
      std::vector<uint8_t> bad = blob;
      bad[i] ^= mask;
      const int32_t status = fp8attn_scale_state_deserialize(victim.state, bad.data(), bad.size(), &err);
      ASSERT_TRUE(is_numerics_status(status)) << "byte " << i << " mask " << int(mask) << " gave " << status << ": "
                                              << err.message;
      ++counts[status - 6000];
    }
  }
  for (size_t len = 0; len < blob.size(); ++len) {
    const int32_t status = fp8attn_scale_state_deserialize(victim.state, blob.data(), len, &err);
    ASSERT_EQ(status, FP8ATTN_STATUS_TRUNCATED_BLOB) << "length " << len << ": " << err.message;
  }
  std::vector<uint8_t> longer = blob;
  longer.push_back(0);
  EXPECT_EQ(fp8attn_scale_state_deserialize(victim.state, longer.data(), longer.size(), &err), FP8ATTN_STATUS_NUMERICS);
  std::printf("flips rejected: %d numerics, %d checksum, %d version, %d truncated; %zu truncations rejected\n", counts[0],
              counts[1], counts[2], counts[3], blob.size());
  EXPECT_EQ(serialize(victim.state), before);  // unchanged through every failure
  EXPECT_EQ(fp8attn_scale_state_deserialize(victim.state, blob.data(), blob.size(), nullptr), FP8ATTN_OK);
  EXPECT_EQ(serialize(victim.state), blob);
}

TEST(ScaleStateBlob, RejectsAnUnknownVersion) {
  StateFixture s(nullptr);
  std::vector<uint8_t> blob = serialize(s.state);
  blob[4] = 2;  // version 2, with a valid checksum would still be refused before the CRC
  fp8attn_error err{};
  err.struct_size = sizeof err;
  EXPECT_EQ(fp8attn_scale_state_deserialize(s.state, blob.data(), blob.size(), &err), FP8ATTN_STATUS_BAD_BLOB_VERSION);
  std::printf("%s\n", err.message);
}

}  // namespace
}  // namespace fp8attn::test
