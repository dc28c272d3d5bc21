// Results do not depend on the number of worker threads: every query tile is computed by one
// worker in the same order, so outputs, LSE and telemetry are bit-identical for 1, 2, 3 and 7
// threads. Inputs: N(0,1), E4M3 with per-head descales; causal and non-causal, GQA 4:1.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "tools/common/forward_runner.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::testing {
using namespace fp8attn::workloads;
namespace {

TEST(ThreadInvariance, BitIdenticalAcrossThreadCounts) {
  const uint64_t seed = workloads::fresh_seed();
  const workloads::AttentionShape shape{2, 517, 517, 4, 1, 128};
  const auto q = workloads::quantize(workloads::outlier_inputs(shape, seed), FP8ATTN_DTYPE_E4M3,
                                     workloads::ScaleGranularity::PerHead);
  for (bool causal : {false, true}) {
    auto desc = make_desc(shape, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
    desc.causal = causal;
    desc.telemetry = 1;
    ForwardOptions o;
    o.num_threads = 1;
    const ForwardResult one = run_forward(desc, shape, q, o);
    for (int threads : {2, 3, 7}) {
      o.num_threads = threads;
      const ForwardResult many = run_forward(desc, shape, q, o);
      EXPECT_EQ(0, std::memcmp(one.out.data(), many.out.data(), one.out.size() * sizeof(float)))
          << threads << " threads, causal " << causal << ", seed " << seed;
      EXPECT_EQ(0, std::memcmp(one.lse.data(), many.lse.data(), one.lse.size() * sizeof(float)))
          << threads << " threads, causal " << causal << ", seed " << seed;
      EXPECT_EQ(one.telemetry.p_positive, many.telemetry.p_positive);
      EXPECT_EQ(one.telemetry.p_underflow, many.telemetry.p_underflow);
      EXPECT_EQ(one.telemetry.max_abs_scaled_logit, many.telemetry.max_abs_scaled_logit);
    }
    std::printf("causal %d: bit-identical for 1, 2, 3, 7 threads (p_positive %llu, p_underflow %llu)\n", causal,
                static_cast<unsigned long long>(one.telemetry.p_positive),
                static_cast<unsigned long long>(one.telemetry.p_underflow));
  }
}

}  // namespace
}  // namespace fp8attn::testing
