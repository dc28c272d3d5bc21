// One scale state shared by forward calls on several threads: each thread runs its
// own layer's forwards while a reader polls scales; after the threads join and one step, every
// layer's O scale is 448 / (the largest amax_o its calls returned): no report was lost or torn.
// On the CPU engine and on the emulator, whose reports go through the device amax pickup.
// Runs under the `tsan` label (ThreadSanitizer build in CI).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "tests/training/training_test_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::training_test {
namespace {

/// `calls` forwards per thread on a context of `backend`. On the emulator the amaxes reach the
/// state through the device pickup's slots (lib/scale/device_amax_pickup.hpp), taken and
/// released by several threads at once.
void concurrent_forwards(int32_t backend, int calls) {
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu backend %d\n", static_cast<unsigned long long>(seed), backend);
  constexpr int kThreads = 4;
  const int kCalls = calls;
  const Shape s{1, 24, 40, 2, 1, 64};
  fp8attn_context ctx = make_context(backend, 2);
  fp8attn_scale_state_options o{};
  o.struct_size = sizeof o;
  o.num_layers = kThreads;
  fp8attn_scale_state state = nullptr;
  ASSERT_EQ(fp8attn_scale_state_create(ctx, &o, &state, nullptr), FP8ATTN_OK);
  fp8attn_plan plan = nullptr;
  const fp8attn_attention_desc desc = make_desc(s, FP8ATTN_DTYPE_E4M3);
  ASSERT_EQ(fp8attn_plan_create(ctx, &desc, &plan, nullptr), FP8ATTN_OK);
  size_t bytes = 0;
  ASSERT_EQ(fp8attn_plan_workspace_size(plan, s.batch, s.seqlen_q, s.seqlen_k, &bytes, nullptr), FP8ATTN_OK);

  std::vector<float> largest(kThreads, 0.0f);
  std::vector<int> failures(kThreads, 0);
  std::atomic<bool> done{false};
  std::atomic<int> reader_failures{0};
  std::thread reader([&] {
    while (!done.load()) {
      float sc = 0.0f;
      for (int layer = 0; layer < kThreads; ++layer)
        if (fp8attn_scale_state_get_scale(state, layer, FP8ATTN_TENSOR_O, &sc, nullptr, nullptr) != FP8ATTN_OK ||
            sc != 1.0f)
          ++reader_failures;  // no step yet: every scale is still 1
    }
  });
  std::vector<std::thread> workers;
  for (int w = 0; w < kThreads; ++w)
    workers.emplace_back([&, w] {
      std::mt19937_64 rng(seed + static_cast<uint64_t>(w));
      std::vector<unsigned char> workspace(bytes == 0 ? 1 : bytes);
      for (int call = 0; call < kCalls; ++call) {
        Inputs in = random_inputs(s, rng, 0.5f + call + w);
        std::vector<uint8_t> out(static_cast<size_t>(s.q_elems()), 0x7F);
        fp8attn_attention_args a = make_args(s, in, out.data(), FP8ATTN_DTYPE_E4M3);
        a.scale_state = state;
        a.scale_state_layer = w;
        float amax_o = -1.0f;
        a.amax_o = &amax_o;
        if (fp8attn_attention_forward(plan, &a, workspace.data(), workspace.size(), nullptr, nullptr) != FP8ATTN_OK) {
          ++failures[w];
          continue;
        }
        largest[w] = std::max(largest[w], amax_o);
      }
    });
  for (auto& t : workers) t.join();
  done = true;
  reader.join();
  for (int w = 0; w < kThreads; ++w) EXPECT_EQ(failures[w], 0) << "thread " << w;
  EXPECT_EQ(reader_failures.load(), 0);
  ASSERT_EQ(fp8attn_scale_state_step(state, nullptr), FP8ATTN_OK);
  for (int layer = 0; layer < kThreads; ++layer) {
    float sc = 0.0f;
    ASSERT_EQ(fp8attn_scale_state_get_scale(state, layer, FP8ATTN_TENSOR_O, &sc, nullptr, nullptr), FP8ATTN_OK);
    std::printf("layer %d: largest amax_o %g, O scale %g\n", layer, largest[layer], sc);
    EXPECT_EQ(sc, static_cast<float>(448.0 / largest[layer])) << "layer " << layer;
  }
  fp8attn_plan_destroy(plan);
  fp8attn_scale_state_destroy(state);
  fp8attn_context_destroy(ctx);
}

TEST(ForwardStateThreads, ConcurrentForwardsReportEveryAmaxIntoTheSharedState) { concurrent_forwards(FP8ATTN_BACKEND_CPU, 6); }

// NOTE: one call per thread: the emulated kernel under ThreadSanitizer took 63 s for two.
TEST(ForwardStateThreads, ConcurrentEmulatedForwardsReportThroughTheDevicePickup) {
  concurrent_forwards(FP8ATTN_BACKEND_EMULATOR, 1);
}

}  // namespace
}  // namespace fp8attn::training_test
