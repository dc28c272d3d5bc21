// A plan is immutable and may be shared across threads (fp8attn.h). Four host threads run
// forwards on one plan, each with its own workspace and buffers, concurrently with a fifth that
// creates and destroys its own plans on the same context; every result must be bit-identical
// to a single-threaded run. Run under ThreadSanitizer in CI (label tsan).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "tools/common/forward_runner.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::testing {
namespace {

using namespace fp8attn::workloads;

TEST(ConcurrentForward, SharedPlanGivesIdenticalResults) {
  const uint64_t seed = workloads::fresh_seed();
  const AttentionShape shape{1, 300, 300, 2, 1, 64};
  const auto q = quantize(normal_inputs(shape, seed), FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerHead);
  auto desc = make_desc(shape, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
  desc.causal = 1;
  const ForwardResult expected = run_forward(desc, shape, q);

  fp8attn_context ctx = nullptr;
  fp8attn_context_options co{};
  co.struct_size = sizeof co;
  co.backend = FP8ATTN_BACKEND_CPU;
  co.num_threads = 2;
  ASSERT_EQ(fp8attn_context_create(&co, &ctx, nullptr), FP8ATTN_OK);
  fp8attn_plan plan = nullptr;
  ASSERT_EQ(fp8attn_plan_create(ctx, &desc, &plan, nullptr), FP8ATTN_OK);

  std::vector<ForwardResult> results(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int repeat = 0; repeat < 3; ++repeat) results[t] = run_forward_on_plan(plan, desc, shape, q);
    });
  threads.emplace_back([&] {
    for (int i = 0; i < 20; ++i) {
      fp8attn_plan other = nullptr;
      if (fp8attn_plan_create(ctx, &desc, &other, nullptr) == FP8ATTN_OK) fp8attn_plan_destroy(other);
    }
  });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    ASSERT_EQ(results[t].out.size(), expected.out.size());
    EXPECT_EQ(0, std::memcmp(results[t].out.data(), expected.out.data(), expected.out.size() * sizeof(float)))
        << "thread " << t << ", seed " << seed;
  }
  fp8attn_plan_destroy(plan);
  fp8attn_context_destroy(ctx);
}

}  // namespace
}  // namespace fp8attn::testing
