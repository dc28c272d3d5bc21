// Many readers and one writer on one scale state. Run under ThreadSanitizer in CI
// (ctest -L tsan on a build with FP8ATTN_SANITIZE=thread). Readers check that every scale they
// see is one a whole step produced: the writer reports the same amax to every tensor of every
// layer in a step, so a reader that saw a half-applied step would see two different scales.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

#include "tests/scale/scale_test_support.hpp"

namespace fp8attn::test {
namespace {

TEST(ScaleStateThreads, ReadersSeeWholeStepsWhileOneThreadWrites) {
  auto o = default_options();
  o.num_layers = 4;
  o.amax_history_len = 1;  // the scale follows the last step exactly
  o.grad_dtype = FP8ATTN_DTYPE_E4M3;
  o.recipe[FP8ATTN_TENSOR_LOGIT] = FP8ATTN_RECIPE_DELAYED;
  StateFixture f(&o);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> reads{0};
  std::atomic<int> torn{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r) {
    readers.emplace_back([&, r] {
      while (!stop.load(std::memory_order_relaxed)) {
        std::vector<uint8_t> blob;
        if (r == 0) blob = serialize(f.state);  // one reader also serializes
        // Each read must be a scale some whole step produced: every step's amax is 2^k
        // (k in 0..7), so 448/scale is an exact power of two, and scale·scale_inv = 1.
        for (int l = 0; l < 4; ++l)
          for (int t = 0; t < FP8ATTN_NUM_TENSOR_KINDS; ++t) {
            float s = 0.0f, inv = 0.0f;
            if (fp8attn_scale_state_get_scale(f.state, l, t, &s, &inv, nullptr) != FP8ATTN_OK) torn.fetch_add(1);
            const float amax = 448.0f / s;
            if (s != 1.0f && std::exp2(std::round(std::log2(amax))) != amax) torn.fetch_add(1);
            if (s * inv < 0.999f || s * inv > 1.001f) torn.fetch_add(1);
            reads.fetch_add(1, std::memory_order_relaxed);
          }
      }
    });
  }
  std::vector<float> batch(4 * FP8ATTN_NUM_TENSOR_KINDS);
  while (reads.load() == 0) std::this_thread::yield();  // readers are running
  for (int step = 0; step < 400; ++step) {
    const float amax = std::exp2(static_cast<float>(step % 8));
    for (float& a : batch) a = amax;
    ASSERT_EQ(fp8attn_scale_state_report_amax_batch(f.state, batch.data(), batch.size(), nullptr), FP8ATTN_OK);
    ASSERT_EQ(fp8attn_scale_state_step(f.state, nullptr), FP8ATTN_OK);
    if (step % 50 == 0) {
      const std::vector<uint8_t> blob = serialize(f.state);
      ASSERT_EQ(fp8attn_scale_state_deserialize(f.state, blob.data(), blob.size(), nullptr), FP8ATTN_OK);
    }
  }
  stop = true;
  for (auto& t : readers) t.join();
  std::printf("%lld reads during 400 steps, %d inconsistent\n", static_cast<long long>(reads.load()), torn.load());
  EXPECT_EQ(torn.load(), 0);
  EXPECT_GT(reads.load(), 0);
}

TEST(ScaleStateThreads, SerializedSnapshotsAreWholeSteps) {
  // A serialized blob is taken under one shared lock: every scale in it comes from the same step.
  auto o = default_options();
  o.num_layers = 3;
  o.amax_history_len = 1;
  o.grad_dtype = FP8ATTN_DTYPE_E4M3;
  o.recipe[FP8ATTN_TENSOR_LOGIT] = FP8ATTN_RECIPE_DELAYED;
  StateFixture f(&o);
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0}, snapshots{0};
  std::thread reader([&] {
    StateFixture scratch(nullptr);
    while (!stop.load(std::memory_order_relaxed)) {
      const std::vector<uint8_t> blob = serialize(f.state);
      if (fp8attn_scale_state_deserialize(scratch.state, blob.data(), blob.size(), nullptr) != FP8ATTN_OK) {
        torn.fetch_add(1);
        continue;
      }
      const float first = scratch.scale(0, 0);
      for (int l = 0; l < 3; ++l)
        for (int t = 0; t < FP8ATTN_NUM_TENSOR_KINDS; ++t)
          if (scratch.scale(l, t) != first) torn.fetch_add(1);
      snapshots.fetch_add(1);
    }
  });
  std::vector<float> batch(3 * FP8ATTN_NUM_TENSOR_KINDS);
  // Keep writing until the reader has overlapped a good number of steps.
  for (int step = 0; step < 300 || snapshots.load() < 50; ++step) {
    for (float& a : batch) a = 1.0f + static_cast<float>(step);
    ASSERT_EQ(fp8attn_scale_state_report_amax_batch(f.state, batch.data(), batch.size(), nullptr), FP8ATTN_OK);
    ASSERT_EQ(fp8attn_scale_state_step(f.state, nullptr), FP8ATTN_OK);
  }
  stop = true;
  reader.join();
  std::printf("%d snapshots, %d torn\n", snapshots.load(), torn.load());
  EXPECT_EQ(torn.load(), 0);
  EXPECT_GE(snapshots.load(), 50);
}

}  // namespace
}  // namespace fp8attn::test
